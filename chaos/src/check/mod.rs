//! The checker: reads the histories of a run and finds every broken promise
//! (`docs/contracts.md`) they show.
//!
//! - [`Rule::TwoHolders`] (LOCK-01, ERR-04): two holders believed they held
//!   a key at the same instant. A holder believes from its function's start
//!   to the first of its loss, its function's end, its release and its
//!   death. Excused, and counted apart, when the older holder's process was
//!   frozen meanwhile (its late writes are the fences' to stop) or the store
//!   restarted after granting it (LOCK-15: it learns at its next renewal).
//! - [`Rule::FenceDidNotGrow`] (LOCK-02): a grant whose request was sent
//!   after another grant arrived carries a fence no larger than that one.
//! - [`Rule::RequestTwoLeases`] (LOCK-03): a request id answered with two leases.
//! - [`Rule::RenewedAfterLetGo`] (LOCK-05, LOCK-15): a renewal confirmed
//!   although it was sent after the store must have let the lease go (a ttl
//!   after the last contact that kept it, or after the store was killed).
//! - [`Rule::HeldPastLetGo`] (LOCK-04): a holder (not frozen) still believed
//!   it held the key after the store must have let it go.
//! - [`Rule::HoldSucceededThoughLost`] (LOCK-10): a hold returned `ok` for a
//!   lease its holder saw lost, or that the store let go before it ended.
//! - [`Rule::Starved`] (LOCK-01, LOCK-11): a waiter was not granted a key
//!   that nobody held for longer than a bound, while no fault disturbed the run.
//! - [`Rule::NotFifo`] (LOCK-01): a waiter the store had answered "in
//!   line" before another request was sent was granted after that one,
//!   while no fault disturbed the run. (The send times alone do not order
//!   arrivals: an etcd hold is a lease grant and a transaction.)
//! - [`Rule::StaleWriteLanded`]: a fenced write landed with a fence no
//!   larger than one that landed before it on the same key.
//! - [`Rule::FailedWithQuorum`] (DIST-09; on etcd only, with
//!   [`Options::quorum`]): a hold failed `Unavailable`, `Timeout` or `Lost`
//!   although the store as a whole was within reach for the whole call
//!   (only single members dead, frozen or cut off) and its holder was not
//!   frozen.

mod availability;
mod lines;
mod model;
mod safety;

use std::collections::BTreeMap;
use std::fmt;

pub use model::{Counts, Run};

use crate::history::Event;

/// A broken promise's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// Two holders of one key at once.
    TwoHolders,
    /// A fence no larger than one granted before.
    FenceDidNotGrow,
    /// One request id, two leases.
    RequestTwoLeases,
    /// A renewal confirmed after the store let the lease go.
    RenewedAfterLetGo,
    /// A holder believing past the store's letting go.
    HeldPastLetGo,
    /// `hold` succeeded though its lease was lost.
    HoldSucceededThoughLost,
    /// A waiter not granted a free key within the bound.
    Starved,
    /// A line not first come, first served.
    NotFifo,
    /// A write with a stale fence landed.
    StaleWriteLanded,
    /// A call failed although a quorum was within reach.
    FailedWithQuorum,
}

impl Rule {
    /// Every rule, in the order reports list them.
    pub const ALL: [Rule; 10] = [
        Rule::TwoHolders,
        Rule::FenceDidNotGrow,
        Rule::RequestTwoLeases,
        Rule::RenewedAfterLetGo,
        Rule::HeldPastLetGo,
        Rule::HoldSucceededThoughLost,
        Rule::Starved,
        Rule::NotFifo,
        Rule::StaleWriteLanded,
        Rule::FailedWithQuorum,
    ];
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::TwoHolders => "two holders at once (LOCK-01)",
            Rule::FenceDidNotGrow => "fence did not grow in grant order (LOCK-02)",
            Rule::RequestTwoLeases => "request id answered with two leases (LOCK-03)",
            Rule::RenewedAfterLetGo => "renewal succeeded after the store let go (LOCK-05)",
            Rule::HeldPastLetGo => "holder believed past the store's letting go (LOCK-04)",
            Rule::HoldSucceededThoughLost => "hold succeeded though its lease was lost (LOCK-10)",
            Rule::Starved => "waiter not granted a free key within the bound (LOCK-11)",
            Rule::NotFifo => "line not first come, first served (LOCK-01)",
            Rule::StaleWriteLanded => "a write with a stale fence landed",
            Rule::FailedWithQuorum => "a call failed although a quorum was reachable (DIST-09)",
        })
    }
}

