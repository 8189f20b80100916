//! Manual leases: extended and released by the caller (seed 003).

use leasehold::ManualLease;
use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;

use crate::durations::{self, JsDuration};
use crate::promise;

/// A manual lease (`leasehold::ManualLease`).
#[napi]
pub struct NativeManualLease {
    lease: ManualLease,
}

impl NativeManualLease {
    /// Wraps a core manual lease.
    pub(crate) fn new(lease: ManualLease) -> NativeManualLease {
        NativeManualLease { lease }
    }
}

#[napi]
impl NativeManualLease {
    /// The lease's name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.lease.name().to_owned()
    }

    /// The fence (MANUAL-07).
    #[napi(getter, catch_unwind)]
    pub fn fence(&self) -> BigInt {
        BigInt::from(self.lease.fence())
    }

    /// Sets the expiry to now + `d` (MANUAL-03).
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn extend<'env>(&self, env: &'env Env, d: JsDuration) -> napi::Result<Object<'env>> {
        let lease = self.lease.clone();
        let d = durations::duration("the extension", d);
        promise::spawn(env, async move { lease.extend(d?).await })
    }

    /// Releases the lease if it still owns its name (MANUAL-04).
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let lease = self.lease.clone();
        promise::spawn(env, async move { lease.release().await })
    }
}
