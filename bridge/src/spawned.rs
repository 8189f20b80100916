//! A call's future that polls first on the caller's thread, then waits for
//! a task of the runtime.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use leasehold::{Error, ErrorKind, Result};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::{lost_task, noop_waker, poll_here, Cancel, Caught};

/// The work of a call, boxed once so that it can move into a task.
type Work<T> = Caught<dyn Future<Output = Result<T>> + Send>;

/// Where a call's work is.
enum State<T> {
    /// Not polled yet.
    Fresh(Work<T>),
    /// Pending at its first poll, or spawned at once: a task of the runtime.
    Running(JoinHandle<Result<T>>),
    /// Its outcome was returned.
    Done,
}

/// A core call's future for an executor that is not the core's (uniffi's
/// `suspend` functions, Python's event loop). Its first poll runs the work
/// on the polling thread, inside the runtime's context ([`poll_here`]):
/// a call the core answers at once makes no thread hop. Work still pending
/// after it goes on as a task of the runtime, and later polls only wait for
/// that task, whose waker wakes the caller. A panic of the work is its
/// `Internal` error. Dropped before its outcome was returned, it does what
/// its [`Cancel`] says: work never polled started nothing and is dropped
/// (or, under [`Cancel::RunOn`], spawned to run); a task is aborted under
/// [`Cancel::Drop`], else left to run on (its token fired under
/// [`Cancel::Token`]).
pub struct Spawned<T: Send + 'static> {
    state: State<T>,
    runtime: Handle,
    cancel: Cancel,
}

impl<T: Send + 'static> Spawned<T> {
    /// The call whose work is `work`, run on `runtime`, first polled by this
    /// future's first poll.
    pub fn new<F>(runtime: Handle, cancel: Cancel, work: F) -> Spawned<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
    {
        Spawned {
            state: State::Fresh(Caught::new(Box::pin(work))),
            runtime,
            cancel,
        }
    }

    /// The call whose work is `work`, spawned at once on `runtime`: every
    /// poll of it runs there, none on the caller's thread (the test stores
    /// of a virtual clock, whose calls all run on the clock's runtime).
    pub fn on_task<F>(runtime: Handle, cancel: Cancel, work: F) -> Spawned<T>
    where
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let task = runtime.spawn(Caught::new(Box::pin(work)));
        Spawned {
            state: State::Running(task),
            runtime,
            cancel,
        }
    }
}

impl<T: Send + 'static> Future for Spawned<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = &mut *self;
        if let State::Fresh(work) = &mut this.state {
            if let Poll::Ready(outcome) = poll_here(&this.runtime, Pin::new(work), noop_waker()) {
                this.state = State::Done;
                return Poll::Ready(outcome);
            }
            let State::Fresh(work) = std::mem::replace(&mut this.state, State::Done) else {
                unreachable!("the state was Fresh");
            };
            this.state = State::Running(this.runtime.spawn(work));
        }
        let State::Running(task) = &mut this.state else {
            return Poll::Ready(Err(Error::new(
                ErrorKind::Internal,
                "a call's future was polled after it ended",
            )));
        };
        let Poll::Ready(joined) = Pin::new(task).poll(cx) else {
            return Poll::Pending;
        };
        this.state = State::Done;
        Poll::Ready(joined.unwrap_or_else(|e| Err(lost_task(e))))
    }
}

impl<T: Send + 'static> Drop for Spawned<T> {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Done => {}
            State::Fresh(work) => {
                if matches!(self.cancel, Cancel::RunOn) {
                    drop(self.runtime.spawn(work));
                }
            }
            State::Running(task) => {
                if !self.cancel.give_up() {
                    task.abort();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leasehold::CancellationToken;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    // A call done at its first poll answers on the polling thread.
    #[test]
    fn done_at_once_answers_at_the_first_poll() {
        let rt = runtime();
        let here = std::thread::current().id();
        let mut call = Spawned::new(rt.handle().clone(), Cancel::Drop, async move {
            Ok(std::thread::current().id())
        });
        let first = Pin::new(&mut call).poll(&mut Context::from_waker(noop_waker()));
        assert!(matches!(first, Poll::Ready(Ok(id)) if id == here));
    }

    // A call that must wait goes on as a task and answers through it; a
    // panic of it is Internal (ERR-03).
    #[test]
    fn err_03_a_waiting_call_answers_from_its_task() {
        let rt = runtime();
        let call = Spawned::new(rt.handle().clone(), Cancel::Drop, async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(7)
        });
        assert_eq!(rt.block_on(call).unwrap(), 7);
        let call: Spawned<()> = Spawned::new(rt.handle().clone(), Cancel::Drop, async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            panic!("later")
        });
        assert_eq!(rt.block_on(call).unwrap_err().kind(), ErrorKind::Internal);
    }

    /// Says, once, how a call's work ended: `true` when it ran to its end,
    /// `false` when it was dropped unfinished (its task aborted).
    struct Ending(Option<std::sync::mpsc::Sender<bool>>);

    impl Ending {
        fn ran_to_its_end(mut self) {
            if let Some(tell) = self.0.take() {
                let _ = tell.send(true);
            }
        }
    }

    impl Drop for Ending {
        fn drop(&mut self) {
            if let Some(tell) = self.0.take() {
                let _ = tell.send(false);
            }
        }
    }

    /// A call polled once, pending, then dropped: whether its work ran on.
    /// The work waits for a go given after the drop (or its token), so
    /// what it did is read from how it ended, not from how long it took.
    fn ran_on_after_drop(cancel: impl FnOnce(CancellationToken) -> Cancel) -> bool {
        let rt = runtime();
        let token = CancellationToken::new();
        let (tell, told) = std::sync::mpsc::channel();
        let (go, gone) = tokio::sync::oneshot::channel::<()>();
        let given = token.clone();
        let mut call = Spawned::new(rt.handle().clone(), cancel(token.clone()), async move {
            let ending = Ending(Some(tell));
            tokio::select! {
                _ = given.cancelled() => {}
                _ = gone => {}
            }
            ending.ran_to_its_end();
            Ok(())
        });
        let first = Pin::new(&mut call).poll(&mut Context::from_waker(noop_waker()));
        assert!(first.is_pending());
        drop(call);
        let _ = go.send(());
        told.recv_timeout(Duration::from_secs(30))
            .expect("the work ended or was dropped (30 s: a hang)")
    }

    // LOCK-11 and LOCK-18: dropped while its task runs, a call is aborted
    // (Drop), runs on (RunOn), or has its token fired and runs on (Token).
    #[test]
    fn lock_18_dropping_a_call_does_what_its_cancel_says() {
        assert!(!ran_on_after_drop(|_| Cancel::Drop));
        assert!(ran_on_after_drop(|_| Cancel::RunOn));
        assert!(ran_on_after_drop(Cancel::Token));
    }
}
