//! `Lease`: a held key as the code inside `async with lock.hold(key)` sees it.

use leasehold::Lease;
use pyo3::prelude::*;

use crate::convert;

/// A held lease: its fence, whether it was lost, the time left.
#[pyclass(module = "leasehold._native", name = "Lease", frozen)]
pub struct PyLease {
    lease: Lease,
}

impl PyLease {
    pub fn new(lease: Lease) -> PyLease {
        PyLease { lease }
    }
}

#[pymethods]
impl PyLease {
    /// The fence: larger than every fence the store granted before (LOCK-02).
    #[getter]
    fn fence(&self) -> u64 {
        self.lease.fence()
    }

    /// Whether the lease was lost (LOCK-09). Once true, it stays true.
    #[getter]
    pub(crate) fn lost(&self) -> bool {
        self.lease.lost()
    }

    /// Why it was lost (`"expired"`, `"revoked"`, `"unknown"`, `"restarted"`,
    /// `"closed"`), or `None` while it is not.
    #[getter]
    fn loss_reason(&self) -> Option<&'static str> {
        self.lease.loss_reason().map(|r| r.as_str())
    }

    /// Seconds left before the holder's deadline (LOCK-04), zero once lost;
    /// `None` when the lease has no deadline (embedded, without max_hold).
    #[getter]
    fn remaining(&self) -> Option<f64> {
        self.lease.remaining().map(convert::seconds)
    }

    /// The key held.
    #[getter]
    fn key(&self) -> &str {
        self.lease.key()
    }

    /// The name of the lock the key belongs to.
    #[getter]
    fn lock_name(&self) -> &str {
        self.lease.lock_name()
    }

    fn __repr__(&self) -> String {
        format!(
            "Lease(lock={:?}, key={:?}, fence={}, lost={})",
            self.lease.lock_name(),
            self.lease.key(),
            self.lease.fence(),
            self.lease.lost()
        )
    }
}
