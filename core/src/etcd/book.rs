//! What the driver keeps of the leases it holds and the requests it has in
//! line: only in this process, never in etcd (DIST-05).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::driver::EtcdDriverCore;
use super::keys::RequestRecord;
use super::watcher::{Notice, WatchGuard};
use crate::clock::Instant;
use crate::driver::{loss_channel, Granted, LossSender};
use crate::error::Result;
use crate::ids::{LeaseId, RequestId};
use crate::loss::LossReason;
use crate::table::Grant;

/// A lease this driver holds.
pub(crate) struct BookedLease {
    pub(crate) request_id: RequestId,
    /// The request record's key.
    pub(crate) key: Vec<u8>,
    /// The record as last written.
    pub(crate) record: RequestRecord,
    pub(crate) etcd_lease: i64,
    pub(crate) lease_secs: i64,
    pub(crate) fence: u64,
    /// When this driver revokes the lease (maxHold, DIST-06).
    pub(crate) revoke_at: Option<Instant>,
    pub(crate) loss: Option<LossSender>,
    /// A release is under way: the record's deletion is not a loss.
    pub(crate) releasing: bool,
    pub(crate) _watch: WatchGuard,
    /// Stops the maxHold timer.
    pub(crate) stop: CancellationToken,
}

impl Drop for BookedLease {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A request this driver has sent, by request id.
pub(crate) enum Request {
    /// In line: its waiter task promotes it when its turn comes.
    Waiting {
        etcd_lease: i64,
        tx: Option<oneshot::Sender<Result<Granted>>>,
        stop: CancellationToken,
    },
    /// Granted as this lease.
    Granted(LeaseId),
}

/// The driver's book: its requests, the leases it holds, and why the
/// others ended.
#[derive(Default)]
pub(crate) struct EtcdBook {
    pub(crate) requests: HashMap<RequestId, Request>,
    pub(crate) held: HashMap<LeaseId, BookedLease>,
    /// Why leases ended without their holder: a later renew or release says it.
    pub(crate) ended: HashMap<LeaseId, LossReason>,
    pub(crate) closed: bool,
}

/// A grant the driver is about to keep.
pub(crate) struct NewHold {
    pub(crate) request_id: RequestId,
    pub(crate) lease_id: LeaseId,
    pub(crate) key: Vec<u8>,
    pub(crate) record: RequestRecord,
    pub(crate) etcd_lease: i64,
    pub(crate) lease_secs: i64,
    pub(crate) fence: u64,
    pub(crate) max_hold: Option<Duration>,
    /// When the granting request was sent: maxHold counts from here.
    pub(crate) sent_at: Instant,
}

impl EtcdDriverCore {
    /// Books a granted lease: watches its record for a deletion (expiry),
    /// arms its maxHold, and hands out the grant.
    pub(crate) fn book(self: &Arc<EtcdDriverCore>, st: &mut EtcdBook, new: NewHold) -> Granted {
        let (loss, lost) = loss_channel();
        let lease_id = new.lease_id;
        let weak = Arc::downgrade(self);
        let watch = self.watcher.watch(
            new.key.clone(),
            i64::try_from(new.fence).ok().map(|f| f + 1),
            Arc::new(move |notice| on_notice(&weak, lease_id, notice)),
        );
        let revoke_at = new.max_hold.map(|m| new.sent_at + m);
        let stop = CancellationToken::new();
        if let Some(at) = revoke_at {
            self.calls.runtime.spawn(revoke_at_max_hold(
                Arc::downgrade(self),
                lease_id,
                at,
                stop.clone(),
            ));
        }
        st.requests
            .insert(new.request_id, Request::Granted(lease_id));
        st.held.insert(
            lease_id,
            BookedLease {
                request_id: new.request_id,
                key: new.key,
                record: new.record,
                etcd_lease: new.etcd_lease,
                lease_secs: new.lease_secs,
                fence: new.fence,
                revoke_at,
                loss: Some(loss),
                releasing: false,
                _watch: watch,
                stop,
            },
        );
        Granted {
            grant: Grant {
                request_id: new.request_id,
                lease_id,
                fence: new.fence,
                expires_at: None,
                revoke_at: None,
                revoke_in: new.max_hold,
            },
            lost,
        }
    }

