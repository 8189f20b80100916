//! `Hold`: `lock.hold(key)`, the package's context manager for a key held
//! while a block runs, for `async with` and, without an event loop, for
//! `with`. Native, so that a cycle the core answers at once (a free key of
//! the embedded store) runs no Python of the package: its entry and exit
//! are one native call each and answer [`Ready`](crate::loop_driver::Ready)
//! awaitables. What waits (a grant or a release not made at once) finishes
//! in `leasehold._hold`'s coroutines. The package's other context managers
//! (`try_hold`, `hold_many`, a slot's hold) keep the same rules in Python
//! (`_hold.Watched`):
//!
//! - a lost lease cancels the task running the block at its next await, and
//!   the block then raises `LeaseLost`, the way `asyncio.timeout` turns its
//!   own cancellation into `TimeoutError` (LOCK-09); a cancellation from
//!   outside stays `CancelledError`;
//! - once the block ends, the hold raises `LeaseLost` if the lease was lost
//!   at any point, even if the block succeeded, with the block's own
//!   exception as its `__cause__` (LOCK-10);
//! - the key is released on every exit path, by the core, which a
//!   cancellation cannot stop (LOCK-11); cancelling a task waiting in line
//!   leaves the line (LOCK-18).

use leasehold::ErrorKind;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use pyo3::{PyTraverseError, PyVisit};

use crate::errors;
use crate::holding::PyHolding;
use crate::lock::PyLock;
use crate::loop_driver::{self, Ready};

/// How the context manager is written, for error messages.
const FORM: &str = "lock.hold(...)";
/// The message of the cancellation a lost lease sends to the holding task.
const LOST_MESSAGE: &str = "leasehold: the lease was lost";
/// The message of the `LeaseLost` of a lease lost before its block began.
const LOST_BEFORE: &str = "the lease was lost before the block could start";

/// `lock.hold(key, wait=...)`: waits in line for the key, holds it while
/// the block runs, and gives the block its `Lease`. Entered once.
#[pyclass(module = "leasehold._native", name = "Hold")]
pub struct PyHold {
    lock: Py<PyLock>,
    key: Py<PyAny>,
    wait: Option<Py<PyAny>>,
    /// The holding, from the entry to the exit.
    holding: Option<Py<PyHolding>>,
    /// The task running the `async with` block.
    task: Option<Py<PyAny>>,
    /// The task's count of pending cancellations at the entry.
    cancelling: isize,
    /// The loss cancelled the task.
    lost_cancel: bool,
    /// The exit began: a loss no longer cancels the task.
    exiting: bool,
    entered: bool,
}

fn current_task(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static CURRENT_TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CURRENT_TASK.import(py, "asyncio", "current_task")?.call0()
}

fn cancelled_error(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static CANCELLED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CANCELLED.import(py, "asyncio", "CancelledError")
}

fn lease_lost(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static LEASE_LOST: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    LEASE_LOST.import(py, "leasehold.errors", "LeaseLost")
}

/// The module whose coroutines finish what waits.
const LATER: &str = "leasehold._hold";

fn entered_twice(py: Python<'_>) -> PyErr {
    errors::error(
        py,
        ErrorKind::InvalidArgument,
        format!("a {FORM} is entered once; call it again"),
    )
}

impl PyHold {
    /// Takes the entry; `InvalidArgument` on a second.
    fn enter_once(&mut self, py: Python<'_>) -> PyResult<()> {
        if std::mem::replace(&mut self.entered, true) {
            return Err(entered_twice(py));
        }
        Ok(())
    }
}

#[pymethods]
impl PyHold {
    #[new]
    #[pyo3(signature = (lock, key, wait=None))]
    fn new(lock: Py<PyLock>, key: Py<PyAny>, wait: Option<Py<PyAny>>) -> PyHold {
        PyHold {
            lock,
            key,
            wait,
            holding: None,
            task: None,
            cancelling: 0,
            lost_cancel: false,
            exiting: false,
            entered: false,
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.lock)?;
        visit.call(&self.key)?;
        visit.call(&self.wait)?;
        visit.call(&self.holding)?;
        visit.call(&self.task)
    }

    fn __clear__(&mut self) {
        self.wait = None;
        self.holding = None;
        self.task = None;
    }

