//! IDGEN-01, model-based: random slot histories replayed against the real
//! slot table and the real issuer, with skewed and stepped clocks, frozen
//! and crashed holders, clones used after a close, and store restarts that
//! keep only the journal; every ID issued must be new. Each mutant of
//! [`super::mutants`] must make the search find a repeat.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRunner};

use super::generator::fresh_owner;
use super::issuer::Issuer;
use super::layout::IdLayout;
use super::mutants::{self, Mutant};
use crate::clock::{Clock, Instant, VirtualClock, VIRTUAL_UNIX_ORIGIN_MS};
use crate::held::HeldState;
use crate::loss::LossReason;
use crate::slots::{AcquireResult, HeldSlotCell, NamespaceSpec, SlotLease, SlotRequest, SlotTable};

const TTL: Duration = Duration::from_secs(3);
const CLIENTS: usize = 4;
/// Few node and sequence bits, so that a fault repeats an ID soon.
const LAYOUT: IdLayout = IdLayout::custom(41, 2, 2).with_epoch(VIRTUAL_UNIX_ORIGIN_MS - 600_000);

/// Who stamps slot leases: the store's clock (the server store), or the
/// caller's (etcd, DIST-07).
#[derive(Debug, Clone, Copy)]
enum Stamper {
    Store,
    Caller,
}

#[derive(Debug, Clone)]
enum Op {
    /// Time passes for everyone (ms).
    Advance(u64),
    /// Time passes until a client's holder deadline is this close (ms):
    /// the last moments of a lease, where its ceiling is within reach of
    /// the lead and its successor's first moments are near.
    AdvanceToDeadline(usize, u64),
    /// A client opens a generator, its answer taking this long to arrive (ms).
    Open(usize, u64),
    /// A client renews its slot.
    Renew(usize),
    /// A client issues up to this many IDs.
    Issue(usize, u64),
    /// A client issues with the time it read before its last freeze (the
    /// process stopped between reading the clock and issuing).
    IssueStale(usize, u64),
    /// A client closes its generator and keeps a clone of it.
    Close(usize),
    /// A clone kept past a close issues.
    IssueClone(usize, u64),
    /// A client's process dies: no release; a new process starts.
    Crash(usize),
    /// A client's process stops for this long (ms); its clock goes on.
    Freeze(usize, u64),
    /// A wall clock steps (ms): the store's, or a client's.
    Step(Option<usize>, i64),
    /// The store restarts, keeping only its journal's ceiling and namespaces.
    Restart(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let c = 0..CLIENTS;
    prop_oneof![
        // Time in steps of 100 ms, so that a holder's last moments and the
        // next holder's first ones meet on the same millisecond.
        3 => (1u64..15).prop_map(|k| Op::Advance(k * 100)),
        2 => (c.clone(), 0u64..4).prop_map(|(c, k)| Op::AdvanceToDeadline(c, k * 100)),
        2 => (c.clone(), 0u64..400).prop_map(|(c, d)| Op::Open(c, d)),
        2 => c.clone().prop_map(Op::Renew),
        4 => (c.clone(), 1u64..1000).prop_map(|(c, n)| Op::Issue(c, n)),
        // As many as the lead allows.
        2 => c.clone().prop_map(|c| Op::Issue(c, 1 << 20)),
        1 => (c.clone(), 1u64..40).prop_map(|(c, n)| Op::IssueStale(c, n)),
        1 => c.clone().prop_map(Op::Close),
        2 => (c.clone(), 1u64..40).prop_map(|(c, n)| Op::IssueClone(c, n)),
        1 => c.clone().prop_map(Op::Crash),
        1 => (c.clone(), 1u64..6000).prop_map(|(c, d)| Op::Freeze(c, d)),
        1 => (prop::option::of(c), -300i64..300).prop_map(|(c, by)| Op::Step(c, by * 100)),
        1 => (0u64..10_000).prop_map(Op::Restart),
    ]
}

struct Generator {
    issuer: Issuer,
    cell: Arc<HeldSlotCell>,
    lease: SlotLease,
    last: Option<u64>,
}

struct Client {
    clock: VirtualClock,
    skew: i64,
    frozen_until: u64,
    /// The local time read just before the last freeze.
    stale_now: Option<Instant>,
    generator: Option<Generator>,
    clone: Option<Generator>,
}

struct World {
    stamper: Stamper,
    limit: u32,
    tolerance: Duration,
    margin: Duration,
    max_lead: Duration,
    table: SlotTable,
    fence: u64,
    true_ms: u64,
    store_skew: i64,
    clients: Vec<Client>,
    /// Every run of IDs issued, per node: its first ID, its last and who issued it.
    issued: HashMap<u32, BTreeMap<u64, (u64, String)>>,
}

impl World {
    fn new(case: &Case) -> World {
        let ms = Duration::from_millis;
        World {
            stamper: if case.stamper_is_store {
                Stamper::Store
            } else {
                Stamper::Caller
            },
            tolerance: ms(case.tolerance_ms),
            margin: ms(case.margin_ms),
            max_lead: ms(case.max_lead_ms),
            limit: case.limit,
            table: SlotTable::new(0),
            fence: 0,
            true_ms: 0,
            store_skew: 0,
            clients: case
                .skews
                .iter()
                .enumerate()
                .map(|(i, &skew)| {
                    let clock = VirtualClock::new();
                    // Every process's monotonic clock has its own origin.
                    clock.jump(Duration::from_millis(97 * i as u64));
                    clock.set_wall_offset(skew);
                    Client {
                        clock,
                        skew,
                        frozen_until: 0,
                        stale_now: None,
                        generator: None,
                        clone: None,
                    }
                })
                .collect(),
            issued: HashMap::new(),
        }
    }

