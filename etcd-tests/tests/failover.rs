//! DIST-02, DIST-03, DIST-04 on a 3-member etcd cluster on one machine:
//! the leader killed while leases are held and waiters queued, a leader
//! moved, the whole cluster restarted, every member frozen past the ttl,
//! and compaction while waiters wait.
//!
//! What these tests assert is the order of events (who holds, who is
//! granted after whom, which fence is larger, a loss before the next
//! grant), never how fast the cluster was: the machine is shared, and etcd
//! on a loaded one elects and expires late. How long each step took is
//! printed. The timeouts below only stop a test that hangs.

use std::time::{Duration, Instant};

use etcd_tests::{Cluster, Etcd, Writes};
use leasehold::driver::{Driver, HoldAnswer, HoldRequest, KeyName};
use leasehold::etcd::EtcdDriver;
use leasehold::{
    CancellationToken, ConnectOptions, ErrorKind, HoldOptions, Holding, Lease, Lock, LossReason,
    RequestId, Store,
};
use tokio::task::JoinHandle;

/// How long a test waits for what must come before it gives up: a hang,
/// not a speed, is what it catches.
const HANG: Duration = Duration::from_secs(30);

/// The witness's pause after each write the cluster took: a write every
/// 50 ms or so, enough to see an outage, little beside the test's load.
const WITNESS_PAUSE: Duration = Duration::from_millis(50);

async fn store(cluster: &Cluster, prefix: &str) -> Store {
    Store::connect(&cluster.url(prefix), ConnectOptions::default())
        .await
        .expect("connect to the cluster")
}

fn lock(store: &Store, ttl: Duration) -> Lock {
    store.lock("jobs").ttl(ttl).open().expect("a lock")
}

/// A waiter in line for `key`: its task resolves to the holding once granted.
fn wait_for(lock: &Lock, key: &str) -> JoinHandle<leasehold::Result<Holding>> {
    let lock = lock.clone();
    let key = key.to_owned();
    tokio::spawn(async move { lock.begin(&key, &HoldOptions::default()).await })
}

/// No other holder may get `key` meanwhile: a try either finds it held or
/// fails for want of a leader, never holds it.
async fn never_granted_to(other: &Lock, key: &str) {
    match other.try_begin(key).await {
        Ok(None) => {}
        Ok(Some(h)) => panic!("granted twice: fence {}", h.lease().fence()),
        Err(e) => assert!(
            matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Timeout),
            "{e}"
        ),
    }
}

async fn granted(waiter: JoinHandle<leasehold::Result<Holding>>) -> Holding {
    tokio::time::timeout(HANG, waiter)
        .await
        .expect("the waiter was granted (30 s: a hang)")
        .expect("the waiter's task")
        .expect("the waiter's hold")
}

/// What [`watch`] saw of a lease: its holder's deadline when last read
/// while held, and when it was seen lost, if it was.
struct Watched {
    deadline: Option<Instant>,
    lost_at: Option<Instant>,
}

