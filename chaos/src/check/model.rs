//! The histories put together: every lease with what its holder and the
//! store said of it, every request, renewal group and fault, on the one
//! monotonic clock.

use std::collections::{BTreeMap, HashMap};

use crate::history::{Event, Kind};

/// One lease as the histories tell it.
#[derive(Debug, Clone)]
pub struct LeaseRec {
    /// Its holder's process id.
    pub pid: u32,
    /// Its holder's process name.
    pub process: String,
    /// The key.
    pub key: String,
    /// The lease id.
    pub lease: String,
    /// The fence.
    pub fence: u64,
    /// The request that was granted.
    pub request: String,
    /// The renewal group it joined.
    pub group: Option<String>,
    /// Its ttl in nanoseconds.
    pub ttl: u64,
    /// When the grant arrived.
    pub granted: u64,
    /// When the held function started and ended.
    pub start: Option<u64>,
    /// When the held function ended.
    pub end: Option<u64>,
    /// When the holder learnt of its loss, and why.
    pub lost: Option<(u64, String)>,
    /// When the hold returned, and how.
    pub outcome: Option<(u64, String)>,
    /// When the release was sent.
    pub release: Option<u64>,
    /// Renewals of this lease by its id: (sent, confirmed).
    pub renewals: Vec<(u64, u64)>,
}

/// One request as the histories tell it.
#[derive(Debug, Clone)]
pub struct RequestRec {
    /// Its holder's process id.
    pub pid: u32,
    /// The key.
    pub key: String,
    /// When it was first sent (a retry sends it again with the same id).
    pub first_sent: u64,
    /// Whether it waits in line.
    pub queue: bool,
    /// The ttl in nanoseconds.
    pub ttl: u64,
    /// When the store first answered that it waits in line.
    pub queued: Option<u64>,
    /// The leases it was answered with, and when each first arrived.
    pub grants: Vec<(String, u64)>,
    /// When it was given up, if it was.
    pub given_up: Option<u64>,
}

/// Something that kept a renewal group at the store: a renewal (by group,
/// or by the id of a lease in it) or a grant into it.
#[derive(Debug, Clone)]
pub struct GroupContact {
    /// When it was sent.
    pub sent: u64,
    /// When it was confirmed.
    pub confirmed: u64,
    /// The lease granted, for a grant into the group; `None` for a renewal by group.
    pub granted: Option<String>,
}

/// A fenced write, or a row of the PostgreSQL table at the end (`final`).
#[derive(Debug, Clone)]
pub struct WriteRec {
    /// When it was recorded.
    pub ns: u64,
    /// The key.
    pub key: String,
    /// The fence written.
    pub fence: u64,
    /// `landed`, `refused` or `final`.
    pub outcome: String,
    /// For PostgreSQL: the row's count of landed writes after it; `None`
    /// for the file register.
    pub seq: Option<u64>,
}

/// One call of a holder that ended in an outcome: from the holder's
/// previous outcome (it makes one call at a time) to this one.
#[derive(Debug, Clone)]
pub struct CallRec {
    /// Its holder's process id.
    pub pid: u32,
    /// Its holder's process name.
    pub process: String,
    /// The key.
    pub key: String,
    /// When the call may have started: the holder's previous outcome, or its first event.
    pub from: u64,
    /// When it returned.
    pub to: u64,
    /// How: `ok`, `not_held`, or an error code as the holder's language writes it.
    pub outcome: String,
}

/// A time a fault disturbed the run, from its start to its end.
#[derive(Debug, Clone, Copy)]
pub struct Disturbance {
    /// When it started.
    pub from: u64,
    /// When it ended (the end of the run if it never did).
    pub to: u64,
}

