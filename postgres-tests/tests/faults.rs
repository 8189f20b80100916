//! PG-08 and the faults of one server, with traffic in flight: six holders
//! in three stores take turns on two keys (10 ms holds, waiters always in
//! line) while one more holds a third key throughout, renewing it, and the
//! fault comes at 2 s. The primary killed (kill -9 of every process) and its synchronous
//! standby promoted; the one server killed and started again; every
//! connection cut by a proxy, twice; the server frozen (SIGSTOP) for 2 s.
//! Each must end with every hold succeeded (no call failed that could be
//! retried within the holders' deadlines), the long lease never lost, fences
//! growing, and no two holds of a key overlapping (no key granted twice).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasehold::{ConnectOptions, Error, Lock, Store};
use leasehold_chaos::proxy::Proxy;
use postgres_tests::server::PgServer;

/// How long the holders take turns, when the fault comes, and the leases' ttl.
const RUN: Duration = Duration::from_secs(7);
const FAULT_AT: Duration = Duration::from_secs(2);
const TTL: Duration = Duration::from_secs(5);
const WORK: Duration = Duration::from_millis(10);

/// One hold call: its key, when it began and how long it took, and its
/// fence and function's start and end, or its error.
struct Hold {
    key: &'static str,
    began: Instant,
    took: Duration,
    fence: u64,
    start: Option<Instant>,
    end: Option<Instant>,
    error: Option<Error>,
}

async fn holder(lock: Lock, keys: [&'static str; 2], until: Instant, holds: Arc<Mutex<Vec<Hold>>>) {
    let mut turn = 0;
    while Instant::now() < until {
        let key = keys[turn % 2];
        turn += 1;
        let began = Instant::now();
        let ran = lock
            .hold_async(key, |lease| async move {
                let start = Instant::now();
                tokio::time::sleep(WORK).await;
                Ok::<_, Error>((lease.fence(), start, Instant::now()))
            })
            .await;
        let (fence, start, end, error) = match ran {
            Ok((fence, start, end)) => (fence, Some(start), Some(end), None),
            Err(e) => (0, None, None, Some(e)),
        };
        holds.lock().unwrap().push(Hold {
            key,
            began,
            took: began.elapsed(),
            fence,
            start,
            end,
            error,
        });
    }
}

/// Runs the holders on the store at `url`, calls `fault` at [`FAULT_AT`]
/// (on a blocking thread: it may start processes), and checks every hold.
async fn under_fault(name: &str, url: String, fault: impl FnOnce() + Send + 'static) {
    let options = ConnectOptions::default();
    let mut stores = Vec::new();
    for _ in 0..3 {
        stores.push(
            Store::connect(&url, options.clone())
                .await
                .expect("connect"),
        );
    }
    let holds = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let until = start + RUN;
    let mut tasks = Vec::new();
    for (i, store) in stores.iter().enumerate() {
        for j in 0..2 {
            let keys = if (i + j) % 2 == 0 {
                ["a", "b"]
            } else {
                ["b", "a"]
            };
            let lock = store.lock("jobs").ttl(TTL).open().unwrap();
            tasks.push(tokio::spawn(holder(lock, keys, until, holds.clone())));
        }
    }
    let long = {
        let lock = stores[0]
            .lock("long")
            .ttl(Duration::from_secs(10))
            .open()
            .unwrap();
        tokio::spawn(async move {
            lock.hold_async("held-throughout", |lease| async move {
                let fence = lease.fence();
                tokio::time::sleep(RUN).await;
                Ok::<_, Error>((fence, lease.lost(), lease.fence()))
            })
            .await
        })
    };
    tokio::time::sleep_until((start + FAULT_AT).into()).await;
    let fault_at = Instant::now();
    tokio::task::spawn_blocking(fault).await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let long = long.await.unwrap();
    for store in &stores {
        store.close().await;
    }
    let holds = std::mem::take(&mut *holds.lock().unwrap());
    check(name, fault_at, &holds);
    let (before, lost, after) =
        long.unwrap_or_else(|e| panic!("{name}: the long hold failed: {e}"));
    assert!(!lost, "{name}: the lease renewed throughout was lost");
    assert_eq!(before, after, "{name}: the long lease's fence moved");
}

fn check(name: &str, fault_at: Instant, holds: &[Hold]) {
    let failed: Vec<String> = holds
        .iter()
        .filter_map(|h| {
            let e = h.error.as_ref()?;
            let at = h.began.saturating_duration_since(fault_at);
            Some(format!(
                "{}: {e} after {:?}, begun {at:?} after the fault",
                h.key, h.took
            ))
        })
        .collect();
    let longest = holds.iter().map(|h| h.took).max().unwrap_or_default();
    let through = holds
        .iter()
        .filter(|h| h.began <= fault_at && h.began + h.took >= fault_at)
        .count();
    println!(
        "{name}: {} holds, {} failed, {through} in flight at the fault, longest hold call {longest:?}",
        holds.len(),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{name}: holds failed:\n{}",
        failed.join("\n")
    );
    assert!(
        through >= 2,
        "{name}: only {through} holds were in flight at the fault"
    );
    for key in ["a", "b"] {
        let mut ran: Vec<&Hold> = holds.iter().filter(|h| h.key == key).collect();
        ran.sort_by_key(|h| h.start);
        for pair in ran.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            assert!(
                after.fence > before.fence,
                "{name}: key {key}: fence {} after {}",
                after.fence,
                before.fence
            );
            assert!(
                after.start >= before.end,
                "{name}: key {key}: the hold of fence {} began before fence {}'s ended",
                after.fence,
                before.fence
            );
        }
    }
}

