//! Where the native module's futures run, and how blocking calls wait.
//!
//! Background work (renewals, the embedded store's timers, releases from
//! drops) runs on the core's one runtime per process
//! ([`leasehold::runtime::process_runtime`], made again in a child after
//! `fork()`). Blocking calls release the GIL while they wait and wake now
//! and then to let Python handle signals, so Ctrl-C leaves the line.

use std::future::Future;
use std::task::{Context, Poll};
use std::time::Duration;

use leasehold::{Error, ErrorKind};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::errors;

/// How often a blocking call wakes to let Python handle signals.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// The runtime of the calling task, else the core's process runtime.
pub fn handle() -> Handle {
    Handle::try_current().unwrap_or_else(|_| leasehold::runtime::process_runtime())
}

/// Runs `fut` to its end while this thread waits without the GIL, handling
/// signals meanwhile: a `KeyboardInterrupt` drops `fut`. A future that is
/// done at its first poll costs no wait at all.
pub fn wait<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let handle = blocking_runtime(py)?;
    let mut fut = std::pin::pin!(fut);
    if let Poll::Ready(out) = poll_once(&handle, fut.as_mut()) {
        return Ok(out);
    }
    block(py, &handle, fut)
}

/// [`wait`] for work that must finish once begun (a release): if it has to
/// wait, it goes on as a task of its own, which Ctrl-C does not stop.
pub fn wait_shielded<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = blocking_runtime(py)?;
    let mut fut = Box::pin(fut);
    if let Poll::Ready(out) = poll_once(&handle, fut.as_mut()) {
        return Ok(out);
    }
    let task = handle.spawn(fut);
    block(py, &handle, std::pin::pin!(task))?.map_err(|e| errors::to_py(py, lost_task(e)))
}

fn blocking_runtime(py: Python<'_>) -> PyResult<Handle> {
    if leasehold::runtime::in_async_context() {
        return Err(errors::error(
            py,
            ErrorKind::InvalidArgument,
            "a blocking call from inside the runtime",
        ));
    }
    Ok(handle())
}

fn poll_once<F: Future + ?Sized>(handle: &Handle, fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let _context = handle.enter();
    fut.poll(&mut Context::from_waker(std::task::Waker::noop()))
}

fn block<F>(py: Python<'_>, handle: &Handle, mut fut: std::pin::Pin<&mut F>) -> PyResult<F::Output>
where
    F: Future + Send + ?Sized,
    F::Output: Send,
{
    loop {
        let step = py.detach(|| {
            handle.block_on(async { tokio::time::timeout(SIGNAL_CHECK, fut.as_mut()).await.ok() })
        });
        match step {
            Some(out) => return Ok(out),
            None => py.check_signals()?,
        }
    }
}

/// [`wait`] for a core call: its error raised as a `leasehold` exception.
pub fn wait_core<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = leasehold::Result<T>> + Send,
    T: Send,
{
    wait(py, fut)?.map_err(|e| errors::to_py(py, e))
}

/// A task of the runtime that ended without an answer (it panicked).
pub fn lost_task(e: tokio::task::JoinError) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("a task of the runtime failed: {e}"),
    )
}
