//! The table's timers: one min-heap of deadlines, so that expiry costs
//! O(log n) per lease and nothing is scanned on a tick.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::clock::Instant;
use crate::ids::{GroupId, LeaseId, RequestId};

/// What a deadline is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
///
/// The order of the variants matters: of two timers due at the same instant,
/// a revocation pops before an expiry, so that a lease whose maxHold and ttl
/// end together is reported revoked.
pub enum Timer {
    /// The lease reaches its maxHold.
    Revoke(LeaseId),
    /// The lease's ttl may have run out (it may have been renewed since).
    Expire(LeaseId),
    /// A renewal group's ttl may have run out, and with it its leases'.
    ExpireGroup(GroupId),
    /// A request whose lease ended unseen can be forgotten.
    Forget(RequestId),
}

/// The armed timers, earliest first. Entries are not removed when their lease goes:
/// the table checks each popped entry against its current state.
#[derive(Debug, Default)]
pub struct TimerQueue {
    heap: BinaryHeap<Reverse<(Instant, Timer)>>,
}

impl TimerQueue {
    /// Arms `timer` at `at`.
    pub fn push(&mut self, at: Instant, timer: Timer) {
        self.heap.push(Reverse((at, timer)));
    }

    /// The earliest armed deadline.
    pub fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// How many timers are armed, stale ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Drops every timer `keep` says is stale.
    pub fn retain(&mut self, mut keep: impl FnMut(Instant, Timer) -> bool) {
        self.heap.retain(|Reverse((at, timer))| keep(*at, *timer));
    }

    /// Takes the earliest timer if it is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, Timer)> {
        match self.heap.peek() {
            Some(Reverse((at, _))) if *at <= now => self.heap.pop().map(|Reverse(e)| e),
            _ => None,
        }
    }
}
