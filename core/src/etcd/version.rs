//! The etcd versions the contracts hold on (DIST-08).

use crate::error::{Error, ErrorKind, Result};

/// Checks the version an etcd member reports: 3.4.32 or later in the 3.4
/// line, 3.5.14 or later in 3.5, any 3.6 or later. Older releases expire
/// leases early under a stuck leader (fixed in 3.4.31 and 3.5.13) and can
/// move revisions back after a compaction crash (etcd #17780, fixed in
/// 3.4.32 and 3.5.14): fences would no longer only grow. `accept_old`
/// opens them anyway.
pub(crate) fn check(version: &str, accept_old: bool) -> Result<()> {
    let parsed = parse(version);
    let ok = match parsed {
        Some((3, 4, patch)) => patch >= 32,
        Some((3, 5, patch)) => patch >= 14,
        Some((3, minor, _)) => minor >= 6,
        Some((major, _, _)) => major > 3,
        None => false,
    };
    if ok || accept_old {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Protocol,
        format!(
            "etcd {version} is too old for Leasehold: releases before 3.4.31 and 3.5.13 expire \
             leases early while a leader is stuck, and before 3.4.32 and 3.5.14 a compaction \
             crash can move revisions back (etcd #17780), so fences could repeat; upgrade to \
             3.4.32, 3.5.14 or 3.6, or accept the risk with the accept_old_etcd connect option"
        ),
    ))
}

fn parse(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;

    // DIST-08: the releases with the lease and revision fixes are accepted,
    // older ones refused with the bugs named, unless accepted explicitly.
    #[test]
    fn dist_08_old_etcd_is_refused_unless_accepted() {
        for ok in [
            "3.4.32", "3.4.40", "3.5.14", "3.5.21", "3.6.0", "3.6.6", "4.0.0",
        ] {
            assert!(check(ok, false).is_ok(), "{ok}");
        }
        for old in ["3.4.23", "3.4.31", "3.5.13", "3.3.27", "2.3.8", "nonsense"] {
            let e = check(old, false).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Protocol, "{old}");
            assert!(e.message().contains("17780"), "{e}");
            assert!(check(old, true).is_ok(), "{old}");
        }
    }
}
