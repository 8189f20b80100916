//! The conformance suite can fail: drivers with one deliberate fault each,
//! built on the real embedded driver (every other call goes to it unchanged),
//! must each fail the check that names the contract they break.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use leasehold::clock::{Clock, VirtualClock};
use leasehold::driver::{Capabilities, Driver, GiveUp, Grant, HoldAnswer, HoldRequest, HolderInfo};
use leasehold::slots::{AcquireResult, SlotLease, SlotRequest};
use leasehold::{ErrorKind, GroupId, LeaseId, MemoryDriver, MemoryOptions, RequestId, Result};
use spec_tests::conformance::{self, Harness, Time};

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// LOCK-08 broken: release of an unknown id answers Ok.
    ReleaseSwallowsLost,
    /// LOCK-03 broken: every request is taken as a new one.
    ForgetsRequestIds,
    /// Claims to push grants but never lets a request wait in line.
    NeverQueues,
}

struct Faulty {
    inner: MemoryDriver,
    fault: Fault,
}

#[async_trait]
impl Driver for Faulty {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn clock(&self) -> &Clock {
        self.inner.clock()
    }

    async fn hold(&self, request: HoldRequest) -> Result<HoldAnswer> {
        match self.fault {
            Fault::ForgetsRequestIds => {
                self.inner
                    .hold(HoldRequest {
                        request_id: RequestId::random(),
                        ..request
                    })
                    .await
            }
            Fault::NeverQueues => {
                self.inner
                    .hold(HoldRequest {
                        queue: false,
                        ..request
                    })
                    .await
            }
            Fault::ReleaseSwallowsLost => self.inner.hold(request).await,
        }
    }

    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant> {
        self.inner.renew(lease, ttl).await
    }

    async fn renew_group(&self, group: GroupId, ttl: Duration) -> Result<()> {
        self.inner.renew_group(group, ttl).await
    }

    async fn release(&self, lease: LeaseId) -> Result<()> {
        match (self.fault, self.inner.release(lease).await) {
            (Fault::ReleaseSwallowsLost, Err(e)) if e.kind() == ErrorKind::Lost => Ok(()),
            (_, other) => other,
        }
    }

    async fn give_up(&self, request: RequestId) -> Result<GiveUp> {
        self.inner.give_up(request).await
    }

    async fn holders(&self, lock: Option<&str>) -> Result<Vec<HolderInfo>> {
        self.inner.holders(lock).await
    }

    async fn slot_acquire(&self, request: SlotRequest) -> Result<AcquireResult> {
        self.inner.slot_acquire(request).await
    }

    async fn slot_renew(&self, lease: &SlotLease, ttl: Duration) -> Result<Option<SlotLease>> {
        self.inner.slot_renew(lease, ttl).await
    }

    async fn slot_release(&self, lease: &SlotLease, last_issued: u64) -> Result<bool> {
        self.inner.slot_release(lease, last_issued).await
    }

    async fn close(&self) {
        self.inner.close().await
    }
}

async fn failed_checks(fault: Fault) -> Vec<&'static str> {
    let report = conformance::run(|| async move {
        let clock = VirtualClock::new();
        let options = MemoryOptions::default().clock(clock.clone().into());
        let inner = MemoryDriver::new(options, &tokio::runtime::Handle::current());
        Harness {
            driver: Arc::new(Faulty { inner, fault }),
            time: Time::Virtual(clock),
        }
    })
    .await;
    report.failed.iter().map(|(name, _)| *name).collect()
}

#[tokio::test]
async fn a_driver_that_swallows_lost_on_release_fails_lock_08() {
    let failed = failed_checks(Fault::ReleaseSwallowsLost).await;
    assert!(
        failed.contains(&"unknown_id_is_lost_and_changes_nothing"),
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_driver_that_forgets_request_ids_fails_lock_03() {
    let failed = failed_checks(Fault::ForgetsRequestIds).await;
    assert!(
        failed.contains(&"request_id_retry_gets_the_same_lease"),
        "{failed:?}"
    );
}

#[tokio::test]
async fn a_driver_that_never_queues_fails_the_line_checks() {
    let failed = failed_checks(Fault::NeverQueues).await;
    for check in [
        "grant_not_held_queued",
        "line_is_fifo",
        "give_up_leaves_the_line",
    ] {
        assert!(failed.contains(&check), "{check} passed: {failed:?}");
    }
}
