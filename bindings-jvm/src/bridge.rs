//! Core futures awaited from Kotlin coroutines.
//!
//! An asynchronous export returns a [`Spawned`] future over its core
//! future. uniffi polls it from the JVM's calling thread; its first poll
//! runs the core future right there, inside the process runtime's context,
//! so that a call the core answers at once (a free key of the embedded
//! store, a release) makes no thread hop and no callback into the JVM. A
//! core future still pending after that first poll goes on as a task of
//! the core's process runtime, never of a runtime of uniffi's own, and the
//! [`Spawned`] only waits for that task: the task's waker is what wakes the
//! coroutine. A panic of the core (a bug) becomes its `Internal` error
//! (ERR-03). Cancelling the awaiting coroutine drops the [`Spawned`], which
//! does what its [`OnDrop`] says.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::task::noop_waker_ref;
use leasehold::{CancellationToken, Error, ErrorKind};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::errors::{self, NativeError};

/// What dropping a call's future before it is done does to its work.
pub(crate) enum OnDrop {
    /// The work is dropped, or its task aborted (a call that has nothing to undo).
    Abort,
    /// This token of the core call is cancelled and the work runs on to its
    /// end: a call waiting in line leaves it (LOCK-18), and what a call got
    /// after its caller went away is let go (`leasehold::give_up`). Work
    /// never polled has started nothing and is dropped.
    Cancel(CancellationToken),
    /// The work runs on to its end, as a task (a release, LOCK-11).
    RunOn,
}

/// A call's work, boxed so that it can move into a task after its first poll.
type Work<T> = Pin<Box<dyn Future<Output = leasehold::Result<T>> + Send>>;

/// Where a call's work is.
enum State<T> {
    /// Not polled yet.
    Fresh(Work<T>),
    /// Pending at its first poll: a task of the process runtime.
    Running(JoinHandle<leasehold::Result<T>>),
    /// Its outcome was returned.
    Done,
}

/// A core future run on the calling thread first, then as a task of the
/// process runtime if it has to wait.
pub(crate) struct Spawned<T: Send + 'static> {
    state: State<T>,
    on_drop: OnDrop,
}

/// The runtime every call runs on: the core's, one per process.
pub(crate) fn runtime() -> Handle {
    leasehold::runtime::process_runtime()
}

/// Runs `work` (its first poll on the caller's thread); its future does
/// `on_drop` when dropped before the work is done.
pub(crate) fn spawn<T, F>(on_drop: OnDrop, work: F) -> Spawned<T>
where
    T: Send + 'static,
    F: Future<Output = leasehold::Result<T>> + Send + 'static,
{
    Spawned {
        state: State::Fresh(Box::pin(work)),
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

impl<T: Send + 'static> Future for Spawned<T> {
    type Output = Result<T, NativeError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let State::Fresh(work) = &mut self.state {
            let runtime = runtime();
            let first = {
                let _entered = runtime.enter();
                let mut quiet = Context::from_waker(noop_waker_ref());
                catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(&mut quiet)))
            };
            match first {
                Ok(Poll::Pending) => {
                    let State::Fresh(work) = std::mem::replace(&mut self.state, State::Done) else {
                        unreachable!("the state was Fresh");
                    };
                    self.state = State::Running(runtime.spawn(work));
                }
                Ok(Poll::Ready(outcome)) => {
                    self.state = State::Done;
                    return Poll::Ready(outcome.map_err(NativeError::from));
                }
                Err(panic) => {
                    self.state = State::Done;
                    return Poll::Ready(Err(errors::panicked(panic).into()));
                }
            }
        }
        let State::Running(task) = &mut self.state else {
            return Poll::Ready(Err(Error::new(
                ErrorKind::Internal,
                "a call's future was polled after it ended",
            )
            .into()));
        };
        let Poll::Ready(joined) = Pin::new(task).poll(cx) else {
            return Poll::Pending;
        };
        self.state = State::Done;
        Poll::Ready(
            joined
                .unwrap_or_else(|e| Err(lost_task(e)))
                .map_err(NativeError::from),
        )
    }
}

impl<T: Send + 'static> Drop for Spawned<T> {
    fn drop(&mut self) {
        match (
            std::mem::replace(&mut self.state, State::Done),
            &self.on_drop,
        ) {
            (State::Done, _) => {}
            (State::Fresh(work), OnDrop::RunOn) => drop(runtime().spawn(work)),
            (State::Fresh(_), OnDrop::Abort | OnDrop::Cancel(_)) => {}
            (State::Running(task), OnDrop::Abort) => task.abort(),
            (State::Running(_), OnDrop::Cancel(token)) => token.cancel(),
            (State::Running(_), OnDrop::RunOn) => {}
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
