//! Core futures awaited from asyncio, polled on the event loop's own thread.
//!
//! A call polls its core future at once. Done (the embedded store mostly
//! is), the caller gets a finished asyncio future and nothing crosses a
//! thread. Not done, the future is kept by the event loop's [`LoopDriver`]:
//! its waker queues it and writes a byte to a socket the loop watches
//! (`loop.add_reader`), and the loop polls it again on its own thread. So a
//! core future wakes Python with one write, like a Rust task wakes its
//! executor, and no runtime thread ever waits for the GIL.
//!
//! Cancelling the awaiting Python task does what the call's [`Cancel`]
//! says: drops the core future (a call with nothing to undo), cancels the
//! core call's own token and lets it run on (a hold or acquire waiting in
//! line leaves it, LOCK-18), or lets it run to its end (a release, a close,
//! LOCK-11).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use leasehold::CancellationToken;
use leasehold::ErrorKind;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;
use tokio::runtime::Handle;

use crate::errors;
use crate::runtime;

/// A core future's answer, made into a Python object on the loop's thread.
type Convert = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>> + Send>;

/// A core future as the driver keeps it.
type Work = Pin<Box<dyn Future<Output = Convert> + Send>>;

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

struct Task {
    work: Work,
    waker: Waker,
    then: Then,
    cancel: Cancel,
}

/// What cancelling the awaiting Python task does to a core future.
pub enum Cancel {
    /// It is dropped (a call that has nothing to undo).
    Drop,
    /// It runs on to its end (a release, a close).
    Shield,
    /// This token of the core call is cancelled and the future runs on: a
    /// call waiting in line leaves it, at once on the embedded store (LOCK-18).
    Token(CancellationToken),
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

    /// Keeps a task that was polled with its waker and is not done. A wake
    /// that came meanwhile finds it: only this thread polls woken tasks.
    fn keep(&self, id: u64, task: Task) {
        self.tasks().insert(id, task);
    }

    fn poll(&self, py: Python<'_>, id: u64) {
        let task = self.tasks().remove(&id);
        let Some(mut task) = task else {
            return;
        };
        let polled = poll_now(&self.runtime, task.work.as_mut(), &task.waker);
        match polled {
            Poll::Ready(convert) => finish(py, task.then, convert),
            Poll::Pending => self.keep(id, task),
        }
    }

    /// The awaiting Python task gave up on task `id`: see [`Cancel`].
    fn cancelled(&self, py: Python<'_>, id: u64) {
        let task = self.tasks().remove(&id);
        let Some(mut task) = task else {
            return;
        };
        let Cancel::Token(token) = &task.cancel else {
            return release(task);
        };
        token.cancel();
        task.cancel = Cancel::Shield;
        match poll_now(&self.runtime, task.work.as_mut(), &task.waker) {
            Poll::Ready(convert) => finish(py, task.then, convert),
            Poll::Pending => self.keep(id, task),
        }
    }

    /// Stops keeping the task `id`: drops it, or moves it to the runtime if shielded.
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

/// Lets go of a task nobody waits for; shielded work runs on to its end,
/// and a cancellable call is cancelled and runs on to leave the line.
fn release(task: Task) {
    if let Cancel::Token(token) = &task.cancel {
        token.cancel();
    }
    if !matches!(task.cancel, Cancel::Drop) {
        let work = task.work;
        runtime::handle().spawn(async move {
            drop(work.await);
        });
    }
}

fn finish(py: Python<'_>, then: Then, convert: Convert) {
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
            let _ = settle(py, future, convert(py));
        }
        Then::Call(callback) => {
            if let Ok(value) = convert(py) {
                if let Err(e) = callback.call1(py, (value,)) {
                    e.write_unraisable(py, None);
                }
            }
        }
    }
}

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

fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    GET_RUNNING_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()
        .map_err(|_| {
            errors::error(
                py,
                ErrorKind::InvalidArgument,
                "this call is awaited from a running asyncio event loop",
            )
        })
}

