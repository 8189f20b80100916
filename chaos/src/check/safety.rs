//! The safety rules: one holder, fences that grow, one lease per request,
//! no renewal or belief past the store's letting go, fenced writes.

use std::collections::HashMap;

use super::model::{LeaseRec, Run, WriteRec};
use super::{Report, Rule, Violation};

fn who(lease: &LeaseRec) -> String {
    format!(
        "{} (pid {}) fence {}",
        lease.process, lease.pid, lease.fence
    )
}

fn violation(report: &mut Report, rule: Rule, at: u64, detail: String) {
    report.violations.push(Violation { rule, at, detail });
}

/// LOCK-01: no two beliefs in one key at one instant, but for a frozen
/// older holder or one granted before the store restarted.
pub fn two_holders(run: &Run, report: &mut Report) {
    let mut by_key: HashMap<&str, Vec<(u64, u64, &LeaseRec)>> = HashMap::new();
    for lease in run.leases.values() {
        if let Some(start) = lease.start {
            let end = run.belief_end(lease).max(start);
            by_key
                .entry(&lease.key)
                .or_default()
                .push((start, end, lease));
        }
    }
    for (key, mut beliefs) in by_key {
        beliefs.sort_by_key(|b| (b.0, b.1));
        let mut active: Vec<(u64, u64, &LeaseRec)> = Vec::new();
        for b in beliefs {
            active.retain(|a| a.1 > b.0);
            for a in &active {
                let (older, newer) = if a.2.fence < b.2.fence {
                    (a, &b)
                } else {
                    (&b, a)
                };
                let overlap_end = a.1.min(b.1);
                if run.frozen_within(older.2.pid, older.0, overlap_end) {
                    *report.excused.entry("frozen").or_default() += 1;
                } else if run
                    .store_kills
                    .iter()
                    .any(|&k| k > older.2.granted && k <= newer.2.granted)
                {
                    *report.excused.entry("store restarted").or_default() += 1;
                } else {
                    violation(
                        report,
                        Rule::TwoHolders,
                        b.0,
                        format!(
                            "key {key}: {} believed from {} to {}, {} from {} to {}",
                            who(a.2),
                            a.0,
                            a.1,
                            who(b.2),
                            b.0,
                            b.1
                        ),
                    );
                }
            }
            active.push(b);
        }
    }
}

/// LOCK-02: a grant asked for after another grant arrived has a larger fence.
pub fn fences(run: &Run, report: &mut Report) {
    let mut arrived: Vec<&LeaseRec> = run.leases.values().collect();
    arrived.sort_by_key(|l| l.granted);
    let mut asked: Vec<(u64, &LeaseRec)> = run
        .leases
        .values()
        .filter_map(|l| run.requests.get(&l.request).map(|r| (r.first_sent, l)))
        .collect();
    asked.sort_by_key(|a| a.0);
    let mut next = 0;
    let mut largest: Option<&LeaseRec> = None;
    for (sent, lease) in asked {
        while next < arrived.len() && arrived[next].granted < sent {
            if largest.is_none_or(|l| arrived[next].fence > l.fence) {
                largest = Some(arrived[next]);
            }
            next += 1;
        }
        if let Some(before) = largest {
            if lease.fence <= before.fence {
                violation(
                    report,
                    Rule::FenceDidNotGrow,
                    lease.granted,
                    format!(
                        "key {}: {} asked at {sent}, after {} arrived at {} (key {})",
                        lease.key,
                        who(lease),
                        who(before),
                        before.granted,
                        before.key
                    ),
                );
            }
        }
    }
}

/// LOCK-03: one request, one lease.
pub fn request_ids(run: &Run, report: &mut Report) {
    for (id, request) in &run.requests {
        if request.grants.len() > 1 {
            let fences: Vec<String> = request
                .grants
                .iter()
                .filter_map(|(l, _)| run.leases.get(l).map(|l| l.fence.to_string()))
                .collect();
            violation(
                report,
                Rule::RequestTwoLeases,
                request.grants[1].1,
                format!(
                    "request {id} on key {} answered {} leases, fences {}",
                    request.key,
                    request.grants.len(),
                    fences.join(", ")
                ),
            );
        }
    }
}

