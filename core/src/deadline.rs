//! A deadline in an atomic: an `Option<Instant>` that holders read on
//! every check without taking a lock (a lease's `remaining()`, an ID
//! generator's check before each ID it issues), alone or with the reason
//! of a loss at it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::Instant;
use crate::loss::LossReason;

/// An optional deadline, read and written without a lock.
///
/// It is kept as the nanoseconds since the clock's origin plus one, and 0
/// is no deadline: every deadline compares above none, so that
/// [`AtomicDeadline::raise`] is one `fetch_max`, and a deadline at the
/// clock's origin stays exact. A deadline past `u64::MAX - 1` nanoseconds
/// (some 584 years) is kept as that much.
#[derive(Debug, Default)]
pub(crate) struct AtomicDeadline {
    /// [`AtomicDeadline::NONE`], or the deadline's nanoseconds plus one.
    nanos: AtomicU64,
}

impl AtomicDeadline {
    /// The stored value of no deadline.
    const NONE: u64 = 0;

    /// The deadline, if there is one.
    pub(crate) fn get(&self) -> Option<Instant> {
        Self::decode(self.nanos.load(Ordering::Acquire))
    }

    /// Moves the deadline to `at` if that is later (any deadline is later
    /// than none); returns the deadline now kept.
    pub(crate) fn raise(&self, at: Instant) -> Instant {
        let new = Self::encode(Some(at));
        let kept = self.nanos.fetch_max(new, Ordering::AcqRel).max(new);
        Self::decode(kept).unwrap_or(at)
    }

    fn decode(nanos: u64) -> Option<Instant> {
        match nanos {
            Self::NONE => None,
            n => Some(Instant::from_origin(Duration::from_nanos(n - 1))),
        }
    }

    fn encode(at: Option<Instant>) -> u64 {
        at.map_or(Self::NONE, |at| {
            u64::try_from(at.since_origin().as_nanos())
                .unwrap_or(u64::MAX)
                .saturating_add(1)
        })
    }
}

/// An optional deadline and the reason of a loss at it, read and written
/// together without a lock: a holding's own deadline ([`crate::held`]),
/// in 8 bytes.
///
/// It is kept as `(nanoseconds since the clock's origin + 1) << 3 |
/// reason code`, and 0 is no deadline. A deadline past 2^61 - 2
/// nanoseconds (some 73 years) is kept as that much.
#[derive(Debug, Default)]
pub(crate) struct AtomicDue {
    bits: AtomicU64,
}

impl AtomicDue {
    /// The bits of the reason's code.
    const REASON_BITS: u32 = 3;
    /// The latest deadline kept exactly, in nanoseconds.
    const MAX_NANOS: u64 = (u64::MAX >> Self::REASON_BITS) - 1;

    /// A deadline at `due`'s instant with its reason, or none.
    pub(crate) fn new(due: Option<(Instant, LossReason)>) -> AtomicDue {
        AtomicDue {
            bits: AtomicU64::new(Self::encode(due)),
        }
    }

    /// The deadline and its reason, if there is one.
    pub(crate) fn get(&self) -> Option<(Instant, LossReason)> {
        Self::decode(self.bits.load(Ordering::Acquire))
    }

    /// The deadline alone, if there is one.
    pub(crate) fn at(&self) -> Option<Instant> {
        self.get().map(|(at, _)| at)
    }

    /// Sets the deadline and its reason, or none.
    pub(crate) fn set(&self, due: Option<(Instant, LossReason)>) {
        self.bits.store(Self::encode(due), Ordering::Release);
    }

    fn encode(due: Option<(Instant, LossReason)>) -> u64 {
        due.map_or(0, |(at, why)| {
            let nanos = u64::try_from(at.since_origin().as_nanos())
                .unwrap_or(u64::MAX)
                .min(Self::MAX_NANOS);
            ((nanos + 1) << Self::REASON_BITS) | u64::from(why.code())
        })
    }

    fn decode(bits: u64) -> Option<(Instant, LossReason)> {
        if bits == 0 {
            return None;
        }
        let nanos = (bits >> Self::REASON_BITS) - 1;
        let code = u8::try_from(bits & ((1 << Self::REASON_BITS) - 1)).unwrap_or(0);
        let why = LossReason::from_code(code).unwrap_or(LossReason::Expired);
        Some((Instant::from_origin(Duration::from_nanos(nanos)), why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(nanos: u64) -> Instant {
        Instant::from_origin(Duration::from_nanos(nanos))
    }

    #[test]
    fn a_due_keeps_its_instant_and_reason() {
        let d = AtomicDue::new(None);
        assert_eq!(d.get(), None);
        for why in LossReason::ALL {
            for nanos in [0, 1, 9_000_000_000, AtomicDue::MAX_NANOS] {
                d.set(Some((at(nanos), why)));
                assert_eq!(d.get(), Some((at(nanos), why)));
                assert_eq!(d.at(), Some(at(nanos)));
            }
        }
        d.set(Some((
            Instant::from_origin(Duration::MAX),
            LossReason::Revoked,
        )));
        assert_eq!(
            d.get(),
            Some((at(AtomicDue::MAX_NANOS), LossReason::Revoked))
        );
        d.set(None);
        assert_eq!(d.get(), None);
    }

    #[test]
    fn raise_moves_only_later() {
        let d = AtomicDeadline::default();
        assert_eq!(d.get(), None);
        assert_eq!(d.raise(at(0)), at(0));
        assert_eq!(d.raise(at(10)), at(10));
        assert_eq!(d.raise(at(5)), at(10));
        assert_eq!(d.get(), Some(at(10)));
    }
}
