//! The holder engine of the core on the server store, in real time: renewal,
//! loss, maxHold, expiry, independent keys.

mod support;

use std::time::Duration;

use leasehold::{Error, ErrorKind, HoldOptions, LossReason};
use support::server::ServerProcess;
use support::{connect, data_dir, S};
use tokio::time::timeout;

/// How long a test waits for an event before it counts it as never coming:
/// a hang, not a speed.
const HANG: Duration = Duration::from_secs(30);

// LOCK-06: the lease is renewed in the background while the function runs, past its ttl:
// kept after 2.5 ttls, its time left never more than ttl − margin from a renewal's send. How
// much is left is printed: a renewal due every ttl/3 runs late on a loaded machine (its
// schedule is proven on the virtual clock, core/src/renewal.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_06_background_renewal_on_the_server_store() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let lock = store.lock("l").ttl(S(1)).open().unwrap();
    let most = lock.ttl() - lock.margin();
    let fence = lock
        .hold_async("k", |lease| async move {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            assert!(!lease.lost(), "{:?}", lease.loss_reason());
            let left = lease.remaining().unwrap();
            println!("LOCK-06: {left:?} left after 2.5 s of a 1 s ttl");
            assert!(left > Duration::ZERO && left <= most, "{left:?}");
            Ok::<_, Error>(lease.fence())
        })
        .await
        .unwrap();
    assert!(fence > 0);
}

// LOCK-09, LOCK-10, LOCK-12: maxHold revokes the lease whatever its renewals; the function hears
// it at once, and hold fails Lost even though the function succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_10_revoked_at_max_hold_fails_the_hold() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let lock = store
        .lock("l")
        .ttl(S(1))
        .max_hold(Duration::from_millis(1500))
        .open()
        .unwrap();
    let outcome: Result<(), Error> = lock
        .hold_async("k", |lease| async move {
            timeout(HANG, lease.lost_signal())
                .await
                .expect("the loss reached the function");
            Ok(())
        })
        .await;
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert_eq!(err.loss_reason(), Some(LossReason::Revoked));
}

// LOCK-05: a lease that ran out is never renewed: the manual lease's extend fails Lost, and the
// key held again has a larger fence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_05_an_expired_lease_is_never_renewed_on_the_server_store() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let lease = store.try_acquire("batch", S(1)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        lease.extend(S(5)).await.unwrap_err().kind(),
        ErrorKind::Lost
    );
    let again = store
        .try_acquire("batch", S(5))
        .await
        .unwrap()
        .expect("the expired lease freed the key");
    assert!(again.fence() > lease.fence());
    assert_eq!(lease.release().await.unwrap_err().kind(), ErrorKind::Lost);
    again.release().await.unwrap();
}

// LOCK-20: a key with a long line never delays another key: the free key is had while the
// busy key is still held and its 50 waiters still wait (a free key behind the busy key's line
// would never be had before its release). How long it took is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_20_keys_are_independent_on_the_server_store() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let lock = store.lock("l").open().unwrap();
    let held = lock.begin("busy", &HoldOptions::default()).await.unwrap();
    let waiters: Vec<_> = (0..50)
        .map(|_| {
            let lock = lock.clone();
            tokio::spawn(async move { lock.begin("busy", &HoldOptions::default()).await.map(drop) })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let asked = std::time::Instant::now();
    let other = timeout(HANG, lock.try_begin("free"))
        .await
        .expect("the free key answered while the busy one was held")
        .unwrap();
    println!("LOCK-20: the free key answered in {:?}", asked.elapsed());
    assert!(other.is_some());
    assert!(!held.lease().lost());
    assert!(waiters.iter().all(|w| !w.is_finished()), "a waiter ended");
    held.end().await.unwrap();
    for w in waiters {
        timeout(HANG, w).await.unwrap().unwrap().unwrap();
    }
}

// LOCK-13: bad options are refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_13_bad_options_never_reach_the_server() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let refused = store
        .lock("l")
        .ttl(Duration::from_millis(10))
        .open()
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidTtl);
    assert_eq!(
        store.try_acquire("", S(5)).await.unwrap_err().kind(),
        ErrorKind::EmptyName
    );
    assert!(store.holders(None).await.unwrap().is_empty());
}

/// LOCK-21's bound on a hold whose store was killed under it, from the kill:
/// the holder's deadline is at most `ttl − margin` after it (the grant or
/// renewal it counts from was sent before the kill), and a hold that waited
/// for its release, or for the store, would end a ttl or a connect timeout
/// (5 s) after that deadline. Half a ttl past the deadline tells the two
/// apart and leaves a loaded machine's scheduling a second (with a 2 s ttl).
fn lock_21_bound(lock: &leasehold::Lock) -> Duration {
    lock.ttl() - lock.margin() + lock.ttl() / 2
}

