//! Python's own event-loop driver: core futures awaited from asyncio,
//! polled on the event loop's own thread.
//!
//! A call polls its core future at once, on the calling thread inside the
//! runtime's context (the bridge's `poll_here`). Done (the embedded store
//! mostly is), the caller gets a [`Ready`] awaitable of the answer (no
//! asyncio future), nothing crosses a thread, and the running loop is not
//! even looked up. Not done, the future is polled again with a waker of the
//! running loop's [`LoopDriver`] (`InvalidArgument` without a running
//! loop) and parked with it: its waker queues it and writes a byte to a
//! socket the loop watches (`loop.add_reader`), and the loop polls it again
//! on its own thread. So a core future wakes Python with one write, like a
//! Rust task wakes its executor, and no runtime thread ever waits for the
//! GIL. A panic of the core (a bug) is its `Internal` error (ERR-03, the
//! bridge's `Caught`).
//!
//! Cancelling the awaiting Python task does what the call's
//! [`Cancel`] says: drops the core future (`Drop`, a call with nothing to
//! undo), fires the core call's own token and lets it run on (`Token`: a
//! hold or acquire waiting in line leaves it, LOCK-18), or lets it run to
//! its end (`RunOn`: a release, a close, LOCK-11).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Wake, Waker};

use leasehold::ErrorKind;
use leasehold_bridge::{noop_waker, poll_here, Cancel, Caught, Spawned};
use pyo3::exceptions::{PyRuntimeWarning, PyStopIteration};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;
use tokio::runtime::Handle;

use crate::errors;
use crate::runtime;

/// A core future's value, made into a Python object on the loop's thread.
type Convert = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>> + Send>;

/// A core future as the driver parks it: its value to convert, or its
/// error (a panic of it is `Internal`).
type Work = Caught<dyn Future<Output = leasehold::Result<Convert>> + Send>;

/// What the driver does with a finished future's answer.
enum Then {
    /// Sets it as the result of this asyncio future (unless it was
    /// cancelled), taking off the future's cancel hook first.
    Resolve {
        future: Py<PyAny>,
        hook: Option<Py<PyAny>>,
    },
    /// Calls this with it.
    Call(Py<PyAny>),
}

/// A core future parked with the driver, and what to do with its outcome.
struct Task {
    work: Work,
    waker: Waker,
    then: Then,
    /// What cancelling the awaiting Python task does to it.
    cancel: Cancel,
}

/// What the wakers share with the driver: the queue of woken tasks and the
/// socket that wakes the loop.
struct WakeQueue {
    woken: Mutex<Woken>,
    writer: UnixStream,
}

/// The woken tasks, and whether a byte was written for them that the loop
/// has not read yet: one lock orders both, so a wake never finds the flag set
/// with no byte left to wake the loop.
#[derive(Default)]
struct Woken {
    ids: Vec<u64>,
    signalled: bool,
}

impl WakeQueue {
    fn woken(&self) -> std::sync::MutexGuard<'_, Woken> {
        self.woken.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self, id: u64) {
        let signal = {
            let mut woken = self.woken();
            woken.ids.push(id);
            !std::mem::replace(&mut woken.signalled, true)
        };
        if signal {
            // Full means a wake-up is pending already.
            let _ = (&self.writer).write(&[1]);
        }
    }
}

struct TaskWaker {
    id: u64,
    shared: Arc<WakeQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.shared.wake(self.id);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.shared.wake(self.id);
    }
}

/// The core futures one event loop waits for, polled on its thread.
#[pyclass(module = "leasehold._native", name = "LoopDriver", frozen)]
pub struct LoopDriver {
    shared: Arc<WakeQueue>,
    /// The process's runtime, in whose context the futures are polled.
    runtime: Handle,
    reader: UnixStream,
    tasks: Mutex<HashMap<u64, Task>>,
    next_id: AtomicU64,
}

#[pymethods]
impl LoopDriver {
    /// Called by the loop when the socket is readable: polls the woken tasks.
    fn run_woken(&self, py: Python<'_>) {
        // Each signal writes one byte; a full read means more may be queued.
        // Read before the flag is cleared: a byte written after it is for
        // tasks this call does not take, and stays to wake the loop again.
        let mut sink = [0u8; 64];
        while matches!((&self.reader).read(&mut sink), Ok(n) if n == sink.len()) {}
        let woken = {
            let mut woken = self.shared.woken();
            woken.signalled = false;
            std::mem::take(&mut woken.ids)
        };
        for id in woken {
            self.poll(py, id);
        }
    }
}

