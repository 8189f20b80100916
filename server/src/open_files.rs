//! The process's limit of open files: raised to its hard limit at start, so
//! that the connections and handshakes the limits allow have their file
//! descriptors (many systems start processes at a soft limit of 1024).

use nix::sys::resource::{getrlimit, setrlimit, Resource};

use crate::config::Limits;

/// Descriptors the server needs besides its connections' (listeners, the
/// data directory, the metrics' connections, the runtime).
const SPARE: u64 = 64;

/// Raises the soft limit of open files to the hard limit, and warns when
/// even that is below what `limits` may need.
pub fn raise(limits: &Limits) {
    let needed = (limits.max_connections + limits.max_handshakes) as u64 + SPARE;
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the open files limit");
            return;
        }
    };
    let mut now = soft;
    if soft < hard {
        match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => now = hard,
            Err(e) => tracing::warn!(error = %e, soft, hard, "cannot raise the open files limit"),
        }
    }
    if now < needed {
        tracing::warn!(
            limit = now,
            needed,
            "the open files limit is below --max-connections + --max-handshakes: accepts will fail when it is reached (raise LimitNOFILE or ulimit -n)"
        );
    }
}