    fn spec(&self) -> NamespaceSpec {
        NamespaceSpec {
            limit: self.limit,
            tolerance: self.tolerance,
            offset: 0,
            layout: LAYOUT,
        }
    }

    /// The time a slot change is stamped with, for a change asked by `client`.
    fn stamp(&self, client: usize) -> u64 {
        let skew = match self.stamper {
            Stamper::Store => self.store_skew,
            Stamper::Caller => self.clients[client].skew,
        };
        (VIRTUAL_UNIX_ORIGIN_MS + self.true_ms).saturating_add_signed(skew)
    }

    fn advance(&mut self, ms: u64) {
        self.true_ms += ms;
        for c in &self.clients {
            c.clock.jump(Duration::from_millis(ms));
        }
    }

    fn advance_to_deadline(&mut self, c: usize, before_ms: u64) {
        let client = &self.clients[c];
        let Some(deadline) = client
            .generator
            .as_ref()
            .and_then(|g| g.cell.held.deadline())
        else {
            return;
        };
        let left = deadline.saturating_since(client.clock.now());
        let ms = u64::try_from(left.as_millis()).expect("a ttl's worth of ms");
        if ms > before_ms {
            self.advance(ms - before_ms);
        }
    }

    fn awake(&self, c: usize) -> bool {
        self.clients[c].frozen_until <= self.true_ms
    }

    fn open(&mut self, c: usize, delay: u64) -> Result<(), TestCaseError> {
        if !self.awake(c) || self.clients[c].generator.is_some() {
            return Ok(());
        }
        let owner = fresh_owner(&format!("client-{c}")).expect("an owner");
        let sent = self.clients[c].clock.now();
        let req = SlotRequest {
            namespace: "ids".into(),
            owner,
            spec: self.spec(),
            ttl: TTL,
            preferred: None,
        };
        let stamp = self.stamp(c);
        let fence = &mut self.fence;
        let answer = self.table.acquire(&req, stamp, || {
            *fence += 1;
            Ok(*fence)
        });
        let Ok(AcquireResult::Leased(lease)) = answer else {
            return Ok(());
        };
        self.advance(delay);
        let client = &self.clients[c];
        let clock = Clock::from(client.clock.clone());
        let held = HeldState::new(
            clock,
            Some((sent + TTL - self.margin, LossReason::Expired)),
            None,
        );
        let cell = Arc::new(HeldSlotCell::new(
            lease.clone(),
            TTL,
            client.clock.now(),
            held,
        ));
        let issuer = Issuer::new(
            LAYOUT,
            lease.node(),
            self.max_lead,
            cell.clone(),
            lease.floor(),
        );
        self.clients[c].generator = Some(Generator {
            issuer,
            cell,
            lease,
            last: None,
        });
        Ok(())
    }

