//! A slot held while work runs: renewed in the background every ttl/3, its
//! loss a signal, its release carrying the largest timestamp issued.
//!
//! The holder keeps a deadline on its own clock, as a key's holder does
//! (LOCK-04): the send time of the last confirmed acquire or renewal + ttl −
//! margin. A renewal that answers nothing (another owner took the slot) or
//! no confirmed renewal by the deadline loses the slot.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::{SlotLease, Slots};
use crate::clock::{Clock, Instant};
use crate::engine::{combine, retry_after};
use crate::error::{Error, Result};
use crate::loss::LossReason;
use crate::store::OnClose;

#[derive(Debug)]
struct Shared {
    lease: Mutex<SlotLease>,
    deadline: Mutex<Instant>,
    issued: AtomicU64,
    lost: CancellationToken,
    reason: OnceLock<LossReason>,
    clock: Clock,
}

impl Shared {
    fn lease(&self) -> MutexGuard<'_, SlotLease> {
        self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn deadline(&self) -> MutexGuard<'_, Instant> {
        self.deadline.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mark_lost(&self, reason: LossReason) {
        if self.reason.set(reason).is_ok() {
            self.lost.cancel();
        }
    }
}

/// A held slot, as the work running under it sees it. Cloning shares it.
#[derive(Debug, Clone)]
pub struct HeldSlot {
    shared: Arc<Shared>,
}

impl HeldSlot {
    /// The lease as last renewed.
    pub fn lease(&self) -> SlotLease {
        self.shared.lease().clone()
    }

    /// The slot.
    pub fn slot(&self) -> u32 {
        self.shared.lease().slot()
    }

    /// The node number (slot + offset).
    pub fn node(&self) -> u32 {
        self.shared.lease().node()
    }

    /// The fence (SLOT-08).
    pub fn fence(&self) -> u64 {
        self.shared.lease().fence()
    }

    /// Issue only timestamps above this one.
    pub fn floor(&self) -> u64 {
        self.shared.lease().floor()
    }

    /// Issue no timestamp past this one; renewals move it on.
    pub fn ceiling(&self) -> u64 {
        self.shared.lease().ceiling()
    }

    /// Records that a timestamp up to `ms` was issued: the release hands
    /// the largest one recorded to the slot's next holder (SLOT-05).
    pub fn issued(&self, ms: u64) {
        self.shared.issued.fetch_max(ms, Ordering::AcqRel);
    }

    /// The largest timestamp recorded by [`HeldSlot::issued`] (0: none).
    pub fn last_issued(&self) -> u64 {
        self.shared.issued.load(Ordering::Acquire)
    }

    /// Whether the slot was lost. Once true, it stays true.
    pub fn lost(&self) -> bool {
        self.shared.reason.get().is_some()
    }

    /// Why the slot was lost, once it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.shared.reason.get().copied()
    }

    /// Completes when the slot is lost.
    pub fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        self.shared.lost.clone().cancelled_owned()
    }

    /// A token cancelled when the slot is lost; cancelling it changes nothing for the slot.
    pub fn lost_token(&self) -> CancellationToken {
        self.shared.lost.child_token()
    }

    /// The time left before the holder's deadline; zero once lost.
    pub fn remaining(&self) -> Duration {
        if self.lost() {
            return Duration::ZERO;
        }
        self.shared
            .deadline()
            .saturating_since(self.shared.clock.now())
    }
}

/// A slot held until [`SlotHolding::end`] or drop, renewed meanwhile: the
/// building block of [`Slots::hold_async`] for callers (bindings) whose
/// work is not a Rust closure.
pub struct SlotHolding {
    held: HeldSlot,
    slots: Slots,
    done: CancellationToken,
    /// The renewing task: `end` waits for it, so that nothing of the
    /// holding outlives its end.
    keeper: Option<tokio::task::JoinHandle<()>>,
    ended: bool,
    /// Marks the slot lost when the store closes; registered under `close_id`.
    _on_close: OnClose,
    close_id: u64,
}

impl std::fmt::Debug for SlotHolding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotHolding")
            .field("held", &self.held)
            .field("ended", &self.ended)
            .finish()
    }
}

