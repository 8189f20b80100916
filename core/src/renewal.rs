//! Renewing on a store whose holdings run out: the ttl and margin a holding
//! is renewed by, the holder's deadline arithmetic (LOCK-04), the rule for
//! renewing before held work starts, and the renewal loop of one holding, a
//! key's lease renewed by id or a slot (LOCK-06). A renewal group's task,
//! which renews many leases with one call, is in [`crate::group`].

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::Instant;
use crate::error::Result;
use crate::held::HeldState;
use crate::loss::LossReason;

/// How a holding is renewed on a store whose holdings run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Renewal {
    /// How long each grant or renewal keeps it at the store.
    pub(crate) ttl: Duration,
    /// How long before the store's expiry its holder counts it lost.
    pub(crate) margin: Duration,
}

impl Renewal {
    /// The holder's ttl deadline after a grant or renewal sent at `sent_at`:
    /// the store answered after that, so it keeps the holding at least a
    /// ttl from then; the margin is kept for clocks that drift.
    pub(crate) fn by_ttl(&self, sent_at: Instant) -> Instant {
        sent_at + self.ttl - self.margin
    }

    /// The holder's maxHold deadline after an answer to a request sent at
    /// `sent_at` that said the store revokes the holding in `revoke_in`.
    pub(crate) fn by_max_hold(
        &self,
        sent_at: Instant,
        revoke_in: Option<Duration>,
    ) -> Option<Instant> {
        revoke_in.map(|left| sent_at + left - self.margin)
    }

    /// When to renew after a grant or renewal sent at `sent_at` was
    /// confirmed: a third of the ttl later, leaving two tries' worth of
    /// time before the deadline.
    pub(crate) fn renew_at(&self, sent_at: Instant) -> Instant {
        sent_at + self.ttl / 3
    }

    /// Whether a holding whose holder deadline is `deadline` (`None`: not
    /// known) is renewed before its held work starts, at `now`: when no
    /// more than a third of the ttl is left. A grant counts from the send
    /// time of its request, so a wait in line or a slow answer leaves less;
    /// a renewal sent now gives a fresh deadline, or fails `Lost` if the
    /// store let the holding go meanwhile. Otherwise the renewals go on
    /// their schedule, and the handoff costs no extra round trip.
    pub(crate) fn renews_first(&self, deadline: Option<Instant>, now: Instant) -> bool {
        deadline.is_none_or(|d| d <= now + self.ttl / 3)
    }
}

/// How long to wait before trying a failed renewal again.
pub(crate) fn retry_after(ttl: Duration) -> Duration {
    (ttl / 20).max(Duration::from_millis(50))
}

/// The holder's deadlines, each a time at which the store has surely not
/// yet let the holding go (LOCK-04): the ttl one moves with every renewal;
/// the maxHold one is the latest the store's answers have confirmed (each
/// answer's time left before revocation, counted from its send time, is a
/// lower bound, so the larger of two stays safe).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HolderDeadlines {
    renewal: Renewal,
    last_sent: Instant,
    by_ttl: Instant,
    by_max_hold: Option<Instant>,
}

impl HolderDeadlines {
    /// The deadlines after a grant sent at `sent_at` that answered `revoke_in`.
    pub(crate) fn new(
        renewal: Renewal,
        sent_at: Instant,
        revoke_in: Option<Duration>,
    ) -> HolderDeadlines {
        let mut d = HolderDeadlines {
            renewal,
            last_sent: sent_at,
            by_ttl: sent_at,
            by_max_hold: None,
        };
        d.confirmed(sent_at, revoke_in);
        d
    }

    /// A grant or renewal sent at `sent_at` succeeded, answering `revoke_in`.
    fn confirmed(&mut self, sent_at: Instant, revoke_in: Option<Duration>) {
        self.last_sent = sent_at;
        self.by_ttl = self.renewal.by_ttl(sent_at);
        if let Some(at) = self.renewal.by_max_hold(sent_at, revoke_in) {
            self.by_max_hold = Some(self.by_max_hold.map_or(at, |prev| prev.max(at)));
        }
    }

