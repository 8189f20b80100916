//! Manual leases: extended and released by the caller (seed 003).

use leasehold::ManualLease;
use napi::bindgen_prelude::BigInt;
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::durations::{self, JsDuration};
use crate::promise::{self, Eventually};

/// A manual lease (`leasehold::ManualLease`).
#[napi]
pub struct NativeManualLease {
    lease: ManualLease,
    runtime: Handle,
}

impl NativeManualLease {
    /// Wraps a core manual lease whose calls run on `runtime`.
    pub(crate) fn new(lease: ManualLease, runtime: Handle) -> NativeManualLease {
        NativeManualLease { lease, runtime }
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
    #[napi(catch_unwind)]
    pub fn extend<'env>(
        &self,
        env: &'env Env,
        d: JsDuration,
    ) -> napi::Result<Eventually<'env, ()>> {
        let lease = self.lease.clone();
        let d = durations::duration("the extension", d);
        promise::spawn(env, &self.runtime, async move { lease.extend(d?).await })
    }

    /// Releases the lease if it still owns its name (MANUAL-04).
    #[napi(catch_unwind)]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Eventually<'env, ()>> {
        let lease = self.lease.clone();
        promise::spawn(env, &self.runtime, async move { lease.release().await })
    }
}
