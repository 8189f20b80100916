//! `Hold`: the package's one context manager for anything held while a
//! block runs: a key (`lock.hold(key)`), a key if it is free now
//! (`lock.try_hold(key)`), many keys at once (`lock.hold_many(keys)`) and a
//! machine slot (`slots.hold(owner)`), for `async with` and, for keys
//! without an event loop, `with`. Native, so that a cycle the core answers
//! at once (a free key of the embedded store) runs no Python of the
//! package: its entry and exit are one native call each and answer
//! [`Ready`](crate::loop_driver::Ready) awaitables. What waits (a grant or
//! a release not made at once) finishes in `leasehold._hold`'s coroutines.
//! The rules, for every kind:
//!
//! - a loss (of any lease held) cancels the task running the block at its
//!   next await, and the block then raises `LeaseLost`, the way
//!   `asyncio.timeout` turns its own cancellation into `TimeoutError`
//!   (LOCK-09); a cancellation from outside stays `CancelledError`;
//! - a hold lost between its grant and the block (its deadline came while
//!   the process was frozen, LOCK-04) runs no block: it ends, and the entry
//!   raises `LeaseLost`;
//! - once the block ends, the hold raises `LeaseLost` if anything held was
//!   lost at any point, even if the block succeeded, with the block's own
//!   exception as its `__cause__` (LOCK-10);
//! - what is held is released on every exit path, by the core, which a
//!   cancellation cannot stop (LOCK-11); cancelling a task waiting in line
//!   leaves the line (LOCK-18);
//! - a hold is entered once.

use leasehold::ErrorKind;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyType};
use pyo3::{PyTraverseError, PyVisit};

use crate::errors;
use crate::holding::PyHolding;
use crate::lock::PyLock;
use crate::loop_driver::{self, Ready};
use crate::slot_holding::PySlotHolding;
use crate::slots::PySlots;

/// The message of the `LeaseLost` of a hold lost before its block began.
const LOST_BEFORE: &str = "the lease was lost before the block could start";

/// What a hold asks for, as the call that made it.
enum Asked {
    /// `lock.hold(key, wait=...)`: waits in line.
    Key {
        lock: Py<PyLock>,
        key: Py<PyAny>,
        wait: Option<Py<PyAny>>,
    },
    /// `lock.try_hold(key)`: only if the key is free now (LOCK-17).
    Free { lock: Py<PyLock>, key: Py<PyAny> },
    /// `lock.hold_many(keys, wait=...)`: every key or none (LOCK-22).
    Many {
        lock: Py<PyLock>,
        keys: Py<PyAny>,
        wait: Option<Py<PyAny>>,
    },
    /// `slots.hold(owner, preferred=None)`: a slot, if one is free (SLOT-01).
    Slot {
        slots: Py<PySlots>,
        owner: Py<PyAny>,
        preferred: Option<Py<PyAny>>,
    },
}

