//! What a holder keeps of anything it holds, a key's lease or a slot: its
//! deadline on the holder's own clock (LOCK-04) and how it ended, once:
//! lost, with its reason (LOCK-09), or let go by its holder; and the public
//! traits that code keeping either alike (each binding's one wrapper) holds
//! them by. How a holding is renewed is in [`crate::renewal`].

use std::future::Future;
use std::sync::atomic::{fence, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::{
    CancellationToken, WaitForCancellationFuture, WaitForCancellationFutureOwned,
};

use crate::clock::{Clock, Instant};
use crate::deadline::{AtomicDeadline, AtomicDue};
use crate::error::Result;
use crate::loss::LossReason;

/// The state a holding shares between its holder and whatever renews it.
#[derive(Debug)]
pub(crate) struct HeldState {
    clock: Clock,
    /// The holding's own deadline (its maxHold's, in a renewal group), and
    /// the reason of a loss at it.
    deadline: AtomicDue,
    /// The deadline of the renewal group the holding is in.
    group: Option<Arc<AtomicDeadline>>,
    /// Cancelled at the loss; made on first use, so that a holding nobody
    /// waits on the loss of costs no token (a million held leases).
    lost: OnceLock<CancellationToken>,
    /// [`HeldState::NOT_LOST`], [`HeldState::ENDED`], or the loss's
    /// [`LossReason::code`] + 1: whichever came first stays.
    reason: AtomicU8,
}

impl HeldState {
    /// The value of `reason` while held.
    const NOT_LOST: u8 = 0;
    /// The value of `reason` once its holder ended it, not lost.
    const ENDED: u8 = u8::MAX;

    /// A holding kept by `clock`, with its own `deadline` (and the reason of
    /// a loss at it) and its group's.
    pub(crate) fn new(
        clock: Clock,
        deadline: Option<(Instant, LossReason)>,
        group: Option<Arc<AtomicDeadline>>,
    ) -> HeldState {
        HeldState {
            clock,
            deadline: AtomicDue::new(deadline),
            group,
            lost: OnceLock::new(),
            reason: AtomicU8::new(Self::NOT_LOST),
        }
    }

    /// The clock the deadline is kept by.
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Records the loss; only the first reason counts (a loss is delivered
    /// once), and none once the holder ended it.
    pub(crate) fn mark_lost(&self, reason: LossReason) {
        let first = self.reason.compare_exchange(
            Self::NOT_LOST,
            reason.code() + 1,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if first.is_ok() {
            // Pairs with the fence in `token`: of a loss and a first wait
            // racing, at least one sees the other, so the token is cancelled.
            fence(Ordering::SeqCst);
            if let Some(token) = self.lost.get() {
                token.cancel();
            }
        }
    }

    /// Records that the holder ended it, unless it was lost first (a
    /// deadline that has come is a loss, as [`HeldState::reason`] says):
    /// the loss, if so. From now on it has no time left, and no loss comes.
    pub(crate) fn end(&self) -> Option<LossReason> {
        if let Some(reason) = self.reason() {
            return Some(reason);
        }
        match self.reason.compare_exchange(
            Self::NOT_LOST,
            Self::ENDED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => None,
            Err(_) => self.recorded(),
        }
    }

    /// Whether its holder ended it, not lost.
    fn ended(&self) -> bool {
        self.reason.load(Ordering::Acquire) == Self::ENDED
    }

    /// The token cancelled at the loss, made now if nobody asked before.
    fn token(&self) -> &CancellationToken {
        let token = self.lost.get_or_init(CancellationToken::new);
        fence(Ordering::SeqCst);
        if self.reason().is_some() {
            token.cancel();
        }
        token
    }

    /// Completes once the holding is lost.
    pub(crate) fn lost_cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.token().cancelled()
    }

    /// Completes once the holding is lost, owning what it waits on.
    pub(crate) fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        self.token().clone().cancelled_owned()
    }

    /// A token cancelled at the loss; cancelling it changes nothing here.
    pub(crate) fn lost_token(&self) -> CancellationToken {
        self.token().child_token()
    }

    /// Why the holding was lost, once it was. A holder deadline that has
    /// come is a loss even before its renewal loop ran (a loop starved, or a
    /// process just resumed from SIGSTOP): it is recorded here, so that no
    /// one who asks acts as the holder past the deadline (LOCK-04).
    /// Once ended, it is never lost.
    pub(crate) fn reason(&self) -> Option<LossReason> {
        if let Some(reason) = self.recorded() {
            return Some(reason);
        }
        if self.ended() {
            return None;
        }
        let (at, why) = self.due()?;
        if at > self.clock.now() {
            return None;
        }
        self.mark_lost(why);
        self.recorded()
    }

    /// The loss recorded, if any.
    fn recorded(&self) -> Option<LossReason> {
        match self.reason.load(Ordering::Acquire) {
            Self::NOT_LOST | Self::ENDED => None,
            code => LossReason::from_code(code - 1),
        }
    }

    /// Sets the holding's own deadline and the reason of a loss at it.
    pub(crate) fn set_deadline(&self, at: Option<Instant>, why: LossReason) {
        self.deadline.set(at.map(|at| (at, why)));
    }

    /// Whether the holding is lost at `now`, as [`HeldState::reason`] says,
    /// or ended, without taking a lock while its own deadline is ahead: the
    /// check an ID generator makes on every ID it issues.
    pub(crate) fn lost_at(&self, now: Instant) -> bool {
        if self.reason.load(Ordering::Acquire) != Self::NOT_LOST {
            return true;
        }
        if self.group.is_none() && self.deadline.at().is_none_or(|own| now < own) {
            return false;
        }
        self.reason().is_some()
    }

    /// The holder's deadline, the earlier of its own and its group's (a
    /// group's runs out as `Expired`), with the reason of a loss at it.
    fn due(&self) -> Option<(Instant, LossReason)> {
        let own = self.deadline.get();
        let group = self.group.as_ref().and_then(|g| g.get());
        match (own, group) {
            (Some((a, why)), Some(b)) if a <= b => Some((a, why)),
            (_, Some(b)) => Some((b, LossReason::Expired)),
            (own, None) => own,
        }
    }

    /// The holder's deadline: the earlier of its own and its group's.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.due().map(|(at, _)| at)
    }

    /// The time left before the deadline, zero once lost or ended; `None`
    /// without a deadline while held.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        if self.ended() || self.reason().is_some() {
            return Some(Duration::ZERO);
        }
        Some(self.deadline()?.saturating_since(self.clock.now()))
    }
}

