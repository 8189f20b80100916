//! A held lease as its holder sees it: fence, loss, time left.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::held::{HeldState, HeldView};
use crate::ids::{Halves, LeaseId};
use crate::loss::LossReason;
use crate::loss_channel::LossListener;
use crate::table::{Grant, KeyName};

/// The state one lease shares between its holder and whatever renews it:
/// of its grant, only what outlives the holding's start (its id and fence).
#[derive(Debug)]
pub(crate) struct LeaseState {
    pub(crate) name: KeyName,
    /// The lease's id: in halves, the state takes 104 bytes where a
    /// `LeaseId` would pad it to 112.
    lease_id: Halves,
    pub(crate) fence: u64,
    pub(crate) held: HeldState,
}

impl LeaseState {
    pub(crate) fn new(name: KeyName, grant: &Grant, held: HeldState) -> Arc<LeaseState> {
        Arc::new(LeaseState {
            name,
            lease_id: grant.lease_id.into(),
            fence: grant.fence,
            held,
        })
    }

    pub(crate) fn lease_id(&self) -> LeaseId {
        self.lease_id.into()
    }
}

impl LossListener for LeaseState {
    fn lost(&self, reason: LossReason) {
        self.held.mark_lost(reason);
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
        self.state.fence
    }

    /// The name of the lock the key belongs to.
    pub fn lock_name(&self) -> &str {
        &self.state.name.lock
    }

    /// The key held.
    pub fn key(&self) -> &str {
        &self.state.name.key
    }

    /// Whether the lease was lost (LOCK-09). Once true, it stays true; a
    /// lease whose hold ended without a loss stays not lost.
    pub fn lost(&self) -> bool {
        self.state.held.reason().is_some()
    }

    /// Why the lease was lost, once it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.state.held.reason()
    }

    /// Completes when the lease is lost (LOCK-09).
    pub fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        self.state.held.lost_signal()
    }

    /// A token cancelled when the lease is lost; cancelling it yourself
    /// changes nothing for the lease.
    pub fn lost_token(&self) -> CancellationToken {
        self.state.held.lost_token()
    }

    /// The time left before the holder's deadline, zero once lost and once
    /// its hold ended; `None` while held without a deadline (an embedded
    /// lease without maxHold).
    pub fn remaining(&self) -> Option<Duration> {
        self.state.held.remaining()
    }
}

impl HeldView for Lease {
    fn loss_reason(&self) -> Option<LossReason> {
        Lease::loss_reason(self)
    }

    fn lost_signal(&self) -> WaitForCancellationFutureOwned {
        Lease::lost_signal(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_state_takes_104_bytes() {
        assert_eq!(std::mem::size_of::<LeaseState>(), 104);
    }
}
