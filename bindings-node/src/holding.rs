//! A key held while a JS function runs: the lease it sees, the loss
//! watcher behind `lease.signal`, and the end that releases it (or, with
//! the other keys of a `beginMany`, `holdingEndAll`).
//!
//! The holding reaches JS as an External, which `lib/holding.js` wraps,
//! and these functions take it back: a hold makes one and reads from it a
//! few times, and an External is cheaper to make (no constructor call, no
//! wrap) and to read from (no unwrap) than an instance of a class.

use leasehold::{Holding, Lease};
use napi::bindgen_prelude::{BigInt, External};
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::durations;
use crate::errors::Thrown;
use crate::kept::{Kept, LossCallback};
use crate::promise::{self, Eventually};

/// A held key (`leasehold::Holding`) and its lease.
pub struct NativeHolding {
    kept: Kept<Holding>,
}

/// A held key as JS holds it: an External of its [`NativeHolding`]. When
/// JS lets go of it unended, its finalizer drops the holding, which
/// releases the key (LOCK-11).
pub type HeldKey = External<NativeHolding>;

impl NativeHolding {
    /// Wraps a core holding whose calls run on `runtime`, for JS.
    pub(crate) fn new(holding: Holding, runtime: Handle) -> HeldKey {
        External::new(NativeHolding {
            kept: Kept::new(holding, runtime),
        })
    }

    fn lease(&self) -> &Lease {
        self.kept.view()
    }
}

/// The fence (LOCK-02).
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_fence(holding: &HeldKey) -> BigInt {
    BigInt::from(holding.lease().fence())
}

/// The key held.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_key(holding: &HeldKey) -> String {
    holding.lease().key().to_owned()
}

/// The name of the key's lock.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_lock_name(holding: &HeldKey) -> String {
    holding.lease().lock_name().to_owned()
}

/// Whether the lease was lost (LOCK-09).
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_lost(holding: &HeldKey) -> bool {
    holding.lease().lost()
}

/// Why the lease was lost, once it was.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_loss_reason(holding: &HeldKey) -> Option<String> {
    holding.lease().loss_reason().map(|r| r.as_str().to_owned())
}

/// Milliseconds left before the holder's deadline; `null` without one.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_remaining(holding: &HeldKey) -> Option<f64> {
    holding.lease().remaining().map(durations::millis)
}

/// Calls `on_lost(reason)` once if the lease is lost before the holding
/// ends (LOCK-09). The callback is weak, and is let go when the holding ends.
/// One callback per holding: a second watch throws `INVALID_ARGUMENT`.
#[napi(
    catch_unwind,
    ts_args_type = "holding: NativeHolding, onLost: (reason: string) => void"
)]
pub fn holding_watch(holding: &HeldKey, on_lost: LossCallback) -> Result<(), Thrown> {
    holding.kept.watch(on_lost)
}

/// Releases the key (`Holding::end`): rejects `LOST` if the lease was lost
/// at any point while held (LOCK-10), `CLOSED` if it ended already.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_end<'env>(env: &'env Env, holding: &HeldKey) -> napi::Result<Eventually<'env, ()>> {
    holding.kept.end(env)
}

/// Releases every key of `holdings` at once (`Holding::end_all`,
/// LOCK-22): rejects with the first failure in their order, `LOST` if a
/// lease was lost while held, `CLOSED` if a holding ended already (then
/// the others are released in the background).
#[napi(catch_unwind, ts_args_type = "holdings: NativeHolding[]")]
pub fn holding_end_all<'env>(
    env: &'env Env,
    holdings: Vec<&HeldKey>,
) -> napi::Result<Eventually<'env, ()>> {
    let runtime = holdings
        .first()
        .map_or_else(promise::process_runtime, |h| h.kept.runtime().clone());
    let taken = holdings
        .iter()
        .map(|h| h.kept.take())
        .collect::<leasehold::Result<Vec<Holding>>>();
    promise::spawn(env, &runtime, async move { Holding::end_all(taken?).await })
}
