//! What a held key (`holding`) and a held slot (`slot_holding`) share: the
//! core's holding, kept until the JS side ends it once, and the watcher
//! that tells the JS side of its loss until then.

use std::future::Future;
use std::sync::Mutex;

use leasehold::{CancellationToken, Error, ErrorKind, LossReason};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use tokio::runtime::Handle;

use crate::promise::{self, Eventually};

/// The JS function told of a loss, with the reason (`"expired"`, `"revoked"`, …).
/// Weak: it never keeps the event loop alive by itself.
pub type LossCallback = ThreadsafeFunction<String, (), String, Status, false, true>;

/// A core holding (a key's `Holding`, a slot's `SlotHolding`) until it ends.
pub(crate) struct Ending<H> {
    holding: Mutex<Option<H>>,
    /// Fired when the holding ends or is dropped: stops the loss watcher.
    done: CancellationToken,
    runtime: Handle,
}

impl<H: Send + 'static> Ending<H> {
    /// Keeps `holding`, whose calls run on `runtime`.
    pub(crate) fn new(holding: H, runtime: Handle) -> Ending<H> {
        Ending {
            holding: Mutex::new(Some(holding)),
            done: CancellationToken::new(),
            runtime,
        }
    }

    /// Calls `on_lost(reason())` once if `lost` completes before the
    /// holding ends; `reason()` is `"unknown"` when it says none. The
    /// callback is weak, and is let go when the holding ends.
    pub(crate) fn watch<L, R>(&self, lost: L, reason: R, on_lost: LossCallback)
    where
        L: Future<Output = ()> + Send + 'static,
        R: FnOnce() -> Option<LossReason> + Send + 'static,
    {
        let done = self.done.clone();
        self.runtime.spawn(async move {
            tokio::select! {
                biased;
                _ = done.cancelled() => {}
                _ = lost => {
                    let reason = reason().map_or("unknown", |r| r.as_str());
                    on_lost.call(reason.to_owned(), ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        });
    }

    /// Stops the loss watcher and ends the holding with `end`; rejects
    /// `CLOSED` if it ended already.
    pub(crate) fn end<'env, E, F>(
        &self,
        env: &'env Env,
        end: E,
    ) -> napi::Result<Eventually<'env, ()>>
    where
        E: FnOnce(H) -> F + Send + 'static,
        F: Future<Output = leasehold::Result<()>> + Send + 'static,
    {
        self.done.cancel();
        let holding = self
            .holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        promise::spawn(env, &self.runtime, async move {
            match holding {
                Some(holding) => end(holding).await,
                None => Err(Error::new(ErrorKind::Closed, "this hold has ended already")),
            }
        })
    }
}

impl<H> Drop for Ending<H> {
    /// A holding the JS side dropped without ending it: the core's holding
    /// releases what it holds as it drops (LOCK-11), after the watcher stops.
    fn drop(&mut self) {
        self.done.cancel();
    }
}