/// What the held work sees of anything held, a key's [`Lease`](crate::Lease)
/// or a slot's [`HeldSlot`](crate::slots::HeldSlot): whether and why it was
/// lost, and the signal of its loss.
pub trait HeldView: Clone + Send + Sync + 'static {
    /// Why it was lost, once it was; once lost, it stays lost, and once
    /// ended by its holder without a loss, it is never lost.
    fn loss_reason(&self) -> Option<LossReason>;

    /// Completes when it is lost.
    fn lost_signal(&self) -> WaitForCancellationFutureOwned;
}

/// Anything held until it is ended, a key's [`Holding`](crate::Holding) or a
/// slot's [`SlotHolding`](crate::slots::SlotHolding): what code that keeps
/// either alike (each binding's one wrapper) needs of it.
pub trait Held: Send + 'static {
    /// What the held work is given.
    type View: HeldView;

    /// What the held work is given: it stays usable after the end.
    fn view(&self) -> &Self::View;

    /// Releases what is held; fails `Lost` if it was lost while held.
    fn end(self) -> impl Future<Output = Result<()>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-09: a loss reaches a wait started before it and one started
    // after it, and a token asked for after it comes cancelled.
    #[tokio::test]
    async fn lock_09_a_loss_reaches_waits_made_before_and_after_it() {
        let held = Arc::new(HeldState::new(Clock::monotonic(), None, None));
        let before = tokio::spawn(held.lost_signal());
        tokio::task::yield_now().await;
        held.mark_lost(LossReason::Expired);
        held.mark_lost(LossReason::Revoked);
        before.await.unwrap();
        held.lost_signal().await;
        assert!(held.lost_token().is_cancelled());
        assert_eq!(held.reason(), Some(LossReason::Expired));
        assert_eq!(held.remaining(), Some(Duration::ZERO));
        let never_waited = HeldState::new(Clock::monotonic(), None, None);
        never_waited.mark_lost(LossReason::Closed);
        assert!(never_waited.lost_token().is_cancelled());
    }

    // LOCK-09: whichever comes first of a loss and the holder's end stays:
    // an end after a loss answers it; a loss after the end is not recorded,
    // nor is the deadline passing, and nothing is left to issue by.
    #[test]
    fn lock_09_a_loss_and_the_end_whichever_comes_first_stays() {
        let clock = crate::clock::VirtualClock::new();
        let at = clock.now() + Duration::from_secs(5);
        let ended = HeldState::new(clock.clone().into(), Some((at, LossReason::Expired)), None);
        assert_eq!(ended.remaining(), Some(Duration::from_secs(5)));
        assert_eq!(ended.end(), None);
        ended.mark_lost(LossReason::Revoked);
        clock.jump(Duration::from_secs(6));
        assert_eq!(ended.reason(), None);
        assert_eq!(ended.remaining(), Some(Duration::ZERO));
        assert!(ended.lost_at(clock.now()));

        let lost = HeldState::new(clock.clone().into(), None, None);
        lost.mark_lost(LossReason::Revoked);
        assert_eq!(lost.end(), Some(LossReason::Revoked));
        assert_eq!(lost.reason(), Some(LossReason::Revoked));

        let past = clock.now() - Duration::from_secs(1);
        let overdue = HeldState::new(clock.into(), Some((past, LossReason::Expired)), None);
        assert_eq!(overdue.end(), Some(LossReason::Expired));
    }
}
