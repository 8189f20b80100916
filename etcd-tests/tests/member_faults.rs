//! DIST-09 (and DIST-02, DIST-04) with traffic in flight: six holders in three stores
//! take turns on two keys (short holds, waiters always in line) while one
//! member of a 3-member cluster is killed, frozen or cut off, and then
//! comes back. A member's fault must cost the holders an election and a
//! round trip, never a failed call: every hold succeeds, no lease is lost,
//! fences grow, no two holds of a key overlap, and the longest hold call
//! stays under two election timeouts plus one second: etcd elects a new
//! leader one to two election timeouts after the old one's last heartbeat
//! (each follower's timer is randomized in that span). When the cluster
//! itself is slower than that (a split vote, a loaded machine), the bound
//! is its own outage (`etcd_tests::Outage`: writes straight to the
//! members the fault spares, beside the holders), plus the same second: the contract is
//! the cost the client adds, not etcd's election.
//!
//! The clients' calls go to member 0 while it answers (`core/src/etcd/members.rs`),
//! so each fault is placed where it hurts: the leader killed while the
//! clients talk to a follower that forwards to it (the calls stuck in etcd
//! until its own request timeout, before), the clients' own member killed,
//! frozen while it leads, or black-holed behind a proxy.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_tests::{Cluster, Etcd};
use leasehold::{ConnectOptions, Error, Lock, Store};
use leasehold_chaos::proxy::Proxy;

/// The test cluster's `--election-timeout` (etcd-tests/src/lib.rs).
const ELECTION_TIMEOUT: Duration = Duration::from_millis(500);
/// How long the traffic runs, and when the fault comes and ends.
const RUN: Duration = Duration::from_secs(8);
const FAULT_AT: Duration = Duration::from_millis(2500);
const FAULT_FOR: Duration = Duration::from_secs(3);
const TTL: Duration = Duration::from_secs(5);
const WORK: Duration = Duration::from_millis(10);

/// One cluster at a time: the faults' timing is the point, and two
/// clusters' elections on two cores would blur it.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What a fault does to the cluster, and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// kill -9 of the leader while the clients talk to a follower; restarted.
    KillLeader,
    /// kill -9 of the clients' member, a follower; restarted.
    KillFollower,
    /// SIGSTOP of the clients' member while it leads, for three seconds.
    FreezeLeader,
    /// The clients' member cut off behind a proxy that delivers nothing.
    Blackhole,
}

/// One hold: which key, what it returned, when its block ran.
struct Hold {
    key: &'static str,
    outcome: Result<(u64, Instant, Instant), Error>,
    began: Instant,
    took: Duration,
}