/// One broken promise, with what shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which promise.
    pub rule: Rule,
    /// When (`CLOCK_MONOTONIC` ns).
    pub at: u64,
    /// The events that show it, in words.
    pub detail: String,
}

/// The checker's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How long a waiter may go ungranted while its key is free and the run quiet.
    pub starvation_ns: u64,
    /// How long after a fault the run counts as disturbed still.
    pub settle_ns: u64,
    /// Whether the store keeps a quorum (etcd), so that a single member's
    /// fault must fail no call ([`Rule::FailedWithQuorum`]).
    pub quorum: bool,
    /// Whether a killed store keeps its leases when it starts again
    /// (PostgreSQL): its death then excuses no overlap and no renewal.
    pub kills_keep_leases: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            starvation_ns: 2_000_000_000,
            settle_ns: 3_000_000_000,
            quorum: false,
            kills_keep_leases: false,
        }
    }
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Report {
    /// How much the run did.
    pub counts: Counts,
    /// Faults injected, by kind.
    pub faults: BTreeMap<String, u64>,
    /// Overlaps the rules excuse, by why (`frozen`, `store restarted`).
    pub excused: BTreeMap<&'static str, u64>,
    /// Every violation found.
    pub violations: Vec<Violation>,
}

impl Report {
    /// The violations of `rule`.
    pub fn of(&self, rule: Rule) -> usize {
        self.violations.iter().filter(|v| v.rule == rule).count()
    }
}

/// Checks the events of one run.
pub fn check(events: &[Event], options: &Options) -> Report {
    let mut run = Run::build(events);
    if options.kills_keep_leases {
        run.store_kills.clear();
    }
    let mut report = Report {
        counts: run.counts,
        faults: run.faults.clone(),
        ..Report::default()
    };
    safety::two_holders(&run, &mut report);
    safety::fences(&run, &mut report);
    safety::request_ids(&run, &mut report);
    safety::let_go(&run, &mut report);
    safety::writes(&run, &mut report);
    lines::fifo(&run, options, &mut report);
    lines::starvation(&run, options, &mut report);
    if options.quorum {
        availability::failed_with_quorum(&run, &mut report);
    }
    report.violations.sort_by_key(|v| (v.rule, v.at));
    report
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "operations: {} ({} hold requests, {} grants, {} renewals, {} releases; {} held functions; fenced writes {} landed, {} refused)",
            c.operations(),
            c.requests,
            c.grants,
            c.renewals,
            c.releases,
            c.functions,
            c.writes_landed,
            c.writes_refused
        )?;
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            f,
            "faults: {} ({})",
            self.faults.values().sum::<u64>(),
            faults.join(", ")
        )?;
        let excused: Vec<String> = self
            .excused
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(f, "overlaps excused: {}", excused.join(", "))?;
        writeln!(f, "violations: {}", self.violations.len())?;
        for rule in Rule::ALL {
            let of: Vec<&Violation> = self.violations.iter().filter(|v| v.rule == rule).collect();
            if of.is_empty() {
                continue;
            }
            writeln!(f, "  {rule}: {}", of.len())?;
            for v in of.iter().take(5) {
                writeln!(f, "    at {} ns: {}", v.at, v.detail)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
