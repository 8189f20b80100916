//! The one clock every process of a run stamps its history with:
//! `CLOCK_MONOTONIC`, shared by all processes on the machine (Python's
//! `time.monotonic_ns`, Node's `process.hrtime.bigint`, Go's
//! `unix.ClockGettime(CLOCK_MONOTONIC)` read the same).

use nix::time::{clock_gettime, ClockId};

/// Nanoseconds of `CLOCK_MONOTONIC` now.
pub fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always readable");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}