impl Asked {
    /// How the context manager is written, for error messages.
    fn form(&self) -> &'static str {
        match self {
            Asked::Key { .. } => "lock.hold(...)",
            Asked::Free { .. } => "lock.try_hold(...)",
            Asked::Many { .. } => "lock.hold_many(...)",
            Asked::Slot { .. } => "slots.hold(...)",
        }
    }

    /// The message of the cancellation a loss sends to the holding task.
    fn lost_message(&self) -> &'static str {
        match self {
            Asked::Key { .. } | Asked::Free { .. } => "leasehold: the lease was lost",
            Asked::Many { .. } => "leasehold: one of the leases was lost",
            Asked::Slot { .. } => "leasehold: the slot was lost",
        }
    }

    /// Asks: an awaitable of what [`Asked::held`] reads.
    fn begin<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Asked::Key { lock, key, wait } => {
                lock.get()
                    .begin(py, key.bind(py), wait.as_ref().map(|w| w.bind(py)))
            }
            Asked::Free { lock, key } => lock.get().try_begin(py, key.bind(py)),
            Asked::Many { lock, keys, wait } => {
                lock.get()
                    .begin_many(py, keys.bind(py), wait.as_ref().map(|w| w.bind(py)))
            }
            Asked::Slot {
                slots,
                owner,
                preferred,
            } => slots
                .get()
                .begin(py, owner.bind(py), preferred.as_ref().map(|p| p.bind(py))),
        }
    }

    /// What the begin's answer `got` holds; `None`: nothing was free.
    fn held(&self, got: Bound<'_, PyAny>) -> PyResult<Option<Holds>> {
        if got.is_none() {
            return Ok(None);
        }
        Ok(Some(match self {
            Asked::Key { .. } | Asked::Free { .. } => Holds::Key(got.cast_into()?.unbind()),
            Asked::Many { .. } => Holds::Many(got.cast_into::<PyList>()?.unbind()),
            Asked::Slot { .. } => Holds::Slot(got.cast_into()?.unbind()),
        }))
    }

    /// Asks and waits, without the GIL (Ctrl-C leaves the line); a slot's
    /// hold has no blocking form.
    fn begin_blocking(&self, py: Python<'_>) -> PyResult<Option<Holds>> {
        let held = match self {
            Asked::Key { lock, key, wait } => {
                let wait = wait.as_ref().map(|w| w.bind(py));
                let holding = lock.get().begin_blocking(py, key.bind(py), wait)?;
                Holds::Key(Py::new(py, holding)?)
            }
            Asked::Free { lock, key } => match lock.get().try_begin_blocking(py, key.bind(py))? {
                Some(holding) => Holds::Key(Py::new(py, holding)?),
                None => return Ok(None),
            },
            Asked::Many { lock, keys, wait } => {
                let wait = wait.as_ref().map(|w| w.bind(py));
                let holdings = lock.get().begin_many_blocking(py, keys.bind(py), wait)?;
                let holdings = holdings
                    .into_iter()
                    .map(|h| Py::new(py, h))
                    .collect::<PyResult<Vec<_>>>()?;
                Holds::Many(PyList::new(py, holdings)?.unbind())
            }
            Asked::Slot { .. } => {
                return Err(errors::error(
                    py,
                    ErrorKind::InvalidArgument,
                    "`with slots.hold(...)` is not offered; use `async with`",
                ))
            }
        };
        Ok(Some(held))
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Asked::Key { lock, key, wait } => {
                visit.call(lock)?;
                visit.call(key)?;
                visit.call(wait)
            }
            Asked::Free { lock, key } => {
                visit.call(lock)?;
                visit.call(key)
            }
            Asked::Many { lock, keys, wait } => {
                visit.call(lock)?;
                visit.call(keys)?;
                visit.call(wait)
            }
            Asked::Slot {
                slots,
                owner,
                preferred,
            } => {
                visit.call(slots)?;
                visit.call(owner)?;
                visit.call(preferred)
            }
        }
    }
}

/// What a hold holds, from its entry to its exit.
enum Holds {
    /// A key's holding.
    Key(Py<PyHolding>),
    /// The holdings of many keys (a list of `Holding`), in the order of the
    /// keys, ended together.
    Many(Py<PyList>),
    /// A slot's holding.
    Slot(Py<PySlotHolding>),
}

