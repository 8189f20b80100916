//! Optional times in 8 bytes, for what the table keeps per lease.

use std::time::Duration;

use crate::clock::Instant;

/// An optional duration, or an optional instant as its time since the
/// clock's origin, in 8 bytes: whole nanoseconds, `u64::MAX` for none.
/// A duration past 584 years is kept as 584 years (never, for a lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Nanos(u64);

impl Nanos {
    /// No duration, no instant.
    pub(super) const NONE: Nanos = Nanos(u64::MAX);

    /// `d`, saturated to the largest duration kept.
    pub(super) fn of(d: Option<Duration>) -> Nanos {
        d.map_or(Nanos::NONE, |d| {
            Nanos(u64::try_from(d.as_nanos()).map_or(u64::MAX - 1, |n| n.min(u64::MAX - 1)))
        })
    }

    /// `at`, as its time since the clock's origin.
    pub(super) fn at(at: Option<Instant>) -> Nanos {
        Nanos::of(at.map(Instant::since_origin))
    }

    /// The duration kept.
    pub(super) fn duration(self) -> Option<Duration> {
        (self != Nanos::NONE).then(|| Duration::from_nanos(self.0))
    }

    /// The instant kept.
    pub(super) fn instant(self) -> Option<Instant> {
        self.duration().map(Instant::from_origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_it_is_given_and_saturates_past_584_years() {
        let d = Duration::new(12_345, 678_901_234);
        assert_eq!(Nanos::of(Some(d)).duration(), Some(d));
        assert_eq!(Nanos::of(None).duration(), None);
        let at = Instant::from_origin(d);
        assert_eq!(Nanos::at(Some(at)).instant(), Some(at));
        assert_eq!(Nanos::at(None).instant(), None);
        let huge = Duration::from_secs(u64::MAX);
        let kept = Nanos::of(Some(huge)).duration().expect("kept");
        assert_eq!(kept, Duration::from_nanos(u64::MAX - 1));
    }
}
