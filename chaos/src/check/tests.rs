//! The checker's own tests: a correct history passes; each broken one
//! fails with its rule, and only with it.

use super::*;
use crate::history::{Event, Kind};

const TTL_MS: u64 = 2000;
const MS: u64 = 1_000_000;

/// A history written by hand, times in milliseconds.
#[derive(Default, Clone)]
struct H(Vec<Event>);

fn at(ms: u64, pid: u32, kind: Kind) -> Event {
    let mut e = Event::at(ms * MS, kind);
    e.process = format!("p{pid}");
    e.pid = pid;
    e
}

impl H {
    fn request(&mut self, ms: u64, pid: u32, request: u128) -> &mut H {
        let e = at(ms, pid, Kind::Request)
            .key("k")
            .request(request)
            .group(pid as u128)
            .ttl_ms(TTL_MS)
            .queue(true);
        self.0.push(e);
        self
    }

    fn granted(&mut self, ms: u64, pid: u32, request: u128, lease: u128, fence: u64) -> &mut H {
        let e = at(ms, pid, Kind::Granted)
            .key("k")
            .request(request)
            .lease(lease)
            .fence(fence)
            .group(pid as u128)
            .sent(ms * MS);
        self.0.push(e);
        self
    }

    fn app(&mut self, ms: u64, pid: u32, kind: Kind, fence: u64, reason: Option<&str>) -> &mut H {
        let mut e = at(ms, pid, kind).key("k").fence(fence);
        e.reason = reason.map(str::to_owned);
        self.0.push(e);
        self
    }

    fn renewed(&mut self, sent: u64, ms: u64, pid: u32) -> &mut H {
        let e = at(ms, pid, Kind::Renewed)
            .group(pid as u128)
            .sent(sent * MS)
            .ttl_ms(TTL_MS);
        self.0.push(e);
        self
    }

    fn release(&mut self, ms: u64, pid: u32, lease: u128) -> &mut H {
        self.0
            .push(at(ms, pid, Kind::Release).key("k").lease(lease));
        self
    }

    fn write(&mut self, ms: u64, pid: u32, fence: u64, landed: bool) -> &mut H {
        let reason = if landed { "landed" } else { "refused" };
        self.app(ms, pid, Kind::Write, fence, Some(reason))
    }

    fn fault(&mut self, ms: u64, kind: &str, target: u32) -> &mut H {
        self.0
            .push(at(ms, 0, Kind::Fault).reason(kind).target(target));
        self
    }

    fn queued(&mut self, ms: u64, pid: u32, request: u128) -> &mut H {
        self.0
            .push(at(ms, pid, Kind::Queued).key("k").request(request));
        self
    }

    /// A whole hold: request, grant (in line first when it waited), start, end, release, ok.
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &mut self,
        pid: u32,
        id: u128,
        fence: u64,
        asked: u64,
        granted: u64,
        end: u64,
    ) -> &mut H {
        self.request(asked, pid, id);
        if granted > asked + 1 {
            self.queued(asked + 1, pid, id);
        }
        self.granted(granted, pid, id, id, fence)
            .app(granted + 1, pid, Kind::Start, fence, None)
            .app(end, pid, Kind::End, fence, None)
            .release(end + 1, pid, id)
            .app(end + 2, pid, Kind::Outcome, fence, Some("ok"))
    }

    fn check(&self) -> Report {
        check(&self.0, &Options::default())
    }
}

/// Two holders one after the other on key `k`, with a renewal and writes.
fn correct() -> H {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1000)
        .renewed(600, 601, 1)
        .write(500, 1, 10, true)
        .hold(2, 2, 11, 500, 1002, 1500)
        .write(1400, 2, 11, true);
    h
}

fn only(report: &Report, rule: Rule) {
    assert!(report.of(rule) >= 1, "{rule} not found:\n{report}");
    let others: Vec<&Violation> = report
        .violations
        .iter()
        .filter(|v| v.rule != rule)
        .collect();
    assert!(others.is_empty(), "more than {rule}:\n{report}");
}

#[test]
fn a_correct_history_passes() {
    let report = correct().check();
    assert!(report.violations.is_empty(), "{report}");
    assert_eq!(report.counts.requests, 2);
    assert_eq!(report.counts.renewals, 1);
    assert_eq!(report.counts.writes_landed, 2);
}

// LOCK-01
#[test]
fn two_holders_at_once_fail() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1000).hold(2, 2, 11, 500, 800, 1500);
    only(&h.check(), Rule::TwoHolders);
}

// LOCK-01: a frozen holder's overlap is the fences' to stop, not a violation.
#[test]
fn a_frozen_holders_overlap_is_excused() {
    let mut h = H::default();
    h.request(0, 1, 1)
        .granted(1, 1, 1, 1, 10)
        .app(2, 1, Kind::Start, 10, None)
        .app(3000, 1, Kind::End, 10, None)
        .app(3001, 1, Kind::Outcome, 10, Some("lost"))
        .fault(100, "freeze", 1)
        .fault(2900, "thaw", 1)
        .hold(2, 2, 11, 500, 2100, 2500)
        .write(2200, 2, 11, true)
        .write(2950, 1, 10, false);
    let report = h.check();
    assert_eq!(report.of(Rule::TwoHolders), 0, "{report}");
    assert_eq!(report.of(Rule::HeldPastLetGo), 0, "{report}");
    assert_eq!(report.excused.get("frozen"), Some(&1), "{report}");
    assert_eq!(report.counts.writes_refused, 1);
}

