//! Manual leases: extended and released by the caller, on the hot path
//! (`natives::manual`).

use std::sync::Arc;

use leasehold::ManualLease;

use crate::natives::handles;

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

    /// The core lease.
    pub(crate) fn core(&self) -> &ManualLease {
        &self.lease
    }
}

#[uniffi::export]
impl NativeManualLease {
    /// A handle on this lease for the natives of the hot path
    /// (`natives::manual`): a reference of its own, freed once by
    /// `Natives.freeManual`.
    pub fn handle(self: Arc<Self>) -> i64 {
        handles::into_handle(self)
    }
}
