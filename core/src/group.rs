//! Renewal groups: on a store that renews by group, the leases one store
//! handle holds with one ttl and margin share one renewal. One task per
//! group renews them all with one call every ttl/3, whatever their number,
//! and tells each of them of its loss at its holder's deadline; it waits on
//! after the last lease leaves, until a renewal would be due, for the next.
//!
//! Each lease keeps its own id, fence, maxHold and loss. Its holder's
//! deadline (LOCK-04) is the earlier of its maxHold deadline and the
//! group's: the latest send time the store confirmed for the group (a
//! renewal, or a grant into it, which the store counts as one) plus the ttl,
//! less the margin. A lease that leaves the group (released, lost) is no
//! longer renewed by it; the store no longer counts it either.
//!
//! A store may tell the losses of a group's leases to the group, by lease
//! id ([`Driver::tell_group_losses`]), rather than on a channel per lease:
//! the group finds the lease among its members.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::{Hash, Hasher};

use crate::hashed::{HashMap, LookupSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::Notify;

use crate::clock::Instant;
use crate::deadline::AtomicDeadline;
use crate::driver::Driver;
use crate::error::ErrorKind;
use crate::ids::{GroupId, LeaseId};
use crate::lease::LeaseState;
use crate::loss::LossReason;
use crate::renewal::{retry_after, Renewal};

/// A lease in a group, hashed and compared by its id, and looked up by it:
/// a set of these costs a pointer a lease where a map by id would cost
/// three words.
struct Member(Arc<LeaseState>);

impl Hash for Member {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.lease_id().hash(state);
    }
}

impl PartialEq for Member {
    fn eq(&self, other: &Member) -> bool {
        self.0.lease_id() == other.0.lease_id()
    }
}

impl Eq for Member {}

impl hashbrown::Equivalent<Member> for LeaseId {
    fn equivalent(&self, member: &Member) -> bool {
        *self == member.0.lease_id()
    }
}

struct Members {
    leases: LookupSet<Member>,
    /// The maxHold deadlines of leases in the group, earliest first.
    max_holds: BinaryHeap<Reverse<(Instant, LeaseId)>>,
    /// Whether the group's task runs.
    task_runs: bool,
}

/// The leases of one store handle with one ttl and margin.
pub(crate) struct Group {
    id: GroupId,
    renewal: Renewal,
    driver: Arc<dyn Driver>,
    runtime: Handle,
    /// The group's holder deadline, shared with the leases in it (read
    /// without a lock by every lease's `remaining()`); none while the
    /// store confirmed nothing.
    deadline: Arc<AtomicDeadline>,
    members: Mutex<Members>,
    changed: Notify,
}

/// The groups of one store handle, by ttl and margin.
#[derive(Default)]
pub(crate) struct Groups {
    by_renewal: Mutex<HashMap<(Duration, Duration), Arc<Group>>>,
}

impl Groups {
    /// The group of leases renewed as `renewal` says, made on first use.
    pub(crate) fn get(
        &self,
        renewal: Renewal,
        driver: &Arc<dyn Driver>,
        runtime: &Handle,
    ) -> Arc<Group> {
        let mut map = self.by_renewal.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((renewal.ttl, renewal.margin))
            .or_insert_with(|| {
                let group = Arc::new(Group {
                    id: GroupId::random(),
                    renewal,
                    driver: driver.clone(),
                    runtime: runtime.clone(),
                    deadline: Arc::default(),
                    members: Mutex::new(Members {
                        leases: LookupSet::default(),
                        max_holds: BinaryHeap::new(),
                        task_runs: false,
                    }),
                    changed: Notify::new(),
                });
                let told = Arc::downgrade(&group);
                driver.tell_group_losses(
                    group.id,
                    Box::new(move |lease, reason| {
                        if let Some(group) = told.upgrade() {
                            group.lose(lease, reason);
                        }
                    }),
                );
                group
            })
            .clone()
    }
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("ttl", &self.renewal.ttl)
            .field("margin", &self.renewal.margin)
            .finish_non_exhaustive()
    }
}

impl Group {
    /// The id the store knows the group by.
    pub(crate) fn id(&self) -> GroupId {
        self.id
    }

    /// The deadline its leases share.
    pub(crate) fn deadline(&self) -> &Arc<AtomicDeadline> {
        &self.deadline
    }