    /// The deadline the holder keeps: the earlier of the two.
    pub(crate) fn holder(&self) -> Instant {
        self.by_max_hold.map_or(self.by_ttl, |m| m.min(self.by_ttl))
    }

    /// Why a holding whose holder deadline came is lost.
    pub(crate) fn reason(&self) -> LossReason {
        match self.by_max_hold {
            Some(m) if m <= self.by_ttl => LossReason::Revoked,
            _ => LossReason::Expired,
        }
    }

    /// When the next renewal is due, on schedule.
    fn renew_at(&self) -> Instant {
        self.renewal.renew_at(self.last_sent)
    }
}

/// What one renewal of a single holding found.
pub(crate) enum Renewed {
    /// Renewed; the time left before its maxHold, if it has one.
    Kept {
        /// As [`crate::table::Grant::revoke_in`].
        revoke_in: Option<Duration>,
    },
    /// The store no longer holds it for this holder.
    Gone(LossReason),
}

/// The renewal loop of one holding on a store whose holdings run out, until
/// `done` or its loss: renews it every ttl/3 from the last confirmed send
/// with `renew`, retrying a failed renewal every ttl/20 until the holder's
/// deadline, at which it is lost (LOCK-04, LOCK-06).
pub(crate) async fn renew_loop<F, Fut>(
    held: &HeldState,
    done: CancellationToken,
    mut deadlines: HolderDeadlines,
    mut renew: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Renewed>>,
{
    let clock = held.clock().clone();
    let ttl = deadlines.renewal.ttl;
    let mut next = deadlines.renew_at();
    loop {
        let deadline = deadlines.holder();
        tokio::select! {
            biased;
            _ = done.cancelled() => return,
            _ = held.lost_cancelled() => return,
            _ = clock.sleep_until(deadline) => return held.mark_lost(deadlines.reason()),
            _busy = clock.work_at(next) => {
                let sent = clock.now();
                let outcome = tokio::select! {
                    biased;
                    _ = done.cancelled() => return,
                    _ = clock.sleep_until(deadline) => None,
                    res = renew() => Some(res),
                };
                match outcome {
                    None => return held.mark_lost(deadlines.reason()),
                    Some(Ok(Renewed::Kept { revoke_in })) => {
                        deadlines.confirmed(sent, revoke_in);
                        held.set_deadline(Some(deadlines.holder()), deadlines.reason());
                        next = deadlines.renew_at();
                    }
                    Some(Ok(Renewed::Gone(reason))) => return held.mark_lost(reason),
                    Some(Err(_)) => next = clock.now() + retry_after(ttl),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Instant {
        Instant::from_origin(Duration::from_secs(secs))
    }

    const RENEWAL: Renewal = Renewal {
        ttl: Duration::from_secs(9),
        margin: Duration::from_secs(1),
    };

    // LOCK-04: the holder's deadline is the earlier of send time + ttl −
    // margin and the maxHold one, lost as Revoked when the maxHold one
    // comes first; a later answer never moves the maxHold one back.
    #[test]
    fn lock_04_the_holder_deadline_is_the_earlier_of_ttl_and_max_hold() {
        let mut d = HolderDeadlines::new(RENEWAL, at(10), None);
        assert_eq!((d.holder(), d.reason()), (at(18), LossReason::Expired));
        d.confirmed(at(13), Some(Duration::from_secs(6)));
        assert_eq!((d.holder(), d.reason()), (at(18), LossReason::Revoked));
        d.confirmed(at(16), Some(Duration::from_secs(1)));
        assert_eq!((d.holder(), d.reason()), (at(18), LossReason::Revoked));
        assert_eq!(d.renew_at(), at(19));
    }

    // LOCK-04, LOCK-06: a holding is renewed before its work starts when a
    // third of the ttl or less is left of its deadline, or none is known.
    #[test]
    fn lock_04_renews_first_when_a_third_of_the_ttl_is_left() {
        assert!(!RENEWAL.renews_first(Some(at(14)), at(10)));
        assert!(RENEWAL.renews_first(Some(at(13)), at(10)));
        assert!(RENEWAL.renews_first(None, at(10)));
    }
}
