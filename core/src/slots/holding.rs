//! A slot held while work runs: renewed in the background every ttl/3, its
//! loss a signal, its release carrying the largest timestamp issued.
//!
//! The holder keeps a deadline on its own clock, as a key's holder does
//! (LOCK-04): the send time of the last confirmed acquire or renewal + ttl −
//! margin. A renewal that answers nothing (another owner took the slot) or
//! no confirmed renewal by the deadline loses the slot.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::{SlotLease, Slots};
use crate::clock::Instant;
use crate::engine::combine;
use crate::error::{Error, ErrorKind, Result};
use crate::held::{Held, HeldState, HeldView};
use crate::loss::LossReason;
use crate::loss_channel::LossListener;
use crate::renewal::{renew_loop, HolderDeadlines, Renewal, Renewed};

/// Set in [`HeldSlotCell::issued`] once the holding ended: nothing more is
/// recorded, so nothing is issued after the release read the largest.
const ENDED: u64 = 1 << 63;

/// What a held slot's views and its renewal loop share: the lease as last
/// renewed, its ceiling and the store's clock as its answers showed them,
/// the largest timestamp issued, and the held state.
#[derive(Debug)]
pub(crate) struct HeldSlotCell {
    lease: Mutex<SlotLease>,
    /// The largest ceiling the store answered, readable without the lock.
    ceiling: AtomicU64,
    /// How far the store's clock (ms since the Unix epoch) is ahead of the
    /// local clock's origin: at least, by the answers so far.
    store_ahead_ms: AtomicU64,
    /// The largest timestamp recorded, with [`ENDED`] once the holding ended.
    issued: AtomicU64,
    pub(crate) held: HeldState,
}

impl LossListener for HeldSlotCell {
    fn lost(&self, reason: LossReason) {
        self.held.mark_lost(reason);
    }
}

impl HeldSlotCell {
    /// The cell of `lease`, answered at `received` on the clock `held` keeps.
    pub(crate) fn new(
        lease: SlotLease,
        ttl: Duration,
        received: Instant,
        held: HeldState,
    ) -> HeldSlotCell {
        let cell = HeldSlotCell {
            ceiling: AtomicU64::new(lease.ceiling),
            store_ahead_ms: AtomicU64::new(0),
            lease: Mutex::new(lease.clone()),
            issued: AtomicU64::new(0),
            held,
        };
        cell.observe_clock(&lease, ttl, received);
        cell
    }

    fn lease(&self) -> MutexGuard<'_, SlotLease> {
        self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a renewal's answer, read at `received`.
    pub(crate) fn renewed(&self, lease: SlotLease, ttl: Duration, received: Instant) {
        self.ceiling.fetch_max(lease.ceiling, Ordering::AcqRel);
        self.observe_clock(&lease, ttl, received);
        *self.lease() = lease;
    }

    /// The store stamped `lease` (expiry = its now + ttl, SLOT-04) before
    /// `received`: its clock is at least that far ahead of ours.
    fn observe_clock(&self, lease: &SlotLease, ttl: Duration, received: Instant) {
        let stamped = lease.expires_at.saturating_sub(millis(ttl));
        let ahead = stamped.saturating_sub(millis(received.since_origin()));
        self.store_ahead_ms.fetch_max(ahead, Ordering::AcqRel);
    }

    /// The store's time at `now` on the local clock, in ms since the Unix
    /// epoch: never ahead of the store's own clock, by the answers so far.
    pub(crate) fn store_ms(&self, now: Instant) -> u64 {
        self.store_ahead_ms
            .load(Ordering::Acquire)
            .saturating_add(millis(now.since_origin()))
    }

    /// The largest ceiling the store answered.
    pub(crate) fn ceiling(&self) -> u64 {
        self.ceiling.load(Ordering::Acquire)
    }

    /// Records that a timestamp up to `ms` was issued; `false` once the
    /// holding ended.
    fn record(&self, ms: u64) -> bool {
        let ms = ms & !ENDED;
        let mut cur = self.issued.load(Ordering::Acquire);
        loop {
            if cur & ENDED != 0 {
                return false;
            }
            if cur >= ms {
                return true;
            }
            match self
                .issued
                .compare_exchange_weak(cur, ms, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Marks the holding ended and says the largest timestamp recorded
    /// before: nothing is recorded after it.
    fn seal(&self) -> u64 {
        self.issued.fetch_or(ENDED, Ordering::AcqRel) & !ENDED
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A held slot, as the work running under it sees it. Cloning shares it.
#[derive(Debug, Clone)]
pub struct HeldSlot {
    shared: Arc<HeldSlotCell>,
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
        self.shared.ceiling()
    }

    /// Records that a timestamp up to `ms` is about to be issued: the
    /// release hands the largest one recorded to the slot's next holder
    /// (SLOT-05). Record first, then issue: once the holding ended or the
    /// slot was lost, nothing is recorded and this fails `Lost`, so a view
    /// kept past the release cannot issue behind the release's back.
    pub fn issued(&self, ms: u64) -> Result<()> {
        if let Some(reason) = self.loss_reason() {
            return Err(Error::lost(reason));
        }
        if self.shared.record(ms) {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Lost,
                "the slot holding ended: nothing issued after its release is recorded",
            ))
        }
    }

    /// The largest timestamp recorded by [`HeldSlot::issued`] (0: none).
    pub fn last_issued(&self) -> u64 {
        self.shared.issued.load(Ordering::Acquire) & !ENDED
    }

    /// What the views and the renewal loop share, for an ID generator to issue by.
    pub(crate) fn cell(&self) -> &Arc<HeldSlotCell> {
        &self.shared
    }

    /// Whether the slot was lost. Once true, it stays true; a slot whose
    /// holding ended without a loss stays not lost.
    pub fn lost(&self) -> bool {
        self.shared.held.reason().is_some()
    }

    /// Why the slot was lost, once it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.shared.held.reason()
    }

    /// Completes when the slot is lost.
    pub fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        self.shared.held.lost_signal()
    }