// LOCK-15: a holder granted before the store restarted believes until its next renewal.
#[test]
fn an_overlap_across_a_store_restart_is_excused() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 700)
        .fault(300, "kill_server", 0)
        .fault(400, "restart_server", 0)
        .hold(2, 2, 11 << 32, 450, 460, 900);
    let report = h.check();
    assert!(report.violations.is_empty(), "{report}");
    assert_eq!(report.excused.get("store restarted"), Some(&1), "{report}");
}

// PG-08: a store that keeps its leases across a kill (PostgreSQL) excuses
// no overlap by it, and a renewal after its restart is no violation.
#[test]
fn on_a_store_that_keeps_its_leases_a_kill_excuses_nothing() {
    let options = Options {
        kills_keep_leases: true,
        ..Options::default()
    };
    let mut overlap = H::default();
    overlap
        .hold(1, 1, 10, 0, 1, 700)
        .fault(300, "kill_server", 0)
        .fault(400, "restart_server", 0)
        .hold(2, 2, 11 << 32, 450, 460, 900);
    let report = check(&overlap.0, &options);
    assert_eq!(report.of(Rule::TwoHolders), 1, "{report}");
    assert!(report.excused.is_empty(), "{report}");
    let mut renewed = H::default();
    renewed
        .hold(1, 1, 10, 0, 1, 900)
        .fault(300, "kill_server", 0)
        .fault(400, "restart_server", 0)
        .renewed(600, 601, 1);
    let report = check(&renewed.0, &options);
    assert!(report.violations.is_empty(), "{report}");
}

// LOCK-02
#[test]
fn a_fence_that_does_not_grow_fails() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1000).hold(2, 2, 9, 500, 1002, 1500);
    only(&h.check(), Rule::FenceDidNotGrow);
}

// LOCK-03
#[test]
fn a_request_answered_with_two_leases_fails() {
    let mut h = correct();
    h.granted(1200, 1, 1, 3, 12);
    only(&h.check(), Rule::RequestTwoLeases);
}

// LOCK-05
#[test]
fn a_renewal_after_the_store_let_go_fails() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 2400).renewed(2300, 2301, 1);
    let report = h.check();
    assert_eq!(report.of(Rule::RenewedAfterLetGo), 1, "{report}");
}

// LOCK-15: the store restarted holds no lease, so no renewal of one from before succeeds.
#[test]
fn a_renewal_after_a_store_restart_fails() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 900)
        .fault(300, "kill_server", 0)
        .fault(400, "restart_server", 0)
        .renewed(600, 601, 1);
    only(&h.check(), Rule::RenewedAfterLetGo);
}

// LOCK-04
#[test]
fn a_holder_kept_past_its_deadline_fails() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 2500);
    let report = h.check();
    assert_eq!(report.of(Rule::HeldPastLetGo), 1, "{report}");
    assert_eq!(report.of(Rule::TwoHolders), 0, "{report}");
}

// LOCK-10
#[test]
fn a_hold_that_succeeded_though_lost_fails() {
    let mut h = correct();
    h.app(900, 1, Kind::Lost, 10, Some("expired"));
    only(&h.check(), Rule::HoldSucceededThoughLost);
}

// LOCK-11
#[test]
fn a_starved_waiter_fails() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1000).hold(2, 2, 11, 500, 4500, 5000);
    only(&h.check(), Rule::Starved);
}

// A waiter kept waiting while an etcd leader is down is not judged: the
// kill lasts until its member restarts (a restart ends a kill_leader as it
// ends a kill_member; a later kill of the same member does not erase it).
#[test]
fn a_waiter_kept_waiting_by_a_killed_leader_is_not_judged() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1000)
        .hold(2, 2, 11, 500, 4500, 5000)
        .fault(1200, "kill_leader", 0)
        .fault(8000, "restart_member", 0)
        .fault(9000, "kill_leader", 0)
        .fault(9100, "restart_member", 0)
        .hold(3, 3, 12, 9500, 9501, 10_000);
    let report = h.check();
    assert!(report.violations.is_empty(), "{report}");
}

// LOCK-01: first come, first served.
#[test]
fn a_line_out_of_order_fails() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1000)
        .hold(2, 2, 12, 300, 1101, 1200)
        .hold(3, 3, 11, 500, 1002, 1100);
    only(&h.check(), Rule::NotFifo);
}

// A fault in the line's time excuses its order: a cut may resend a request late.
#[test]
fn a_line_out_of_order_under_a_fault_is_not_judged() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1000)
        .hold(2, 2, 12, 300, 1101, 1200)
        .hold(3, 3, 11, 500, 1002, 1100)
        .fault(400, "cut", 0);
    assert!(h.check().violations.is_empty());
}