/// When the store must have let `lease` go: a ttl after the last contact
/// that kept it (its grant, its renewals, its group's renewals and grants),
/// the chain ending at the first contact sent later than that or after the
/// store was killed. Reports a renewal of the lease confirmed past the end,
/// or after the key was granted to a larger fence (`superseded`) and no
/// grant into the lease's group came since.
fn let_go_of(
    run: &Run,
    lease: &LeaseRec,
    superseded: Option<&LeaseRec>,
    report: &mut Report,
) -> u64 {
    let mut contacts: Vec<(u64, u64, bool)> = lease
        .renewals
        .iter()
        .map(|&(sent, confirmed)| (sent, confirmed, true))
        .collect();
    if let Some(group) = lease.group.as_ref().and_then(|g| run.groups.get(g)) {
        for c in group {
            let own = c.granted.as_deref() == Some(&lease.lease);
            if !own && c.confirmed > lease.granted {
                contacts.push((c.sent, c.confirmed, c.granted.is_none()));
            }
        }
    }
    contacts.sort_by_key(|c| c.0);
    let mut bound = lease.granted + lease.ttl;
    let mut last = lease.granted;
    let mut remade = lease.granted;
    let release = lease.release.unwrap_or(u64::MAX);
    for (sent, confirmed, renewal) in contacts {
        if sent > release {
            break;
        }
        if let Some(next) = superseded.filter(|n| renewal && n.granted > remade && n.granted < sent)
        {
            violation(
                report,
                Rule::RenewedAfterLetGo,
                confirmed,
                format!(
                    "key {}: {} renewed, sent at {sent}, confirmed at {confirmed}; the key was granted to {} at {}",
                    lease.key,
                    who(lease),
                    who(next),
                    next.granted
                ),
            );
            break;
        }
        if !renewal {
            remade = sent;
        }
        let killed = run.store_kills.iter().find(|&&k| k > last && k < sent);
        if sent > bound || killed.is_some() {
            if renewal {
                let why = match killed {
                    Some(k) => format!("the store was killed at {k}"),
                    None => format!("the store let it go by {bound}"),
                };
                violation(
                    report,
                    Rule::RenewedAfterLetGo,
                    confirmed,
                    format!(
                        "key {}: {} renewed, sent at {sent}, confirmed at {confirmed}; {why}",
                        lease.key,
                        who(lease)
                    ),
                );
            }
            break;
        }
        bound = bound.max(confirmed + lease.ttl);
        last = confirmed;
    }
    bound
}

/// LOCK-05, LOCK-04, LOCK-10: nothing renews, believes or succeeds past the
/// store's letting go.
pub fn let_go(run: &Run, report: &mut Report) {
    let mut by_key: HashMap<&str, Vec<&LeaseRec>> = HashMap::new();
    for lease in run.leases.values() {
        by_key.entry(&lease.key).or_default().push(lease);
    }
    for list in by_key.values_mut() {
        list.sort_by_key(|l| l.granted);
    }
    for lease in run.leases.values() {
        if lease.ttl == 0 {
            continue;
        }
        let superseded = by_key[lease.key.as_str()]
            .iter()
            .find(|n| n.granted > lease.granted && n.fence > lease.fence)
            .copied();
        let bound = let_go_of(run, lease, superseded, report);
        let Some(start) = lease.start else { continue };
        let end = run.belief_end(lease);
        let frozen = run.frozen_within(lease.pid, start, end);
        if end > bound && !frozen {
            violation(
                report,
                Rule::HeldPastLetGo,
                bound,
                format!(
                    "key {}: {} believed until {end}, the store let it go by {bound}",
                    lease.key,
                    who(lease)
                ),
            );
        }
        let Some((at, outcome)) = &lease.outcome else {
            continue;
        };
        if outcome != "ok" {
            continue;
        }
        let why = match (&lease.lost, lease.end) {
            (Some((t, reason)), _) if t < at => {
                Some(format!("its holder saw it lost ({reason}) at {t}"))
            }
            (None, Some(e)) if e > bound => Some(format!(
                "it ended at {e}, after the store let it go by {bound}"
            )),
            _ => None,
        };
        if let Some(why) = why {
            violation(
                report,
                Rule::HoldSucceededThoughLost,
                *at,
                format!("key {}: {} returned ok; {why}", lease.key, who(lease)),
            );
        }
    }
}

/// Fenced writes: on each key, every write that landed carries a fence
/// larger than every write that landed before it (file register: in the
/// order recorded, under its lock; PostgreSQL: in the row's order), and the
/// table's final rows hold the last write that landed and refused none that
/// should have.
pub fn writes(run: &Run, report: &mut Report) {
    let mut landed: Vec<&WriteRec> = run
        .writes
        .iter()
        .filter(|w| w.outcome == "landed")
        .collect();
    landed.sort_by_key(|w| (w.seq.is_some(), w.seq.unwrap_or(w.ns)));
    let mut last: HashMap<(&str, bool), &WriteRec> = HashMap::new();
    for w in landed {
        if let Some(before) = last.get(&(w.key.as_str(), w.seq.is_some())) {
            if w.fence <= before.fence {
                violation(
                    report,
                    Rule::StaleWriteLanded,
                    w.ns,
                    format!(
                        "key {}: fence {} landed after fence {}",
                        w.key, w.fence, before.fence
                    ),
                );
                continue;
            }
        }
        last.insert((w.key.as_str(), w.seq.is_some()), w);
    }
    for row in run.writes.iter().filter(|w| w.outcome == "final") {
        let newest = last.get(&(row.key.as_str(), true));
        let wrong = match newest {
            Some(w) if w.seq == row.seq => w.fence != row.fence,
            Some(w) => w.fence > row.fence,
            None => false,
        } || run.writes.iter().any(|w| {
            w.key == row.key && w.seq.is_some() && w.outcome == "refused" && w.fence > row.fence
        });
        if wrong {
            violation(
                report,
                Rule::StaleWriteLanded,
                row.ns,
                format!(
                    "key {}: the table ends with fence {} after {} writes, the histories say otherwise",
                    row.key,
                    row.fence,
                    row.seq.unwrap_or(0)
                ),
            );
        }
    }
}