impl Holds {
    /// What the block gets: a `Lease`, the list of them, or a `HeldSlot`.
    fn given<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            Holds::Key(h) => h.get().lease(py)?.into_bound(py).into_any(),
            Holds::Many(hs) => {
                let leases = holdings(py, hs)?
                    .iter()
                    .map(|h| h.get().lease(py))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, leases)?.into_any()
            }
            Holds::Slot(h) => Bound::new(py, h.get().held())?.into_any(),
        })
    }

    /// Whether anything held was lost.
    fn lost(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(match self {
            Holds::Key(h) => h.get().lost(),
            Holds::Many(hs) => holdings(py, hs)?.iter().any(|h| h.get().lost()),
            Holds::Slot(h) => h.get().lost(),
        })
    }

    /// Calls `callback(True)` on the loop's thread at a loss (of each lease
    /// lost, for many keys).
    fn watch_loss(
        &self,
        py: Python<'_>,
        callback: &Py<PyAny>,
        event_loop: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        match self {
            Holds::Key(h) => h.get().watch_loss(py, callback.clone_ref(py), event_loop),
            Holds::Many(hs) => holdings(py, hs)?.iter().try_for_each(|h| {
                h.get()
                    .watch_loss(py, callback.clone_ref(py), event_loop.clone())
            }),
            Holds::Slot(h) => h.get().watch_loss(py, callback.clone_ref(py), event_loop),
        }
    }

    /// Ends what is held: an awaitable that fails `LeaseLost` if anything
    /// was lost while held.
    fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Holds::Key(h) => h.get().end(py),
            Holds::Many(hs) => PyHolding::end_all(py, holdings(py, hs)?),
            Holds::Slot(h) => h.get().end(py),
        }
    }

    /// [`Holds::end`] for code without an event loop (keys only: a slot's
    /// hold is never entered so).
    fn end_blocking(&self, py: Python<'_>) -> PyResult<()> {
        match self {
            Holds::Key(h) => h.get().end_blocking(py),
            Holds::Many(hs) => PyHolding::end_all_blocking(py, holdings(py, hs)?),
            Holds::Slot(_) => Ok(()),
        }
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Holds::Key(h) => visit.call(h),
            Holds::Many(hs) => visit.call(hs),
            Holds::Slot(h) => visit.call(h),
        }
    }
}

/// The holdings of many keys, as [`Holds::Many`] keeps them.
fn holdings<'py>(py: Python<'py>, list: &Py<PyList>) -> PyResult<Vec<Bound<'py, PyHolding>>> {
    list.bind(py)
        .iter()
        .map(|h| Ok(h.cast_into::<PyHolding>()?))
        .collect()
}

/// `lock.hold(key)`, `lock.try_hold(key)`, `lock.hold_many(keys)`,
/// `slots.hold(owner)`: holds what it asks for while the block runs, and
/// gives the block its `Lease` (a list of them; a `HeldSlot`; `None` when
/// nothing was free). Entered once.
#[pyclass(module = "leasehold._native", name = "Hold")]
pub struct PyHold {
    asked: Asked,
    /// What is held, from the entry to the exit.
    holding: Option<Holds>,
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

impl PyHold {
    fn asking(asked: Asked) -> PyHold {
        PyHold {
            asked,
            holding: None,
            task: None,
            cancelling: 0,
            lost_cancel: false,
            exiting: false,
            entered: false,
        }
    }

    /// Takes the entry; `InvalidArgument` on a second.
    fn enter_once(&mut self, py: Python<'_>) -> PyResult<()> {
        if std::mem::replace(&mut self.entered, true) {
            return Err(errors::error(
                py,
                ErrorKind::InvalidArgument,
                format!("a {} is entered once; call it again", self.asked.form()),
            ));
        }
        Ok(())
    }
}

#[pymethods]
impl PyHold {
    /// `lock.hold(key, wait=...)`.
    #[new]
    #[pyo3(signature = (lock, key, wait=None))]
    fn new(lock: Py<PyLock>, key: Py<PyAny>, wait: Option<Py<PyAny>>) -> PyHold {
        PyHold::asking(Asked::Key { lock, key, wait })
    }

    /// `lock.try_hold(key)`.
    #[staticmethod]
    fn try_hold(lock: Py<PyLock>, key: Py<PyAny>) -> PyHold {
        PyHold::asking(Asked::Free { lock, key })
    }

    /// `lock.hold_many(keys, wait=...)`.
    #[staticmethod]
    #[pyo3(signature = (lock, keys, wait=None))]
    fn hold_many(lock: Py<PyLock>, keys: Py<PyAny>, wait: Option<Py<PyAny>>) -> PyHold {
        PyHold::asking(Asked::Many { lock, keys, wait })
    }

    /// `slots.hold(owner, preferred=None)`.
    #[staticmethod]
    #[pyo3(signature = (slots, owner, preferred=None))]
    fn slot(slots: Py<PySlots>, owner: Py<PyAny>, preferred: Option<Py<PyAny>>) -> PyHold {
        PyHold::asking(Asked::Slot {
            slots,
            owner,
            preferred,
        })
    }