/// Everything the checker looks at.
#[derive(Debug, Default)]
pub struct Run {
    /// Leases by id.
    pub leases: HashMap<String, LeaseRec>,
    /// Requests by id.
    pub requests: HashMap<String, RequestRec>,
    /// The contacts of each renewal group, by group id.
    pub groups: HashMap<String, Vec<GroupContact>>,
    /// Fenced writes, landed and refused, and the table's final rows.
    pub writes: Vec<WriteRec>,
    /// When each process was frozen: (from, to).
    pub frozen: HashMap<u32, Vec<(u64, u64)>>,
    /// When each holder process was killed (or, for one that exited on its
    /// own, when it last recorded anything).
    pub killed: HashMap<u32, u64>,
    /// When each process last recorded anything.
    pub last_seen: HashMap<u32, u64>,
    /// When the store (or a member of it) was killed.
    pub store_kills: Vec<u64>,
    /// Every fault's time span.
    pub disturbances: Vec<Disturbance>,
    /// The spans when the holders could not reach the store as a whole:
    /// every link black-holed, refusing or delayed, the server store killed.
    /// The death, freeze or cut-off of one etcd member is not among them.
    pub store_unreachable: Vec<Disturbance>,
    /// Every call that ended in an outcome.
    pub calls: Vec<CallRec>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<String, u64>,
    /// Requests sent, renewals confirmed, releases sent.
    pub counts: Counts,
    /// The last instant of the run.
    pub end: u64,
}

/// How much the run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Hold requests sent (retries included).
    pub requests: u64,
    /// Grants received.
    pub grants: u64,
    /// Renewals confirmed.
    pub renewals: u64,
    /// Releases sent.
    pub releases: u64,
    /// Held functions run.
    pub functions: u64,
    /// Fenced writes that landed.
    pub writes_landed: u64,
    /// Fenced writes refused.
    pub writes_refused: u64,
}

impl Counts {
    /// Operations on the store: requests, renewals and releases.
    pub fn operations(&self) -> u64 {
        self.requests + self.renewals + self.releases
    }
}

/// The faults that last until another fault event ends them.
const STARTS: [&str; 11] = [
    "freeze",
    "delay",
    "blackhole",
    "refuse",
    "kill_server",
    "kill_member",
    "kill_leader",
    "kill_holder",
    "freeze_member",
    "freeze_leader",
    "blackhole_member",
];

/// The kind of a fault that lasts until another fault event ends it, and
/// the name of that ending event.
fn ending(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "freeze" => "thaw",
        "delay" => "delay_end",
        "blackhole" => "blackhole_end",
        "kill_server" => "restart_server",
        "kill_member" | "kill_leader" => "restart_member",
        "freeze_member" | "freeze_leader" => "thaw_member",
        "blackhole_member" => "blackhole_member_end",
        "kill_holder" => "restart_holder",
        "refuse" => "refuse_end",
        _ => return None,
    })
}

/// Whether a fault of this kind leaves the holders without the store as a
/// whole (every proxy at once, or the one server).
fn unreachable_store(kind: &str) -> bool {
    matches!(kind, "delay" | "blackhole" | "refuse" | "kill_server")
}

/// Whether a fault event ends another rather than being one.
fn is_ending(kind: &str) -> bool {
    matches!(
        kind,
        "thaw"
            | "delay_end"
            | "blackhole_end"
            | "refuse_end"
            | "restart_server"
            | "restart_member"
            | "restart_holder"
            | "thaw_member"
            | "blackhole_member_end"
    )
}