    fn lock(&self) -> MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store confirmed the group as of a request sent at `sent_at`;
    /// returns the group's deadline since.
    ///
    /// Leases whose deadline has passed are lost first, whether or not the
    /// group's task got to it yet: the store may have expired them, and a
    /// grant made since (into a group it made anew under the same id) says
    /// nothing of them. Those still within their deadline were in the group
    /// the store renewed, which had not expired then.
    pub(crate) fn confirmed(&self, sent_at: Instant) -> Instant {
        if self
            .deadline
            .get()
            .is_some_and(|d| d <= self.driver.clock().now())
        {
            self.lose_all(LossReason::Expired);
        }
        self.deadline.raise(self.renewal.by_ttl(sent_at))
    }

    /// Adds a held lease, whose own maxHold deadline is `max_hold`; starts
    /// the group's task if none runs.
    pub(crate) fn join(self: &Arc<Self>, lease: Arc<LeaseState>, max_hold: Option<Instant>) {
        let id = lease.lease_id();
        let start = {
            let mut m = self.lock();
            m.leases.replace(Member(lease));
            if let Some(at) = max_hold {
                m.max_holds.push(Reverse((at, id)));
            }
            !std::mem::replace(&mut m.task_runs, true)
        };
        if start {
            let task = self.driver.clock().started(group_task(self.clone()));
            self.runtime.spawn(task);
        } else if max_hold.is_some() {
            self.changed.notify_one();
        }
    }

    /// Takes a lease out of the group (its holder ended it).
    pub(crate) fn leave(&self, id: LeaseId) {
        self.lock().leases.remove(&id);
    }

    /// Marks a lease of the group lost, as the store told it, and takes it out.
    fn lose(&self, id: LeaseId, reason: LossReason) {
        let lease = self.lock().leases.take(&id);
        if let Some(Member(lease)) = lease {
            lease.held.mark_lost(reason);
        }
    }

    /// Marks every lease of the group lost, and empties it.
    fn lose_all(&self, reason: LossReason) {
        let leases: Vec<_> = {
            let mut m = self.lock();
            m.max_holds.clear();
            m.leases.drain().map(|member| member.0).collect()
        };
        for lease in leases {
            lease.held.mark_lost(reason);
        }
    }

    /// Marks lost the leases whose maxHold deadline came by `now`.
    fn lose_max_held(&self, now: Instant) {
        let mut due = Vec::new();
        {
            let mut m = self.lock();
            while let Some(Reverse((at, id))) = m.max_holds.peek().copied() {
                if at > now {
                    break;
                }
                m.max_holds.pop();
                if let Some(member) = m.leases.take(&id) {
                    due.push(member.0);
                }
            }
        }
        for lease in due {
            lease.held.mark_lost(LossReason::Revoked);
        }
    }
}