    /// A token cancelled when the slot is lost; cancelling it changes nothing for the slot.
    pub fn lost_token(&self) -> CancellationToken {
        self.shared.held.lost_token()
    }

    /// The time left before the holder's deadline; zero once lost and once
    /// its holding ended.
    pub fn remaining(&self) -> Duration {
        self.shared.held.remaining().unwrap_or_default()
    }
}

impl HeldView for HeldSlot {
    fn loss_reason(&self) -> Option<LossReason> {
        HeldSlot::loss_reason(self)
    }

    fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        HeldSlot::lost_signal(self)
    }
}

/// A slot held until [`SlotHolding::end`] or drop, renewed meanwhile: the
/// building block of [`Slots::hold_async`] for callers (bindings) whose
/// work is not a Rust closure.
pub struct SlotHolding {
    held: HeldSlot,
    slots: Slots,
    done: CancellationToken,
    /// The slot's renewal loop: `end` waits for it, so that nothing of the
    /// holding outlives its end.
    renewal_loop: Option<tokio::task::JoinHandle<()>>,
    ended: bool,
    /// The id of the channel on which the store's close tells the slot lost.
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
        let deadline = renewal_of(&slots).by_ttl(sent_at);
        let received = clock.now();
        let held = HeldState::new(clock.clone(), Some((deadline, LossReason::Expired)), None);
        let shared = Arc::new(HeldSlotCell::new(lease, slots.ttl(), received, held));
        let done = CancellationToken::new();
        let (close_id, closed) = slots.store().inner().watch_close();
        closed.on_loss(shared.clone());
        let held = HeldSlot { shared };
        let renewing = clock.started(renew_slot_loop(
            slots.clone(),
            held.shared.clone(),
            done.clone(),
            sent_at,
        ));
        let renewal_loop = slots.store().inner().runtime.spawn(renewing);
        SlotHolding {
            held,
            slots,
            done,
            renewal_loop: Some(renewal_loop),
            ended: false,
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
        if let Some(renewal_loop) = self.renewal_loop.take() {
            let _ = renewal_loop.await;
        }
        self.slots.store().inner().forget_close(self.close_id);
        let last_issued = self.held.shared.seal();
        let lease = self.held.lease();
        if let Ok(false) = self.slots.release(&lease, last_issued).await {
            self.held.shared.held.mark_lost(LossReason::Unknown);
        }
        match self.held.shared.held.end() {
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

impl Held for SlotHolding {
    type View = HeldSlot;

    fn view(&self) -> &HeldSlot {
        &self.held
    }

    fn end(self) -> impl std::future::Future<Output = Result<()>> + Send {
        SlotHolding::end(self)
    }
}

impl Drop for SlotHolding {
    fn drop(&mut self) {
        if !self.ended {
            self.held.shared.held.end();
            self.done.cancel();
            self.slots.store().inner().forget_close(self.close_id);
            let slots = self.slots.clone();
            let issued = self.held.shared.seal();
            let lease = self.held.lease();
            self.slots.store().inner().runtime.spawn(async move {
                let _ = slots.release(&lease, issued).await;
            });
        }
    }
}

/// Renews the held slot every ttl/3 until the holder is done, retrying a
/// failed renewal until the deadline; a renewal that answers nothing
/// (another owner has the slot) loses it.
async fn renew_slot_loop(
    slots: Slots,
    shared: Arc<HeldSlotCell>,
    done: CancellationToken,
    sent_at: Instant,
) {
    let deadlines = HolderDeadlines::new(renewal_of(&slots), sent_at, None);
    renew_loop(&shared.held, done, deadlines, || {
        let (slots, shared) = (slots.clone(), shared.clone());
        async move {
            let lease = shared.lease().clone();
            Ok(match slots.renew(&lease).await? {
                Some(renewed) => {
                    shared.renewed(renewed, slots.ttl(), slots.store().driver().clock().now());
                    Renewed::Kept { revoke_in: None }
                }
                None => Renewed::Gone(LossReason::Unknown),
            })
        }
    })
    .await
}

/// How the slots of `slots` are renewed.
fn renewal_of(slots: &Slots) -> Renewal {
    Renewal {
        ttl: slots.ttl(),
        margin: slots.margin(),
    }
}
