//! Manual leases: extended and released by the caller.

use leasehold::give_up;
use leasehold::ManualLease;
use napi::bindgen_prelude::BigInt;
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::cancel::Canceller;
use crate::durations::{self, JsDuration};
use crate::promise::{self, Eventually};

/// The error message of an extension given up by its canceller.
const GAVE_UP_EXTENDING: &str =
    "gave up extending the lease; the store may have extended it, which an extension repeated does again";

/// The error message of a release given up by its canceller.
const GAVE_UP_RELEASING: &str =
    "gave up releasing the lease; the store may have released it, which a release repeated confirms";

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

    /// Sets the expiry to now + `d` (MANUAL-03). When `cancel` fires first,
    /// the call stops waiting for the store's answer and fails `CANCELLED`.
    #[napi(catch_unwind)]
    pub fn extend<'env>(
        &self,
        env: &'env Env,
        d: JsDuration,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, ()>> {
        let lease = self.lease.clone();
        let d = durations::duration("the extension", d);
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let d = d?;
            let extend = async move { lease.extend(d).await };
            give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_EXTENDING,
                extend,
                give_up::dropped,
            )
            .await
        })
    }

    /// Releases the lease if it still owns its name (MANUAL-04). When
    /// `cancel` fires first, the call stops waiting for the store's answer
    /// and fails `CANCELLED`; the release goes on.
    #[napi(catch_unwind)]
    pub fn release<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, ()>> {
        let lease = self.lease.clone();
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let release = async move { lease.release().await };
            give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_RELEASING,
                release,
                give_up::dropped,
            )
            .await
        })
    }
}
