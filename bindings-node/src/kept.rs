//! `Kept`: the one wrapper of anything the core holds for JS (a key's
//! `Holding` in `holding`, a slot's `SlotHolding` in `slot_holding`): the
//! core's holding, kept until the JS side ends it once, and the one
//! watcher that tells the JS side of its loss until then (LOCK-09: a
//! second watch throws `INVALID_ARGUMENT`, the bridge's `LossWatch`).

use std::sync::{Mutex, OnceLock};

use leasehold::{CancellationToken, Error, ErrorKind, Held, HeldView};
use leasehold_bridge::LossWatch;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use tokio::runtime::Handle;

use crate::errors::{thrown, Thrown};
use crate::promise::{self, Eventually};

/// The JS function told of a loss, with the reason (`"expired"`, `"revoked"`, …).
/// Weak: it never keeps the event loop alive by itself.
pub type LossCallback = ThreadsafeFunction<String, (), String, Status, false, true>;

/// A core holding (a key's `Holding`, a slot's `SlotHolding`) until it
/// ends, and what its held work sees.
pub(crate) struct Kept<H: Held> {
    view: H::View,
    holding: Mutex<Option<H>>,
    /// Made by the first `watch` (a holding nobody watches costs no token);
    /// fired when the holding ends or is dropped: stops the loss watcher.
    done: OnceLock<CancellationToken>,
    /// Claimed by the first `watch`: a holding has one loss callback.
    watched: LossWatch,
    runtime: Handle,
}

impl<H: Held> Kept<H> {
    /// Keeps `holding`, whose calls run on `runtime`.
    pub(crate) fn new(holding: H, runtime: Handle) -> Kept<H> {
        Kept {
            view: holding.view().clone(),
            holding: Mutex::new(Some(holding)),
            done: OnceLock::new(),
            watched: LossWatch::new(),
            runtime,
        }
    }

    /// What the held work sees.
    pub(crate) fn view(&self) -> &H::View {
        &self.view
    }

    /// Calls `on_lost(reason)` once if the holding is lost before it ends.
    /// The callback is weak, and is let go when the holding ends. One
    /// callback per holding: a second watch throws `INVALID_ARGUMENT`.
    pub(crate) fn watch(&self, on_lost: LossCallback) -> Result<(), Thrown> {
        self.watched.claim().map_err(thrown)?;
        let done = self.done.get_or_init(CancellationToken::new).clone();
        // Ended already (`take` empties the holding before it fires the
        // token it finds): there is nothing left to watch.
        if self
            .holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
        {
            return Ok(());
        }
        let view = self.view.clone();
        let lost = view.lost_signal();
        self.runtime.spawn(async move {
            tokio::select! {
                biased;
                _ = done.cancelled() => {}
                _ = lost => {
                    let reason = view.loss_reason().map_or("unknown", |r| r.as_str());
                    on_lost.call(reason.to_owned(), ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        });
        Ok(())
    }

    /// Stops the loss watcher and ends the holding; rejects `CLOSED` if it
    /// ended already.
    pub(crate) fn end<'env>(&self, env: &'env Env) -> napi::Result<Eventually<'env, ()>> {
        let holding = self.take();
        promise::spawn(env, &self.runtime, async move { holding?.end().await })
    }

    /// Stops the loss watcher and takes the holding, to end it; `CLOSED`
    /// once it was taken already.
    pub(crate) fn take(&self) -> leasehold::Result<H> {
        let taken = self
            .holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.stop_watching();
        taken.ok_or_else(|| Error::new(ErrorKind::Closed, "the hold ended already"))
    }

    /// Stops the loss watcher, if there is one.
    fn stop_watching(&self) {
        if let Some(done) = self.done.get() {
            done.cancel();
        }
    }

    /// The runtime its calls run on.
    pub(crate) fn runtime(&self) -> &Handle {
        &self.runtime
    }
}

impl<H: Held> Drop for Kept<H> {
    /// A holding the JS side dropped without ending it: the core's holding
    /// releases what it holds as it drops (LOCK-11), after the watcher stops.
    fn drop(&mut self) {
        self.stop_watching();
    }
}
