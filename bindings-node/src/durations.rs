//! Durations from JS: a number of milliseconds, or a string that
//! `leasehold::duration::parse` reads (`"30s"`, `"1m"`, `"250ms"`).

use std::time::Duration;

use leasehold::{Error, ErrorKind};
use napi::bindgen_prelude::Either;

/// A duration as JS passes it.
pub(crate) type JsDuration = Either<f64, String>;

/// The duration `d` means; a number that is not a finite, nonnegative count
/// of milliseconds, or a string that does not parse, fails `InvalidTtl`.
/// Ranges (LOCK-13) are the core's to check.
pub(crate) fn duration(what: &str, d: JsDuration) -> leasehold::Result<Duration> {
    match d {
        Either::A(ms) => Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| {
            Error::new(
                ErrorKind::InvalidTtl,
                format!("{what} must be a finite, nonnegative number of milliseconds, got {ms}"),
            )
        }),
        Either::B(text) => leasehold::duration::parse(&text),
    }
}

/// An optional duration.
pub(crate) fn optional(what: &str, d: Option<JsDuration>) -> leasehold::Result<Option<Duration>> {
    d.map(|d| duration(what, d)).transpose()
}

/// A duration as JS reads it: milliseconds.
pub(crate) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-13: numbers are milliseconds, strings are the core's; bad numbers fail InvalidTtl.
    #[test]
    fn lock_13_js_durations() {
        assert_eq!(
            duration("ttl", Either::A(1500.0)).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            duration("ttl", Either::B("1m30s".into())).unwrap(),
            Duration::from_secs(90)
        );
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert_eq!(
                duration("ttl", Either::A(bad)).unwrap_err().kind(),
                ErrorKind::InvalidTtl
            );
        }
        assert_eq!(
            duration("ttl", Either::B("soon".into()))
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidTtl
        );
        assert_eq!(optional("wait", None).unwrap(), None);
        assert_eq!(millis(Duration::from_micros(1500)), 1.5);
    }
}
