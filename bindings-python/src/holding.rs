//! `Holding`: a key held for a block of Python code, from `begin` to `end`.

use leasehold::Holding;
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::kept::Kept;
use crate::lease::PyLease;

/// A held key. `end` releases it (and fails `Lost` if the lease was lost
/// while held, LOCK-10); dropped without `end`, it is released in the
/// background (LOCK-11).
#[pyclass(module = "leasehold._native", name = "Holding", frozen)]
pub struct PyHolding {
    kept: Kept<Holding>,
}

impl PyHolding {
    pub fn new(holding: Holding, runtime: Option<Handle>) -> PyHolding {
        PyHolding {
            kept: Kept::new(holding, runtime),
        }
    }
}

#[pymethods]
impl PyHolding {
    /// The lease, for the held block.
    #[getter]
    fn lease(&self) -> PyLease {
        PyLease::new(self.kept.view().clone())
    }

    /// Calls `callback(True)` on the running event loop's thread once, if
    /// the lease is lost before the holding ends (LOCK-09); a second watch
    /// of the holding fails `InvalidArgument`.
    fn watch_loss(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.kept.watch_loss(py, callback)
    }

    /// Releases the key; the awaitable fails `LeaseLost` if the lease was
    /// lost while held, `Closed` if the hold ended already. The release runs
    /// on its own: cancelling the awaiting task does not stop it (LOCK-11).
    fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.kept.end(py)
    }

    /// [`PyHolding::end`] for code without an event loop: waits without the GIL.
    fn end_blocking(&self, py: Python<'_>) -> PyResult<()> {
        self.kept.end_blocking(py)
    }
}
