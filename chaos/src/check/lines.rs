//! The rules of lines: first come, first served, and no waiter left
//! waiting for a key nobody holds.

use std::collections::HashMap;

use super::model::{RequestRec, Run};
use super::{Options, Report, Rule, Violation};

/// A waiting request that was granted: (first sent, granted, request id).
type Granted<'a> = (u64, u64, &'a str, &'a RequestRec);

/// LOCK-01: a waiter the store answered "in line" before another request
/// on its key was sent is granted before that one, while the run is quiet.
pub fn fifo(run: &Run, options: &Options, report: &mut Report) {
    let mut by_key: HashMap<&str, Vec<Granted>> = HashMap::new();
    for (id, r) in &run.requests {
        if let (true, Some(&(_, granted))) = (r.queue, r.grants.first()) {
            by_key
                .entry(&r.key)
                .or_default()
                .push((r.first_sent, granted, id, r));
        }
    }
    for (key, mut requests) in by_key {
        requests.sort_by_key(|r| r.0);
        let mut waiting: Vec<Granted> = Vec::new();
        for b in requests {
            waiting.retain(|a| a.1 > b.0);
            for a in &waiting {
                if a.3.queued.is_some_and(|q| q < b.0)
                    && b.1 < a.1
                    && run.quiet(a.0.saturating_sub(options.settle_ns), a.1)
                {
                    report.violations.push(Violation {
                        rule: Rule::NotFifo,
                        at: b.1,
                        detail: format!(
                            "key {key}: request {} (pid {}) in line at {} granted at {}, after request {} (pid {}) sent at {} granted at {}",
                            a.2, a.3.pid, a.3.queued.unwrap_or(0), a.1, b.2, b.3.pid, b.0, b.1
                        ),
                    });
                }
            }
            waiting.push(b);
        }
    }
}

/// The spans in which some lease of each key was held at the store, as
/// far as its holder knew: from its grant to its release (or the end of
/// its holder's belief), merged.
fn held_spans(run: &Run) -> HashMap<&str, Vec<(u64, u64)>> {
    let mut spans: HashMap<&str, Vec<(u64, u64)>> = HashMap::new();
    for lease in run.leases.values() {
        let to = lease.release.unwrap_or_else(|| run.belief_end(lease));
        spans
            .entry(&lease.key)
            .or_default()
            .push((lease.granted, to.max(lease.granted)));
    }
    for list in spans.values_mut() {
        list.sort();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(list.len());
        for &(a, b) in list.iter() {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        *list = merged;
    }
    spans
}

/// LOCK-11: a waiter is granted a key nobody holds within the bound, while
/// the run is quiet and the waiter's process runs.
pub fn starvation(run: &Run, options: &Options, report: &mut Report) {
    let spans = held_spans(run);
    let empty = Vec::new();
    for (id, r) in &run.requests {
        if !r.queue {
            continue;
        }
        let until = [
            r.grants.first().map(|g| g.1),
            r.given_up,
            run.killed.get(&r.pid).copied(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(run.end);
        let held = spans.get(r.key.as_str()).unwrap_or(&empty);
        let mut free_from = r.first_sent;
        let mut gaps = Vec::new();
        for &(a, b) in held {
            if b <= free_from {
                continue;
            }
            if a >= until {
                break;
            }
            if a > free_from {
                gaps.push((free_from, a));
            }
            free_from = free_from.max(b);
        }
        if free_from < until {
            gaps.push((free_from, until));
        }
        for (a, b) in gaps {
            if b - a > options.starvation_ns
                && run.quiet(a.saturating_sub(options.settle_ns), b)
                && !run.frozen_within(r.pid, r.first_sent, b)
            {
                report.violations.push(Violation {
                    rule: Rule::Starved,
                    at: b,
                    detail: format!(
                        "key {}: request {id} (pid {}) waited from {} while nobody held the key from {a} to {b}",
                        r.key, r.pid, r.first_sent
                    ),
                });
            }
        }
    }
}
