//! A store read through its driver (`leasehold ui --store URL`): etcd,
//! PostgreSQL or a server store elsewhere. Its holders are read once a
//! tick while a page is open; grants and ends are what changed between two
//! reads. It cannot tell a release from a loss, nor show maxHold, the lines
//! of keys nobody holds, holders' connections or slots (docs/live.md says
//! what each store shows).

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use leasehold::driver::HolderInfo;
use leasehold::overview::{
    Activity, ActivityKind, KeyRow, LockSummary, Overview, OverviewQuery, MAX_ROWS,
};
use leasehold::Store;

use super::source::{Counts, Shows, Source};
use super::{lock, unix_ms};

/// The most changes kept between two drains.
const KEPT: usize = 4096;

/// A store read from outside.
pub(crate) struct Polled {
    store: Store,
    name: &'static str,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The last read, by (lock, key).
    holders: HashMap<(String, String), HolderInfo>,
    /// What changed between reads, while recorded.
    activity: Option<Vec<Activity>>,
    grants: u64,
    ended: u64,
}

impl Polled {
    /// Reads `store`, named `name` on the page (`etcd`, `postgres`, `server`).
    pub fn new(store: Store, name: &'static str) -> Polled {
        Polled {
            store,
            name,
            state: Mutex::new(State::default()),
        }
    }

    /// Takes in a new read of every holder: a key held under a fence not
    /// seen before is a grant; a key gone, or held under another fence, ended.
    fn absorb(&self, read: Vec<HolderInfo>) {
        let now = unix_ms();
        let mut st = lock(&self.state);
        let mut next = HashMap::with_capacity(read.len());
        let mut changes = Vec::new();
        for h in read {
            let name = (h.lock.clone(), h.key.clone());
            match st.holders.remove(&name) {
                Some(old) if old.fence == h.fence => {}
                Some(old) => {
                    changes.push(change(now, ActivityKind::Ended, &old));
                    changes.push(change(now, ActivityKind::Granted, &h));
                }
                None => changes.push(change(now, ActivityKind::Granted, &h)),
            }
            next.insert(name, h);
        }
        for old in st.holders.values() {
            changes.push(change(now, ActivityKind::Ended, old));
        }
        st.holders = next;
        for c in &changes {
            match c.kind {
                ActivityKind::Granted => st.grants += 1,
                _ => st.ended += 1,
            }
        }
        if let Some(kept) = st.activity.as_mut() {
            kept.extend(changes);
            let over = kept.len().saturating_sub(KEPT);
            kept.drain(..over);
        }
    }
}

fn change(at_ms: u64, kind: ActivityKind, h: &HolderInfo) -> Activity {
    Activity {
        at_ms,
        kind,
        lock: h.lock.clone(),
        key: h.key.clone(),
        fence: h.fence,
        holder: 0,
        identity: h.identity.clone(),
    }
}

impl Source for Polled {
    fn shows(&self) -> Shows {
        Shows {
            store: self.name,
            waiters: true,
            holders: true,
            revocations: false,
            endings: false,
            slots: false,
            connections: false,
            epoch: false,
        }
    }

    fn overview(&self, query: &OverviewQuery) -> Overview {
        let st = lock(&self.state);
        let mut locks: HashMap<&str, (usize, usize)> = HashMap::new();
        let mut rows: Vec<&HolderInfo> = Vec::new();
        for h in st.holders.values() {
            let (held, waiting) = locks.entry(&h.lock).or_default();
            *held += 1;
            *waiting += h.waiting;
            let selected = query.lock.as_deref().is_none_or(|l| h.lock == l)
                && query.filter.as_deref().is_none_or(|f| h.key.contains(f));
            if selected {
                rows.push(h);
            }
        }
        let matched = rows.len();
        rows.sort_by(|a, b| b.held_for.cmp(&a.held_for).then(a.key.cmp(&b.key)));
        rows.truncate(query.limit.min(MAX_ROWS));
        let mut locks: Vec<LockSummary> = locks
            .into_iter()
            .map(|(lock, (held, waiting))| LockSummary {
                lock: lock.to_owned(),
                held,
                waiting,
            })
            .collect();
        locks.sort_by(|a, b| a.lock.cmp(&b.lock));
        Overview {
            locks,
            keys: rows
                .into_iter()
                .map(|h| KeyRow {
                    lock: h.lock.clone(),
                    key: h.key.clone(),
                    fence: h.fence,
                    holder: 0,
                    identity: Some(h.identity.clone()),
                    held_for: h.held_for,
                    expires_in: h.expires_in,
                    revoke_in: None,
                    waiting: h.waiting,
                    oldest_wait: None,
                })
                .collect(),
            matched,
            namespaces: Vec::new(),
        }
    }

    fn record_activity(&self, on: bool) {
        let mut st = lock(&self.state);
        match (on, st.activity.is_some()) {
            (true, false) => st.activity = Some(Vec::new()),
            (false, true) => st.activity = None,
            _ => {}
        }
    }

    fn drain_activity(&self) -> Vec<Activity> {
        lock(&self.state)
            .activity
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn epoch(&self) -> Option<u32> {
        None
    }

    fn counts(&self) -> Counts {
        let st = lock(&self.state);
        Counts {
            grants: st.grants,
            losses: 0,
            releases: st.ended,
            held: st.holders.len(),
            waiting: st.holders.values().map(|h| h.waiting).sum(),
        }
    }

    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match self.store.holders(None).await {
                Ok(read) => self.absorb(read),
                Err(e) => tracing::warn!(error = %e, "ui: cannot read the store's holders"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn holder(key: &str, fence: u64) -> HolderInfo {
        HolderInfo {
            lock: "l".into(),
            key: key.into(),
            fence,
            held_for: Duration::from_secs(fence),
            expires_in: None,
            identity: "api-7".into(),
            waiting: 0,
        }
    }

    #[tokio::test]
    async fn what_changed_between_two_reads_is_a_grant_or_an_end() {
        let polled = Polled::new(Store::memory(), "test");
        polled.record_activity(true);
        polled.absorb(vec![holder("a", 1), holder("b", 2)]);
        polled.absorb(vec![holder("a", 1), holder("b", 3), holder("c", 4)]);
        polled.absorb(vec![holder("b", 3)]);
        // Within one read the order is the map's: compare as sets.
        let mut seen: Vec<(u64, &str, String)> = polled
            .drain_activity()
            .into_iter()
            .map(|a| (a.fence, a.kind.as_str(), a.key))
            .collect();
        seen.sort();
        let expected = [
            (1, "ended", "a"),
            (1, "granted", "a"),
            (2, "ended", "b"),
            (2, "granted", "b"),
            (3, "granted", "b"),
            (4, "ended", "c"),
            (4, "granted", "c"),
        ];
        let expected: Vec<(u64, &str, String)> = expected
            .into_iter()
            .map(|(f, k, key)| (f, k, key.to_owned()))
            .collect();
        assert_eq!(seen, expected);
        let counts = polled.counts();
        assert_eq!((counts.grants, counts.releases, counts.held), (4, 3, 1));
        let o = polled.overview(&OverviewQuery::default());
        assert_eq!(o.matched, 1);
        assert_eq!((o.keys[0].key.as_str(), o.keys[0].fence), ("b", 3));
    }
}