impl LoopDriver {
    fn new() -> std::io::Result<LoopDriver> {
        let (reader, writer) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        Ok(LoopDriver {
            shared: Arc::new(WakeQueue {
                woken: Mutex::new(Woken::default()),
                writer,
            }),
            reader,
            runtime: runtime::handle(),
            tasks: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        })
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Task>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new task's id and the waker that queues it.
    fn waker(&self) -> (u64, Waker) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            shared: self.shared.clone(),
        }));
        (id, waker)
    }

    /// Parks a task that was polled with its waker and is not done. A wake
    /// that came meanwhile finds it: only this thread polls woken tasks.
    fn park(&self, id: u64, task: Task) {
        self.tasks().insert(id, task);
    }

    /// Polls the parked task `id` once more: finished, or parked again.
    fn poll(&self, py: Python<'_>, id: u64) {
        let task = self.tasks().remove(&id);
        let Some(mut task) = task else {
            return;
        };
        match poll_here(&self.runtime, Pin::new(&mut task.work), &task.waker) {
            Poll::Ready(outcome) => finish(py, task.then, outcome),
            Poll::Pending => self.park(id, task),
        }
    }

    /// The awaiting Python task gave up on task `id`: see [`Cancel`]. A
    /// call with a token has it fired and runs on to leave the line, still
    /// answering its future (at once on the embedded store).
    fn cancelled(&self, py: Python<'_>, id: u64) {
        let task = self.tasks().remove(&id);
        let Some(mut task) = task else {
            return;
        };
        if !matches!(task.cancel, Cancel::Token(_)) {
            return release(task);
        }
        task.cancel.give_up();
        task.cancel = Cancel::RunOn;
        match poll_here(&self.runtime, Pin::new(&mut task.work), &task.waker) {
            Poll::Ready(outcome) => finish(py, task.then, outcome),
            Poll::Pending => self.park(id, task),
        }
    }

    /// Unparks the task `id` and lets it go ([`release`]).
    pub fn forget(&self, id: u64) {
        // Taken out first: dropping it may run Python code that calls back here.
        let task = self.tasks().remove(&id);
        if let Some(task) = task {
            release(task);
        }
    }
}

impl Drop for LoopDriver {
    fn drop(&mut self) {
        let tasks: Vec<Task> = self.tasks().drain().map(|(_, t)| t).collect();
        tasks.into_iter().for_each(release);
    }
}

/// Lets go of a task nobody waits for, as its [`Cancel`] says: dropped,
/// or moved to the runtime to run on to its end (its token fired first).
fn release(task: Task) {
    if task.cancel.give_up() {
        let work = task.work;
        runtime::handle().spawn(async move {
            drop(work.await);
        });
    }
}

/// The Python object of a finished task's outcome, or its exception.
fn answer(py: Python<'_>, outcome: leasehold::Result<Convert>) -> PyResult<Bound<'_, PyAny>> {
    outcome
        .map_err(|e| errors::to_py(py, e))
        .and_then(|convert| convert(py))
}

/// Does what `then` says with a finished task's outcome.
fn finish(py: Python<'_>, then: Then, outcome: leasehold::Result<Convert>) {
    match then {
        Then::Resolve { future, hook } => {
            let future = future.bind(py);
            if future
                .call_method0(pyo3::intern!(py, "cancelled"))
                .and_then(|c| c.is_truthy())
                .unwrap_or(true)
            {
                // Nobody waits: the answer (a Holding, a lease) is dropped and let go.
                return;
            }
            if let Some(hook) = hook {
                // Done, it needs no hook: spare the loop a call.
                let _ = future.call_method1(pyo3::intern!(py, "remove_done_callback"), (hook,));
            }
            let _ = settle(py, future, answer(py, outcome));
        }
        Then::Call(callback) => {
            if let Ok(value) = answer(py, outcome) {
                if let Err(e) = callback.call1(py, (value,)) {
                    e.write_unraisable(py, None);
                }
            }
        }
    }
}

/// Sets `answer` as the result, or the exception, of the asyncio `future`.
fn settle<'py>(
    py: Python<'py>,
    future: &Bound<'py, PyAny>,
    answer: PyResult<Bound<'py, PyAny>>,
) -> PyResult<()> {
    match answer {
        Ok(value) => future.call_method1(pyo3::intern!(py, "set_result"), (value,))?,
        Err(e) => future.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),))?,
    };
    Ok(())
}

/// The awaitable of a call the core answered at its first poll (most calls
/// on the embedded store): awaiting it gives the answer, or raises its
/// error, at once. It spares a finished call the asyncio future (made,
/// settled, then awaited through the loop's methods) that a call still
/// waiting gets. Like a finished future, it can be awaited more than once.
/// One never awaited warns (`RuntimeWarning`) when it goes, as a coroutine
/// never awaited does: the call ran, and its answer or error is dropped.
#[pyclass(module = "leasehold._native", name = "Ready", frozen)]
pub struct Ready {
    outcome: PyResult<Py<PyAny>>,
    /// Whether the answer was read: one never read (a call not awaited)
    /// warns when it goes, as a coroutine never awaited does.
    read: AtomicBool,
}

