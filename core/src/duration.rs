//! Durations: parsing the strings the bindings accept, and the ranges of LOCK-13.

use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};

/// The ttl of a lock that does not set one (LOCK-13).
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);
/// The shortest ttl a lock or a manual lease may have.
pub const MIN_TTL: Duration = Duration::from_secs(1);
/// The longest ttl a lock or a manual lease may have.
pub const MAX_TTL: Duration = Duration::from_secs(3600);

/// Parses a duration written as the bindings take it: `"30s"`, `"1m"`, `"1h"`,
/// `"1m30s"`, `"250ms"`. A bad string fails `InvalidTtl`.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(leasehold::duration::parse("1m30s").unwrap(), Duration::from_secs(90));
/// assert_eq!(leasehold::duration::parse("soon").unwrap_err().kind(), leasehold::ErrorKind::InvalidTtl);
/// ```
pub fn parse(text: &str) -> Result<Duration> {
    humantime::parse_duration(text.trim())
        .map_err(|e| Error::new(ErrorKind::InvalidTtl, format!("bad duration {text:?}: {e}")))
}

/// Checks a ttl against LOCK-13's range, 1 s to 1 h inclusive.
pub fn check_ttl(what: &str, ttl: Duration) -> Result<Duration> {
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(Error::new(
            ErrorKind::InvalidTtl,
            format!("{what} must lie from 1s to 1h, got {}", show(ttl)),
        ));
    }
    Ok(ttl)
}

/// Checks that `max_hold`, when given, is at least `ttl` (LOCK-13).
pub fn check_max_hold(ttl: Duration, max_hold: Option<Duration>) -> Result<Option<Duration>> {
    match max_hold {
        Some(m) if m < ttl => Err(Error::new(
            ErrorKind::InvalidTtl,
            format!("maxHold {} is shorter than ttl {}", show(m), show(ttl)),
        )),
        other => Ok(other),
    }
}

/// The margin a lock uses when it does not set one: a tenth of its ttl.
pub fn default_margin(ttl: Duration) -> Duration {
    ttl / 10
}

/// Checks that a margin leaves the holder time to renew: below half the ttl.
pub fn check_margin(ttl: Duration, margin: Duration) -> Result<Duration> {
    if margin >= ttl / 2 {
        return Err(Error::new(
            ErrorKind::InvalidTtl,
            format!(
                "margin {} must be below half the ttl {}",
                show(margin),
                show(ttl)
            ),
        ));
    }
    Ok(margin)
}

/// A duration written for people, as `parse` reads it back.
pub fn show(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    // LOCK-13: strings, bounds and maxHold >= ttl.
    #[test]
    fn lock_13_parses_and_bounds_durations() {
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse(" 250ms ").unwrap(), Duration::from_millis(250));
        for bad in ["", "30", "-1s", "1 fortnight", "s"] {
            assert_eq!(
                parse(bad).unwrap_err().kind(),
                ErrorKind::InvalidTtl,
                "{bad:?}"
            );
        }
        assert!(check_ttl("ttl", Duration::from_secs(1)).is_ok());
        assert!(check_ttl("ttl", Duration::from_secs(3600)).is_ok());
        assert!(check_ttl("ttl", Duration::from_millis(999)).is_err());
        assert!(check_ttl("ttl", Duration::from_millis(3_600_001)).is_err());
        let ttl = Duration::from_secs(10);
        assert!(check_max_hold(ttl, Some(Duration::from_secs(9))).is_err());
        assert_eq!(check_max_hold(ttl, Some(ttl)).unwrap(), Some(ttl));
        assert_eq!(check_max_hold(ttl, None).unwrap(), None);
        assert!(check_margin(ttl, Duration::from_secs(5)).is_err());
        assert!(check_margin(ttl, default_margin(ttl)).is_ok());
    }
}
