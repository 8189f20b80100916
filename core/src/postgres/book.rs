//! What the driver keeps of its requests and the leases it holds: only
//! in this process. The database knows requests by their ids; the lease
//! ids a holder names stay here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;

use crate::clock::Instant;
use crate::driver::{loss_channel, Granted, LossSender};
use crate::error::Result;
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::loss::LossReason;
use crate::table::Grant;

/// A lease this driver holds. Its times are on this driver's clock, each
/// a send time plus what the database answered was left: no later than
/// the database's own.
pub(crate) struct BookedLease {
    pub(crate) request_id: RequestId,
    pub(crate) fence: u64,
    /// The ttl it is renewed for.
    pub(crate) ttl: Duration,
    /// When it runs out unless renewed (or its group is).
    pub(crate) expires_at: Instant,
    /// The renewal group whose expiry is also its own.
    pub(crate) group: Option<GroupId>,
    /// When the database revokes it (maxHold).
    pub(crate) revoke_at: Option<Instant>,
    pub(crate) loss: Option<LossSender>,
    /// A release is under way: its end is not a loss.
    pub(crate) releasing: bool,
    /// Stops its watch ([`PostgresBook::deadline`]).
    pub(crate) stop: CancellationToken,
}

impl Drop for BookedLease {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A request this driver sent, by request id.
pub(crate) enum Request {
    /// Sent, answer not yet read: the lease id a grant will carry, and
    /// what wakes it if the database promotes it before its answer is read.
    Asking {
        lease_id: LeaseId,
        wake: Arc<Notify>,
    },
    /// In line: its waiter task looks again when woken or at the holder's expiry.
    Waiting {
        lease_id: LeaseId,
        wake: Arc<Notify>,
        tx: Option<oneshot::Sender<Result<Granted>>>,
        stop: CancellationToken,
    },
    /// Granted as this lease.
    Granted(LeaseId),
}

/// The driver's book: its requests, the leases it holds, and why the
/// others ended.
#[derive(Default)]
pub(crate) struct PostgresBook {
    pub(crate) requests: HashMap<RequestId, Request>,
    pub(crate) held: HashMap<LeaseId, BookedLease>,
    /// Why leases ended without their holder: a later renew or release says it.
    pub(crate) ended: HashMap<LeaseId, LossReason>,
    /// When each renewal group runs out, as its renewals answered.
    pub(crate) groups: HashMap<GroupId, Instant>,
    pub(crate) closed: bool,
}

/// A grant as the driver books it.
pub(crate) struct NewLease {
    pub(crate) request_id: RequestId,
    pub(crate) lease_id: LeaseId,
    pub(crate) fence: u64,
    pub(crate) ttl: Duration,
    pub(crate) group: Option<GroupId>,
    /// When the request that found it granted was sent.
    pub(crate) sent_at: Instant,
    pub(crate) expires_in: Duration,
    pub(crate) revoke_in: Option<Duration>,
}

impl PostgresBook {
    /// Books a granted lease and hands out its grant, and the token that
    /// stops its watch.
    pub(crate) fn book(&mut self, new: NewLease) -> (Granted, CancellationToken) {
        let (loss, lost) = loss_channel();
        let stop = CancellationToken::new();
        self.requests
            .insert(new.request_id, Request::Granted(new.lease_id));
        self.held.insert(
            new.lease_id,
            BookedLease {
                request_id: new.request_id,
                fence: new.fence,
                ttl: new.ttl,
                expires_at: new.sent_at + new.expires_in,
                group: new.group,
                revoke_at: new.revoke_in.map(|d| new.sent_at + d),
                loss: Some(loss),
                releasing: false,
                stop: stop.clone(),
            },
        );
        let granted = Granted {
            grant: Grant {
                request_id: new.request_id,
                lease_id: new.lease_id,
                fence: new.fence,
                expires_at: None,
                revoke_at: None,
                revoke_in: new.revoke_in,
            },
            lost,
        };
        (granted, stop)
    }

    /// When a held lease ends unless renewed, and why: the later of its
    /// own expiry and its group's, or its maxHold if that comes first.
    pub(crate) fn deadline(&self, lease_id: LeaseId) -> Option<(Instant, LossReason)> {
        let held = self.held.get(&lease_id)?;
        let group = held.group.and_then(|g| self.groups.get(&g).copied());
        let expires_at = group.map_or(held.expires_at, |g| g.max(held.expires_at));
        Some(match held.revoke_at {
            Some(at) if at <= expires_at => (at, LossReason::Revoked),
            _ => (expires_at, LossReason::Expired),
        })
    }

    /// The grant of a held lease, asked again by its request id (LOCK-03):
    /// a new loss channel replaces the old one.
    pub(crate) fn granted_again(&mut self, lease_id: LeaseId, now: Instant) -> Option<Granted> {
        let held = self.held.get_mut(&lease_id)?;
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

    /// Ends a held lease without its holder: forgotten, its loss told.
    /// Answers whether it was held (and not being released).
    pub(crate) fn lose(&mut self, lease_id: LeaseId, reason: LossReason) -> bool {
        if self.held.get(&lease_id).is_none_or(|h| h.releasing) {
            return false;
        }
        let Some(mut held) = self.held.remove(&lease_id) else {
            return false;
        };
        self.requests.remove(&held.request_id);
        self.ended.insert(lease_id, reason);
        if let Some(loss) = held.loss.take() {
            loss.send(reason);
        }
        true
    }

    /// Why a lease that is no longer held ended.
    pub(crate) fn why_ended(&self, lease_id: LeaseId) -> LossReason {
        self.ended
            .get(&lease_id)
            .copied()
            .unwrap_or(LossReason::Unknown)
    }
}
