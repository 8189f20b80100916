//! `Holding`: a key held for a block of Python code, from `begin` to `end`.

use std::sync::Mutex;

use leasehold::{ErrorKind, Holding, Lease};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::bridge::{self, Cancel, Watch};
use crate::errors;
use crate::lease::PyLease;
use crate::runtime;

/// A held key. `end` releases it (and fails `Lost` if the lease was lost
/// while held, LOCK-10); dropped without `end`, it is released in the
/// background (LOCK-11).
#[pyclass(module = "leasehold._native", name = "Holding", frozen)]
pub struct PyHolding {
    holding: Mutex<Option<Holding>>,
    lease: Lease,
    /// The watch for a loss, stopped when the holding ends.
    watch: Mutex<Option<Watch>>,
    /// The runtime its calls run on, for a test store.
    runtime: Option<Handle>,
}

impl PyHolding {
    pub fn new(holding: Holding, runtime: Option<Handle>) -> PyHolding {
        PyHolding {
            lease: holding.lease().clone(),
            holding: Mutex::new(Some(holding)),
            watch: Mutex::new(None),
            runtime,
        }
    }

    fn stop_watching(&self) {
        let watch = self.watch.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(watch) = watch {
            watch.stop();
        }
    }

    fn take(&self, py: Python<'_>) -> PyResult<Holding> {
        self.stop_watching();
        self.holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                errors::error(py, ErrorKind::InvalidArgument, "the hold has ended already")
            })
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
        let lost = self.lease.lost_signal();
        let watch = bridge::watch(
            py,
            async move {
                lost.await;
                true
            },
            callback,
        )?;
        let previous = self
            .watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(watch);
        if let Some(previous) = previous {
            previous.stop();
        }
        Ok(())
    }

    /// Releases the key; the awaitable fails `LeaseLost` if the lease was
    /// lost while held. The release runs on its own: cancelling the
    /// awaiting task does not stop it (LOCK-11).
    fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let holding = self.take(py)?;
        bridge::awaitable(py, self.runtime.as_ref(), Cancel::Shield, holding.end())
    }

    /// [`PyHolding::end`] for code without an event loop: waits without the GIL.
    fn end_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let holding = self.take(py)?;
        runtime::wait_shielded(py, holding.end())?.map_err(|e| errors::to_py(py, e))
    }
}

impl Drop for PyHolding {
    fn drop(&mut self) {
        self.stop_watching();
    }
}
