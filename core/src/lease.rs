//! A held lease as its holder sees it: fence, loss, time left.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::clock::{Clock, Instant};
use crate::group::GroupDeadline;
use crate::ids::LeaseId;
use crate::loss::LossReason;
use crate::table::{Grant, KeyName};

/// The state one lease shares between its holder and the task that keeps it.
#[derive(Debug)]
pub(crate) struct LeaseState {
    pub(crate) name: KeyName,
    pub(crate) grant: Grant,
    clock: Clock,
    /// The lease's own deadline (its maxHold's, in a renewal group).
    deadline: Mutex<Option<Instant>>,
    /// The deadline of the renewal group the lease is in.
    group: Option<Arc<GroupDeadline>>,
    lost: CancellationToken,
    reason: OnceLock<LossReason>,
}

impl LeaseState {
    pub(crate) fn new(
        name: KeyName,
        grant: Grant,
        clock: Clock,
        group: Option<Arc<GroupDeadline>>,
    ) -> Arc<LeaseState> {
        Arc::new(LeaseState {
            name,
            grant,
            clock,
            deadline: Mutex::new(None),
            group,
            lost: CancellationToken::new(),
            reason: OnceLock::new(),
        })
    }

    pub(crate) fn lease_id(&self) -> LeaseId {
        self.grant.lease_id
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Records the loss; only the first reason counts (LOCK-09: loss is delivered once).
    pub(crate) fn mark_lost(&self, reason: LossReason) {
        if self.reason.set(reason).is_ok() {
            self.lost.cancel();
        }
    }

    /// Completes once the lease is lost.
    pub(crate) fn lost_cancelled(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.lost.cancelled()
    }

    pub(crate) fn reason(&self) -> Option<LossReason> {
        self.reason.get().copied()
    }

    pub(crate) fn set_deadline(&self, at: Option<Instant>) {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = at;
    }

    /// The holder's deadline: the earlier of its own and its group's.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let own = *self.deadline.lock().unwrap_or_else(|p| p.into_inner());
        match (own, self.group.as_ref().and_then(|g| g.get())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A held lease: what the held function is given. Cloning shares it; it is
/// safe to use from several threads at once.
///
/// ```
/// use leasehold::Store;
/// let store = Store::memory();
/// let lock = store.lock("summaries").open()?;
/// let fence = lock.hold("chat-1", |lease| {
///     assert!(!lease.lost());
///     Ok::<_, leasehold::Error>(lease.fence())
/// })?;
/// assert!(fence > 0);
/// # Ok::<(), leasehold::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Lease {
    pub(crate) state: Arc<LeaseState>,
}

impl Lease {
    /// The fence: larger than every fence the store granted before (LOCK-02).
    /// Hand it to the system you write to, so that it can refuse a late writer.
    pub fn fence(&self) -> u64 {
        self.state.grant.fence
    }

    /// The name of the lock the key belongs to.
    pub fn lock_name(&self) -> &str {
        &self.state.name.lock
    }

    /// The key held.
    pub fn key(&self) -> &str {
        &self.state.name.key
    }

    /// Whether the lease was lost (LOCK-09). Once true, it stays true.
    pub fn lost(&self) -> bool {
        self.state.reason().is_some()
    }

    /// Why the lease was lost, once it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.state.reason()
    }

    /// Completes when the lease is lost (LOCK-09).
    pub fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        self.state.lost.clone().cancelled_owned()
    }

    /// A token cancelled when the lease is lost; cancelling it yourself
    /// changes nothing for the lease.
    pub fn lost_token(&self) -> CancellationToken {
        self.state.lost.child_token()
    }

    /// The time left before the holder's deadline, zero once lost; `None`
    /// when the lease has no deadline (an embedded lease without maxHold).
    pub fn remaining(&self) -> Option<Duration> {
        if self.lost() {
            return Some(Duration::ZERO);
        }
        let deadline = self.state.deadline()?;
        Some(deadline.saturating_since(self.state.clock().now()))
    }
}
