//! The grants, releases and losses a table records while someone watches
//! (a live page): a bounded ring, drained by the table's owner.

use std::collections::VecDeque;

use std::sync::Arc;

use super::{Holder, KeyRef, LeaseTable};
use crate::clock::Instant;
use crate::identity::Identity;
use crate::overview::ActivityKind;

/// The most changes kept between two drains; older ones are dropped.
pub const ACTIVITY_KEPT: usize = 4096;

/// One change as the table keeps it until drained.
#[derive(Debug, Clone)]
pub(super) struct Recorded {
    pub(super) at: Instant,
    pub(super) kind: ActivityKind,
    pub(super) key: KeyRef,
    pub(super) fence: u64,
    pub(super) holder: Arc<Holder>,
}

/// A change drained from the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyActivity {
    /// When, on the table's clock.
    pub at: Instant,
    /// What happened.
    pub kind: ActivityKind,
    /// The lock's name.
    pub lock: std::sync::Arc<str>,
    /// The key.
    pub key: std::sync::Arc<str>,
    /// The lease's fence.
    pub fence: u64,
    /// Who held it, or was granted it ([`LeaseTable::hold_as`]).
    pub holder: u64,
    /// That holder's identity (WHO-01).
    pub identity: Identity,
}

impl LeaseTable {
    /// Starts (or stops, dropping what it kept) recording grants, releases
    /// and losses for [`LeaseTable::drain_activity`]. Off, it costs a branch.
    pub fn record_activity(&mut self, on: bool) {
        match (on, self.activity.is_some()) {
            (true, false) => self.activity = Some(VecDeque::new()),
            (false, true) => self.activity = None,
            _ => {}
        }
    }

    /// The changes recorded since the last drain, oldest first (at most
    /// [`ACTIVITY_KEPT`]: older ones were dropped).
    pub fn drain_activity(&mut self) -> Vec<KeyActivity> {
        let Some(ring) = self.activity.as_mut() else {
            return Vec::new();
        };
        ring.drain(..)
            .map(|r| KeyActivity {
                at: r.at,
                kind: r.kind,
                lock: r.key.lock().clone(),
                key: r.key.key().into(),
                fence: r.fence,
                holder: r.holder.number,
                identity: r.holder.identity.clone(),
            })
            .collect()
    }

    /// Records a change of `key`, while recording.
    pub(super) fn record(
        &mut self,
        kind: ActivityKind,
        key: &KeyRef,
        fence: u64,
        holder: &Arc<Holder>,
    ) {
        let Some(ring) = self.activity.as_mut() else {
            return;
        };
        if ring.len() == ACTIVITY_KEPT {
            ring.pop_front();
        }
        ring.push_back(Recorded {
            at: self.now,
            kind,
            key: key.clone(),
            fence,
            holder: holder.clone(),
        });
    }
}
