//! Giving up a call: the JS layer cancels a [`Canceller`] when the
//! `AbortSignal` passed to the call aborts. A call whose core function
//! takes the token (a waiting hold or acquire) leaves the line in the core
//! (LOCK-18); any other call that may wait on the store stops waiting
//! through [`unless_given_up`].

use std::future::Future;

use leasehold::{CancellationToken, Error, ErrorKind};
use napi_derive::napi;
use tokio::runtime::Handle;

/// A cancellation token a JS caller fires to give up waiting (LOCK-18).
#[napi]
pub struct Canceller {
    token: CancellationToken,
}

#[napi]
impl Canceller {
    /// A token not yet fired.
    #[napi(constructor, catch_unwind)]
    pub fn new() -> Canceller {
        Canceller {
            token: CancellationToken::new(),
        }
    }

    /// Fires the token: the waiting call fails `CANCELLED` and leaves the line.
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

impl Canceller {
    /// The token, for the core's `HoldOptions`.
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl Default for Canceller {
    fn default() -> Canceller {
        Canceller::new()
    }
}

/// `work` (a core call that takes no cancellation token), unless `cancel`
/// fires first: then the call fails `CANCELLED` with `message` at once,
/// and `work`, whose request may be with the store already, goes on to its
/// end on `runtime`, where what it got is handed to `undo`. So nothing it
/// got is left behind: `undo` releases a manual lease, and what drops
/// undoes itself (a holding dropped is released, LOCK-11, as a grant that
/// races a give-up must be, LOCK-18; a store dropped is closed). Work done
/// before the token fired is the call's answer.
pub(crate) async fn unless_given_up<T, W, U, F>(
    cancel: Option<CancellationToken>,
    runtime: &Handle,
    message: &str,
    work: W,
    undo: U,
) -> leasehold::Result<T>
where
    T: Send + 'static,
    W: Future<Output = leasehold::Result<T>> + Send + 'static,
    U: FnOnce(T) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let Some(token) = cancel else {
        return work.await;
    };
    let mut work = Box::pin(work);
    tokio::select! {
        biased;
        result = &mut work => result,
        _ = token.cancelled() => {
            runtime.spawn(async move {
                if let Ok(got) = work.await {
                    undo(got).await;
                }
            });
            Err(Error::new(ErrorKind::Cancelled, message))
        }
    }
}

/// The `undo` of [`unless_given_up`] for what needs none or undoes itself
/// when dropped.
pub(crate) async fn dropped<T>(got: T) {
    drop(got);
}
