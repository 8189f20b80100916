//! The live page (`--http ADDR`, docs/live.md): what the store holds now,
//! pushed to each open page as server-sent events.
//!
//! One ticker for the server: every [`TICK`] while a page is open it drains
//! the store's activity into a bounded log of events and wakes the pages'
//! streams; every second, page or not, it samples the counters the charts
//! draw. Each stream then builds its own frame (its query's overview, the
//! events since its last frame, the new samples) and sends it only when the
//! page has taken the last one: a slow page gets fewer frames, never a
//! growing queue.

mod assets;
mod frame;
mod log;
mod polled;
mod source;
mod stream;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leasehold::driver::KeyName;
use leasehold::overview::OverviewQuery;
use leasehold::remote::protocol::Role;
use leasehold::Identity;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::metrics::Refusal;

pub(crate) use assets::{asset, CONTENT_SECURITY_POLICY};
pub(crate) use stream::{open as open_stream, query};

use frame::OverviewJson;
use log::{EventLog, LiveEvent};
pub(crate) use polled::Polled;
use source::Counts;
pub(crate) use source::{Served, Source};

/// How often open pages get a frame.
pub const TICK: Duration = Duration::from_millis(500);
/// How many one-second samples the charts keep: five minutes.
const SAMPLES_KEPT: usize = 300;
/// The most pages open at once; another is answered 503.
pub const MAX_PAGES: usize = 64;

/// A connection as the page lists it.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    addr: SocketAddr,
    since_ms: u64,
    role: Role,
    /// Who the client is (WHO-01, `ConnectOptions::identity`).
    identity: Identity,
}

/// The open connections.
#[derive(Default)]
pub(crate) struct Peers {
    open: BTreeMap<u64, Peer>,
}

/// One second of the charts: the rates over it and the levels at its end.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub(crate) struct Sample {
    /// Unix ms at the end of the second.
    t: u64,
    grants: u64,
    losses: u64,
    releases: u64,
    held: usize,
    waiting: usize,
    connections: usize,
    /// The p50 of the second's handoffs (release → the next holder's
    /// pushed grant written), in µs; none without one.
    handoff_p50_us: Option<u64>,
}

/// The handoffs being timed while a page is open: the keys released with
/// someone in line, and how long the handoffs of this second took.
#[derive(Default)]
struct Handoffs {
    started: HashMap<KeyName, Instant>,
    took: Vec<Duration>,
}

/// The most handoffs timed at once, and in one second; past them, the
/// oldest starts are dropped and the rest of the second is not timed.
const HANDOFFS_KEPT: usize = 10_000;

/// The overviews serialized in one tick, by query.
#[derive(Default)]
struct Overviews {
    tick: u64,
    made: Vec<(OverviewQuery, Arc<RawValue>)>,
}