impl Run {
    /// Puts the histories together.
    pub fn build(events: &[Event]) -> Run {
        let mut events: Vec<&Event> = events.iter().collect();
        events.sort_by_key(|e| e.ns);
        let mut run = Run {
            end: events.last().map_or(0, |e| e.ns),
            ..Run::default()
        };
        let mut call_from: HashMap<u32, u64> = HashMap::new();
        for e in &events {
            run.last_seen.insert(e.pid, e.ns);
            call_from.entry(e.pid).or_insert(e.ns);
        }
        let mut by_fence: HashMap<(u32, &str, u64), String> = HashMap::new();
        let mut open_faults: HashMap<(String, u32), u64> = HashMap::new();

        for e in &events {
            let key = e.key.as_deref().unwrap_or("");
            match e.kind {
                Kind::Request => {
                    run.counts.requests += 1;
                    let Some(id) = &e.request else { continue };
                    run.requests
                        .entry(id.clone())
                        .or_insert_with(|| RequestRec {
                            pid: e.pid,
                            key: key.to_owned(),
                            first_sent: e.ns,
                            queue: e.queue.unwrap_or(true),
                            ttl: e.ttl_ms.unwrap_or(0) * 1_000_000,
                            grants: Vec::new(),
                            queued: None,
                            given_up: None,
                        });
                }
                Kind::Queued => {
                    if let Some(r) = e.request.as_ref().and_then(|id| run.requests.get_mut(id)) {
                        r.queued.get_or_insert(e.ns);
                    }
                }
                Kind::Granted => run.granted(e, key, &mut by_fence),
                Kind::Renewed => {
                    run.counts.renewals += 1;
                    let sent = e.sent.unwrap_or(e.ns);
                    if let Some(id) = &e.lease {
                        if let Some(lease) = run.leases.get_mut(id) {
                            lease.renewals.push((sent, e.ns));
                            if let Some(g) = lease.group.clone() {
                                run.groups.entry(g).or_default().push(GroupContact {
                                    sent,
                                    confirmed: e.ns,
                                    granted: Some(id.clone()),
                                });
                            }
                        }
                    } else if let Some(g) = &e.group {
                        run.groups.entry(g.clone()).or_default().push(GroupContact {
                            sent,
                            confirmed: e.ns,
                            granted: None,
                        });
                    }
                }
                Kind::Release => {
                    run.counts.releases += 1;
                    if let Some(lease) = e.lease.as_ref().and_then(|id| run.leases.get_mut(id)) {
                        lease.release.get_or_insert(e.ns);
                    }
                }
                Kind::GiveUp => {
                    if let Some(r) = e.request.as_ref().and_then(|id| run.requests.get_mut(id)) {
                        r.given_up.get_or_insert(e.ns);
                    }
                }
                Kind::Start | Kind::End | Kind::Lost | Kind::Outcome => {
                    if e.kind == Kind::Start {
                        run.counts.functions += 1;
                    }
                    if e.kind == Kind::Outcome {
                        let from = call_from.insert(e.pid, e.ns).unwrap_or(e.ns);
                        run.calls.push(CallRec {
                            pid: e.pid,
                            process: e.process.clone(),
                            key: key.to_owned(),
                            from,
                            to: e.ns,
                            outcome: e.reason.clone().unwrap_or_default(),
                        });
                    }
                    let Some(fence) = e.fence else { continue };
                    let Some(id) = by_fence.get(&(e.pid, key, fence)) else {
                        continue;
                    };
                    let lease = run.leases.get_mut(id).expect("indexed leases exist");
                    let why = || e.reason.clone().unwrap_or_default();
                    match e.kind {
                        Kind::Start => drop(lease.start.get_or_insert(e.ns)),
                        Kind::End => drop(lease.end.get_or_insert(e.ns)),
                        Kind::Lost => drop(lease.lost.get_or_insert_with(|| (e.ns, why()))),
                        _ => drop(lease.outcome.get_or_insert_with(|| (e.ns, why()))),
                    }
                }
                Kind::Write => {
                    let outcome = e.reason.clone().unwrap_or_default();
                    match outcome.as_str() {
                        "landed" => run.counts.writes_landed += 1,
                        "refused" => run.counts.writes_refused += 1,
                        _ => {}
                    }
                    run.writes.push(WriteRec {
                        ns: e.ns,
                        key: key.to_owned(),
                        fence: e.fence.unwrap_or(0),
                        outcome,
                        seq: e.seq,
                    });
                }
                Kind::Fault => run.fault(e, &mut open_faults),
            }
        }
        for ((kind, target), from) in open_faults {
            run.disturbances.push(Disturbance { from, to: run.end });
            if unreachable_store(&kind) {
                run.store_unreachable
                    .push(Disturbance { from, to: run.end });
            }
            if kind == "freeze" {
                let to = run.killed.get(&target).copied().unwrap_or(run.end);
                run.frozen.entry(target).or_default().push((from, to));
            }
        }
        run
    }