    /// Waits in line for the key and holds it: an awaitable of the block's
    /// `Lease`. Runs inside an asyncio task, whose loss of the lease
    /// cancels it (LOCK-09).
    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let begun = {
            let mut me = slf.borrow_mut();
            me.enter_once(py)?;
            let task = current_task(py)?;
            if task.is_none() {
                return Err(errors::error(
                    py,
                    ErrorKind::InvalidArgument,
                    format!("`async with {FORM}` runs inside an asyncio task"),
                ));
            }
            me.cancelling = task
                .call_method0(pyo3::intern!(py, "cancelling"))?
                .extract()?;
            me.task = Some(task.unbind());
            let wait = me.wait.as_ref().map(|w| w.bind(py));
            me.lock.get().begin(py, me.key.bind(py), wait)?
        };
        match begun.cast::<Ready>() {
            // A grant the core made at once (a free key of the embedded
            // store) is admitted now: no await, no turn of the loop.
            Ok(ready) => {
                let holding = ready
                    .get()
                    .result(py)?
                    .into_bound(py)
                    .cast_into::<PyHolding>()?;
                Self::admit(slf, holding)
            }
            Err(_) => {
                static ENTER_LATER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
                ENTER_LATER
                    .import(py, LATER, "_enter_later")?
                    .call1((slf, begun))
            }
        }
    }

    /// The block's lease once `holding` is granted: its loss watched from
    /// now on; a lease lost already (its deadline came between the grant and
    /// now, LOCK-04) runs no block: the holding ends and the awaitable
    /// raises `LeaseLost`.
    #[pyo3(name = "_admit")]
    fn admit<'py>(
        slf: &Bound<'py, Self>,
        holding: Bound<'py, PyHolding>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let lease = holding.get().lease(py)?.into_bound(py);
        if lease.get().lost() {
            let ended = holding.get().end(py)?;
            return match ended.cast::<Ready>() {
                Ok(ready) => {
                    ready.get().result(py)?;
                    Err(errors::error(py, ErrorKind::Lost, LOST_BEFORE))
                }
                Err(_) => {
                    static REFUSE_LATER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
                    REFUSE_LATER
                        .import(py, LATER, "_refuse_later")?
                        .call1((ended,))
                }
            };
        }
        let event_loop = {
            let me = slf.borrow();
            let task = me.task.as_ref().map(|t| t.bind(py).clone());
            task.map(|t| t.call_method0(pyo3::intern!(py, "get_loop")))
                .transpose()?
        };
        let on_lost = slf.getattr(pyo3::intern!(py, "_on_lost"))?.unbind();
        holding.get().watch_loss(py, on_lost, event_loop)?;
        slf.borrow_mut().holding = Some(holding.unbind());
        loop_driver::ready_value(py, lease.into_any())
    }

    /// On the event loop's thread, if the lease is lost while held: cancels
    /// the block's task, once.
    #[pyo3(name = "_on_lost")]
    fn on_lost(&mut self, py: Python<'_>, _lost: bool) -> PyResult<()> {
        let Some(task) = &self.task else {
            return Ok(());
        };
        let task = task.bind(py);
        if self.lost_cancel
            || self.exiting
            || task.call_method0(pyo3::intern!(py, "done"))?.is_truthy()?
        {
            return Ok(());
        }
        self.lost_cancel = true;
        task.call_method1(pyo3::intern!(py, "cancel"), (LOST_MESSAGE,))?;
        Ok(())
    }

    /// Releases the key: an awaitable that raises `LeaseLost` if the lease
    /// was lost while held (LOCK-10), the block's exception as its cause;
    /// a cancellation the loss did not send stays `CancelledError`.
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        exc_type: Option<Bound<'py, PyType>>,
        exc: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let cancelled = match &exc_type {
            Some(t) => t.is(cancelled_error(py)?),
            None => false,
        };
        let (holding, ours) = {
            let mut me = slf.borrow_mut();
            let Some(holding) = me.holding.take() else {
                return loop_driver::ready_value(py, py.None().into_bound(py));
            };
            me.exiting = true;
            let mut ours = false;
            if me.lost_cancel {
                if let Some(task) = &me.task {
                    // Like asyncio.timeout: the cancellation was ours if no other is pending.
                    let left: isize = task
                        .bind(py)
                        .call_method0(pyo3::intern!(py, "uncancel"))?
                        .extract()?;
                    ours = left <= me.cancelling && cancelled;
                }
            }
            (holding, ours)
        };
        // A cancellation from outside stays what it is, lost lease or not.
        let quiet = cancelled && !ours;
        let ended = holding.get().end(py)?;
        match ended.cast::<Ready>() {
            Ok(ready) => match ready.get().result(py) {
                Ok(_) => loop_driver::ready_value(py, py.None().into_bound(py)),
                Err(e) if e.is_instance(py, lease_lost(py)?) => {
                    if quiet {
                        return loop_driver::ready_value(py, py.None().into_bound(py));
                    }
                    e.set_cause(py, exc.map(PyErr::from_value));
                    Err(e)
                }
                Err(e) => Err(e),
            },
            Err(_) => {
                static EXIT_LATER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
                EXIT_LATER
                    .import(py, LATER, "_exit_later")?
                    .call1((ended, quiet, exc))
            }
        }
    }

    /// The blocking form, for code without an event loop: waits without the
    /// GIL; a lease lost before the block begins raises `LeaseLost`.
    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let holding = {
            let mut me = slf.borrow_mut();
            me.enter_once(py)?;
            if loop_driver::has_running_loop(py)? {
                return Err(errors::error(
                    py,
                    ErrorKind::InvalidArgument,
                    format!("`with {FORM}` would block the event loop; use `async with`"),
                ));
            }
            let wait = me.wait.as_ref().map(|w| w.bind(py));
            let holding = me.lock.get().begin_blocking(py, me.key.bind(py), wait)?;
            Bound::new(py, holding)?
        };
        let lease = holding.get().lease(py)?.into_bound(py);
        if lease.get().lost() {
            holding.get().end_blocking(py)?;
            return Err(errors::error(py, ErrorKind::Lost, LOST_BEFORE));
        }
        slf.borrow_mut().holding = Some(holding.unbind());
        Ok(lease.into_any())
    }

    /// Releases the key; raises `LeaseLost` if the lease was lost while
    /// held, the block's exception as its cause.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyAny>>,
        exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let Some(holding) = self.holding.take() else {
            return Ok(());
        };
        match holding.get().end_blocking(py) {
            Err(e) if e.is_instance(py, lease_lost(py)?) => {
                e.set_cause(py, exc.map(PyErr::from_value));
                Err(e)
            }
            other => other,
        }
    }
}
