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
