//! Locks: asking for a key, waiting in line or not.

use leasehold::{HoldOptions, Lock};
use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;

use crate::cancel::Canceller;
use crate::durations::{self, JsDuration};
use crate::holding::NativeHolding;
use crate::promise;

/// A lock: a named family of keys with its options (`leasehold::Lock`).
#[napi]
pub struct NativeLock {
    lock: Lock,
}

impl NativeLock {
    /// Wraps a core lock.
    pub(crate) fn new(lock: Lock) -> NativeLock {
        NativeLock { lock }
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
    #[napi(catch_unwind, ts_return_type = "Promise<NativeHolding>")]
    pub fn begin<'env>(
        &self,
        env: &'env Env,
        key: String,
        wait: Option<JsDuration>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Object<'env>> {
        let lock = self.lock.clone();
        let wait = durations::optional("wait", wait);
        let cancel = cancel.map(Canceller::token);
        promise::spawn(env, async move {
            let options = HoldOptions {
                wait: wait?,
                cancel,
            };
            lock.begin(&key, &options).await.map(NativeHolding::new)
        })
    }

    /// Holds `key` if it is free (`Lock::try_begin`); `null` when it is held (LOCK-17).
    #[napi(catch_unwind, ts_return_type = "Promise<NativeHolding | null>")]
    pub fn try_begin<'env>(&self, env: &'env Env, key: String) -> napi::Result<Object<'env>> {
        let lock = self.lock.clone();
        promise::spawn(env, async move {
            Ok(lock.try_begin(&key).await?.map(NativeHolding::new))
        })
    }
}
