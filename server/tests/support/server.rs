//! The real `leasehold serve` process on a free loopback port, freezing
//! and thawing processes (the chaos harness's, `leasehold_chaos::process`,
//! which finds the binary beside the test's `deps/` folder), and kill(1).

use std::process::Command;

pub use leasehold_chaos::process::{freeze, thaw, ServerProcess};

/// Sends `signal` to process `pid` with kill(1).
pub fn send_signal(pid: u32, signal: i32) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid} failed");
}