impl SlotHolding {
    /// Starts keeping `lease`, acquired by a call sent at `sent_at`.
    pub(super) fn start(slots: Slots, lease: SlotLease, sent_at: Instant) -> SlotHolding {
        let clock = slots.store().driver().clock().clone();
        let shared = Arc::new(Shared {
            lease: Mutex::new(lease),
            deadline: Mutex::new(sent_at + slots.ttl() - slots.margin()),
            issued: AtomicU64::new(0),
            lost: CancellationToken::new(),
            reason: OnceLock::new(),
            clock,
        });
        let done = CancellationToken::new();
        let on_close: OnClose = {
            let shared = shared.clone();
            Arc::new(move || shared.mark_lost(LossReason::Closed))
        };
        let close_id = slots.store().inner().on_close(&on_close);
        let held = HeldSlot { shared };
        let keeper = slots.store().inner().runtime.spawn(keep(
            slots.clone(),
            held.clone(),
            done.clone(),
            sent_at,
        ));
        SlotHolding {
            held,
            slots,
            done,
            keeper: Some(keeper),
            ended: false,
            _on_close: on_close,
            close_id,
        }
    }

    /// The held slot, to hand to the work.
    pub fn held(&self) -> &HeldSlot {
        &self.held
    }

    /// Stops renewing and releases the slot with the largest timestamp
    /// recorded as issued. Fails `Lost` if the slot was lost meanwhile.
    ///
    /// A release that fails for another reason (the store cannot be
    /// reached) does not fail the holding: the slot runs out at the store,
    /// and its next holder starts above its ceiling (SLOT-06).
    pub async fn end(mut self) -> Result<()> {
        self.ended = true;
        self.done.cancel();
        if let Some(keeper) = self.keeper.take() {
            let _ = keeper.await;
        }
        self.slots.store().inner().forget_close(self.close_id);
        let lease = self.held.lease();
        if let Ok(false) = self.slots.release(&lease, self.held.last_issued()).await {
            self.held.shared.mark_lost(LossReason::Unknown);
        }
        match self.held.loss_reason() {
            Some(reason) => Err(Error::lost(reason)),
            None => Ok(()),
        }
    }

    /// Ends the holding and combines the work's outcome with the slot's: a
    /// lost slot fails `Lost` even if the work succeeded, with the work's own
    /// error as the cause.
    pub async fn finish<T, E>(self, outcome: std::result::Result<T, E>) -> std::result::Result<T, E>
    where
        E: From<Error> + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        combine(self.end().await, outcome)
    }
}

impl Drop for SlotHolding {
    fn drop(&mut self) {
        if !self.ended {
            self.done.cancel();
            self.slots.store().inner().forget_close(self.close_id);
            let slots = self.slots.clone();
            let lease = self.held.lease();
            let issued = self.held.last_issued();
            self.slots.store().inner().runtime.spawn(async move {
                let _ = slots.release(&lease, issued).await;
            });
        }
    }
}

/// Renews the held slot every ttl/3 until the holder is done, retrying a
/// failed renewal until the deadline.
async fn keep(slots: Slots, held: HeldSlot, done: CancellationToken, mut last_sent: Instant) {
    let clock = held.shared.clock.clone();
    let ttl = slots.ttl();
    let mut next = last_sent + ttl / 3;
    loop {
        let deadline = *held.shared.deadline();
        tokio::select! {
            biased;
            _ = done.cancelled() => return,
            _ = held.shared.lost.cancelled() => return,
            _ = clock.sleep_until(deadline) => return held.shared.mark_lost(LossReason::Expired),
            _ = clock.sleep_until(next) => {
                let sent = clock.now();
                let lease = held.lease();
                let outcome = tokio::select! {
                    biased;
                    _ = done.cancelled() => return,
                    _ = clock.sleep_until(deadline) => None,
                    res = slots.renew(&lease) => Some(res),
                };
                match outcome {
                    None => return held.shared.mark_lost(LossReason::Expired),
                    Some(Ok(Some(renewed))) => {
                        *held.shared.lease() = renewed;
                        *held.shared.deadline() = sent + ttl - slots.margin();
                        last_sent = sent;
                        next = last_sent + ttl / 3;
                    }
                    Some(Ok(None)) => return held.shared.mark_lost(LossReason::Unknown),
                    Some(Err(_)) => next = clock.now() + retry_after(ttl),
                }
            }
        }
    }
}
