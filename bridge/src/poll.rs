//! A core call's first poll, on the calling thread.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::runtime::Handle;

/// Polls `fut` once on this thread, inside the context of `runtime` (the
/// runtime its store's work runs on, where it registers its timers and
/// I/O), with `waker`. Nothing is allocated and no thread is woken; a
/// future that is not done is the caller's to move on (into a task of
/// `runtime`, or to a driver of its own). Poll a [`Caught`](crate::Caught)
/// future for a panic to be its `Internal` error.
pub fn poll_here<F>(runtime: &Handle, fut: Pin<&mut F>, waker: &Waker) -> Poll<F::Output>
where
    F: Future + ?Sized,
{
    let _entered = runtime.enter();
    fut.poll(&mut Context::from_waker(waker))
}

/// A waker that does nothing, for a first poll whose future, if it goes
/// on, is polled again as a task with the task's own waker.
pub fn noop_waker() -> &'static Waker {
    futures::task::noop_waker_ref()
}