/// The task of a group while it has leases: renews it every ttl/3 from the
/// last confirmed send, retrying a failed renewal until the group's
/// deadline, at which every lease still in it is lost; loses each lease at
/// its own maxHold deadline. Once the group has none, it waits for the
/// next until a renewal would be due, then ends.
async fn group_task(group: Arc<Group>) {
    let clock = group.driver.clock().clone();
    let ttl = group.renewal.ttl;
    let mut retry_at: Option<Instant> = None;
    loop {
        let changed = group.changed.notified();
        // When the renewal is due that the group's deadline asks for.
        let due = |deadline: Instant| {
            group
                .renewal
                .renew_at(deadline + group.renewal.margin - ttl)
        };
        let next_max_hold = {
            let mut m = group.lock();
            if m.leases.is_empty() {
                m.max_holds.clear();
                retry_at = None;
                // An empty group's task waits for leases to join until a
                // renewal would be due: a holder that takes and ends one
                // lease at a time keeps one task, not one a lease. A lease
                // that joins meanwhile is due no sooner (its grant was sent
                // later), so the task wakes in time for it.
                if group.deadline.get().is_none_or(|d| due(d) <= clock.now()) {
                    m.task_runs = false;
                    return;
                }
            }
            m.max_holds.peek().map(|Reverse((at, _))| *at)
        };
        let Some(deadline) = group.deadline.get() else {
            return group.lose_all(LossReason::Expired);
        };
        let renew_at = retry_at.unwrap_or(due(deadline));
        tokio::select! {
            biased;
            _ = clock.sleep_until(deadline) => {
                if group.deadline.get().is_none_or(|d| d <= clock.now()) {
                    group.lose_all(LossReason::Expired);
                }
            }
            _ = clock.sleep_until(next_max_hold.unwrap_or(deadline)), if next_max_hold.is_some() => {
                group.lose_max_held(clock.now());
            }
            _ = changed => {}
            _busy = clock.work_at(renew_at) => {
                if group.lock().leases.is_empty() {
                    continue;
                }
                let sent = clock.now();
                let renewed = tokio::select! {
                    biased;
                    _ = clock.sleep_until(deadline) => continue,
                    r = group.driver.renew_group(group.id, ttl) => r,
                };
                match renewed {
                    Ok(()) => {
                        group.confirmed(sent);
                        retry_at = None;
                    }
                    Err(e) if e.kind() == ErrorKind::Lost => {
                        group.lose_all(e.loss_reason().unwrap_or(LossReason::Expired));
                        retry_at = None;
                    }
                    Err(_) => retry_at = Some(clock.now() + retry_after(ttl)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::VirtualClock;
    use crate::memory::{MemoryDriver, MemoryOptions};
    use crate::table::{Grant, KeyName};

    fn lease(clock: &VirtualClock, group: &Group, id: u128) -> Arc<LeaseState> {
        let grant = Grant {
            request_id: crate::ids::RequestId(id),
            lease_id: LeaseId(id),
            fence: 1,
            expires_at: None,
            revoke_at: None,
            revoke_in: None,
        };
        let held =
            crate::held::HeldState::new(clock.clone().into(), None, Some(group.deadline().clone()));
        LeaseState::new(KeyName::new("l", format!("k{id}")), &grant, held)
    }

    /// A group of ttl 9 s and margin 1 s on an embedded store in renewal
    /// mode, on a virtual clock.
    fn group_on_virtual_clock() -> (VirtualClock, Arc<Group>) {
        let clock = VirtualClock::new();
        let driver: Arc<dyn Driver> = Arc::new(MemoryDriver::new(
            MemoryOptions::default()
                .clock(clock.clone().into())
                .renewal(true),
            &Handle::current(),
        ));
        let renewal = Renewal {
            ttl: Duration::from_secs(9),
            margin: Duration::from_secs(1),
        };
        let group = Groups::default().get(renewal, &driver, &Handle::current());
        (clock, group)
    }

    // LOCK-04: a confirmation of the group never moves the deadline of a
    // lease past which it already was: that lease is lost, not extended.
    #[tokio::test]
    async fn lock_04_a_confirmation_does_not_extend_a_lease_past_its_deadline() {
        let (clock, group) = group_on_virtual_clock();
        group.confirmed(clock.now());
        let old = lease(&clock, &group, 1);
        group.join(old.clone(), None);
        clock.jump(Duration::from_secs(8));
        // No task ran since the jump, and nobody looked at the lease: were
        // the confirmation to extend it, it would not be lost after it.
        group.confirmed(clock.now());
        assert_eq!(old.held.reason(), Some(LossReason::Expired));
        let new = lease(&clock, &group, 2);
        group.join(new.clone(), None);
        assert_eq!(new.held.remaining(), Some(Duration::from_secs(8)));
    }

    // LOCK-04: a holder deadline that came is a loss as soon as anyone
    // looks, before the group's task ran (a process resumed from SIGSTOP): the
    // lease says lost, and its loss signal has fired.
    #[tokio::test]
    async fn lock_04_a_deadline_that_came_is_a_loss_before_the_group_task_runs() {
        let (clock, group) = group_on_virtual_clock();
        group.confirmed(clock.now());
        let held = lease(&clock, &group, 1);
        group.join(held.clone(), None);
        let signal = held.held.lost_signal();
        clock.jump(Duration::from_millis(7_999));
        assert_eq!(held.held.reason(), None);
        assert_eq!(held.held.remaining(), Some(Duration::from_millis(1)));
        clock.jump(Duration::from_millis(1));
        assert_eq!(held.held.reason(), Some(LossReason::Expired));
        assert_eq!(held.held.remaining(), Some(Duration::ZERO));
        tokio::time::timeout(Duration::from_secs(1), signal)
            .await
            .expect("the loss signal fired");
    }
}
