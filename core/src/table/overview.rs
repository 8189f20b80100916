//! The table as an overview shows it ([`crate::overview`]).

use std::collections::{BinaryHeap, HashMap};

use super::{KeyRef, KeyState, LeaseTable};
use crate::clock::Instant;
use crate::overview::{KeyRow, LockSummary, OverviewQuery, MAX_ROWS};

/// What an overview of the table holds: every lock's counts, the rows the
/// query selected (the longest held first) and how many keys matched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableOverview {
    /// Every lock with a held key or a waiter, by name.
    pub locks: Vec<LockSummary>,
    /// The selected keys.
    pub keys: Vec<KeyRow>,
    /// How many keys matched the query.
    pub matched: usize,
}

impl LeaseTable {
    /// The locks' counts and the keys `query` selects, as of `now`. One
    /// pass over the keys; the selection is kept in a heap of the query's
    /// limit, so its cost does not grow with the rows left out.
    pub fn overview(&self, query: &OverviewQuery, now: Instant) -> TableOverview {
        let limit = query.limit.min(MAX_ROWS);
        let mut locks: Vec<LockSummary> = Vec::new();
        let mut place: HashMap<&str, usize> = HashMap::new();
        // Keys of one lock mostly share its name's allocation: the last
        // one's place is found without hashing.
        let mut last: Option<(*const u8, usize)> = None;
        // The newest grant on top, so that it is the one let go past the limit.
        let mut chosen: BinaryHeap<(Instant, &KeyRef)> = BinaryHeap::with_capacity(limit + 1);
        let mut matched = 0;
        for (key, state) in &self.keys {
            let lock: &str = key.lock();
            let at = match last {
                Some((ptr, at)) if ptr == lock.as_ptr() => at,
                _ => {
                    let at = *place.entry(lock).or_insert_with(|| {
                        locks.push(LockSummary {
                            lock: lock.to_owned(),
                            held: 0,
                            waiting: 0,
                        });
                        locks.len() - 1
                    });
                    last = Some((lock.as_ptr(), at));
                    at
                }
            };
            let summary = &mut locks[at];
            summary.held += usize::from(state.holder.is_some());
            summary.waiting += state.line.len();
            if !selects(query, key) {
                continue;
            }
            matched += 1;
            let granted_at = state.holder.as_ref().map_or(now, |h| h.granted_at());
            if chosen.len() == limit
                && chosen
                    .peek()
                    .is_some_and(|(newest, _)| granted_at >= *newest)
            {
                continue;
            }
            chosen.push((granted_at, key));
            if chosen.len() > limit {
                chosen.pop();
            }
        }
        locks.sort_by(|a, b| a.lock.cmp(&b.lock));
        let keys = chosen
            .into_sorted_vec()
            .into_iter()
            .map(|(_, key)| self.row(key, &self.keys[key], now))
            .collect();
        TableOverview {
            locks,
            keys,
            matched,
        }
    }

    fn row(&self, key: &KeyRef, state: &KeyState, now: Instant) -> KeyRow {
        let holder = state.holder.as_deref();
        let grant = holder.map(|h| self.current(h));
        KeyRow {
            lock: key.lock().to_string(),
            key: key.key().to_owned(),
            fence: grant.as_ref().map_or(0, |g| g.fence),
            holder: holder.map_or(0, |h| h.holder.number),
            identity: holder.map(|h| h.holder.identity.to_string()),
            held_for: holder
                .map_or_else(Default::default, |h| now.saturating_since(h.granted_at())),
            expires_in: grant
                .as_ref()
                .and_then(|g| g.expires_at)
                .map(|e| e.saturating_since(now)),
            revoke_in: grant
                .as_ref()
                .and_then(|g| g.revoke_at)
                .map(|r| r.saturating_since(now)),
            waiting: state.line.len(),
            oldest_wait: state
                .line
                .0
                .as_ref()
                .and_then(|l| l.front())
                .map(|w| now.saturating_since(w.queued_at)),
        }
    }
}

/// Whether `query` selects `key`.
fn selects(query: &OverviewQuery, key: &KeyRef) -> bool {
    query.lock.as_deref().is_none_or(|l| **key.lock() == *l)
        && query
            .filter
            .as_deref()
            .is_none_or(|f| key.key().contains(f))
}
