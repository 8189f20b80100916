//! A slot held with background renewal, from `NativeSlots::begin` to `end`:
//! what the work under it sees, and the end that releases it with the
//! largest timestamp recorded.

use std::sync::Arc;

use leasehold::slots::{HeldSlot, SlotHolding};

use crate::durations;
use crate::errors::NativeError;
use crate::kept::Kept;
use crate::slots::NativeSlotLease;

/// A held slot (`leasehold::slots::SlotHolding`). Dropped without `end`
/// (closed, or collected), it is released in the background.
#[derive(uniffi::Object)]
pub struct NativeSlotHolding {
    kept: Kept<SlotHolding>,
}

impl NativeSlotHolding {
    /// Wraps a core slot holding.
    pub(crate) fn new(holding: SlotHolding) -> Arc<NativeSlotHolding> {
        Arc::new(NativeSlotHolding {
            kept: Kept::new(holding),
        })
    }

    fn held(&self) -> &HeldSlot {
        self.kept.view()
    }
}

#[uniffi::export]
impl NativeSlotHolding {
    /// The lease as last renewed.
    pub fn lease(&self) -> NativeSlotLease {
        NativeSlotLease::from(self.held().lease())
    }

    /// Records that timestamps up to `ms` were issued: the release hands the
    /// largest recorded to the slot's next holder (SLOT-05). Fails `Lost`
    /// once the slot was lost or released.
    pub fn issued(&self, ms: u64) -> Result<(), NativeError> {
        Ok(self.held().issued(ms)?)
    }

    /// The largest timestamp recorded (0: none).
    pub fn last_issued(&self) -> u64 {
        self.held().last_issued()
    }

    /// Whether the slot was lost.
    pub fn lost(&self) -> bool {
        self.held().lost()
    }

    /// Why it was lost, once it was.
    pub fn loss_reason(&self) -> Option<String> {
        self.held().loss_reason().map(|r| r.as_str().to_owned())
    }

    /// Nanoseconds left before the holder's deadline, zero once lost.
    pub fn remaining(&self) -> i64 {
        durations::nanos(self.held().remaining())
    }

    /// Completes with the loss reason once the slot is lost.
    pub async fn lost_signal(&self) -> Result<String, NativeError> {
        Ok(self.kept.lost_signal().await?)
    }

    /// Releases the slot with the largest timestamp recorded: fails `Lost`
    /// if it was lost while held, `Closed` if it ended already. It runs on
    /// to its end even if the awaiting coroutine is cancelled.
    pub async fn end(&self) -> Result<(), NativeError> {
        Ok(self.kept.end().await?)
    }
}
