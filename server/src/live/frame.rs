//! One frame of a page's stream, as JSON: the store's overview for the
//! page's query, the connections, the events and samples it has not seen.
//! Fences are strings (they pass 2^53, where JavaScript numbers round);
//! times are unix ms, durations ms.

use std::time::Duration;

use leasehold::overview::{KeyRow, NamespaceRow, Overview};
use serde::Serialize;
use serde_json::value::RawValue;

use super::log::LiveEvent;
use super::source::Shows;
use super::{Peer, Sample};

/// The most connections one frame lists (the count is always whole).
pub const CONNECTIONS_SHOWN: usize = 200;

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One frame: the overview (shared by the pages of one query, serialized
/// once per tick) and what is the page's own.
#[derive(Serialize)]
pub(crate) struct Frame<'a> {
    pub t: u64,
    pub epoch: Option<u32>,
    pub shows: Shows,
    pub overview: &'a RawValue,
    pub connections: Vec<ConnectionJson>,
    pub connection_count: usize,
    pub events: Vec<LiveEvent>,
    pub missed: u64,
    pub samples: Vec<Sample>,
}

/// What the store holds, as a frame's `overview`.
#[derive(Serialize)]
pub(crate) struct OverviewJson {
    held: usize,
    waiting: usize,
    locks: Vec<LockJson>,
    keys: Vec<KeyJson>,
    matched: usize,
    namespaces: Vec<NamespaceJson>,
}

impl OverviewJson {
    /// The overview as the page reads it.
    pub fn new(o: Overview) -> OverviewJson {
        OverviewJson {
            held: o.locks.iter().map(|l| l.held).sum(),
            waiting: o.locks.iter().map(|l| l.waiting).sum(),
            locks: o
                .locks
                .into_iter()
                .map(|l| LockJson {
                    lock: l.lock,
                    held: l.held,
                    waiting: l.waiting,
                })
                .collect(),
            keys: o.keys.into_iter().map(KeyJson::new).collect(),
            matched: o.matched,
            namespaces: o.namespaces.into_iter().map(NamespaceJson::from).collect(),
        }
    }
}

#[derive(Serialize)]
pub(crate) struct LockJson {
    lock: String,
    held: usize,
    waiting: usize,
}

#[derive(Serialize)]
pub(crate) struct KeyJson {
    lock: String,
    key: String,
    fence: String,
    holder: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<String>,
    held_ms: u64,
    expires_in_ms: Option<u64>,
    revoke_in_ms: Option<u64>,
    waiting: usize,
    oldest_wait_ms: Option<u64>,
}

impl KeyJson {
    fn new(r: KeyRow) -> KeyJson {
        KeyJson {
            identity: r.identity,
            lock: r.lock,
            key: r.key,
            fence: r.fence.to_string(),
            holder: r.holder,
            held_ms: ms(r.held_for),
            expires_in_ms: r.expires_in.map(ms),
            revoke_in_ms: r.revoke_in.map(ms),
            waiting: r.waiting,
            oldest_wait_ms: r.oldest_wait.map(ms),
        }
    }
}

#[derive(Serialize)]
pub(crate) struct NamespaceJson {
    name: String,
    limit: u32,
    offset: u32,
    /// The ID layout, as `leasehold ids` describes it.
    layout: String,
    slots: Vec<SlotJson>,
}

#[derive(Serialize)]
pub(crate) struct SlotJson {
    slot: u32,
    node: u64,
    owner: Option<String>,
    fence: Option<String>,
    floor: u64,
    ceiling: Option<u64>,
    expires_in_ms: Option<u64>,
}

impl From<NamespaceRow> for NamespaceJson {
    fn from(n: NamespaceRow) -> NamespaceJson {
        let offset = n.offset;
        NamespaceJson {
            name: n.name,
            limit: n.limit,
            offset,
            layout: n.layout.describe(),
            slots: n
                .slots
                .into_iter()
                .map(|s| SlotJson {
                    slot: s.slot,
                    node: u64::from(offset) + u64::from(s.slot),
                    owner: s.owner,
                    fence: s.fence.map(|f| f.to_string()),
                    floor: s.floor,
                    ceiling: s.ceiling,
                    expires_in_ms: s.expires_in.map(ms),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub(crate) struct ConnectionJson {
    id: u64,
    peer: String,
    since: u64,
    role: &'static str,
    identity: String,
}

impl ConnectionJson {
    pub fn of(id: u64, p: &Peer) -> ConnectionJson {
        ConnectionJson {
            id,
            peer: p.addr.to_string(),
            since: p.since_ms,
            identity: p.identity.to_string(),
            role: match p.role {
                leasehold::remote::protocol::Role::Read => "read",
                leasehold::remote::protocol::Role::Write => "write",
            },
        }
    }
}