    fn renew(&mut self, c: usize) {
        if !self.awake(c) {
            return;
        }
        let stamp = self.stamp(c);
        let sent = self.clients[c].clock.now();
        let Some(g) = self.clients[c].generator.as_mut() else {
            return;
        };
        match self.table.renew(&g.lease, TTL, stamp) {
            Ok(Some(lease)) if !g.cell.held.lost_at(sent) => {
                g.cell.renewed(lease.clone(), TTL, sent);
                g.cell
                    .held
                    .set_deadline(Some(sent + TTL - self.margin), LossReason::Expired);
                g.lease = lease;
            }
            _ => g.cell.held.mark_lost(LossReason::Unknown),
        }
    }

    fn issue(&mut self, c: usize, n: u64, how: &str) -> Result<(), TestCaseError> {
        if !self.awake(c) {
            return Ok(());
        }
        let client = &mut self.clients[c];
        let now = match how {
            "stale" => match client.stale_now.take() {
                Some(then) => then,
                None => return Ok(()),
            },
            _ => client.clock.now(),
        };
        let g = match how {
            "clone" => client.clone.as_mut(),
            _ => client.generator.as_mut(),
        };
        let Some(g) = g else {
            return Ok(());
        };
        let Ok(issued) = g.issuer.issue(now, n) else {
            return Ok(());
        };
        let mut ids = vec![0; usize::try_from(issued.count).unwrap()];
        g.issuer.write(issued, &mut ids);
        for &id in &ids {
            if let Some(last) = g.last {
                prop_assert!(id > last, "IDGEN-03: {id} after {last}");
            }
            g.last = Some(id);
        }
        // One issue is a run of consecutive positions of one node: kept and
        // compared as its first and last ID, since the search replays
        // thousands of histories of thousands of IDs.
        let (first, last) = (ids[0], ids[ids.len() - 1]);
        let (node, last_node) = (LAYOUT.parts(first).node, LAYOUT.parts(last).node);
        prop_assert_eq!(node, last_node, "one issue, one node");
        let runs = self.issued.entry(node).or_default();
        if let Some((&start, (end, first_by))) = runs.range(..=last).next_back() {
            if *end >= first {
                let id = start.max(first);
                return Err(TestCaseError::fail(format!(
                    "IDGEN-01: {id} ({:?}) issued twice: first by {first_by}, again by client \
                     {c} ({how}) on {:?} at true ms {}",
                    LAYOUT.parts(id),
                    g.lease,
                    self.true_ms
                )));
            }
        }
        let by = format!(
            "client {c} ({how}) on {:?} at true ms {}",
            g.lease, self.true_ms
        );
        runs.insert(first, (last, by));
        Ok(())
    }

