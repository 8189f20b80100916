//! The conformance suite can fail: drivers with one deliberate fault each,
//! built on the real embedded driver (every other call goes to it unchanged),
//! must each fail the check that names the contract they break.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use leasehold::clock::{Clock, VirtualClock};
use leasehold::driver::{
    loss_channel, Capabilities, Driver, GiveUp, Grant, Granted, HoldAnswer, HoldRequest,
    HolderInfo, KeyName, LossSender,
};
use leasehold::slots::{AcquireResult, SlotLease, SlotRequest};
use leasehold::{
    ErrorKind, GroupId, Identity, LeaseId, MemoryDriver, MemoryOptions, RequestId, Result,
};
use spec_tests::conformance::{self, Harness, Time};
use tokio::sync::oneshot;

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// LOCK-08 broken: release of an unknown id answers Ok.
    ReleaseSwallowsLost,
    /// LOCK-03 broken: every request is taken as a new one.
    ForgetsRequestIds,
    /// Claims to push grants but never lets a request wait in line.
    NeverQueues,
    /// Never tells a holder that its lease ran out.
    NeverTellsAnExpiry,
    /// Queues a request but never pushes its grant.
    NeverPushes,
    /// Grants a request that must wait at once (a lease on a key of its
    /// own), while the lease it waits behind lasts.
    GrantsWaitersEarly,
    /// Answers who holds a key without the line behind it.
    CountsNoWaiters,
}

struct Faulty {
    inner: MemoryDriver,
    fault: Fault,
    /// The ends of the channels the fault keeps silent, kept open.
    silent: Mutex<Vec<Silent>>,
}

enum Silent {
    Loss(#[allow(dead_code)] LossSender),
    Grant(#[allow(dead_code)] oneshot::Sender<Result<Granted>>),
}

impl Faulty {
    fn keep(&self, silent: Silent) {
        self.silent.lock().unwrap().push(silent);
    }
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
            Fault::NeverTellsAnExpiry => match self.inner.hold(request).await? {
                HoldAnswer::Granted(mut g) => {
                    let (tx, rx) = loss_channel();
                    self.keep(Silent::Loss(tx));
                    g.lost = rx;
                    Ok(HoldAnswer::Granted(g))
                }
                other => Ok(other),
            },
            Fault::NeverPushes => match self.inner.hold(request).await? {
                HoldAnswer::Queued { ahead, .. } => {
                    let (tx, waiting) = oneshot::channel();
                    self.keep(Silent::Grant(tx));
                    Ok(HoldAnswer::Queued { waiting, ahead })
                }
                other => Ok(other),
            },
            Fault::GrantsWaitersEarly => match self.inner.hold(request.clone()).await? {
                HoldAnswer::Queued { ahead, .. } => {
                    let name = &request.name;
                    let elsewhere = HoldRequest {
                        name: KeyName::new(name.lock.clone(), format!("{}/early", name.key)),
                        request_id: RequestId::random(),
                        queue: false,
                        ..request
                    };
                    let (tx, waiting) = oneshot::channel();
                    if let HoldAnswer::Granted(g) = self.inner.hold(elsewhere).await? {
                        let _ = tx.send(Ok(g));
                    }
                    Ok(HoldAnswer::Queued { waiting, ahead })
                }
                other => Ok(other),
            },
            Fault::ReleaseSwallowsLost | Fault::CountsNoWaiters => self.inner.hold(request).await,
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

    async fn holder(&self, name: &KeyName) -> Result<Option<HolderInfo>> {
        let holder = self.inner.holder(name).await?;
        match self.fault {
            Fault::CountsNoWaiters => Ok(holder.map(|h| HolderInfo { waiting: 0, ..h })),
            _ => Ok(holder),
        }
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

async fn failures(fault: Fault) -> Vec<(&'static str, String)> {
    let report = conformance::run(|| async move {
        let clock = VirtualClock::new();
        let options = MemoryOptions::default()
            .clock(clock.clone().into())
            .identity(Identity::new(conformance::IDENTITY).unwrap());
        let inner = MemoryDriver::new(options, &tokio::runtime::Handle::current());
        Harness {
            driver: Arc::new(Faulty {
                inner,
                fault,
                silent: Mutex::new(Vec::new()),
            }),
            time: Time::Virtual(clock),
        }
    })
    .await;
    report.failed
}

async fn failed_checks(fault: Fault) -> Vec<&'static str> {
    failures(fault)
        .await
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// Why `check` failed under `fault`; panics, listing the failures, if it passed.
async fn why_failed(fault: Fault, check: &str) -> String {
    let failed = failures(fault).await;
    match failed.iter().find(|(name, _)| *name == check) {
        Some((_, why)) => why.clone(),
        None => panic!("{check} passed under {fault:?}: {failed:?}"),
    }
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

// LOCK-05, LOCK-16: a store that never tells a holder its lease ran out
// fails the expiry check at EXPIRY_GUARD (tokio's time is paused: the
// guards' real-time waits pass at once).
#[tokio::test(start_paused = true)]
async fn a_driver_that_never_tells_an_expiry_fails_lock_05() {
    let why = why_failed(Fault::NeverTellsAnExpiry, "lease_expires_at_its_ttl").await;
    assert!(why.contains("the store did not let it go"), "{why}");
}

// LOCK-16: a waiter whose grant is never pushed fails the expiry check, its
// wait counted from its holder hearing the loss.
#[tokio::test(start_paused = true)]
async fn a_driver_that_never_pushes_fails_lock_16() {
    let why = why_failed(Fault::NeverPushes, "lease_expires_at_its_ttl").await;
    assert!(why.contains("no grant was pushed within"), "{why}");
}

// LOCK-16: a waiter granted while the lease before it lasts fails the
// expiry check.
#[tokio::test(start_paused = true)]
async fn a_driver_that_grants_a_waiter_early_fails_lock_16() {
    let why = why_failed(Fault::GrantsWaitersEarly, "lease_expires_at_its_ttl").await;
    assert!(why.contains("while the lease before it lasted"), "{why}");
}

// WHO-02: a store whose answer to "who holds this key?" leaves out the
// line fails the holder check.
#[tokio::test]
async fn a_driver_that_counts_no_waiters_fails_who_02() {
    let why = why_failed(
        Fault::CountsNoWaiters,
        "holder_names_identity_fence_and_line",
    )
    .await;
    assert!(why.contains("with one waiter"), "{why}");
}
