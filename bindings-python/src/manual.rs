//! `ManualLease`: a lease its holder extends and releases itself.

use leasehold::ManualLease;
use leasehold_bridge::Cancel;
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::convert;
use crate::loop_driver;

/// A manual lease: no background renewal; `extend` sets the expiry to now
/// plus the given duration, `release` lets it go. Safe to use from several
/// tasks at once (MANUAL-06).
#[pyclass(module = "leasehold._native", name = "ManualLease", frozen)]
pub struct PyManualLease {
    lease: ManualLease,
    /// The runtime its calls run on, for a test store.
    runtime: Option<Handle>,
}

impl PyManualLease {
    pub fn new(lease: ManualLease, runtime: Option<Handle>) -> PyManualLease {
        PyManualLease { lease, runtime }
    }
}

#[pymethods]
impl PyManualLease {
    /// The lease's name.
    #[getter]
    fn name(&self) -> &str {
        self.lease.name()
    }

    /// The fence, with LOCK-02's guarantee (MANUAL-07).
    #[getter]
    fn fence(&self) -> u64 {
        self.lease.fence()
    }

    /// Sets the expiry to now + `by` (MANUAL-03): an awaitable that fails
    /// `LeaseLost` on a lost or released lease, `InvalidTtl` for `by`
    /// outside 1 s to 1 h.
    fn extend<'py>(&self, py: Python<'py>, by: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let by = convert::duration(by, "the extension")?;
        let lease = self.lease.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            lease.extend(by).await
        })
    }

    /// Releases the lease if it still owns its name (MANUAL-04); after a
    /// confirmed release or loss, later calls do nothing.
    fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lease = self.lease.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            lease.release().await
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "ManualLease(name={:?}, fence={})",
            self.lease.name(),
            self.lease.fence()
        )
    }
}
