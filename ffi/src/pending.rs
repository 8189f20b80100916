//! Calls that return at once and complete later: the `_async` forms of the
//! calls that may wait (in line, or on the store). Each runs its core future
//! once on the calling thread; if that finishes it, the outcome is the
//! call's answer and no callback follows, else the future goes on as a task
//! of the store's runtime and its `lh_done_fn` is called once, from a
//! thread of that runtime, when it ends. No caller's thread waits meanwhile
//! (a Go goroutine in line holds no OS thread), and the call's cancel token
//! ends it as it ends the blocking forms. The first poll and the panic
//! capture are the bridge's (`leasehold_bridge::poll_here`, `Caught`); the
//! outcome and the callback are this ABI's own. A call always runs on to
//! its end here (the bridge's `Cancel::RunOn`): it is given up through its
//! cancel token, never by dropping it.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::Poll;

use leasehold::{Error, ErrorKind, Result};
use leasehold_bridge::{noop_waker, panicked, poll_here, Caught};
use tokio::runtime::Handle;

use crate::call::guard;
use crate::error::lh_error;

/// How a call that may wait ended. Which fields it fills is the call's to
/// say; the others are zero.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lh_outcome {
    /// NULL when the call succeeded, else its error, which the receiver
    /// frees with `lh_error_free`.
    pub error: *mut lh_error,
    /// The id of the handle the call made (an `lh_holding`, `lh_holdings`,
    /// `lh_manual`, `lh_store`, `lh_slot_holding` or `lh_slot_lease`, as the
    /// call says), 0 when it made none: `lh_holding h = { outcome.handle };`.
    pub handle: u64,
    /// For the calls that may find nothing free (`lh_lock_try_begin_async`,
    /// the manual `lh_store_try_acquire_async`, the slot calls): whether it
    /// got what it asked for; when false, `handle` is 0. True for the others
    /// when they succeed.
    pub held: bool,
    /// The fence of the lease a hold got, else 0.
    pub fence: u64,
}

impl lh_outcome {
    /// The outcome of a call that failed with `err`.
    fn failed(err: &Error) -> lh_outcome {
        lh_outcome {
            error: lh_error::into_raw(err),
            ..Done::NOTHING.into()
        }
    }
}

/// What a call that may wait made, before it is handed out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Done {
    pub(crate) handle: u64,
    pub(crate) held: bool,
    pub(crate) fence: u64,
}

impl Done {
    /// Nothing was free: no handle.
    pub(crate) const NOTHING: Done = Done {
        handle: 0,
        held: false,
        fence: 0,
    };

    /// A new handle `handle` (its fence, if a hold: else 0).
    pub(crate) fn made(handle: u64, fence: u64) -> Done {
        Done {
            handle,
            held: true,
            fence,
        }
    }

    /// A call that made no handle and succeeded.
    pub(crate) const OK: Done = Done {
        handle: 0,
        held: true,
        fence: 0,
    };
}

impl From<Done> for lh_outcome {
    fn from(d: Done) -> lh_outcome {
        lh_outcome {
            error: std::ptr::null_mut(),
            handle: d.handle,
            held: d.held,
            fence: d.fence,
        }
    }
}

fn outcome(result: Result<Done>) -> lh_outcome {
    match result {
        Ok(done) => done.into(),
        Err(e) => lh_outcome::failed(&e),
    }
}

/// Called once with the `user` value given to a call and its outcome, when
/// a call that went on ends. It runs on a thread of the library's runtime
/// (or, for a call given no `now`, maybe on the calling thread before the
/// call returns), must return soon, and must make no blocking `lh_` call.
pub type lh_done_fn = Option<unsafe extern "C" fn(user: u64, outcome: lh_outcome)>;

/// Starts the call that `prepare` makes (reading its arguments, which may
/// fail at once) on `runtime`, and answers whether it went on:
///
/// - `now` given: a call that ends in its first run (a free key, bad
///   arguments) writes its outcome to `*now` and answers false; `done` is
///   never called. One that goes on answers true, and `done(user, …)`
///   follows once.
/// - `now` NULL: the outcome always goes to `done`, even when the call
///   ended at once (then before this returns), and the answer is true.
///
/// With `done` NULL, a call that would go on fails `InvalidArgument` instead.
///
/// # Safety
/// `now` must be NULL or valid for a write; `done` must be callable from
/// any thread with `user` until it was called.
pub(crate) unsafe fn start<F>(
    prepare: impl FnOnce() -> Result<(Handle, F)>,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool
where
    F: Future<Output = Result<Done>> + Send + 'static,
{
    let answer = |o: lh_outcome| -> bool {
        if now.is_null() {
            if let Some(done) = done {
                // SAFETY: the caller's callback, with its own user value.
                guard((), || unsafe { done(user, o) });
            } else if !o.error.is_null() {
                crate::error::lh_error_free(o.error);
            }
            return true;
        }
        // SAFETY: non-NULL, and the caller promises it is valid for a write.
        unsafe { now.write(o) };
        false
    };
    // The future is boxed where it is made: passed out through the panic
    // capture and the results first, a hold's (near a kilobyte) was copied
    // three times.
    let prepared = catch_unwind(AssertUnwindSafe(|| {
        prepare().map(|(runtime, fut)| (runtime, Box::pin(fut)))
    }));
    let (runtime, fut) = match prepared {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return answer(lh_outcome::failed(&e)),
        Err(p) => return answer(lh_outcome::failed(&panicked(p))),
    };
    // Caught: a panic of the call, now or in its task, is its `Internal` error.
    let mut fut = Caught::new(fut);
    if let Poll::Ready(result) = poll_here(&runtime, Pin::new(&mut fut), noop_waker()) {
        return answer(outcome(result));
    }
    let Some(callback) = done else {
        return answer(lh_outcome::failed(&Error::new(
            ErrorKind::InvalidArgument,
            "the call must wait, and its lh_done_fn is NULL",
        )));
    };
    runtime.spawn(async move {
        let o = outcome(fut.await);
        // SAFETY: the caller's callback, with its own user value, called once.
        guard((), || unsafe { callback(user, o) });
    });
    true
}
