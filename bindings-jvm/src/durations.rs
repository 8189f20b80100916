//! Durations from the JVM: signed nanoseconds (`kotlin.time.Duration`'s
//! and `java.time.Duration`'s whole nanoseconds), so that a negative one
//! reaches the core's error codes instead of failing in the conversion.

use std::time::Duration;

use leasehold::{Error, ErrorKind};

/// The duration of `nanos`; a negative count fails `InvalidTtl`. Ranges
/// (LOCK-13) are the core's to check.
pub(crate) fn duration(what: &str, nanos: i64) -> leasehold::Result<Duration> {
    u64::try_from(nanos).map(Duration::from_nanos).map_err(|_| {
        Error::new(
            ErrorKind::InvalidTtl,
            format!("{what} must not be negative, got {nanos} ns"),
        )
    })
}

/// An optional duration.
pub(crate) fn optional(what: &str, nanos: Option<i64>) -> leasehold::Result<Option<Duration>> {
    nanos.map(|n| duration(what, n)).transpose()
}

/// A duration as the JVM reads it: whole nanoseconds, at most `i64::MAX`.
pub(crate) fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-13: nanoseconds in, nanoseconds out; a negative count fails InvalidTtl.
    #[test]
    fn lock_13_jvm_durations() {
        assert_eq!(
            duration("ttl", 1_500_000_000).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            duration("ttl", -1).unwrap_err().kind(),
            ErrorKind::InvalidTtl
        );
        assert_eq!(optional("wait", None).unwrap(), None);
        assert_eq!(nanos(Duration::from_micros(1500)), 1_500_000);
        assert_eq!(nanos(Duration::MAX), i64::MAX);
    }
}