/// The running loop and its driver, made (and watched by the loop) on first use.
fn current(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Py<LoopDriver>)> {
    let event_loop = running_loop(py)?;
    let pid = std::process::id();
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

fn converted<T>(out: leasehold::Result<T>) -> Convert
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    Box::new(move |py| match out {
        Ok(value) => value.into_bound_py_any(py),
        Err(e) => Err(errors::to_py(py, e)),
    })
}

/// Polls `work` once, in the context of `runtime`, with `waker`. A panic of
/// the core (a bug) becomes its `Internal` error rather than a task that
/// never ends (ERR-03).
fn poll_now(
    runtime: &Handle,
    work: Pin<&mut (dyn Future<Output = Convert> + Send)>,
    waker: &Waker,
) -> Poll<Convert> {
    let _context = runtime.enter();
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        work.poll(&mut Context::from_waker(waker))
    }))
    .unwrap_or_else(|_| {
        Poll::Ready(Box::new(|py| {
            Err(errors::error(
                py,
                ErrorKind::Internal,
                "a Leasehold call panicked",
            ))
        }))
    })
}

/// An asyncio awaitable of the core future `fut` (see the module's doc);
/// `cancel` says what cancelling the awaiting task does to it. With `on`,
/// the future runs as a task of that runtime instead (a test store's, see
/// `testing`).
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
            let keep = !matches!(cancel, Cancel::Drop);
            bridge(py, SpawnedCall::spawn(runtime, fut, keep), cancel)
        }
        None => bridge(py, fut, cancel),
    }
}

/// A core future run as a task of another runtime; dropped, it aborts the
/// task unless told to let it run on.
struct SpawnedCall<T> {
    task: tokio::task::JoinHandle<leasehold::Result<T>>,
    run_on: bool,
}

impl<T: Send + 'static> SpawnedCall<T> {
    fn spawn<F>(runtime: &Handle, fut: F, run_on: bool) -> SpawnedCall<T>
    where
        F: Future<Output = leasehold::Result<T>> + Send + 'static,
    {
        SpawnedCall {
            task: runtime.spawn(fut),
            run_on,
        }
    }
}

impl<T> Future for SpawnedCall<T> {
    type Output = leasehold::Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.task)
            .poll(cx)
            .map(|joined| joined.unwrap_or_else(|e| Err(runtime::lost_task(e))))
    }
}

impl<T> Drop for SpawnedCall<T> {
    fn drop(&mut self) {
        if !self.run_on {
            self.task.abort();
        }
    }
}

fn bridge<'py, F, T>(py: Python<'py>, fut: F, cancel: Cancel) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (event_loop, driver) = current(py)?;
    let future = event_loop.call_method0(pyo3::intern!(py, "create_future"))?;
    let (id, waker) = driver.get().waker();
    let mut work: Work = Box::pin(async move { converted(fut.await) });
    if let Poll::Ready(convert) = poll_now(&driver.get().runtime, work.as_mut(), &waker) {
        settle(py, &future, convert(py))?;
        return Ok(future);
    }
    // Shielded work runs on whether or not anybody waits: it needs no hook.
    let hook = match cancel {
        Cancel::Shield => None,
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
    driver.get().keep(id, task);
    Ok(future)
}

/// A watch kept by the running loop: calls `callback(value)` on the loop's
/// thread when `fut` completes (on the loop's next turn if it is complete
/// already), unless [`Watch::stop`] came first.
pub fn watch<F, T>(py: Python<'_>, fut: F, callback: Py<PyAny>) -> PyResult<Watch>
where
    F: Future<Output = T> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (event_loop, driver) = current(py)?;
    let (id, waker) = driver.get().waker();
    let mut work: Work = Box::pin(async move { converted(Ok(fut.await)) });
    if let Poll::Ready(convert) = poll_now(&driver.get().runtime, work.as_mut(), &waker) {
        // Done already: called on the loop's next turn, not from inside the
        // caller (for a hold, once its block has begun, as a later loss is).
        event_loop.call_method1(pyo3::intern!(py, "call_soon"), (callback, convert(py)?))?;
        return Ok(Watch { task: None });
    }
    let task = Task {
        work,
        waker,
        then: Then::Call(callback),
        cancel: Cancel::Drop,
    };
    driver.get().keep(id, task);
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
