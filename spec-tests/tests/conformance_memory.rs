//! The driver conformance suite against the embedded store's driver, on a
//! virtual clock: without renewal (as embedded holders run), with renewal
//! (as the server store's leases run out), and without pushed grants.

use std::sync::Arc;

use leasehold::clock::VirtualClock;
use leasehold::{Identity, MemoryDriver, MemoryOptions};
use spec_tests::conformance::{self, Harness, Report, Time};

async fn run(renewal: bool, push: bool) -> Report {
    conformance::run(|| async move {
        let clock = VirtualClock::new();
        let options = MemoryOptions::default()
            .clock(clock.clone().into())
            .renewal(renewal)
            .push(push)
            .identity(Identity::new(conformance::IDENTITY).unwrap());
        let driver = MemoryDriver::new(options, &tokio::runtime::Handle::current());
        Harness {
            driver: Arc::new(driver),
            time: Time::Virtual(clock),
        }
    })
    .await
}

// LOCK-01, LOCK-02, LOCK-03, LOCK-05, LOCK-08, LOCK-11, LOCK-12, LOCK-17,
// LOCK-18, LOCK-19, LOCK-20: the embedded store as embedded holders use it.
#[tokio::test]
async fn memory_driver_without_renewal_conforms() {
    let report = run(false, true).await;
    report.assert_ok();
    assert!(report.skipped.is_empty(), "{report}");
}

// LOCK-01, LOCK-02, LOCK-03, LOCK-05, LOCK-06, LOCK-08, LOCK-11, LOCK-12,
// LOCK-16, LOCK-18: the embedded store with leases that run out unless renewed.
#[tokio::test]
async fn memory_driver_with_renewal_conforms() {
    let report = run(true, true).await;
    report.assert_ok();
    assert_eq!(report.skipped_names(), ["no_ttl_never_expires"], "{report}");
}

// MANUAL-02, LOCK-03: a driver that cannot push answers NotHeld to queued
// requests; the checks of the line do not apply to it.
#[tokio::test]
async fn memory_driver_without_push_conforms() {
    let report = run(false, false).await;
    report.assert_ok();
    assert_eq!(
        report.skipped_names(),
        [
            "line_is_fifo",
            "grant_is_pushed_on_release",
            "give_up_leaves_the_line",
            "grant_that_raced_give_up_is_released"
        ],
        "{report}"
    );
}

#[tokio::test]
async fn every_check_runs_on_the_embedded_store() {
    let report = run(true, true).await;
    let mut seen: Vec<&str> = report.passed.clone();
    seen.extend(report.skipped_names());
    seen.sort_unstable();
    let mut all = conformance::check_names();
    all.sort_unstable();
    assert_eq!(seen, all, "{report}");
}

// LOCK-05, LOCK-06, LOCK-12, LOCK-16: the suite's real-time mode (as the
// server store will run it) on the embedded store's monotonic clock: leases
// of 1 s, a few seconds in all.
#[tokio::test]
async fn memory_driver_on_real_time_conforms() {
    let report = conformance::run(|| async {
        let options = MemoryOptions::default()
            .renewal(true)
            .identity(Identity::new(conformance::IDENTITY).unwrap());
        let driver = MemoryDriver::new(options, &tokio::runtime::Handle::current());
        Harness {
            driver: Arc::new(driver),
            time: Time::Real,
        }
    })
    .await;
    report.assert_ok();
    assert_eq!(report.skipped_names(), ["no_ttl_never_expires"], "{report}");
}
