//! A key held while a JS function runs: the lease it sees, the loss
//! watcher behind `lease.signal`, and the end that releases it (or, with
//! the other keys of a `beginMany`, `holdingEndAll`).
//!
//! A holding reaches JS as a number, its id in the table of its thread's
//! holdings (`HELD`), which `lib/holding.js` wraps, and these functions
//! take it back. The end takes it out of the table: JS keeps what a lease
//! answers after its hold. An External would cost every hold a Node-API
//! reference and its finalizer (about 2,700 instructions), and keep the
//! holding's memory until Node's event loop turned to run the finalizer.
//! Ids only grow, so an ended id is never another holding's; an id the
//! table does not hold fails `CLOSED`.

use std::cell::RefCell;
use std::collections::BTreeMap;

use leasehold::{Error, ErrorKind, Holding, Lease};
use napi::bindgen_prelude::ToNapiValue;
use napi::{sys, Env};
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::durations;
use crate::errors::{self, thrown, Thrown};
use crate::kept::{Kept, LossCallback};
use crate::promise::{self, Eventually};

/// A held key (`leasehold::Holding`) and its lease.
pub struct NativeHolding {
    kept: Kept<Holding>,
}

/// A held key on its way to JS, where it becomes its id in `HELD`. Dropped
/// before it gets there (a promise Node never settled), it releases the key.
pub struct HeldKey(NativeHolding);

/// The holdings JS holds on this thread, by id, and the next id.
struct Held {
    next: u64,
    holdings: BTreeMap<u64, NativeHolding>,
}

thread_local! {
    static HELD: RefCell<Held> = const {
        RefCell::new(Held {
            next: 1,
            holdings: BTreeMap::new(),
        })
    };
}

impl HeldKey {
    /// Wraps a core holding whose calls run on `runtime`, for JS.
    pub(crate) fn new(holding: Holding, runtime: Handle) -> HeldKey {
        HeldKey(NativeHolding {
            kept: Kept::new(holding, runtime),
        })
    }
}

impl ToNapiValue for HeldKey {
    /// Enters the holding in this thread's table: JS gets its id.
    unsafe fn to_napi_value(env: sys::napi_env, held: HeldKey) -> napi::Result<sys::napi_value> {
        let id = HELD.with_borrow_mut(|table| {
            let id = table.next;
            table.next += 1;
            table.holdings.insert(id, held.0);
            id
        });
        // Exact: ids would pass 2^53 after a million holds a second for 285 years.
        unsafe { f64::to_napi_value(env, id as f64) }
    }
}

impl NativeHolding {
    fn lease(&self) -> &Lease {
        self.kept.view()
    }
}

/// The table's key of the id JS gave: none for a number no id can be (a
/// fraction, zero or less, `NaN`), which no holding answers to.
fn key(id: f64) -> Option<u64> {
    (id >= 1.0 && id.fract() == 0.0).then_some(id as u64)
}

/// What `read` gives of the holding `id`, `CLOSED` once it ended.
fn read<R>(id: f64, read: impl FnOnce(&NativeHolding) -> R) -> Result<R, Thrown> {
    HELD.with_borrow(|table| key(id).and_then(|k| table.holdings.get(&k)).map(read))
        .ok_or_else(|| thrown(ended()))
}

/// The holding `id`, out of the table to end it; `CLOSED` once it ended.
fn take(id: f64) -> leasehold::Result<NativeHolding> {
    HELD.with_borrow_mut(|table| key(id).and_then(|k| table.holdings.remove(&k)))
        .ok_or_else(ended)
}

/// The error of a holding that ended already (or an id that never was one).
fn ended() -> Error {
    Error::new(ErrorKind::Closed, "the hold ended already")
}

/// The fence (LOCK-02), a bigint (`u64` is made by
/// `napi_create_bigint_uint64`; a `BigInt` of words allocates them first).
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_fence(holding: f64) -> Result<u64, Thrown> {
    read(holding, |h| h.lease().fence())
}

/// Whether the lease was lost (LOCK-09).
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_lost(holding: f64) -> Result<bool, Thrown> {
    read(holding, |h| h.lease().lost())
}

/// Why the lease was lost, once it was.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_loss_reason(holding: f64) -> Result<Option<String>, Thrown> {
    read(holding, |h| {
        h.lease().loss_reason().map(|r| r.as_str().to_owned())
    })
}

/// Milliseconds left before the holder's deadline; `null` without one.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_remaining(holding: f64) -> Result<Option<f64>, Thrown> {
    read(holding, |h| h.lease().remaining().map(durations::millis))
}

/// Calls `on_lost(reason)` once if the lease is lost before the holding
/// ends (LOCK-09). The callback is weak, and is let go when the holding ends.
/// One callback per holding: a second watch throws `INVALID_ARGUMENT`.
#[napi(
    catch_unwind,
    ts_args_type = "holding: NativeHolding, onLost: (reason: string) => void"
)]
pub fn holding_watch(holding: f64, on_lost: LossCallback) -> Result<(), Thrown> {
    read(holding, |h| h.kept.watch(on_lost))?
}

/// Releases the key (`Holding::end`) and takes the holding out of the
/// table: rejects `LOST` if the lease was lost at any point while held
/// (LOCK-10), `CLOSED` if it ended already.
#[napi(catch_unwind, ts_args_type = "holding: NativeHolding")]
pub fn holding_end<'env>(env: &'env Env, holding: f64) -> napi::Result<Eventually<'env, ()>> {
    let native = take(holding).map_err(|e| errors::rejection(env, &e))?;
    let taken = native.kept.take();
    promise::spawn(
        env,
        native.kept.runtime(),
        async move { taken?.end().await },
    )
}

/// Releases every key of `holdings` at once (`Holding::end_all`,
/// LOCK-22), each taken out of the table: rejects with the first failure
/// in their order, `LOST` if a lease was lost while held, `CLOSED` if a
/// holding ended already (then the others are released in the background).
#[napi(catch_unwind, ts_args_type = "holdings: NativeHolding[]")]
pub fn holding_end_all<'env>(
    env: &'env Env,
    holdings: Vec<f64>,
) -> napi::Result<Eventually<'env, ()>> {
    let natives: Vec<leasehold::Result<NativeHolding>> = holdings.into_iter().map(take).collect();
    let runtime = natives
        .iter()
        .find_map(|n| n.as_ref().ok())
        .map_or_else(promise::process_runtime, |n| n.kept.runtime().clone());
    let taken = natives
        .into_iter()
        .map(|n| n?.kept.take())
        .collect::<leasehold::Result<Vec<Holding>>>();
    promise::spawn(env, &runtime, async move { Holding::end_all(taken?).await })
}
