//! A key held while a JS function runs: the lease it sees, the loss
//! watcher behind `lease.signal`, and the end that releases it.

use std::sync::Mutex;

use leasehold::{CancellationToken, Error, ErrorKind, Holding, Lease};
use napi::bindgen_prelude::BigInt;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::durations;
use crate::promise::{self, Eventually};

/// The JS function told of a loss, with the reason (`"expired"`, `"revoked"`, …).
/// Weak: it never keeps the event loop alive by itself.
pub type LossCallback = ThreadsafeFunction<String, (), String, Status, false, true>;

/// A held key (`leasehold::Holding`) and its lease.
#[napi]
pub struct NativeHolding {
    lease: Lease,
    holding: Mutex<Option<Holding>>,
    /// Fired when the holding ends or is dropped: stops the loss watcher.
    done: CancellationToken,
    runtime: Handle,
}

impl NativeHolding {
    /// Wraps a core holding whose calls run on `runtime`.
    pub(crate) fn new(holding: Holding, runtime: Handle) -> NativeHolding {
        NativeHolding {
            lease: holding.lease().clone(),
            holding: Mutex::new(Some(holding)),
            done: CancellationToken::new(),
            runtime,
        }
    }
}

impl Drop for NativeHolding {
    /// A holding the JS side dropped without ending it: the core's
    /// `Holding` releases the lease as it drops (LOCK-11).
    fn drop(&mut self) {
        self.done.cancel();
    }
}

#[napi]
impl NativeHolding {
    /// The fence (LOCK-02).
    #[napi(getter, catch_unwind)]
    pub fn fence(&self) -> BigInt {
        BigInt::from(self.lease.fence())
    }

    /// The key held.
    #[napi(getter, catch_unwind)]
    pub fn key(&self) -> String {
        self.lease.key().to_owned()
    }

    /// The name of the key's lock.
    #[napi(getter, catch_unwind)]
    pub fn lock_name(&self) -> String {
        self.lease.lock_name().to_owned()
    }

    /// Whether the lease was lost (LOCK-09).
    #[napi(getter, catch_unwind)]
    pub fn lost(&self) -> bool {
        self.lease.lost()
    }

    /// Why the lease was lost, once it was.
    #[napi(getter, catch_unwind)]
    pub fn loss_reason(&self) -> Option<String> {
        self.lease.loss_reason().map(|r| r.as_str().to_owned())
    }

    /// Milliseconds left before the holder's deadline; `null` without one.
    #[napi(getter, catch_unwind)]
    pub fn remaining(&self) -> Option<f64> {
        self.lease.remaining().map(durations::millis)
    }

    /// Calls `on_lost(reason)` once if the lease is lost before the holding
    /// ends (LOCK-09). The callback is weak, and is let go when the holding ends.
    #[napi(catch_unwind, ts_args_type = "onLost: (reason: string) => void")]
    pub fn watch(&self, on_lost: LossCallback) {
        let lease = self.lease.clone();
        let done = self.done.clone();
        self.runtime.spawn(async move {
            tokio::select! {
                biased;
                _ = done.cancelled() => {}
                _ = lease.lost_signal() => {
                    let reason = lease.loss_reason().map_or("unknown", |r| r.as_str());
                    on_lost.call(reason.to_owned(), ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        });
    }

    /// Releases the key (`Holding::end`): rejects `LOST` if the lease was lost
    /// at any point while held (LOCK-10), `CLOSED` if it ended already.
    #[napi(catch_unwind)]
    pub fn end<'env>(&self, env: &'env Env) -> napi::Result<Eventually<'env, ()>> {
        self.done.cancel();
        let holding = self
            .holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        promise::spawn(env, &self.runtime, async move {
            match holding {
                Some(holding) => holding.end().await,
                None => Err(Error::new(ErrorKind::Closed, "this hold has ended already")),
            }
        })
    }
}
