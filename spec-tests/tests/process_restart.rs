//! Embedded fences grow from one process to the next (LOCK-02): a process
//! that opened many embedded stores, then a later run of the same binary.

use std::process::Command;
use std::time::Duration;

use leasehold::Store;

const CHILD: &str = "SPEC_TESTS_LOCK_02_CHILD";
const NAME: &str = "lock_02_embedded_fences_grow_across_a_process_restart";

async fn first_fence() -> u64 {
    let store = Store::memory();
    let lease = store
        .try_acquire("x", Duration::from_secs(10))
        .await
        .expect("a manual lease")
        .expect("a free name");
    let fence = lease.fence();
    store.close().await;
    fence
}

// LOCK-02: 20 embedded stores, then the same test binary run again as "the
// later process": its first fence is larger than the earlier process's last.
#[test]
fn lock_02_embedded_fences_grow_across_a_process_restart() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if std::env::var_os(CHILD).is_some() {
        println!("FENCE={}", runtime.block_on(first_fence()));
        return;
    }
    let mut last = 0;
    for _ in 0..20 {
        last = runtime.block_on(first_fence());
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let later: u64 = stdout
        .split_once("FENCE=")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the later process printed no fence: {stdout}"))
        .parse()
        .unwrap();
    assert!(
        later > last,
        "the later process's first fence {later} (epoch {}) is not larger than the \
         earlier process's last fence {last} (epoch {})",
        later >> 32,
        last >> 32
    );
}