// LOCK-21: the store killed (kill -9) under a held lease: the function is
// told at the holder's deadline, and hold fails Lost as soon as the
// function ends, not a ttl later (the release of a lost lease never waits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_21_a_killed_store_fails_the_hold_at_the_deadline() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let ttl = S(2);
    let lock = store.lock("l").ttl(ttl).open().unwrap();
    let pid = server.pid();
    let killed_at = std::sync::Arc::new(std::sync::Mutex::new(None));
    let at = killed_at.clone();
    let outcome: Result<(), Error> = lock
        .hold_async("k", |lease| async move {
            support::server::send_signal(pid, 9);
            *at.lock().unwrap() = Some(std::time::Instant::now());
            timeout(HANG, lease.lost_signal())
                .await
                .expect("the loss reached the function");
            Ok(())
        })
        .await;
    let elapsed = killed_at
        .lock()
        .unwrap()
        .expect("the function ran")
        .elapsed();
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "{err}");
    let bound = lock_21_bound(&lock);
    println!("LOCK-21: hold returned {elapsed:?} after the kill (bound {bound:?})");
    assert!(
        elapsed < bound,
        "hold returned {elapsed:?} after the kill, ttl {ttl:?}: not at the deadline"
    );
}

// LOCK-21: a function that ends on its own while the store is gone: hold
// fails Lost by the holder's deadline, not after a release that cannot
// reach the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_21_an_unreachable_store_bounds_the_release_by_the_deadline() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let ttl = S(2);
    let lock = store.lock("l").ttl(ttl).open().unwrap();
    let pid = server.pid();
    let started = std::time::Instant::now();
    let outcome: Result<(), Error> = lock
        .hold_async("k", |_lease| async move {
            support::server::send_signal(pid, 9);
            Ok(())
        })
        .await;
    let elapsed = started.elapsed();
    let err = outcome.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "{err}");
    assert_eq!(err.loss_reason(), Some(LossReason::Expired));
    let bound = lock_21_bound(&lock);
    println!("LOCK-21: hold returned {elapsed:?} after the kill (bound {bound:?})");
    assert!(
        elapsed < bound,
        "hold returned {elapsed:?} after the kill, ttl {ttl:?}: not at the deadline"
    );
}

fn shard_keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("shard-{i}")).collect()
}

// LOCK-22: begin_many on the server store: 2,000 keys (several HoldMany
// frames), each its own lease with its own fence and its own loss (maxHold
// revokes every one, each told on its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_22_begin_many_on_the_server_store() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let (a, b) = (connect(&server.url()).await, connect(&server.url()).await);
    let keys = shard_keys(2_000);
    let lock = a.lock("shards").ttl(S(30)).open().unwrap();
    let held = lock
        .begin_many(&keys, &HoldOptions::default())
        .await
        .unwrap();
    let fences: std::collections::HashSet<u64> = held.iter().map(|h| h.lease().fence()).collect();
    assert_eq!(fences.len(), keys.len());
    assert!(held.iter().zip(&keys).all(|(h, k)| h.lease().key() == k));
    let other = b.lock("shards").ttl(S(30)).open().unwrap();
    for key in ["shard-0", "shard-1999"] {
        assert!(other.try_begin(key).await.unwrap().is_none(), "{key}");
    }
    for holding in held {
        holding.end().await.unwrap();
    }
    assert!(other.try_begin("shard-1999").await.unwrap().is_some());

    let capped = a
        .lock("capped")
        .ttl(S(1))
        .max_hold(Duration::from_millis(1500))
        .open()
        .unwrap();
    let held = capped
        .begin_many(&shard_keys(600), &HoldOptions::default())
        .await
        .unwrap();
    for holding in &held {
        timeout(HANG, holding.lease().lost_signal()).await.unwrap();
        assert_eq!(holding.lease().loss_reason(), Some(LossReason::Revoked));
    }
}

// LOCK-09: closing the server store loses every lease it holds (Closed) by
// the time `close` returns: each told by its renewal group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_09_closing_the_server_store_loses_its_leases_by_the_time_close_returns() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let lock = store.lock("l").ttl(S(30)).open().unwrap();
    let held = lock
        .begin_many(&shard_keys(500), &HoldOptions::default())
        .await
        .unwrap();
    store.close().await;
    for holding in &held {
        assert_eq!(holding.lease().loss_reason(), Some(LossReason::Closed));
    }
}

// LOCK-22: all or none across clients: a key another client holds past the
// wait fails the call, and every lease it took is released at once (long
// before its 30 s ttl could let it go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_22_begin_many_releases_what_it_took_when_one_key_fails() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let (a, b) = (connect(&server.url()).await, connect(&server.url()).await);
    let other = b.lock("shards").ttl(S(30)).open().unwrap();
    let taken = other
        .begin("shard-7", &HoldOptions::default())
        .await
        .unwrap();
    let lock = a.lock("shards").ttl(S(30)).open().unwrap();
    let options = HoldOptions {
        wait: Some(Duration::from_millis(500)),
        cancel: None,
    };
    let err = lock
        .begin_many(&shard_keys(10), &options)
        .await
        .err()
        .expect("a key was held past the wait");
    assert_eq!(err.kind(), ErrorKind::WaitTimeout);
    let quick = HoldOptions {
        wait: Some(S(5)),
        cancel: None,
    };
    for key in shard_keys(10).iter().filter(|k| *k != "shard-7") {
        let holding = other.begin(key, &quick).await.unwrap();
        holding.end().await.unwrap();
    }
    assert!(!taken.lease().lost());
    taken.end().await.unwrap();
}
