//! `Holding`: a key held for a block of Python code, from `begin` to `end`
//! (or, with the other keys of a `begin_many`, to `Holding.end_all`).

use leasehold::Holding;
use leasehold_bridge::Cancel;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::runtime::Handle;

use crate::kept::Kept;
use crate::lease::PyLease;
use crate::loop_driver;
use crate::runtime;

/// A held key. `end` releases it (and fails `Lost` if the lease was lost
/// while held, LOCK-10); dropped without `end`, it is released in the
/// background (LOCK-11).
#[pyclass(module = "leasehold._native", name = "Holding", frozen)]
pub struct PyHolding {
    kept: Kept<Holding>,
    /// The lease, made on first read and the same object after.
    lease: PyOnceLock<Py<PyLease>>,
}

impl PyHolding {
    pub fn new(holding: Holding, runtime: Option<Handle>) -> PyHolding {
        PyHolding {
            kept: Kept::new(holding, runtime),
            lease: PyOnceLock::new(),
        }
    }

    /// Whether the lease was lost.
    pub(crate) fn lost(&self) -> bool {
        self.kept.view().lost()
    }

    /// [`PyHolding::end`] for code without an event loop: waits without the GIL.
    pub(crate) fn end_blocking(&self, py: Python<'_>) -> PyResult<()> {
        self.kept.end_blocking(py)
    }

    /// Releases every key of `holdings` at once (`Holding::end_all`,
    /// LOCK-22): the awaitable fails with the first failure in their order,
    /// `LeaseLost` if a lease was lost while held, `Closed` if a holding
    /// ended already (then the others are released in the background). The
    /// releases run on their own: cancelling the awaiting task does not stop
    /// them (LOCK-11).
    pub(crate) fn end_all<'py>(
        py: Python<'py>,
        holdings: Vec<Bound<'py, PyHolding>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (taken, runtime) = take_all(py, &holdings)?;
        loop_driver::awaitable(py, runtime.as_ref(), Cancel::RunOn, Holding::end_all(taken))
    }

    /// [`PyHolding::end_all`] for code without an event loop: waits without the GIL.
    pub(crate) fn end_all_blocking(
        py: Python<'_>,
        holdings: Vec<Bound<'_, PyHolding>>,
    ) -> PyResult<()> {
        let (taken, _) = take_all(py, &holdings)?;
        runtime::wait_run_on(py, Holding::end_all(taken))
    }
}

#[pymethods]
impl PyHolding {
    /// The lease, for the held block: one object per holding.
    #[getter]
    pub(crate) fn lease(&self, py: Python<'_>) -> PyResult<Py<PyLease>> {
        self.lease
            .get_or_try_init(py, || Py::new(py, PyLease::new(self.kept.view().clone())))
            .map(|lease| lease.clone_ref(py))
    }

    /// Calls `callback(True)` on the running event loop's thread once, if
    /// the lease is lost before the holding ends (LOCK-09); a second watch
    /// of the holding fails `InvalidArgument`. `event_loop`, the running
    /// loop when the caller has it (its task's), spares its lookup.
    #[pyo3(signature = (callback, event_loop = None))]
    pub(crate) fn watch_loss(
        &self,
        py: Python<'_>,
        callback: Py<PyAny>,
        event_loop: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.kept.watch_loss(py, callback, event_loop)
    }

    /// Releases the key; the awaitable fails `LeaseLost` if the lease was
    /// lost while held, `Closed` if the hold ended already. The release runs
    /// on its own: cancelling the awaiting task does not stop it (LOCK-11).
    pub(crate) fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.kept.end(py)
    }
}

/// The core's holdings of `holdings`, taken to be ended together, and the
/// runtime their calls run on (the first one's: they come from one lock).
fn take_all(
    py: Python<'_>,
    holdings: &[Bound<'_, PyHolding>],
) -> PyResult<(Vec<Holding>, Option<Handle>)> {
    let runtime = holdings
        .first()
        .and_then(|h| h.get().kept.runtime().cloned());
    let taken = holdings
        .iter()
        .map(|h| h.get().kept.take(py))
        .collect::<PyResult<Vec<Holding>>>()?;
    Ok((taken, runtime))
}
