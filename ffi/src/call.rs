//! How every export runs: panics caught, errors handed out as objects,
//! blocking calls run on the process's runtime.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

use leasehold::{give_up, runtime, CancellationToken, Error, ErrorKind, Result};
use leasehold_bridge::panicked;
use tokio::runtime::Handle;

use crate::error::lh_error;

/// Runs `f`, answering `on_panic` if it panics: no panic crosses the ABI.
pub(crate) fn guard<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// Runs a fallible export: NULL on success, an error object on failure,
/// an `Internal` error object if it panicked.
pub(crate) fn run(f: impl FnOnce() -> Result<()>) -> *mut lh_error {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(e)) => lh_error::into_raw(&e),
        Err(panic) => lh_error::into_raw(&panicked(panic)),
    }
}

/// Runs `fut` to completion on `rt`, the runtime of the store it belongs
/// to, blocking the calling thread (the callers, such as Go's, have no
/// runtime of their own).
pub(crate) fn block_on<T>(rt: &Handle, fut: impl Future<Output = Result<T>>) -> Result<T> {
    not_in_runtime()?;
    rt.block_on(fut)
}

/// Fails `InvalidArgument` on a thread that runs an async runtime, where
/// blocking would stall it (inside an `lh_lost_fn` callback, for one).
pub(crate) fn not_in_runtime() -> Result<()> {
    if runtime::in_async_context() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "a blocking leasehold call from a thread of an async runtime (an lh_lost_fn callback?)",
        ));
    }
    Ok(())
}

/// `work`, a core call that takes no cancellation token of its own, unless
/// `cancel` fires first: then `Cancelled` at once, while the work goes on
/// to its end and what it got is dropped, which releases a holding and
/// closes a store (`leasehold::give_up`: a grant that races a give-up is
/// not left behind, LOCK-18).
pub(crate) async fn given_up_or<T, W>(work: W, cancel: Option<CancellationToken>) -> Result<T>
where
    T: Send + 'static,
    W: Future<Output = Result<T>> + Send + 'static,
{
    give_up::unless_given_up(
        cancel,
        &Handle::current(),
        CANCELLED,
        work,
        give_up::dropped,
    )
    .await
}

/// The message of a call given up.
pub(crate) const CANCELLED: &str = "the call was cancelled";

/// `fut`, a wait that gets nothing (such as a wait for a loss), unless
/// `cancel` fires first: then `Cancelled` (and `fut` is dropped).
pub(crate) async fn or_cancelled<T>(
    fut: impl Future<Output = Result<T>>,
    cancel: Option<CancellationToken>,
) -> Result<T> {
    let Some(cancel) = cancel else {
        return fut.await;
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Error::new(ErrorKind::Cancelled, CANCELLED)),
        out = fut => out,
    }
}
