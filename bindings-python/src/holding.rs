//! `Holding`: a key held for a block of Python code, from `begin` to `end`.

use leasehold::{Holding, Lease};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::bridge::{self, Cancel};
use crate::errors;
use crate::lease::PyLease;
use crate::runtime;
use crate::watched::Watched;

/// A held key. `end` releases it (and fails `Lost` if the lease was lost
/// while held, LOCK-10); dropped without `end`, it is released in the
/// background (LOCK-11).
#[pyclass(module = "leasehold._native", name = "Holding", frozen)]
pub struct PyHolding {
    holding: Watched<Holding>,
    lease: Lease,
    /// The runtime its calls run on, for a test store.
    runtime: Option<Handle>,
}

impl PyHolding {
    pub fn new(holding: Holding, runtime: Option<Handle>) -> PyHolding {
        PyHolding {
            lease: holding.lease().clone(),
            holding: Watched::new(holding),
            runtime,
        }
    }
}

#[pymethods]
impl PyHolding {
    /// The lease, for the held block.
    #[getter]
    fn lease(&self) -> PyLease {
        PyLease::new(self.lease.clone())
    }

    /// Calls `callback(True)` on the running event loop's thread once, if
    /// the lease is lost before the holding ends (LOCK-09).
    fn watch_loss(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.holding
            .watch_loss(py, self.lease.lost_signal(), callback)
    }

    /// Releases the key; the awaitable fails `LeaseLost` if the lease was
    /// lost while held. The release runs on its own: cancelling the
    /// awaiting task does not stop it (LOCK-11).
    fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let holding = self.holding.take(py)?;
        bridge::awaitable(py, self.runtime.as_ref(), Cancel::Shield, holding.end())
    }

    /// [`PyHolding::end`] for code without an event loop: waits without the GIL.
    fn end_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let holding = self.holding.take(py)?;
        runtime::wait_shielded(py, holding.end())?.map_err(|e| errors::to_py(py, e))
    }
}
