//! Stores broken on purpose, to prove that the checker catches what it
//! says it catches: a driver wrapper of the harness's own (never part of
//! the product) that sits between the engine and the real store's driver.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::driver::{
    loss_channel, Driver, GiveUp, Grant, Granted, HoldAnswer, HoldRequest, LossSender,
};
use leasehold::{GroupId, LeaseId, RequestId, Result};

/// How the store is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Breakage {
    /// A request that would wait in line is told at once that it holds the
    /// key (with a made-up lease): two holders at once.
    GrantTwice,
    /// Every grant's fence is replaced by one smaller than the last.
    StaleFence,
    /// Renewals are never sent, and answered as confirmed; the store's word
    /// of a loss is swallowed: holders are kept past their deadline.
    KeepPastDeadline,
}

/// The real driver `inner`, broken as `breakage` says.
pub struct BrokenDriver {
    inner: Arc<dyn Driver>,
    breakage: Breakage,
    next_fence: AtomicU64,
    /// The loss senders of the made-up or kept leases, never sent.
    kept: Mutex<Vec<LossSender>>,
}

impl BrokenDriver {
    /// Breaks `inner` as `breakage` says.
    pub fn new(inner: Arc<dyn Driver>, breakage: Breakage) -> BrokenDriver {
        BrokenDriver {
            inner,
            breakage,
            next_fence: AtomicU64::new(u64::MAX / 2),
            kept: Mutex::new(Vec::new()),
        }
    }

    /// A loss channel whose sender is kept and never used.
    fn never_lost(&self) -> leasehold::driver::LossReceiver {
        let (tx, rx) = loss_channel();
        self.kept.lock().unwrap().push(tx);
        rx
    }

    fn broken(&self, mut granted: Granted) -> Granted {
        match self.breakage {
            Breakage::StaleFence => {
                granted.grant.fence = self.next_fence.fetch_sub(1, Ordering::Relaxed);
            }
            Breakage::KeepPastDeadline => granted.lost = self.never_lost(),
            Breakage::GrantTwice => {}
        }
        granted
    }
}

wrapper_driver!(BrokenDriver {


    async fn hold(&self, request: HoldRequest) -> Result<HoldAnswer> {
        let request_id = request.request_id;
        match self.inner.hold(request).await? {
            HoldAnswer::Granted(granted) => Ok(HoldAnswer::Granted(self.broken(granted))),
            HoldAnswer::Queued { .. } if self.breakage == Breakage::GrantTwice => {
                let _ = self.inner.give_up(request_id).await;
                Ok(HoldAnswer::Granted(Granted {
                    grant: Grant {
                        request_id,
                        lease_id: LeaseId::random(),
                        fence: self.next_fence.fetch_add(1, Ordering::Relaxed),
                        expires_at: None,
                        revoke_at: None,
                        revoke_in: None,
                    },
                    lost: self.never_lost(),
                }))
            }
            HoldAnswer::Queued { waiting, ahead } if self.breakage == Breakage::StaleFence => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let fence = self.next_fence.fetch_sub(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    if let Ok(answer) = waiting.await {
                        let _ = tx.send(answer.map(|mut g| {
                            g.grant.fence = fence;
                            g
                        }));
                    }
                });
                Ok(HoldAnswer::Queued { waiting: rx, ahead })
            }
            other => Ok(other),
        }
    }

    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant> {
        if self.breakage == Breakage::KeepPastDeadline {
            return Ok(Grant {
                request_id: RequestId(0),
                lease_id: lease,
                fence: 0,
                expires_at: None,
                revoke_at: None,
                revoke_in: None,
            });
        }
        self.inner.renew(lease, ttl).await
    }

    async fn renew_group(&self, group: GroupId, ttl: Duration) -> Result<()> {
        if self.breakage == Breakage::KeepPastDeadline {
            return Ok(());
        }
        self.inner.renew_group(group, ttl).await
    }

    async fn release(&self, lease: LeaseId) -> Result<()> {
        self.inner.release(lease).await
    }

    async fn give_up(&self, request: RequestId) -> Result<GiveUp> {
        self.inner.give_up(request).await
    }





});