impl Ready {
    fn new(outcome: PyResult<Py<PyAny>>) -> Ready {
        Ready {
            outcome,
            read: AtomicBool::new(false),
        }
    }
}

#[pymethods]
impl Ready {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Ends the await with the answer (`StopIteration(answer)`), or raises
    /// its error. `None` ends it with no exception at all, and any other
    /// answer but a tuple is handed over as the `StopIteration`'s value as
    /// it is, which the interpreter takes without making the exception
    /// object; a tuple, which it would read as the exception's arguments,
    /// goes inside one.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let value = self.result(py)?;
        if value.is_none(py) {
            return Ok(None);
        }
        let stop = py.get_type::<PyStopIteration>();
        Err(if value.bind(py).is_instance_of::<PyTuple>() {
            PyErr::from_type(stop, (value,))
        } else {
            PyErr::from_type(stop, value)
        })
    }

    /// The answer, or raises its error: what awaiting it gives, without the
    /// await (and the `StopIteration` that ends one).
    pub(crate) fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.read.store(true, Ordering::Relaxed);
        match &self.outcome {
            Ok(value) => Ok(value.clone_ref(py)),
            Err(e) => Err(e.clone_ref(py)),
        }
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        if *self.read.get_mut() {
            return;
        }
        Python::attach(|py| {
            let what = match &self.outcome {
                Ok(_) => c"a leasehold call was never awaited: its answer is dropped",
                Err(_) => c"a leasehold call was never awaited: its error is dropped",
            };
            let warning = py.get_type::<PyRuntimeWarning>();
            if let Err(e) = PyErr::warn(py, &warning, what, 1) {
                // Warnings made errors: nobody can catch it here.
                e.write_unraisable(py, None);
            }
        });
    }
}

/// Drops the task of an asyncio future that was cancelled.
#[pyclass(module = "leasehold._native", name = "CancelHook", frozen)]
struct CancelHook {
    driver: Py<LoopDriver>,
    id: u64,
}

#[pymethods]
impl CancelHook {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = future.py();
        if future
            .call_method0(pyo3::intern!(py, "cancelled"))?
            .is_truthy()?
        {
            self.driver.get().cancelled(py, self.id);
        }
        Ok(())
    }
}

/// The driver of each thread's running loop.
struct Current {
    event_loop: Py<PyAny>,
    driver: Py<LoopDriver>,
    pid: u32,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// `asyncio.get_running_loop`.
fn get_running_loop(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    GET_RUNNING_LOOP.import(py, "asyncio", "get_running_loop")
}

/// Whether the thread runs an asyncio loop (where a blocking call is refused).
pub fn has_running_loop(py: Python<'_>) -> PyResult<bool> {
    Ok(get_running_loop(py)?.call0().is_ok())
}

/// The thread's running asyncio loop; `InvalidArgument` without one.
fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    get_running_loop(py)?.call0().map_err(|_| {
        errors::error(
            py,
            ErrorKind::InvalidArgument,
            "this call is awaited from a running asyncio event loop",
        )
    })
}

/// The running loop and its driver, made (and watched by the loop) on first use.
fn current(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Py<LoopDriver>)> {
    driver_of(py, running_loop(py)?)
}

/// `event_loop`, the thread's running loop, and its driver, made (and
/// watched by the loop) on first use.
fn driver_of<'py>(
    py: Python<'py>,
    event_loop: Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, Py<LoopDriver>)> {
    let pid = leasehold::runtime::process_id();
    let known = CURRENT.with_borrow(|c| {
        c.as_ref()
            .filter(|c| c.pid == pid && c.event_loop.bind(py).is(&event_loop))
            .map(|c| c.driver.clone_ref(py))
    });
    if let Some(driver) = known {
        return Ok((event_loop, driver));
    }
    let made = LoopDriver::new().map_err(|e| {
        errors::error(
            py,
            ErrorKind::Internal,
            format!("cannot make the loop's wake-up socket: {e}"),
        )
    })?;
    let fd = made.reader.as_raw_fd();
    let driver = Py::new(py, made)?;
    event_loop.call_method1(
        pyo3::intern!(py, "add_reader"),
        (fd, driver.bind(py).getattr(pyo3::intern!(py, "run_woken"))?),
    )?;
    CURRENT.with_borrow_mut(|c| {
        *c = Some(Current {
            event_loop: event_loop.clone().unbind(),
            driver: driver.clone_ref(py),
            pid,
        })
    });
    Ok((event_loop, driver))
}

/// A core future's value, to be made a Python object on the loop's thread.
fn converted<T>(value: T) -> Convert
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    Box::new(move |py| value.into_bound_py_any(py))
}

