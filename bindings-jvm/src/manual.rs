//! Manual leases: extended and released by the caller.

use std::sync::Arc;

use leasehold::give_up;
use leasehold::ManualLease;

use leasehold_bridge::Cancel;

use crate::calls;
use crate::durations;
use crate::errors::NativeError;

/// The error message of an extension given up by its caller.
const GAVE_UP_EXTENDING: &str =
    "gave up extending the lease; the store may have extended it, which an extension repeated does again";

/// A manual lease (`leasehold::ManualLease`).
#[derive(uniffi::Object)]
pub struct NativeManualLease {
    lease: ManualLease,
}

impl NativeManualLease {
    /// Wraps a core manual lease.
    pub(crate) fn new(lease: ManualLease) -> Arc<NativeManualLease> {
        Arc::new(NativeManualLease { lease })
    }
}

#[uniffi::export]
impl NativeManualLease {
    /// The lease's name.
    pub fn name(&self) -> String {
        self.lease.name().to_owned()
    }

    /// The fence (MANUAL-07).
    pub fn fence(&self) -> u64 {
        self.lease.fence()
    }

    /// Sets the expiry to now + `d` nanoseconds (MANUAL-03). Cancelling the
    /// awaiting coroutine stops waiting for the store's answer.
    pub async fn extend(&self, d: i64) -> Result<(), NativeError> {
        let lease = self.lease.clone();
        calls::cancellable(|cancel| async move {
            let d = durations::duration("the extension", d)?;
            let extend = async move { lease.extend(d).await };
            give_up::unless_given_up(
                Some(cancel),
                &calls::runtime(),
                GAVE_UP_EXTENDING,
                extend,
                give_up::dropped,
            )
            .await
        })
        .await
    }

    /// Releases the lease if it still owns its name (MANUAL-04). The release
    /// runs on to its end even if the awaiting coroutine is cancelled.
    pub async fn release(&self) -> Result<(), NativeError> {
        let lease = self.lease.clone();
        calls::spawn(Cancel::RunOn, async move { lease.release().await }).await
    }
}