// PG-08: kill -9 of the primary under load, and its synchronous standby
// promoted; the clients name both hosts with target_session_attrs=read-write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_08_killing_the_primary_and_promoting_its_standby_fails_no_hold() {
    let primary = Arc::new(PgServer::start(&[]));
    let standby = Arc::new(PgServer::standby_of(&primary, "standby1"));
    primary.psql("ALTER SYSTEM SET synchronous_standby_names = 'standby1'");
    primary.psql("SELECT pg_reload_conf()");
    primary.wait_sync("standby1");
    let url = format!(
        "postgres://leasehold@127.0.0.1:{},127.0.0.1:{}/leasehold?target_session_attrs=read-write",
        primary.port, standby.port
    );
    assert!(!standby.is_primary());
    let (p, s) = (primary.clone(), standby.clone());
    under_fault("kill-primary", url, move || {
        p.kill();
        s.promote();
    })
    .await;
    assert!(standby.is_primary(), "the standby was not promoted");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", primary.port)).is_err(),
        "the old primary still listens"
    );
}

// PG-08: kill -9 of the one server under load, started again 1 s later on
// the same data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_08_restarting_the_server_fails_no_hold() {
    let server = Arc::new(PgServer::start(&[]));
    let s = server.clone();
    under_fault("restart", server.url(), move || {
        s.kill();
        std::thread::sleep(Duration::from_secs(1));
        s.run();
    })
    .await;
}

// PG-08: every connection to the server cut by a proxy, twice, 1 s apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_08_cutting_every_connection_fails_no_hold() {
    let server = PgServer::start(&[]);
    let proxy =
        Arc::new(Proxy::start_raw(format!("127.0.0.1:{}", server.port).parse().unwrap()).await);
    let url = format!("postgres://leasehold@{}/leasehold", proxy.addr());
    let p = proxy.clone();
    under_fault("cut", url, move || {
        p.cut();
        std::thread::sleep(Duration::from_secs(1));
        p.cut();
    })
    .await;
}

// PG-08: the server frozen (SIGSTOP) for 2 s under load, then thawed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_08_freezing_the_server_fails_no_hold() {
    let server = Arc::new(PgServer::start(&[]));
    let s = server.clone();
    under_fault("freeze", server.url(), move || {
        s.freeze();
        std::thread::sleep(Duration::from_secs(2));
        s.thaw();
    })
    .await;
}