/// The live page's state, shared by the server's tasks.
pub(crate) struct Live {
    source: Arc<dyn Source>,
    connections: Mutex<Peers>,
    events: Mutex<EventLog>,
    samples: Mutex<VecDeque<Sample>>,
    /// How many pages are open; the store records its activity while any is.
    pages: Mutex<usize>,
    /// Whether a page is open (`pages` > 0), read on hot paths without a lock.
    watching: AtomicBool,
    /// The number of the last tick; streams wait for it to change.
    tick: watch::Sender<u64>,
    /// The overviews serialized this tick, by query: pages that ask the
    /// same share one pass over the store.
    overviews: Mutex<Overviews>,
    handoffs: Mutex<Handoffs>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Unix milliseconds now.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Live {
    pub fn new(source: Arc<dyn Source>) -> Live {
        Live {
            source,
            connections: Mutex::new(Peers::default()),
            events: Mutex::new(EventLog::default()),
            samples: Mutex::new(VecDeque::with_capacity(SAMPLES_KEPT)),
            pages: Mutex::new(0),
            tick: watch::Sender::new(0),
            overviews: Mutex::new(Overviews::default()),
            watching: AtomicBool::new(false),
            handoffs: Mutex::new(Handoffs::default()),
        }
    }

    /// A connection was admitted; `identity` is who it is.
    pub fn connected(&self, id: u64, addr: SocketAddr, role: Role, identity: Identity) {
        lock(&self.connections).open.insert(
            id,
            Peer {
                addr,
                since_ms: unix_ms(),
                role,
                identity,
            },
        );
    }

    /// A connection ended.
    pub fn disconnected(&self, id: u64) {
        lock(&self.connections).open.remove(&id);
    }

    /// A connection was refused; logged only while a page is open.
    pub fn refused(&self, why: Refusal, peer: SocketAddr) {
        if self.watched() {
            lock(&self.events).push(LiveEvent::refused(unix_ms(), why, peer));
        }
    }

    /// Takes a page's place, or `None` when [`MAX_PAGES`] are open; the
    /// store records its activity while any page is open.
    fn enter(self: &Arc<Self>) -> Option<PagePlace> {
        let mut pages = lock(&self.pages);
        if *pages == MAX_PAGES {
            return None;
        }
        if *pages == 0 {
            self.source.record_activity(true);
            self.watching.store(true, Ordering::Relaxed);
        }
        *pages += 1;
        Some(PagePlace(self.clone()))
    }

    /// A key with someone in line is being released: its handoff starts.
    pub fn releasing(&self, key: KeyName) {
        let mut h = lock(&self.handoffs);
        if h.started.len() >= HANDOFFS_KEPT {
            h.started.clear();
        }
        h.started.insert(key, Instant::now());
    }

    /// The grant of `key` was pushed to its next holder: its handoff ends.
    pub fn handed_over(&self, key: &KeyName) {
        let mut h = lock(&self.handoffs);
        if let Some(at) = h.started.remove(key) {
            if h.took.len() < HANDOFFS_KEPT {
                h.took.push(at.elapsed());
            }
        }
    }

    /// The p50 of the handoffs since the last call, in µs.
    fn handoffs_of_the_second(&self) -> Option<u64> {
        let mut h = lock(&self.handoffs);
        let stale = Instant::now() - Duration::from_secs(5);
        h.started.retain(|_, at| *at > stale);
        let mut took = std::mem::take(&mut h.took);
        drop(h);
        took.sort_unstable();
        let us = |d: &Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        took.get(took.len() / 2).map(us)
    }

    /// Whether a page is open: the activity is recorded, handoffs timed.
    pub fn watched(&self) -> bool {
        self.watching.load(Ordering::Relaxed)
    }

    /// The store's overview for `query`, as JSON: made at most once a tick
    /// for each query the open pages ask.
    fn overview(&self, query: &OverviewQuery) -> Arc<RawValue> {
        let tick = *self.tick.borrow();
        {
            let cached = lock(&self.overviews);
            if cached.tick == tick {
                if let Some((_, json)) = cached.made.iter().find(|(q, _)| q == query) {
                    return json.clone();
                }
            }
        }
        let overview = self.source.overview(query);
        let overview = OverviewJson::new(overview);
        let json: Arc<RawValue> = serde_json::value::to_raw_value(&overview)
            .map(Arc::from)
            .unwrap_or_else(|_| Arc::from(RawValue::NULL.to_owned()));
        let mut cached = lock(&self.overviews);
        if cached.tick != tick {
            *cached = Overviews {
                tick,
                made: Vec::new(),
            };
        }
        cached.made.push((query.clone(), json.clone()));
        json
    }

    /// Runs the ticker until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut ticks = tokio::time::interval(TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let per_sample = (Duration::from_secs(1).as_millis() / TICK.as_millis()) as u64;
        let mut last = self.source.counts();
        let mut n = 0u64;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticks.tick() => {}
            }
            n += 1;
            let watched = self.watched();
            if watched {
                self.source.refresh().await;
            }
            if n % per_sample == 0 {
                let now = self.source.counts();
                self.sample(&last, &now);
                last = now;
            }
            if watched {
                let drained = self.source.drain_activity();
                lock(&self.events).extend(drained);
                self.tick.send_replace(n);
            }
        }
    }

    fn sample(&self, last: &Counts, now: &Counts) {
        let handoff_p50_us = self.handoffs_of_the_second();
        let sample = Sample {
            t: unix_ms(),
            grants: now.grants.saturating_sub(last.grants),
            losses: now.losses.saturating_sub(last.losses),
            releases: now.releases.saturating_sub(last.releases),
            held: now.held,
            waiting: now.waiting,
            connections: lock(&self.connections).open.len(),
            handoff_p50_us,
        };
        let mut samples = lock(&self.samples);
        if samples.len() == SAMPLES_KEPT {
            samples.pop_front();
        }
        samples.push_back(sample);
    }
}

/// A page's place among [`MAX_PAGES`], given back when its stream ends.
pub(crate) struct PagePlace(Arc<Live>);

impl Drop for PagePlace {
    fn drop(&mut self) {
        let mut pages = lock(&self.0.pages);
        *pages -= 1;
        if *pages == 0 {
            self.0.source.record_activity(false);
            self.0.watching.store(false, Ordering::Relaxed);
        }
    }
}