async fn holder(lock: Lock, keys: [&'static str; 2], until: Instant, holds: Arc<Mutex<Vec<Hold>>>) {
    let mut turn = 0usize;
    while Instant::now() < until {
        let key = keys[turn % 2];
        turn += 1;
        let began = Instant::now();
        let outcome = lock
            .hold_async(key, |lease| async move {
                let start = Instant::now();
                tokio::time::sleep(WORK).await;
                Ok::<_, Error>((lease.fence(), start, Instant::now()))
            })
            .await;
        holds.lock().unwrap().push(Hold {
            key,
            outcome,
            began,
            took: began.elapsed(),
        });
    }
}

async fn run(fault: Fault) {
    let _one = ONE_AT_A_TIME.lock().await;
    let mut cluster = Cluster::start(Etcd::Current, 3).await;
    match fault {
        Fault::KillLeader => cluster.move_leader_to(1).await,
        Fault::FreezeLeader => cluster.move_leader_to(0).await,
        Fault::KillFollower | Fault::Blackhole => {
            let leader = cluster.wait_for_leader(Duration::from_secs(10)).await;
            if leader == 0 {
                cluster.move_leader_to(1).await;
            }
        }
    }
    let mut proxies = Vec::new();
    for m in &cluster.members {
        proxies.push(Proxy::start_raw(m.endpoint().parse().expect("an address")).await);
    }
    // The clients reach every member through its proxy; the members reach
    // each other directly, so only the clients' link to member 0 is cut.
    let hosts: Vec<String> = proxies
        .iter()
        .map(|p| p.url().trim_start_matches("leasehold://").to_owned())
        .collect();
    let prefix = format!("faults-{fault:?}").to_lowercase();
    let url = format!(
        "etcd://{}/{prefix}?attempt-timeout={}ms",
        hosts.join(","),
        ELECTION_TIMEOUT.as_millis() / 2
    );
    let mut stores = Vec::new();
    for _ in 0..3 {
        stores.push(
            Store::connect(&url, ConnectOptions::default())
                .await
                .expect("connect to the cluster"),
        );
    }
    let start = Instant::now();
    let until = start + RUN;
    let holds = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (i, store) in stores.iter().enumerate() {
        for j in 0..2 {
            let lock = store.lock("jobs").ttl(TTL).open().expect("a lock");
            let keys = if (i + j) % 2 == 0 {
                ["a", "b"]
            } else {
                ["b", "a"]
            };
            tasks.push(tokio::spawn(holder(lock, keys, until, holds.clone())));
        }
    }
    let outage = cluster
        .outage(if fault == Fault::KillLeader { 1 } else { 0 })
        .await;
    tokio::time::sleep_until((start + FAULT_AT).into()).await;
    let fault_at = Instant::now();
    match fault {
        Fault::KillLeader => cluster.kill(1),
        Fault::KillFollower => cluster.kill(0),
        Fault::FreezeLeader => cluster.freeze(0),
        Fault::Blackhole => proxies[0].blackhole(true),
    }
    let outage = tokio::spawn(outage.measure(RUN));
    tokio::time::sleep(FAULT_FOR).await;
    match fault {
        Fault::KillLeader => cluster.restart(1),
        Fault::KillFollower => cluster.restart(0),
        Fault::FreezeLeader => cluster.thaw(0),
        Fault::Blackhole => proxies[0].blackhole(false),
    }
    for task in tasks {
        task.await.expect("a holder's task");
    }
    for store in stores {
        store.close().await;
    }
    let holds = std::mem::take(&mut *holds.lock().unwrap());
    let outage = outage.await.expect("the outage probe");
    check(fault, fault_at, outage, &holds);
}

fn check(fault: Fault, fault_at: Instant, outage: Duration, holds: &[Hold]) {
    let failed: Vec<String> = holds
        .iter()
        .filter_map(|h| {
            h.outcome.as_ref().err().map(|e| {
                format!(
                    "{}: {e} after {:?}, begun {:?} after the fault",
                    h.key,
                    h.took,
                    h.began.saturating_duration_since(fault_at)
                )
            })
        })
        .collect();
    let longest = holds.iter().map(|h| h.took).max().unwrap_or_default();
    let through = holds
        .iter()
        .filter(|h| h.began + h.took >= fault_at && h.began <= fault_at + FAULT_FOR)
        .count();
    println!(
        "{fault:?}: {} holds, {} failed, {through} in flight through the fault, longest hold call {longest:?}, the cluster's own outage {outage:?}",
        holds.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "{fault:?}: holds failed: {failed:#?}");
    assert!(
        through > 20,
        "{fault:?}: only {through} holds ran through the fault"
    );
    for key in ["a", "b"] {
        let mut ran: Vec<(u64, Instant, Instant)> = holds
            .iter()
            .filter(|h| h.key == key)
            .filter_map(|h| h.outcome.as_ref().ok().copied())
            .collect();
        ran.sort_by_key(|(_, start, _)| *start);
        for pair in ran.windows(2) {
            let ((f1, _, done1), (f2, start2, _)) = (pair[0], pair[1]);
            assert!(f2 > f1, "{fault:?}: key {key}: fence {f2} after {f1}");
            assert!(
                start2 >= done1,
                "{fault:?}: key {key}: the hold of fence {f2} began before fence {f1}'s ended"
            );
        }
    }
    let election = outage.max(2 * ELECTION_TIMEOUT);
    assert!(
        longest < election + Duration::from_secs(1),
        "{fault:?}: a hold call took {longest:?}, more than a second over the election \
         (two election timeouts, or the cluster's own outage of {outage:?})"
    );
}

// DIST-09: kill -9 of the leader while the clients' calls go through a
// follower that forwards them to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_09_killing_the_leader_under_load_fails_no_hold() {
    run(Fault::KillLeader).await;
}

// DIST-09: kill -9 of the follower the clients' calls go to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_09_killing_the_clients_follower_under_load_fails_no_hold() {
    run(Fault::KillFollower).await;
}

// DIST-09, DIST-04: the leader the clients talk to frozen for three
// seconds: their calls and their watch stream move to another member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_09_freezing_the_leader_under_load_fails_no_hold() {
    run(Fault::FreezeLeader).await;
}

// DIST-09, DIST-04: the clients' member black-holed (its connections stay
// open, nothing arrives): detected by the try's bound and the watch
// stream's progress probe, not by a broken connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_09_a_blackholed_member_under_load_fails_no_hold() {
    run(Fault::Blackhole).await;
}