    fn granted<'a>(
        &mut self,
        e: &'a Event,
        key: &'a str,
        by_fence: &mut HashMap<(u32, &'a str, u64), String>,
    ) {
        self.counts.grants += 1;
        let (Some(id), Some(fence)) = (&e.lease, e.fence) else {
            return;
        };
        let request = e.request.clone().unwrap_or_default();
        let r = self.requests.get_mut(&request);
        let ttl = r.as_ref().map_or(0, |r| r.ttl);
        if let Some(r) = r {
            if !r.grants.iter().any(|(l, _)| l == id) {
                r.grants.push((id.clone(), e.ns));
            }
        }
        if self.leases.contains_key(id) {
            return;
        }
        by_fence.insert((e.pid, key, fence), id.clone());
        if let Some(g) = &e.group {
            self.groups
                .entry(g.clone())
                .or_default()
                .push(GroupContact {
                    sent: e.sent.unwrap_or(e.ns),
                    confirmed: e.ns,
                    granted: Some(id.clone()),
                });
        }
        self.leases.insert(
            id.clone(),
            LeaseRec {
                pid: e.pid,
                process: e.process.clone(),
                key: key.to_owned(),
                lease: id.clone(),
                fence,
                request,
                group: e.group.clone(),
                ttl,
                granted: e.ns,
                start: None,
                end: None,
                lost: None,
                outcome: None,
                release: None,
                renewals: Vec::new(),
            },
        );
    }

    fn fault(&mut self, e: &Event, open: &mut HashMap<(String, u32), u64>) {
        let kind = e.reason.clone().unwrap_or_default();
        let target = e.target.unwrap_or(0);
        if !is_ending(&kind) {
            *self.faults.entry(kind.clone()).or_default() += 1;
        }
        match kind.as_str() {
            "kill_holder" => {
                self.killed.insert(target, e.ns);
                if let Some(from) = open.remove(&("freeze".to_owned(), target)) {
                    self.frozen.entry(target).or_default().push((from, e.ns));
                    self.disturbances.push(Disturbance { from, to: e.ns });
                }
            }
            "kill_server" => self.store_kills.push(e.ns),
            "holder_exit" => {
                let last = self.last_seen.get(&target).copied().unwrap_or(e.ns);
                self.killed.insert(target, last);
            }
            _ => {}
        }
        if ending(&kind).is_some() {
            open.insert((kind, target), e.ns);
            return;
        }
        let started = STARTS
            .into_iter()
            .filter(|k| ending(k) == Some(kind.as_str()))
            .find_map(|k| open.remove(&(k.to_owned(), target)).map(|from| (k, from)));
        if let Some((started, from)) = started {
            self.disturbances.push(Disturbance { from, to: e.ns });
            if unreachable_store(started) {
                self.store_unreachable.push(Disturbance { from, to: e.ns });
            }
            if kind == "thaw" {
                self.frozen.entry(target).or_default().push((from, e.ns));
            }
        } else {
            self.disturbances.push(Disturbance {
                from: e.ns,
                to: e.ns,
            });
        }
    }

    /// Whether process `pid` was frozen at some instant in `[from, to]`.
    pub fn frozen_within(&self, pid: u32, from: u64, to: u64) -> bool {
        self.frozen
            .get(&pid)
            .is_some_and(|spans| spans.iter().any(|&(a, b)| a <= to && b >= from))
    }

    /// Whether the store as a whole was out of the holders' reach at some
    /// instant in `[from, to]`.
    pub fn store_unreachable_within(&self, from: u64, to: u64) -> bool {
        self.store_unreachable
            .iter()
            .any(|d| d.from <= to && d.to >= from)
    }

    /// Whether no fault disturbed the run in `[from, to]`.
    pub fn quiet(&self, from: u64, to: u64) -> bool {
        !self
            .disturbances
            .iter()
            .any(|d| d.from <= to && d.to >= from)
    }

    /// When `lease`'s holder stopped believing it held the key: the first
    /// of its loss, the end of its function, its release, its process's death.
    pub fn belief_end(&self, lease: &LeaseRec) -> u64 {
        [
            lease.lost.as_ref().map(|l| l.0),
            lease.end,
            lease.release,
            self.killed.get(&lease.pid).copied(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(self.end)
    }
}
