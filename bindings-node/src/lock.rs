//! Locks: asking for a key, waiting in line or not, or for many keys at once.

use leasehold::give_up;
use leasehold::{HoldOptions, Lock};
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::cancel::Canceller;
use crate::durations::{self, JsDuration};
use crate::holding::{HeldKey, NativeHolding};
use crate::promise::{self, Eventually};

/// The error message of a `tryBegin` given up by its canceller.
const GAVE_UP_TRYING: &str = "gave up trying for the key";

/// A lock: a named family of keys with its options (`leasehold::Lock`).
#[napi]
pub struct NativeLock {
    lock: Lock,
    runtime: Handle,
}

impl NativeLock {
    /// Wraps a core lock whose calls run on `runtime`.
    pub(crate) fn new(lock: Lock, runtime: Handle) -> NativeLock {
        NativeLock { lock, runtime }
    }
}

#[napi]
impl NativeLock {
    /// The lock's name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.lock.name().to_owned()
    }

    /// The ttl of its leases, in milliseconds.
    #[napi(getter, catch_unwind)]
    pub fn ttl(&self) -> f64 {
        durations::millis(self.lock.ttl())
    }

    /// Its maxHold in milliseconds, or `null`.
    #[napi(getter, catch_unwind)]
    pub fn max_hold(&self) -> Option<f64> {
        self.lock.max_hold().map(durations::millis)
    }

    /// Its bound on waiting in line in milliseconds, or `null`.
    #[napi(getter, catch_unwind)]
    pub fn wait(&self) -> Option<f64> {
        self.lock.wait().map(durations::millis)
    }

    /// The holder's margin before the store's expiry, in milliseconds.
    #[napi(getter, catch_unwind)]
    pub fn margin(&self) -> f64 {
        durations::millis(self.lock.margin())
    }

    /// Waits in line for `key` (`Lock::begin`), at most `wait` (else the
    /// lock's own), until `cancel` fires; resolves with the holding.
    #[napi(catch_unwind)]
    pub fn begin<'env>(
        &self,
        env: &'env Env,
        key: String,
        wait: Option<JsDuration>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, HeldKey>> {
        let lock = self.lock.clone();
        let options = hold_options(wait, cancel);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let holding = lock.begin(&key, &options?).await?;
            Ok(NativeHolding::new(holding, runtime))
        })
    }

    /// Waits in line for every key of `keys` at once (`Lock::begin_many`,
    /// LOCK-22), at most `wait` (else the lock's own), until `cancel` fires;
    /// resolves with their holdings in the order of `keys`. All or none: a
    /// key that cannot be had fails the call, every lease taken is released
    /// and every line left.
    #[napi(catch_unwind)]
    pub fn begin_many<'env>(
        &self,
        env: &'env Env,
        keys: Vec<String>,
        wait: Option<JsDuration>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, Vec<HeldKey>>> {
        let lock = self.lock.clone();
        let options = hold_options(wait, cancel);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let holdings = lock.begin_many(&keys, &options?).await?;
            Ok(holdings
                .into_iter()
                .map(|h| NativeHolding::new(h, runtime.clone()))
                .collect())
        })
    }

    /// Holds `key` if it is free (`Lock::try_begin`); `null` when it is held
    /// (LOCK-17). When `cancel` fires first, the call stops waiting for the
    /// store's answer and fails `CANCELLED`; a grant that answers the
    /// request later is released at once (LOCK-18).
    #[napi(catch_unwind)]
    pub fn try_begin<'env>(
        &self,
        env: &'env Env,
        key: String,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, Option<HeldKey>>> {
        let lock = self.lock.clone();
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let attempt = async move { lock.try_begin(&key).await };
            let holding = give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_TRYING,
                attempt,
                give_up::dropped,
            )
            .await?;
            Ok(holding.map(|h| NativeHolding::new(h, runtime)))
        })
    }
}

/// A call's hold options: its `wait` (else the lock's) and `cancel`'s
/// token; a bad `wait` fails the call's promise, not the call.
pub(crate) fn hold_options(
    wait: Option<JsDuration>,
    cancel: Option<&Canceller>,
) -> leasehold::Result<HoldOptions> {
    Ok(HoldOptions {
        wait: durations::optional("wait", wait)?,
        cancel: cancel.map(Canceller::token),
    })
}
