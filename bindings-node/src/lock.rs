//! Locks: asking for a key, waiting in line or not, or for many keys at once.
//!
//! A lock reaches JS as an External, which `lib/lock.js` wraps, and these
//! functions take it back: every hold reads its lock once, and reading an
//! External (`napi_get_value_external`, about
//! 90 instructions) is cheaper than unwrapping an instance of a class
//! (`napi_unwrap`, a private-property lookup: about 790).

use leasehold::give_up;
use leasehold::{HoldOptions, Lock};
use napi::bindgen_prelude::External;
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::cancel::Canceller;
use crate::durations::{self, JsDuration};
use crate::holding::HeldKey;
use crate::promise::{self, Eventually};
use crate::store::HolderInfo;

/// The error message of a `tryBegin` given up by its canceller.
const GAVE_UP_TRYING: &str = "gave up trying for the key";
/// The error message of a `holder` given up by its canceller.
const GAVE_UP_ASKING: &str = "gave up asking who holds the key";

/// A lock: a named family of keys with its options (`leasehold::Lock`),
/// and the runtime its calls run on.
pub struct NativeLock {
    lock: Lock,
    runtime: Handle,
}

/// A lock as JS holds it: an External of its [`NativeLock`].
pub type OpenLock = External<NativeLock>;

impl NativeLock {
    /// Wraps a core lock whose calls run on `runtime`, for JS.
    pub(crate) fn new(lock: Lock, runtime: Handle) -> OpenLock {
        External::new(NativeLock { lock, runtime })
    }
}

/// The lock's name.
#[napi(catch_unwind, ts_args_type = "lock: NativeLock")]
pub fn lock_name(lock: &OpenLock) -> String {
    lock.lock.name().to_owned()
}

/// The ttl of its leases, in milliseconds.
#[napi(catch_unwind, ts_args_type = "lock: NativeLock")]
pub fn lock_ttl(lock: &OpenLock) -> f64 {
    durations::millis(lock.lock.ttl())
}

/// Its maxHold in milliseconds, or `null`.
#[napi(catch_unwind, ts_args_type = "lock: NativeLock")]
pub fn lock_max_hold(lock: &OpenLock) -> Option<f64> {
    lock.lock.max_hold().map(durations::millis)
}

/// Its bound on waiting in line in milliseconds, or `null`.
#[napi(catch_unwind, ts_args_type = "lock: NativeLock")]
pub fn lock_wait(lock: &OpenLock) -> Option<f64> {
    lock.lock.wait().map(durations::millis)
}

/// The holder's margin before the store's expiry, in milliseconds.
#[napi(catch_unwind, ts_args_type = "lock: NativeLock")]
pub fn lock_margin(lock: &OpenLock) -> f64 {
    durations::millis(lock.lock.margin())
}

/// Waits in line for `key` (`Lock::begin`), at most `wait` (else the lock's
/// own), until `cancel` fires; resolves with the holding.
#[napi(
    catch_unwind,
    ts_args_type = "lock: NativeLock, key: string, wait: NativeDuration, cancel: Canceller | null"
)]
pub fn lock_begin<'env>(
    env: &'env Env,
    lock: &OpenLock,
    key: String,
    wait: Option<JsDuration>,
    cancel: Option<&Canceller>,
) -> napi::Result<Eventually<'env, HeldKey>> {
    let opened = lock.lock.clone();
    let runtime = lock.runtime.clone();
    let options = hold_options(wait, cancel);
    promise::spawn(env, &lock.runtime, async move {
        let holding = opened.begin(&key, &options?).await?;
        Ok(HeldKey::new(holding, runtime))
    })
}

/// Waits in line for every key of `keys` at once (`Lock::begin_many`,
/// LOCK-22), at most `wait` (else the lock's own), until `cancel` fires;
/// resolves with their holdings in the order of `keys`. All or none: a key
/// that cannot be had fails the call, every lease taken is released and
/// every line left.
#[napi(
    catch_unwind,
    ts_args_type = "lock: NativeLock, keys: string[], wait: NativeDuration, cancel: Canceller | null"
)]
pub fn lock_begin_many<'env>(
    env: &'env Env,
    lock: &OpenLock,
    keys: Vec<String>,
    wait: Option<JsDuration>,
    cancel: Option<&Canceller>,
) -> napi::Result<Eventually<'env, Vec<HeldKey>>> {
    let opened = lock.lock.clone();
    let runtime = lock.runtime.clone();
    let options = hold_options(wait, cancel);
    promise::spawn(env, &lock.runtime, async move {
        let holdings = opened.begin_many(&keys, &options?).await?;
        Ok(holdings
            .into_iter()
            .map(|h| HeldKey::new(h, runtime.clone()))
            .collect())
    })
}

/// Holds `key` if it is free (`Lock::try_begin`); `null` when it is held
/// (LOCK-17). When `cancel` fires first, the call stops waiting for the
/// store's answer and fails `CANCELLED`; a grant that answers the request
/// later is released at once (LOCK-18).
#[napi(
    catch_unwind,
    ts_args_type = "lock: NativeLock, key: string, cancel: Canceller | null"
)]
pub fn lock_try_begin<'env>(
    env: &'env Env,
    lock: &OpenLock,
    key: String,
    cancel: Option<&Canceller>,
) -> napi::Result<Eventually<'env, Option<HeldKey>>> {
    let opened = lock.lock.clone();
    let runtime = lock.runtime.clone();
    let cancel = cancel.map(Canceller::token);
    promise::spawn(env, &lock.runtime, async move {
        let attempt = async move { opened.try_begin(&key).await };
        let holding =
            give_up::unless_given_up(cancel, &runtime, GAVE_UP_TRYING, attempt, give_up::dropped)
                .await?;
        Ok(holding.map(|h| HeldKey::new(h, runtime)))
    })
}

/// Who holds `key` now (`Lock::holder`, WHO-02); `null` when nobody does.
/// When `cancel` fires first, the call stops waiting for the store's
/// answer and fails `CANCELLED`.
#[napi(
    catch_unwind,
    ts_args_type = "lock: NativeLock, key: string, cancel: Canceller | null"
)]
pub fn lock_holder<'env>(
    env: &'env Env,
    lock: &OpenLock,
    key: String,
    cancel: Option<&Canceller>,
) -> napi::Result<Eventually<'env, Option<HolderInfo>>> {
    let opened = lock.lock.clone();
    let runtime = lock.runtime.clone();
    let cancel = cancel.map(Canceller::token);
    promise::spawn(env, &lock.runtime, async move {
        let asked = async move { opened.holder(&key).await };
        let holder =
            give_up::unless_given_up(cancel, &runtime, GAVE_UP_ASKING, asked, give_up::dropped)
                .await?;
        Ok(holder.map(HolderInfo::from))
    })
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