#[test]
fn a_stale_write_that_landed_fails() {
    let mut h = correct();
    h.write(1450, 1, 10, true);
    only(&h.check(), Rule::StaleWriteLanded);
}

#[test]
fn a_history_round_trips_through_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    let recorder = crate::history::Recorder::create(&path, "p").unwrap();
    for e in correct().0 {
        recorder.record(e);
    }
    std::fs::write(dir.path().join("cut.jsonl"), "{\"ns\":1,\"proc").unwrap();
    let events = crate::history::read_dir(dir.path()).unwrap();
    assert_eq!(events.len(), correct().0.len());
    assert!(check(&events, &Options::default()).violations.is_empty());
}

// LOCK-05: a renewal confirmed after the key went to a larger fence.
#[test]
fn a_renewal_after_the_key_went_to_another_fails() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 1500)
        .hold(2, 2, 11, 500, 600, 700)
        .renewed(900, 901, 1);
    let report = h.check();
    assert_eq!(report.of(Rule::RenewedAfterLetGo), 1, "{report}");
    assert_eq!(report.of(Rule::TwoHolders), 1, "{report}");
}

fn pg_write(h: &mut H, ms: u64, fence: u64, outcome: &str, seq: u64) {
    let e = at(ms, 1, Kind::Write)
        .key("k")
        .fence(fence)
        .reason(outcome)
        .seq(seq);
    h.0.push(e);
}

#[test]
fn postgres_writes_are_judged_in_the_rows_order_and_against_the_table() {
    let mut h = correct();
    // Recorded out of order, landed in order: no violation.
    pg_write(&mut h, 700, 11, "landed", 2);
    pg_write(&mut h, 600, 10, "landed", 1);
    pg_write(&mut h, 800, 9, "refused", 0);
    pg_write(&mut h, 2000, 11, "final", 2);
    assert!(h.check().violations.is_empty(), "{}", h.check());

    let mut stale = h.clone();
    pg_write(&mut stale, 900, 10, "landed", 3);
    only(&stale.check(), Rule::StaleWriteLanded);

    let mut lost = correct();
    pg_write(&mut lost, 700, 11, "landed", 2);
    pg_write(&mut lost, 2000, 10, "final", 2);
    only(&lost.check(), Rule::StaleWriteLanded);
}

/// A hold that failed `code` at `ms`, its request sent at `asked`.
fn failed(h: &mut H, pid: u32, id: u128, asked: u64, ms: u64, code: &str) {
    h.request(asked, pid, id);
    let mut e = at(ms, pid, Kind::Outcome).key("k");
    e.reason = Some(code.to_owned());
    h.0.push(e);
}

fn on_etcd(h: &H) -> Report {
    check(
        &h.0,
        &Options {
            quorum: true,
            ..Options::default()
        },
    )
}

// DIST-09: on etcd, a hold that fails for want of the store while only one
// member is down (killed, frozen, cut off) is a violation, in every
// language's spelling of the code; on the server store it is not judged.
#[test]
fn a_call_failed_while_one_member_was_down_fails_on_etcd() {
    for (fault, end, code) in [
        ("kill_leader", "restart_member", "Unavailable"),
        ("freeze_member", "thaw_member", "TIMEOUT"),
        (
            "blackhole_member",
            "blackhole_member_end",
            "leasehold: Lost: expired",
        ),
    ] {
        let mut h = H::default();
        h.hold(1, 1, 10, 0, 1, 100).fault(150, fault, 0);
        failed(&mut h, 1, 2, 200, 1200, code);
        h.fault(3000, end, 0);
        only(&on_etcd(&h), Rule::FailedWithQuorum);
        assert!(
            h.check().violations.is_empty(),
            "{fault}: not judged off etcd"
        );
    }
}

// DIST-09: a call that failed while every link to the store was cut, or
// while its own holder was frozen, or that ended otherwise, is excused.
#[test]
fn a_call_failed_without_a_quorum_in_reach_is_not_judged() {
    let mut h = H::default();
    h.hold(1, 1, 10, 0, 1, 100).fault(150, "blackhole", 0);
    failed(&mut h, 1, 2, 200, 1200, "Unavailable");
    h.fault(1300, "blackhole_end", 0).fault(1400, "freeze", 2);
    failed(&mut h, 2, 3, 1500, 2500, "Lost");
    h.fault(2600, "thaw", 2).fault(2700, "kill_member", 1);
    failed(&mut h, 3, 4, 2800, 3000, "WaitTimeout");
    // A refusal's span is closed by its end, as a black hole's is: the
    // later one does not hide it.
    h.fault(4000, "restart_member", 1)
        .fault(4100, "refuse", 0)
        .fault(4200, "refuse_end", 0);
    failed(&mut h, 4, 5, 4120, 4180, "Timeout");
    h.fault(5000, "refuse", 0).fault(5100, "refuse_end", 0);
    let report = on_etcd(&h);
    assert!(report.violations.is_empty(), "{report}");
}
