//! A key held while a JS function runs: the lease it sees, the loss
//! watcher behind `lease.signal`, and the end that releases it.

use leasehold::{Holding, Lease};
use napi::bindgen_prelude::BigInt;
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::durations;
use crate::errors::Thrown;
use crate::kept::{Kept, LossCallback};
use crate::promise::Eventually;

/// A held key (`leasehold::Holding`) and its lease.
#[napi]
pub struct NativeHolding {
    kept: Kept<Holding>,
}

impl NativeHolding {
    /// Wraps a core holding whose calls run on `runtime`.
    pub(crate) fn new(holding: Holding, runtime: Handle) -> NativeHolding {
        NativeHolding {
            kept: Kept::new(holding, runtime),
        }
    }

    fn lease(&self) -> &Lease {
        self.kept.view()
    }
}

#[napi]
impl NativeHolding {
    /// The fence (LOCK-02).
    #[napi(getter, catch_unwind)]
    pub fn fence(&self) -> BigInt {
        BigInt::from(self.lease().fence())
    }

    /// The key held.
    #[napi(getter, catch_unwind)]
    pub fn key(&self) -> String {
        self.lease().key().to_owned()
    }

    /// The name of the key's lock.
    #[napi(getter, catch_unwind)]
    pub fn lock_name(&self) -> String {
        self.lease().lock_name().to_owned()
    }

    /// Whether the lease was lost (LOCK-09).
    #[napi(getter, catch_unwind)]
    pub fn lost(&self) -> bool {
        self.lease().lost()
    }

    /// Why the lease was lost, once it was.
    #[napi(getter, catch_unwind)]
    pub fn loss_reason(&self) -> Option<String> {
        self.lease().loss_reason().map(|r| r.as_str().to_owned())
    }

    /// Milliseconds left before the holder's deadline; `null` without one.
    #[napi(getter, catch_unwind)]
    pub fn remaining(&self) -> Option<f64> {
        self.lease().remaining().map(durations::millis)
    }

    /// Calls `on_lost(reason)` once if the lease is lost before the holding
    /// ends (LOCK-09). The callback is weak, and is let go when the holding ends.
    /// One callback per holding: a second watch throws `INVALID_ARGUMENT`.
    #[napi(catch_unwind, ts_args_type = "onLost: (reason: string) => void")]
    pub fn watch(&self, on_lost: LossCallback) -> Result<(), Thrown> {
        self.kept.watch(on_lost)
    }

    /// Releases the key (`Holding::end`): rejects `LOST` if the lease was lost
    /// at any point while held (LOCK-10), `CLOSED` if it ended already.
    #[napi(catch_unwind)]
    pub fn end<'env>(&self, env: &'env Env) -> napi::Result<Eventually<'env, ()>> {
        self.kept.end(env)
    }
}