    /// `Hold[T]` in annotations evaluated at run time.
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        static GENERIC_ALIAS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        GENERIC_ALIAS
            .import(cls.py(), "types", "GenericAlias")?
            .call1((cls, item))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.asked.traverse(&visit)?;
        if let Some(holding) = &self.holding {
            holding.traverse(&visit)?;
        }
        visit.call(&self.task)
    }

    fn __clear__(&mut self) {
        self.holding = None;
        self.task = None;
    }

    /// Asks and holds: an awaitable of what the block gets. Runs inside an
    /// asyncio task, which a loss cancels (LOCK-09).
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
                    format!(
                        "`async with {}` runs inside an asyncio task",
                        me.asked.form()
                    ),
                ));
            }
            me.cancelling = task
                .call_method0(pyo3::intern!(py, "cancelling"))?
                .extract()?;
            me.task = Some(task.unbind());
            me.asked.begin(py)?
        };
        match begun.cast::<Ready>() {
            // A grant the core made at once (a free key of the embedded
            // store) is admitted now: no await, no turn of the loop.
            Ok(ready) => {
                let got = ready.get().result(py)?.into_bound(py);
                Self::admit(slf, got)
            }
            Err(_) => {
                static ENTER_LATER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
                ENTER_LATER
                    .import(py, LATER, "_enter_later")?
                    .call1((slf, begun))
            }
        }
    }

    /// What the block gets once the begin answered `got`: its loss watched
    /// from now on; `None` when nothing was free. A hold lost already (its
    /// deadline came between the grant and now, LOCK-04) runs no block:
    /// it ends and the awaitable raises `LeaseLost`.
    #[pyo3(name = "_admit")]
    fn admit<'py>(slf: &Bound<'py, Self>, got: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let Some(held) = slf.borrow().asked.held(got)? else {
            return loop_driver::ready_value(py, py.None().into_bound(py));
        };
        if held.lost(py)? {
            let ended = held.end(py)?;
            return match ended.cast::<Ready>() {
                Ok(ready) => {
                    ready.get().result(py)?;
                    Err(errors::error(py, ErrorKind::Lost, LOST_BEFORE))
                }
                Err(_) => {
                    static REFUSE_LATER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
                    let lost = errors::error(py, ErrorKind::Lost, LOST_BEFORE);
                    REFUSE_LATER
                        .import(py, LATER, "_refuse_later")?
                        .call1((ended, lost.into_value(py)))
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
        held.watch_loss(py, &on_lost, event_loop)?;
        let given = held.given(py)?;
        slf.borrow_mut().holding = Some(held);
        loop_driver::ready_value(py, given)
    }

    /// On the event loop's thread, at a loss while held: cancels the
    /// block's task, once (of many keys, each lost may call).
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
        task.call_method1(pyo3::intern!(py, "cancel"), (self.asked.lost_message(),))?;
        Ok(())
    }

    /// Releases what is held: an awaitable that raises `LeaseLost` if
    /// anything was lost while held (LOCK-10), the block's exception as its
    /// cause; a cancellation the loss did not send stays `CancelledError`.
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
        let ended = holding.end(py)?;
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

    /// The blocking form, for code without an event loop (keys only):
    /// waits without the GIL; a hold lost before the block begins raises
    /// `LeaseLost`.
    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let held = {
            let mut me = slf.borrow_mut();
            me.enter_once(py)?;
            if loop_driver::has_running_loop(py)? {
                return Err(errors::error(
                    py,
                    ErrorKind::InvalidArgument,
                    format!(
                        "`with {}` would block the event loop; use `async with`",
                        me.asked.form()
                    ),
                ));
            }
            me.asked.begin_blocking(py)?
        };
        let Some(held) = held else {
            return Ok(py.None().into_bound(py));
        };
        if held.lost(py)? {
            held.end_blocking(py)?;
            return Err(errors::error(py, ErrorKind::Lost, LOST_BEFORE));
        }
        let given = held.given(py)?;
        slf.borrow_mut().holding = Some(held);
        Ok(given)
    }

    /// Releases what is held; raises `LeaseLost` if anything was lost while
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
        match holding.end_blocking(py) {
            Err(e) if e.is_instance(py, lease_lost(py)?) => {
                e.set_cause(py, exc.map(PyErr::from_value));
                Err(e)
            }
            other => other,
        }
    }
}