/// An asyncio awaitable of the core future `fut` (see the module's doc);
/// `cancel` says what cancelling the awaiting task does to it. With `on`,
/// the future runs as a task of that runtime instead (a test store's, see
/// `testing`), which the loop only waits for (the bridge's
/// `Spawned::on_task`).
pub fn awaitable<'py, F, T>(
    py: Python<'py>,
    on: Option<&Handle>,
    cancel: Cancel,
    fut: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    match on {
        Some(runtime) => {
            let task = Spawned::on_task(runtime.clone(), cancel.clone(), fut);
            on_loop(py, task, cancel)
        }
        None => on_loop(py, fut, cancel),
    }
}

/// [`awaitable`] of `fut` polled on the running loop's thread: at once,
/// then parked with the loop's driver until it is done.
fn on_loop<'py, F, T>(py: Python<'py>, fut: F, cancel: Cancel) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let mut work: Work = Caught::new(Box::pin(async move { fut.await.map(converted) }));
    // A call done at its first poll needs no loop: it is polled before the
    // loop is looked up (asyncio's lookup reads the process id, a system
    // call on Python 3.11) and with no waker of the driver's.
    if let Poll::Ready(outcome) = poll_here(&runtime::handle(), Pin::new(&mut work), noop_waker()) {
        return ready(py, outcome);
    }
    let (event_loop, driver) = current(py)?;
    let (id, waker) = driver.get().waker();
    // Polled again with the driver's waker before it is parked, so that
    // nothing that happened since the first poll goes unseen.
    if let Poll::Ready(outcome) = poll_here(&driver.get().runtime, Pin::new(&mut work), &waker) {
        return ready(py, outcome);
    }
    let future = event_loop.call_method0(pyo3::intern!(py, "create_future"))?;
    // Work that runs on whether or not anybody waits needs no hook.
    let hook = match cancel {
        Cancel::RunOn => None,
        Cancel::Drop | Cancel::Token(_) => {
            let hook = CancelHook {
                driver: driver.clone_ref(py),
                id,
            };
            let hook = Py::new(py, hook)?.into_any();
            future.call_method1(
                pyo3::intern!(py, "add_done_callback"),
                (hook.clone_ref(py),),
            )?;
            Some(hook)
        }
    };
    let task = Task {
        work,
        waker,
        then: Then::Resolve {
            future: future.clone().unbind(),
            hook,
        },
        cancel,
    };
    driver.get().park(id, task);
    Ok(future)
}

/// The [`Ready`] awaitable of `value`: what an answer the caller has at once
/// is awaited as.
pub fn ready_value<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    Ok(Bound::new(py, Ready::new(Ok(value.unbind())))?.into_any())
}

/// The [`Ready`] awaitable of a call's outcome.
fn ready<'py>(py: Python<'py>, outcome: leasehold::Result<Convert>) -> PyResult<Bound<'py, PyAny>> {
    let ready = Ready::new(answer(py, outcome).map(Bound::unbind));
    Ok(Bound::new(py, ready)?.into_any())
}

/// A watch parked with the running loop's driver: calls `callback(value)`
/// on the loop's thread when `fut` completes (on the loop's next turn if it
/// is complete already), unless [`Watch::stop`] came first. `event_loop`,
/// when the caller knows it, is the running loop (a task's): then it is not
/// looked up, which asyncio does with a system call on Python 3.11.
pub fn watch<F, T>(
    py: Python<'_>,
    event_loop: Option<Bound<'_, PyAny>>,
    fut: F,
    callback: Py<PyAny>,
) -> PyResult<Watch>
where
    F: Future<Output = T> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (event_loop, driver) = match event_loop {
        Some(given) => driver_of(py, given)?,
        None => current(py)?,
    };
    let (id, waker) = driver.get().waker();
    let mut work: Work = Caught::new(Box::pin(async move { Ok(converted(fut.await)) }));
    if let Poll::Ready(outcome) = poll_here(&driver.get().runtime, Pin::new(&mut work), &waker) {
        // Done already: called on the loop's next turn, not from inside the
        // caller (for a hold, once its block has begun, as a later loss is).
        let value = answer(py, outcome)?;
        event_loop.call_method1(pyo3::intern!(py, "call_soon"), (callback, value))?;
        return Ok(Watch { task: None });
    }
    let task = Task {
        work,
        waker,
        then: Then::Call(callback),
        cancel: Cancel::Drop,
    };
    driver.get().park(id, task);
    Ok(Watch {
        task: Some((driver, id)),
    })
}

/// A watch of [`watch`].
pub struct Watch {
    task: Option<(Py<LoopDriver>, u64)>,
}

impl Watch {
    /// Stops the watch: its future is dropped, its callback never called.
    pub fn stop(self) {
        if let Some((driver, id)) = self.task {
            driver.get().forget(id);
        }
    }
}
