//! A deadline in an atomic: an `Option<Instant>` that holders read on
//! every check without taking a lock (a lease's `remaining()`, an ID
//! generator's check before each ID it issues).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::Instant;

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

    /// A deadline at `at`, or none.
    pub(crate) fn new(at: Option<Instant>) -> AtomicDeadline {
        AtomicDeadline {
            nanos: AtomicU64::new(Self::encode(at)),
        }
    }

    /// The deadline, if there is one.
    pub(crate) fn get(&self) -> Option<Instant> {
        Self::decode(self.nanos.load(Ordering::Acquire))
    }

    /// Sets the deadline to `at`, or to none.
    pub(crate) fn set(&self, at: Option<Instant>) {
        self.nanos.store(Self::encode(at), Ordering::Release);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(nanos: u64) -> Instant {
        Instant::from_origin(Duration::from_nanos(nanos))
    }

    #[test]
    fn keeps_none_the_origin_and_later_deadlines() {
        let d = AtomicDeadline::new(None);
        assert_eq!(d.get(), None);
        d.set(Some(at(0)));
        assert_eq!(d.get(), Some(at(0)));
        d.set(Some(at(7)));
        assert_eq!(d.get(), Some(at(7)));
        d.set(None);
        assert_eq!(d.get(), None);
    }

    #[test]
    fn raise_moves_only_later() {
        let d = AtomicDeadline::default();
        assert_eq!(d.raise(at(0)), at(0));
        assert_eq!(d.raise(at(10)), at(10));
        assert_eq!(d.raise(at(5)), at(10));
        assert_eq!(d.get(), Some(at(10)));
    }
}
