//! Where the native module's futures run, and how blocking calls wait.
//!
//! Background work (renewals, the embedded store's timers, releases from
//! drops) runs on the core's one runtime per process
//! ([`leasehold::runtime::process_runtime`], made again in a child after
//! `fork()`). Blocking calls release the GIL while they wait and wake now
//! and then to let Python handle signals, so Ctrl-C leaves the line.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use leasehold::ErrorKind;
use leasehold_bridge::{noop_waker, poll_here, Cancel, Spawned};
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
    run(py, &handle, std::pin::pin!(fut))
}

/// [`wait_core`] for work that must finish once begun (a release, a
/// close): if it has to wait, it goes on as a task of its own, which
/// Ctrl-C does not stop (the bridge's `Spawned` under `Cancel::RunOn`).
pub fn wait_run_on<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let handle = blocking_runtime(py)?;
    let call = Spawned::new(handle.clone(), Cancel::RunOn, fut);
    run(py, &handle, std::pin::pin!(call))?.map_err(|e| errors::to_py(py, e))
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

/// Polls `fut` once on this thread, then, if it must wait, [`block`]s on it.
fn run<F>(py: Python<'_>, handle: &Handle, mut fut: Pin<&mut F>) -> PyResult<F::Output>
where
    F: Future + Send + ?Sized,
    F::Output: Send,
{
    if let Poll::Ready(out) = poll_here(handle, fut.as_mut(), noop_waker()) {
        return Ok(out);
    }
    block(py, handle, fut)
}

/// Waits for `fut` without the GIL, waking every [`SIGNAL_CHECK`] to let
/// Python handle signals; a signal's exception drops `fut`.
fn block<F>(py: Python<'_>, handle: &Handle, mut fut: Pin<&mut F>) -> PyResult<F::Output>
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