    fn close(&mut self, c: usize) {
        if !self.awake(c) {
            return;
        }
        let stamp = self.stamp(c);
        let Some(g) = self.clients[c].generator.take() else {
            return;
        };
        let last = g.issuer.seal();
        self.table.release(&g.lease, last, stamp);
        self.clients[c].clone = Some(g);
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Advance(ms) => self.advance(ms),
            Op::AdvanceToDeadline(c, before) => self.advance_to_deadline(c, before),
            Op::Open(c, delay) => self.open(c, delay)?,
            Op::Renew(c) => self.renew(c),
            Op::Issue(c, n) => self.issue(c, n, "now")?,
            Op::IssueStale(c, n) => self.issue(c, n, "stale")?,
            Op::IssueClone(c, n) => self.issue(c, n, "clone")?,
            Op::Close(c) => self.close(c),
            Op::Crash(c) => {
                self.clients[c].generator = None;
                self.clients[c].clone = None;
            }
            Op::Freeze(c, ms) => {
                if self.awake(c) {
                    let client = &mut self.clients[c];
                    client.stale_now = Some(client.clock.now());
                    client.frozen_until = self.true_ms + ms;
                }
            }
            Op::Step(None, by) => self.store_skew += by,
            Op::Step(Some(c), by) => {
                let client = &mut self.clients[c];
                client.skew += by;
                client.clock.set_wall_offset(client.skew);
            }
            Op::Restart(headroom) => {
                if let Stamper::Store = self.stamper {
                    // The journal: a ceiling at or above every ceiling given.
                    let base = self.table.max_ceiling() + headroom;
                    self.table = SlotTable::new(base);
                    self.table.restore_namespace("ids", self.spec());
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Case {
    stamper_is_store: bool,
    /// Slots in the namespace: with fewer slots than clients, slots change
    /// hands more often.
    limit: u32,
    tolerance_ms: u64,
    margin_ms: u64,
    max_lead_ms: u64,
    skews: Vec<i64>,
    ops: Vec<Op>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (any::<bool>(), 1u32..=4),
        (0u64..15, 0u64..4, 0u64..25),
        prop::collection::vec(-600i64..600, CLIENTS),
        prop::collection::vec(op(), 1..120),
    )
        .prop_map(
            |((stamper_is_store, limit), (tolerance, margin, lead), skews, ops)| Case {
                stamper_is_store,
                limit,
                tolerance_ms: tolerance * 100,
                margin_ms: margin * 100,
                max_lead_ms: lead * 100,
                skews: skews.into_iter().map(|s| s * 100).collect(),
                ops,
            },
        )
}

fn replay(case: &Case) -> Result<(), TestCaseError> {
    let mut world = World::new(case);
    for op in &case.ops {
        world.step(op)?;
    }
    Ok(())
}

/// Searches `cases` random histories with `mutant` on; the first repeat found.
fn search(mutant: Option<Mutant>, cases: u32) -> Result<(), String> {
    mutants::set(mutant);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        // A cheap generator: ChaCha, unoptimised in test builds, took most
        // of the search's time.
        rng_algorithm: RngAlgorithm::XorShift,
        ..Config::default()
    });
    let outcome = runner.run(&case(), |case| replay(&case));
    mutants::set(None);
    outcome.map_err(|e| e.to_string())
}

/// How many histories the search for a mutant may replay before it fails
/// the test: it stops at the first repeat. Over 100 seeds the slowest
/// mutant to find, "issue at ceiling + 1", took 1,763 histories on average
/// and 6,362 at most, so a search of this many misses it with a chance
/// near e^-22.
const MUTANT_BUDGET: u32 = 40_000;

// IDGEN-01: no history repeats an ID.
#[test]
fn idgen_01_no_history_of_skews_freezes_crashes_and_restarts_repeats_an_id() {
    if let Err(e) = search(None, 10_000) {
        panic!("{e}");
    }
}

// IDGEN-01, IDGEN-02: the search catches each rule broken on purpose.
#[test]
fn idgen_01_the_model_catches_every_mutant() {
    for mutant in [
        Mutant::IssueAtFloor,
        Mutant::IssueAtCeilingPlusOne,
        Mutant::RecordAfterSealing,
        Mutant::ReuseOwnerInstance,
    ] {
        let found = search(Some(mutant), MUTANT_BUDGET);
        assert!(found.is_err(), "{mutant:?} was not caught");
        eprintln!(
            "{mutant:?}: {}",
            found.unwrap_err().lines().next().unwrap_or("")
        );
    }
}
