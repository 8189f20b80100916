//! What a store holds now, as an operator looks at it (the live page,
//! docs/live.md): the locks with their counts, a bounded selection of held
//! keys with their lines, the slot namespaces with their slots, and the
//! grants, releases and losses as they happen. Never a lease id or a
//! request id: what is shown cannot be used to act on a lease.

use std::time::Duration;

use crate::idgen::IdLayout;
use crate::loss::LossReason;

/// The most key rows one overview carries, whatever its query asks.
pub const MAX_ROWS: usize = 1000;

/// Which keys an overview shows: at most `limit` (up to [`MAX_ROWS`]) of
/// the keys of `lock` (every lock's when `None`) whose key contains
/// `filter`, the longest held first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverviewQuery {
    /// Only this lock's keys.
    pub lock: Option<String>,
    /// Only keys that contain this text.
    pub filter: Option<String>,
    /// How many rows at most.
    pub limit: usize,
}

impl Default for OverviewQuery {
    fn default() -> OverviewQuery {
        OverviewQuery {
            lock: None,
            filter: None,
            limit: 200,
        }
    }
}

/// One lock's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockSummary {
    /// The lock's name (empty: the manual leases).
    pub lock: String,
    /// How many of its keys are held.
    pub held: usize,
    /// How many requests wait in its keys' lines.
    pub waiting: usize,
}

/// One held key (or a key whose line waits) as an overview shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    /// The lock's name (empty: a manual lease).
    pub lock: String,
    /// The key.
    pub key: String,
    /// The holder's fence.
    pub fence: u64,
    /// Who holds it, as the store's owner named the hold (on the server
    /// store, the connection's number); 0 when not named.
    pub holder: u64,
    /// The holder's identity (WHO-01); `None`: nobody holds the key.
    pub identity: Option<String>,
    /// How long ago the lease was granted.
    pub held_for: Duration,
    /// How long before the store lets it go unless renewed; `None`: not by time.
    pub expires_in: Option<Duration>,
    /// How long before the store revokes it (its maxHold); `None`: never.
    pub revoke_in: Option<Duration>,
    /// How many requests wait in the key's line.
    pub waiting: usize,
    /// How long the first in line has waited.
    pub oldest_wait: Option<Duration>,
}

/// One slot of a namespace that was ever taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRow {
    /// The slot's number.
    pub slot: u32,
    /// The current holder's owner key (`None`: free).
    pub owner: Option<String>,
    /// The current holder's fence.
    pub fence: Option<u64>,
    /// The floor: IDs of this slot's node stay above it.
    pub floor: u64,
    /// The ceiling the holder may issue up to (unix ms), while held.
    pub ceiling: Option<u64>,
    /// How long before the holder's lease expires unless renewed.
    pub expires_in: Option<Duration>,
}

/// A slot namespace and its slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceRow {
    /// The namespace's name.
    pub name: String,
    /// The slots are `[0, limit)`.
    pub limit: u32,
    /// What clients add to a slot to get their node number.
    pub offset: u32,
    /// The layout of the IDs its generators make.
    pub layout: IdLayout,
    /// The slots ever taken, by number.
    pub slots: Vec<SlotRow>,
}

/// What a store holds now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overview {
    /// Every lock with a held key or a waiter, by name.
    pub locks: Vec<LockSummary>,
    /// The keys the query selected, the longest held first.
    pub keys: Vec<KeyRow>,
    /// How many keys matched the query (more than `keys` when cut at its limit).
    pub matched: usize,
    /// Every slot namespace, by name.
    pub namespaces: Vec<NamespaceRow>,
}

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityKind {
    /// A request was granted the key (at once, or from its line).
    Granted,
    /// Its holder released it.
    Released,
    /// It ended without its holder (expired, revoked by maxHold, …).
    Lost(LossReason),
    /// It is no longer held, released or lost: what a store read from
    /// outside, between two reads, can tell.
    Ended,
}

impl ActivityKind {
    /// The kind's name: `granted`, `released`, `lost` or `ended`.
    pub fn as_str(self) -> &'static str {
        match self {
            ActivityKind::Granted => "granted",
            ActivityKind::Released => "released",
            ActivityKind::Lost(_) => "lost",
            ActivityKind::Ended => "ended",
        }
    }
}

/// One change of a key, as a store that records them keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// When, in unix milliseconds.
    pub at_ms: u64,
    /// What happened.
    pub kind: ActivityKind,
    /// The lock's name.
    pub lock: String,
    /// The key.
    pub key: String,
    /// The lease's fence.
    pub fence: u64,
    /// Who held it, or was granted it (see [`KeyRow::holder`]).
    pub holder: u64,
    /// That holder's identity (WHO-01).
    pub identity: String,
}