    /// The grant of a held lease, asked again by its request id (LOCK-03):
    /// a new loss channel replaces the old one.
    pub(crate) fn granted_again(&self, st: &mut EtcdBook, lease_id: LeaseId) -> Option<Granted> {
        let now = self.clock.now();
        let held = st.held.get_mut(&lease_id)?;
        let (loss, lost) = loss_channel();
        held.loss = Some(loss);
        Some(Granted {
            grant: Grant {
                request_id: held.request_id,
                lease_id,
                fence: held.fence,
                expires_at: None,
                revoke_at: None,
                revoke_in: held.revoke_at.map(|at| at.saturating_since(now)),
            },
            lost,
        })
    }

    /// Ends a held lease without its holder: it is forgotten, its loss told.
    /// Returns its etcd lease, or `None` if it was not held (or being released).
    pub(crate) fn lose(&self, lease_id: LeaseId, reason: LossReason) -> Option<i64> {
        let mut st = self.lock();
        if st.held.get(&lease_id).is_none_or(|h| h.releasing) {
            return None;
        }
        let mut held = st.held.remove(&lease_id)?;
        st.requests.remove(&held.request_id);
        st.ended.insert(lease_id, reason);
        drop(st);
        if let Some(loss) = held.loss.take() {
            loss.send(reason);
        }
        Some(held.etcd_lease)
    }

    /// Why a lease that is no longer held ended.
    pub(crate) fn why_ended(&self, st: &EtcdBook, lease_id: LeaseId) -> LossReason {
        st.ended
            .get(&lease_id)
            .copied()
            .unwrap_or(LossReason::Unknown)
    }
}

/// A held record's watch: its deletion is the lease's expiry (or its
/// revocation, past maxHold); after a reset, the record is read again.
fn on_notice(shared: &Weak<EtcdDriverCore>, lease_id: LeaseId, notice: Notice) {
    let Some(shared) = shared.upgrade() else {
        return;
    };
    match notice {
        Notice::Deleted => {
            let reason = shared.reason_now(lease_id);
            shared.lose(lease_id, reason);
        }
        Notice::Created { exact: false } => {
            shared
                .calls
                .runtime
                .spawn(recheck(Arc::downgrade(&shared), lease_id));
        }
        Notice::Created { exact: true } | Notice::Reset => {}
    }
}

impl EtcdDriverCore {
    /// Why a held lease that etcd let go was lost, as of now.
    fn reason_now(&self, lease_id: LeaseId) -> LossReason {
        let now = self.clock.now();
        let st = self.lock();
        match st.held.get(&lease_id).and_then(|h| h.revoke_at) {
            Some(at) if at <= now => LossReason::Revoked,
            _ => LossReason::Expired,
        }
    }
}

/// Reads a held record again after its watch was made anew.
async fn recheck(shared: Weak<EtcdDriverCore>, lease_id: LeaseId) {
    let Some(s) = shared.upgrade() else { return };
    let Some(key) = s.lock().held.get(&lease_id).map(|h| h.key.clone()) else {
        return;
    };
    let options = etcd_client::GetOptions::new().with_keys_only();
    if let Ok(resp) = s.calls.get("reading a held record", key, options).await {
        if resp.kvs().is_empty() {
            let reason = s.reason_now(lease_id);
            s.lose(lease_id, reason);
        }
    }
}

/// Revokes a lease at grant + maxHold (DIST-06): the holder's own driver
/// does what a store with a clock would do.
async fn revoke_at_max_hold(
    shared: Weak<EtcdDriverCore>,
    lease_id: LeaseId,
    at: Instant,
    stop: CancellationToken,
) {
    let Some(clock) = shared.upgrade().map(|s| s.clock.clone()) else {
        return;
    };
    tokio::select! {
        _ = stop.cancelled() => return,
        _ = clock.sleep_until(at) => {}
    }
    let Some(s) = shared.upgrade() else { return };
    if let Some(etcd_lease) = s.lose(lease_id, LossReason::Revoked) {
        s.calls.revoke_later(etcd_lease);
    }
}
