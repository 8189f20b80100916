//! Core futures awaited from Kotlin coroutines.
//!
//! An asynchronous export spawns its core future on the core's process
//! runtime and returns a [`Spawned`] future that only waits for that task:
//! uniffi polls it from the JVM, and the task's waker is what wakes the
//! coroutine. A panic of the core (a bug) becomes its `Internal` error
//! (ERR-03). Cancelling the awaiting coroutine drops the [`Spawned`], which
//! does what its [`OnDrop`] says.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use leasehold::{CancellationToken, Error, ErrorKind};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::errors::{self, NativeError};

/// What dropping a call's future before it is done does to its task.
pub(crate) enum OnDrop {
    /// The task is aborted (a call that has nothing to undo).
    Abort,
    /// This token of the core call is cancelled and the task runs on to its
    /// end: a call waiting in line leaves it (LOCK-18), and what a call got
    /// after its caller went away is let go (`leasehold::give_up`).
    Cancel(CancellationToken),
    /// The task runs on to its end (a release, LOCK-11).
    RunOn,
}

/// A core future running as a task of the process runtime.
pub(crate) struct Spawned<T> {
    task: JoinHandle<leasehold::Result<T>>,
    on_drop: OnDrop,
}

/// The runtime every call runs on: the core's, one per process.
pub(crate) fn runtime() -> Handle {
    leasehold::runtime::process_runtime()
}

/// Runs `work` on the process runtime; its future does `on_drop` when
/// dropped before the work is done.
pub(crate) fn spawn<T, F>(on_drop: OnDrop, work: F) -> Spawned<T>
where
    T: Send + 'static,
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
{
    Spawned {
        task: runtime().spawn(work),
        on_drop,
    }
}

/// Runs the work `make` builds with a fresh token, which dropping the
/// call's future cancels (`OnDrop::Cancel`).
pub(crate) fn cancellable<T, F>(make: impl FnOnce(CancellationToken) -> F) -> Spawned<T>
where
    T: Send + 'static,
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
{
    let token = CancellationToken::new();
    let work = make(token.clone());
    spawn(OnDrop::Cancel(token), work)
}

impl<T> Future for Spawned<T> {
    type Output = Result<T, NativeError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.task).poll(cx).map(|joined| {
            joined
                .unwrap_or_else(|e| Err(lost_task(e)))
                .map_err(NativeError::from)
        })
    }
}

impl<T> Drop for Spawned<T> {
    fn drop(&mut self) {
        match &self.on_drop {
            OnDrop::Abort => self.task.abort(),
            OnDrop::Cancel(token) => token.cancel(),
            OnDrop::RunOn => {}
        }
    }
}

/// A task that did not finish: it panicked (a bug) or the runtime went away.
fn lost_task(e: tokio::task::JoinError) -> Error {
    match e.try_into_panic() {
        Ok(payload) => errors::panicked(payload),
        Err(e) => Error::new(
            ErrorKind::Internal,
            format!("a task of the runtime failed: {e}"),
        ),
    }
}
