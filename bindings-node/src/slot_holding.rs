//! A slot held while a JS function runs (`leasehold::slots::SlotHolding`):
//! the held slot it sees, the loss watcher behind `held.signal`, and the
//! end that releases it. Renewal, the holder's deadline and the loss are
//! the core's.

use leasehold::slots::{HeldSlot, SlotHolding};
use napi::bindgen_prelude::BigInt;
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::durations;
use crate::errors::{thrown, Thrown};
use crate::kept::{Kept, LossCallback};
use crate::promise::Eventually;
use crate::slots::{js_millis, millis_arg, NativeSlotLease};

/// A held slot and its holding.
#[napi]
pub struct NativeSlotHolding {
    kept: Kept<SlotHolding>,
}

impl NativeSlotHolding {
    /// Wraps a core slot holding whose calls run on `runtime`.
    pub(crate) fn new(holding: SlotHolding, runtime: Handle) -> NativeSlotHolding {
        NativeSlotHolding {
            kept: Kept::new(holding, runtime),
        }
    }

    fn held(&self) -> &HeldSlot {
        self.kept.view()
    }
}

#[napi]
impl NativeSlotHolding {
    /// The lease as last renewed.
    #[napi(getter, catch_unwind)]
    pub fn lease(&self) -> NativeSlotLease {
        NativeSlotLease::new(self.held().lease())
    }

    /// The slot, in `[0, limit)`.
    #[napi(getter, catch_unwind)]
    pub fn slot(&self) -> u32 {
        self.held().slot()
    }

    /// The node number: the slot plus the namespace's offset.
    #[napi(getter, catch_unwind)]
    pub fn node(&self) -> u32 {
        self.held().node()
    }

    /// The fence (SLOT-08).
    #[napi(getter, catch_unwind)]
    pub fn fence(&self) -> BigInt {
        BigInt::from(self.held().fence())
    }

    /// Issue only timestamps above this one (ms).
    #[napi(getter, catch_unwind)]
    pub fn floor(&self) -> f64 {
        js_millis(self.held().floor())
    }

    /// Issue no timestamp past this one (ms); renewals move it on.
    #[napi(getter, catch_unwind)]
    pub fn ceiling(&self) -> f64 {
        js_millis(self.held().ceiling())
    }

    /// Records that timestamps up to `ms` were issued (`HeldSlot::issued`):
    /// the release hands the largest on as the next holder's floor (SLOT-05).
    #[napi(catch_unwind)]
    pub fn issued(&self, ms: BigInt) -> Result<(), Thrown> {
        self.held()
            .issued(millis_arg("issued", ms).map_err(thrown)?)
            .map_err(thrown)
    }

    /// The largest timestamp recorded as issued (ms; 0: none).
    #[napi(getter, catch_unwind)]
    pub fn last_issued(&self) -> f64 {
        js_millis(self.held().last_issued())
    }

    /// Whether the slot was lost.
    #[napi(getter, catch_unwind)]
    pub fn lost(&self) -> bool {
        self.held().lost()
    }

    /// Why the slot was lost, once it was.
    #[napi(getter, catch_unwind)]
    pub fn loss_reason(&self) -> Option<String> {
        self.held().loss_reason().map(|r| r.as_str().to_owned())
    }

    /// Milliseconds left before the holder's deadline; 0 once lost.
    #[napi(getter, catch_unwind)]
    pub fn remaining(&self) -> f64 {
        durations::millis(self.held().remaining())
    }

    /// Calls `on_lost(reason)` once if the slot is lost before the holding
    /// ends. The callback is weak, and is let go when the holding ends.
    /// One callback per holding: a second watch throws `INVALID_ARGUMENT`.
    #[napi(catch_unwind, ts_args_type = "onLost: (reason: string) => void")]
    pub fn watch(&self, on_lost: LossCallback) -> Result<(), Thrown> {
        self.kept.watch(on_lost)
    }

    /// Stops renewing and releases the slot with the largest timestamp
    /// issued (`SlotHolding::end`): rejects `LOST` if the slot was lost
    /// meanwhile, `CLOSED` if it ended already.
    #[napi(catch_unwind)]
    pub fn end<'env>(&self, env: &'env Env) -> napi::Result<Eventually<'env, ()>> {
        self.kept.end(env)
    }
}
