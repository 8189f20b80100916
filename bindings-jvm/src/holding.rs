//! A key held while a Kotlin block runs: the lease it sees, the loss it
//! awaits, and the end that releases it.

use std::sync::Arc;

use leasehold::{Holding, Lease};

use crate::durations;
use crate::errors::NativeError;
use crate::kept::Kept;

/// A held key (`leasehold::Holding`) and its lease. Dropped without `end`
/// (closed, or collected), it is released in the background (LOCK-11).
#[derive(uniffi::Object)]
pub struct NativeHolding {
    kept: Kept<Holding>,
}

impl NativeHolding {
    /// Wraps a core holding.
    pub(crate) fn new(holding: Holding) -> Arc<NativeHolding> {
        Arc::new(NativeHolding {
            kept: Kept::new(holding),
        })
    }

    fn lease(&self) -> &Lease {
        self.kept.view()
    }
}

#[uniffi::export]
impl NativeHolding {
    /// The fence (LOCK-02).
    pub fn fence(&self) -> u64 {
        self.lease().fence()
    }

    /// The key held.
    pub fn key(&self) -> String {
        self.lease().key().to_owned()
    }

    /// The name of the key's lock.
    pub fn lock_name(&self) -> String {
        self.lease().lock_name().to_owned()
    }

    /// Whether the lease was lost (LOCK-09).
    pub fn lost(&self) -> bool {
        self.lease().lost()
    }

    /// Why the lease was lost, once it was.
    pub fn loss_reason(&self) -> Option<String> {
        self.lease().loss_reason().map(|r| r.as_str().to_owned())
    }

    /// Nanoseconds left before the holder's deadline; `None` without one.
    pub fn remaining(&self) -> Option<i64> {
        self.lease().remaining().map(durations::nanos)
    }

    /// Completes with the loss reason once the lease is lost (LOCK-09).
    pub async fn lost_signal(&self) -> Result<String, NativeError> {
        self.kept.lost_signal().await
    }

    /// Releases the key (`Holding::end`): fails `Lost` if the lease was lost
    /// at any point while held (LOCK-10), `Closed` if it ended already.
    pub async fn end(&self) -> Result<(), NativeError> {
        self.kept.end().await
    }
}