/// Reads `lease` every 20 ms until `stop` or its loss: its holder's
/// deadline (the time left, read with the time it was read at: a late
/// read on a loaded machine does not move it) and when it was seen lost
/// (`lost()` counts a deadline that has come as a loss, whenever the
/// loss's timer runs).
async fn watch(lease: Lease, stop: CancellationToken) -> Watched {
    let mut deadline = None;
    loop {
        let now = Instant::now();
        let left = lease.remaining();
        if lease.lost() {
            return Watched {
                deadline,
                lost_at: Some(now),
            };
        }
        if stop.is_cancelled() {
            return Watched {
                deadline,
                lost_at: None,
            };
        }
        if let Some(left) = left.filter(|l| !l.is_zero()) {
            deadline = Some(now + left);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether a lease lost through a member fault was lost for want of a
/// cluster (allowed: its holder could not renew within its deadline) or
/// while the cluster served this process (DIST-02 broken).
///
/// The holder renews a third of the ttl after its last confirmed renewal
/// and keeps trying until its deadline, `ttl − margin` after that renewal
/// was sent: it has `slack = ttl − margin − ttl/3` to get one renewal
/// through. Between two of its tries reaching a live member lies at most
/// one try stuck at a member that cannot answer (`attempt`) and one pause
/// (the driver's, at most 200 ms, or the renewal loop's `ttl/20`). So when
/// the cluster took this process's writes (the witness, [`Writes`], with
/// the same try bound, in the same process, so a machine too loaded to
/// serve the holder delays it alike) with no gap as long as
/// `slack − (attempt + pause)` in the `slack` before the deadline, the
/// holder could have renewed, and losing the lease was a bug. No wall-clock
/// bound is involved: the cluster's own outage, however long the machine
/// made it, is what excuses a loss.
fn assert_loss_was_forced(
    what: &str,
    watched: &Watched,
    writes: &Writes,
    struck_at: Instant,
    lock: &Lock,
    attempt: Duration,
) {
    let (ttl, margin) = (lock.ttl(), lock.margin());
    let Some(lost_at) = watched.lost_at else {
        return;
    };
    let deadline = watched.deadline.expect("the lease was read while held");
    let slack = ttl - margin - ttl / 3;
    let pause = (ttl / 20).max(Duration::from_millis(200));
    let needed = slack.saturating_sub(attempt + pause);
    let gap = writes.longest_gap(deadline - slack, deadline);
    println!(
        "{what}: the lease was lost {:?} after the fault (its deadline {:?} after it); \
         the cluster took no write for {gap:?} of the {slack:?} its holder had to renew",
        lost_at - struck_at,
        deadline.saturating_duration_since(struck_at),
    );
    assert!(
        gap >= needed,
        "{what}: the lease was lost {:?} after the fault, though the cluster took this \
         process's writes all through its holder's last {slack:?} of renewals (longest gap \
         {gap:?}, under {needed:?}): a holder that keeps renewing lost its lease",
        lost_at - struck_at,
    );
}

// DIST-02: kill -9 of the leader while a lease is held and two waiters are
// queued loses no lease (its holder keeps renewing through the election),
// grants the key to nobody else, and the waiters are then granted by push,
// in order, with fences above every fence before. A loss is allowed only
// when the cluster itself, as a witness in this process saw it, took no
// write for as long as the holder had to renew (`assert_loss_was_forced`):
// then its holder could not keep renewing within its deadline, which is
// what DIST-02 asks of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_02_killing_the_leader_loses_no_lease() {
    let mut cluster = Cluster::start(Etcd::Current, 3).await;
    let (a, b, c) = (
        store(&cluster, "failover").await,
        store(&cluster, "failover").await,
        store(&cluster, "failover").await,
    );
    // The holder must renew through the election and its client's move to
    // another member within ttl − margin: 5 s, as 3 s was lost once in a
    // `make test` that ran this file's six clusters at once on two cores.
    let ttl = Duration::from_secs(5);
    let (lock_a, lock_b, lock_c) = (lock(&a, ttl), lock(&b, ttl), lock(&c, ttl));
    let held = lock_a.try_begin("k").await.expect("hold").expect("free");
    let first = wait_for(&lock_b, "k");
    cluster.wait_for_line("failover", "jobs", "k", 2).await;
    let second = wait_for(&lock_b, "k");
    cluster.wait_for_line("failover", "jobs", "k", 3).await;
    let leader = cluster.wait_for_leader(Duration::from_secs(5)).await;
    let attempt = ConnectOptions::default().attempt_timeout;
    let witness = cluster.probe(leader, attempt).await;
    let killed_at = Instant::now();
    cluster.kill(leader);
    let stop = CancellationToken::new();
    let writes = tokio::spawn(witness.record(WITNESS_PAUSE, stop.clone().cancelled_owned()));
    let watched = tokio::spawn(watch(held.lease().clone(), stop.clone()));
    // Two ttls: long past the deadline of a holder that stopped renewing
    // at the kill.
    while killed_at.elapsed() < ttl * 2 {
        never_granted_to(&lock_c, "k").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.cancel();
    let (writes, watched) = (writes.await.unwrap(), watched.await.unwrap());
    println!(
        "DIST-02: the members the kill spared took a write {:?} after it; the lease {}",
        writes.first_after(),
        if watched.lost_at.is_some() {
            "was lost"
        } else {
            "was kept"
        }
    );
    assert_loss_was_forced("DIST-02", &watched, &writes, killed_at, &lock_a, attempt);
    let new_leader = cluster.wait_for_leader(Duration::from_secs(10)).await;
    assert_ne!(new_leader, leader);
    let fence = held.lease().fence();
    match held.end().await {
        Ok(()) => assert!(watched.lost_at.is_none(), "a lost lease ended Ok"),
        Err(e) => assert!(
            e.kind() == ErrorKind::Lost && watched.lost_at.is_some(),
            "the lease was never lost, yet its end failed: {e}"
        ),
    }
    let one = granted(first).await;
    assert!(one.lease().fence() > fence);
    assert!(!second.is_finished(), "the second waiter jumped the line");
    let one_fence = one.lease().fence();
    one.end().await.expect("released");
    let two = granted(second).await;
    assert!(two.lease().fence() > one_fence);
    two.end().await.expect("released");
    cluster.restart(leader);
    for s in [a, b, c] {
        s.close().await;
    }
}

// DIST-04: after a controlled leader move, a waiter is still granted by push
// (etcd's waiter has no other way to learn of the release: no poll) and
// after the release; the handoff's time is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_04_a_moved_leader_keeps_waiters_in_line() {
    let cluster = Cluster::start(Etcd::Current, 3).await;
    let (a, b) = (
        store(&cluster, "moved").await,
        store(&cluster, "moved").await,
    );
    let ttl = Duration::from_secs(3);
    let held = lock(&a, ttl).try_begin("k").await.unwrap().expect("free");
    let waiter = wait_for(&lock(&b, ttl), "k");
    cluster.wait_for_line("moved", "jobs", "k", 2).await;
    let leader = cluster.wait_for_leader(Duration::from_secs(5)).await;
    cluster.move_leader_to((leader + 1) % 3).await;
    let moved = cluster.wait_for_leader(Duration::from_secs(5)).await;
    assert_ne!(moved, leader, "the leader did not move");
    let fence = held.lease().fence();
    assert!(!waiter.is_finished(), "granted before the release");
    let released = Instant::now();
    held.end().await.expect("not lost across the move");
    let next = granted(waiter).await;
    println!("handoff after a leader move: {:?}", released.elapsed());
    assert!(next.lease().fence() > fence);
    next.end().await.unwrap();
    a.close().await;
    b.close().await;
}

// DIST-03: the whole cluster killed and started again on its data dirs:
// the held lease survives (etcd keeps leases, unlike LOCK-15), and fences
// keep growing. The holder must renew within its deadline through the
// restart: a loss is allowed only when the cluster, as a witness in this
// process saw it, was down for as long as the holder had to renew
// (`assert_loss_was_forced`; a loaded machine restarts etcd slowly).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_03_a_whole_cluster_restart_keeps_fences_growing() {
    let mut cluster = Cluster::start(Etcd::Current, 3).await;
    let a = store(&cluster, "restart").await;
    let ttl = Duration::from_secs(10);
    let jobs = lock(&a, ttl);
    let held = jobs.try_begin("k").await.unwrap().expect("free");
    let other = jobs.try_begin("before").await.unwrap().expect("free");
    let before = other.lease().fence().max(held.lease().fence());
    other.end().await.unwrap();
    let attempt = ConnectOptions::default().attempt_timeout;
    let witness = cluster.probe(usize::MAX, attempt).await;
    let stop = CancellationToken::new();
    let killed_at = Instant::now();
    for i in 0..3 {
        cluster.kill(i);
    }
    let writes = tokio::spawn(witness.record(WITNESS_PAUSE, stop.clone().cancelled_owned()));
    let watched = tokio::spawn(watch(held.lease().clone(), stop.clone()));
    for i in 0..3 {
        cluster.restart(i);
    }
    cluster.wait_for_leader(HANG).await;
    let after = loop {
        match jobs.try_begin("after").await {
            Ok(Some(h)) => break h,
            Ok(None) => panic!("nobody holds `after`"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    assert!(
        after.lease().fence() > before,
        "fence {} after the restart, {before} before",
        after.lease().fence()
    );
    after.end().await.unwrap();
    // Half a ttl more: a holder that did not renew through the restart
    // runs past its deadline meanwhile.
    tokio::time::sleep(ttl / 2).await;
    stop.cancel();
    let (writes, watched) = (writes.await.unwrap(), watched.await.unwrap());
    println!(
        "DIST-03: the restarted cluster took a write {:?} after the kill ({} taken); the lease {}",
        writes.first_after(),
        writes.taken.len(),
        if watched.lost_at.is_some() {
            "was lost"
        } else {
            "was kept"
        }
    );
    assert_loss_was_forced("DIST-03", &watched, &writes, killed_at, &jobs, attempt);
    match held.end().await {
        Ok(()) => assert!(watched.lost_at.is_none(), "a lost lease ended Ok"),
        Err(e) => assert!(
            e.kind() == ErrorKind::Lost && watched.lost_at.is_some(),
            "the lease was never lost, yet its end failed: {e}"
        ),
    }
    a.close().await;
}

// LOCK-04, ERR-04 on etcd: every member frozen past the ttl: the holder
// declares the loss (Expired) at its deadline, and nobody else is granted
// the key before that. How long after the freeze the loss came is
// printed: `lost()` counts a deadline that has come as a loss whenever
// the loss's timer runs, so a late timer on a loaded machine changes
// nothing the holder sees; the deadline's arithmetic is proven on the
// virtual clock (core/src/renewal.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_04_a_frozen_cluster_loses_the_lease_at_the_holders_deadline() {
    let cluster = Cluster::start(Etcd::Current, 3).await;
    let (a, b) = (
        store(&cluster, "frozen").await,
        store(&cluster, "frozen").await,
    );
    let ttl = Duration::from_secs(2);
    let lock_a = lock(&a, ttl);
    let held = lock_a.try_begin("k").await.unwrap().expect("free");
    let waiter = wait_for(&lock(&b, ttl), "k");
    cluster.wait_for_line("frozen", "jobs", "k", 2).await;
    for i in 0..3 {
        cluster.freeze(i);
    }
    let frozen_at = Instant::now();
    tokio::time::timeout(HANG, held.lease().lost_signal())
        .await
        .expect("the holder declared the loss (30 s: a hang)");
    println!(
        "LOCK-04: lost {:?} after the freeze (ttl {ttl:?}, margin {:?})",
        frozen_at.elapsed(),
        lock_a.margin()
    );
    assert_eq!(held.lease().loss_reason(), Some(LossReason::Expired));
    assert!(
        !waiter.is_finished(),
        "the waiter was granted while the cluster was frozen"
    );
    for i in 0..3 {
        cluster.thaw(i);
    }
    let next = granted(waiter).await;
    assert!(next.lease().fence() > held.lease().fence());
    assert_eq!(
        held.end().await.unwrap_err().kind(),
        ErrorKind::Lost,
        "a lost lease ends Lost"
    );
    next.end().await.unwrap();
    a.close().await;
    b.close().await;
}

// DIST-04: a compaction loop while waiters wait: each is still granted by push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_04_waiters_are_granted_through_compactions() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    let (a, b) = (
        store(&cluster, "compact").await,
        store(&cluster, "compact").await,
    );
    let ttl = Duration::from_secs(5);
    let (lock_a, lock_b) = (lock(&a, ttl), lock(&b, ttl));
    let mut admin = cluster.client().await;
    let compactor = tokio::spawn(async move {
        loop {
            if let Ok(r) = admin.get("/compact/", None).await {
                let rev = r.header().map(|h| h.revision()).unwrap_or(0);
                let _ = admin.compact(rev, None).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let mut held = lock_a.try_begin("k").await.unwrap().expect("free");
    for round in 0..5 {
        let waiter = wait_for(&lock_b, "k");
        cluster.wait_for_line("compact", "jobs", "k", 2).await;
        let fence = held.lease().fence();
        held.end().await.unwrap();
        let next = granted(waiter).await;
        assert!(next.lease().fence() > fence, "round {round}");
        held = next;
    }
    held.end().await.unwrap();
    compactor.abort();
    a.close().await;
    b.close().await;
}

// DIST-04: the only member killed and restarted while a waiter waits: its
// watch stream breaks, is made again, and the waiter reads again and is
// granted by push once the holder (gone with its process, nothing renews
// its lease) is let go by etcd: the line as the grant's transaction found
// it (at the fence's revision, DIST-03) holds the waiter's record alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_04_a_broken_watch_stream_is_made_again() {
    let mut cluster = Cluster::start(Etcd::Current, 1).await;
    let ttl = Duration::from_secs(2);
    let gone = EtcdDriver::connect(
        &cluster.url("rewatch"),
        ConnectOptions::default(),
        &tokio::runtime::Handle::current(),
    )
    .await
    .expect("connect");
    let request = HoldRequest {
        name: KeyName::new("jobs", "k"),
        request_id: RequestId::random(),
        ttl: Some(ttl),
        max_hold: None,
        queue: false,
        group: None,
    };
    let HoldAnswer::Granted(held) = gone.hold(request).await.expect("hold") else {
        panic!("the key is free");
    };
    let waiting = store(&cluster, "rewatch").await;
    let waiter = wait_for(&lock(&waiting, Duration::from_secs(30)), "k");
    cluster.wait_for_line("rewatch", "jobs", "k", 2).await;
    // The holder's process goes away without a word: its driver is dropped unclosed.
    drop(gone);
    cluster.kill(0);
    assert!(
        !waiter.is_finished(),
        "granted before the holder's lease ran out"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.restart(0);
    cluster.wait_for_leader(HANG).await;
    let restarted = Instant::now();
    let next = granted(waiter).await;
    println!(
        "DIST-04: granted {:?} after the restart (the holder's ttl {ttl:?})",
        restarted.elapsed()
    );
    assert!(next.lease().fence() > held.grant.fence);
    let revision = i64::try_from(next.lease().fence()).expect("a revision");
    assert_eq!(
        cluster.line_len_at("rewatch", "jobs", "k", revision).await,
        1,
        "the waiter was granted while the holder's record, and so its etcd lease, was still there"
    );
    next.end().await.unwrap();
    waiting.close().await;
}
