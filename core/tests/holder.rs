//! The holder engine through the Rust API, on the embedded store and on its
//! renewal mode (leases that run out unless renewed), on a virtual clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leasehold::clock::{Clock, VirtualClock};
use leasehold::driver::{Capabilities, Driver, GiveUp, Grant, HoldAnswer, HoldRequest, HolderInfo};
use leasehold::slots::{AcquireResult, SlotLease, SlotRequest};
use leasehold::table::KeyName;
use leasehold::{
    CancellationToken, Error, ErrorKind, GroupId, HoldOptions, Holding, LeaseId, LossReason,
    MemoryDriver, MemoryOptions, RequestId, Store,
};

const S: fn(u64) -> Duration = Duration::from_secs;

fn virtual_store(renewal: bool) -> (VirtualClock, Store) {
    let clock = VirtualClock::new();
    let store = Store::memory_with(
        MemoryOptions::default()
            .clock(clock.clone().into())
            .renewal(renewal),
    );
    (clock, store)
}

fn holder_of(store: &Store, lock: &str, key: &str) -> Option<leasehold::table::KeyHolder> {
    store_memory(store)
        .table_holders(Some(lock))
        .into_iter()
        .find(|h| h.name == KeyName::new(lock, key))
}

/// Lets every task the previous step woke run.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

fn store_memory(store: &Store) -> &MemoryDriver {
    store.memory_driver().expect("an embedded store")
}

// LOCK-01, LOCK-11: a second holder waits; the release pushes the grant at once.
#[tokio::test]
async fn lock_01_second_holder_waits_then_gets_a_larger_fence() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let first = lock.begin("k", &HoldOptions::default()).await.unwrap();
    assert!(lock.try_begin("k").await.unwrap().is_none());
    let lock2 = lock.clone();
    let waiter = tokio::spawn(async move {
        lock2
            .begin("k", &HoldOptions::default())
            .await
            .map(|h| h.lease().fence())
    });
    tokio::task::yield_now().await;
    let f1 = first.lease().fence();
    first.end().await.unwrap();
    let f2 = waiter.await.unwrap().unwrap();
    assert!(f2 > f1);
}

// LOCK-04: the holder's deadline is the send time of the last good renewal + ttl - margin,
// strictly before the store's expiry.
#[tokio::test]
async fn lock_04_holder_deadline_precedes_store_expiry() {
    let (clock, store) = virtual_store(true);
    let lock = store.lock("l").ttl(S(10)).margin(S(2)).open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    assert_eq!(h.lease().remaining(), Some(S(8)));
    for _ in 0..5 {
        clock.advance(Duration::from_millis(3500)).await;
        let remaining = h.lease().remaining().unwrap();
        let store_expiry = holder_of(&store, "l", "k")
            .unwrap()
            .grant
            .expires_at
            .unwrap();
        let holder_deadline = clock.now() + remaining;
        assert!(
            holder_deadline < store_expiry,
            "{holder_deadline:?} >= {store_expiry:?}"
        );
        assert_eq!(store_expiry.saturating_since(holder_deadline), S(2));
    }
    h.end().await.unwrap();
}

// LOCK-04: a grant pushed after waiting in line keeps a deadline from the request's send time
// (the store granted it later); after a long wait it is renewed before the function starts.
// Either way the holder's deadline precedes the store's expiry, and renewal keeps the lease.
#[tokio::test]
async fn lock_04_waited_grants_keep_a_safe_deadline() {
    for waited in [2u64, 8] {
        let (clock, store) = virtual_store(true);
        let lock = store.lock("l").ttl(S(10)).margin(S(1)).open().unwrap();
        // The first holder's lock handle has another ttl, so the waiter's
        // renewal group has no renewal of its own to lean on.
        let other = store.lock("l").ttl(S(20)).open().unwrap();
        let first = other.begin("k", &HoldOptions::default()).await.unwrap();
        let l2 = lock.clone();
        let waiter = tokio::spawn(async move { l2.begin("k", &HoldOptions::default()).await });
        clock.advance(S(waited)).await;
        first.end().await.unwrap();
        let h = waiter.await.unwrap().unwrap();
        let store_expiry = holder_of(&store, "l", "k")
            .unwrap()
            .grant
            .expires_at
            .unwrap();
        let deadline = clock.now() + h.lease().remaining().unwrap();
        assert!(
            deadline < store_expiry,
            "waited {waited}s: {deadline:?} >= {store_expiry:?}"
        );
        if waited == 8 {
            assert_eq!(
                h.lease().remaining(),
                Some(S(9)),
                "renewed before the function started"
            );
        } else {
            assert_eq!(
                h.lease().remaining(),
                Some(S(7)),
                "the deadline from the request's send time"
            );
        }
        clock.advance(S(30)).await;
        assert!(
            !h.lease().lost(),
            "waited {waited}s: {:?}",
            h.lease().loss_reason()
        );
        h.end().await.unwrap();
    }
}

// LOCK-06: renewal every ttl/3 keeps a lease alive far past its ttl.
#[tokio::test]
async fn lock_06_background_renewal_keeps_the_lease() {
    let (clock, store) = virtual_store(true);
    let lock = store.lock("l").ttl(S(3)).open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    clock.advance(S(60)).await;
    assert!(!h.lease().lost());
    let expiry = holder_of(&store, "l", "k")
        .unwrap()
        .grant
        .expires_at
        .unwrap();
    assert!(expiry.saturating_since(clock.now()) >= S(2));
    h.end().await.unwrap();
}

// LOCK-05, LOCK-09: a lease whose renewals did not come in time is lost at
// the holder's deadline; the store's expiry frees the key, the lease is never
// renewed again, and a new hold gets a larger fence.
#[tokio::test]
async fn lock_05_lost_lease_is_not_renewed_and_rehold_is_new() {
    let (clock, store) = virtual_store(true);
    let lock = store.lock("l").ttl(S(3)).open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    let old_fence = h.lease().fence();
    let id = holder_of(&store, "l", "k").unwrap().grant.lease_id;
    // Time jumps past the ttl with no task running in between: no renewal was sent.
    clock.jump(S(5));
    settle().await;
    assert!(h.lease().lost());
    assert_eq!(h.lease().loss_reason(), Some(LossReason::Expired));
    assert!(holder_of(&store, "l", "k").is_none());
    assert_eq!(
        store.driver().renew(id, None).await.unwrap_err().kind(),
        ErrorKind::Lost
    );
    assert_eq!(h.end().await.unwrap_err().kind(), ErrorKind::Lost);
    let again = lock.begin("k", &HoldOptions::default()).await.unwrap();
    assert!(again.lease().fence() > old_fence);
    again.end().await.unwrap();
}

// LOCK-09: a lease read after its hold ended keeps what it was: one ended
// without a loss has no time left and is never lost after, however long it
// is kept (its old deadline passing included); one lost keeps its reason,
// and so does one whose loss the end itself found.
#[tokio::test]
async fn lock_09_a_lease_read_after_its_hold_ended_keeps_what_it_was() {
    let (clock, store) = virtual_store(true);
    let lock = store.lock("l").ttl(S(3)).open().unwrap();
    let ended = lock.begin("k", &HoldOptions::default()).await.unwrap();
    let lease = ended.lease().clone();
    assert!(lease.remaining().unwrap() > Duration::ZERO);
    ended.end().await.unwrap();
    assert_eq!(lease.remaining(), Some(Duration::ZERO));
    clock.jump(S(5));
    settle().await;
    assert!(!lease.lost());
    assert_eq!(lease.loss_reason(), None);
    assert_eq!(lease.remaining(), Some(Duration::ZERO));

    // Lost at the holder's deadline before the end: the end answers the loss.
    let late = lock.begin("k", &HoldOptions::default()).await.unwrap();
    let lease = late.lease().clone();
    clock.jump(S(5));
    assert_eq!(late.end().await.unwrap_err().kind(), ErrorKind::Lost);
    assert_eq!(lease.loss_reason(), Some(LossReason::Expired));
    assert_eq!(lease.remaining(), Some(Duration::ZERO));

    // Dropped without its end: let go, never lost.
    let (_, embedded) = virtual_store(false);
    let lock = embedded.lock("l").ttl(S(1)).max_hold(S(2)).open().unwrap();
    let dropped = lock.begin("k", &HoldOptions::default()).await.unwrap();
    let lease = dropped.lease().clone();
    assert_eq!(lease.remaining(), Some(S(2)));
    drop(dropped);
    assert_eq!(lease.remaining(), Some(Duration::ZERO));
    assert!(!lease.lost());
}

// LOCK-09, LOCK-10: loss reaches the running function at once, and hold fails Lost even though
// the function succeeded; the function's own error stays reachable.
#[tokio::test]
async fn lock_10_loss_fails_hold_and_keeps_function_error() {
    let (clock, store) = virtual_store(false);
    let lock = store.lock("l").ttl(S(1)).max_hold(S(2)).open().unwrap();
    let c = clock.clone();
    let ok: Result<u64, Error> = lock
        .hold_async("k", |lease| async move {
            tokio::select! {
                _ = lease.lost_signal() => {}
                _ = c.advance(S(3)) => {}
            }
            assert!(lease.lost());
            Ok(7)
        })
        .await;
    let err = ok.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert_eq!(err.loss_reason(), Some(LossReason::Revoked));
    let c = clock.clone();
    let failed: Result<(), Error> = lock
        .hold_async("k", |_lease| async move {
            c.advance(S(3)).await;
            Err(Error::new(ErrorKind::Unavailable, "the model timed out"))
        })
        .await;
    let err = failed.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert_eq!(
        err.cause().unwrap().to_string(),
        "Unavailable: the model timed out"
    );
}

// LOCK-11: the lease is released when the function returns, fails, panics or is cancelled.
#[tokio::test]
async fn lock_11_release_on_every_exit_path() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let free = |store: &Store| store_memory(store).held() == 0;

    lock.hold_async("k", |_| async { Ok::<_, Error>(()) })
        .await
        .unwrap();
    assert!(free(&store));

    let err: Result<(), Error> = lock
        .hold_async("k", |_| async {
            Err(Error::new(ErrorKind::Internal, "boom"))
        })
        .await;
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Internal);
    assert!(free(&store));

    let l2 = lock.clone();
    let panicked = tokio::spawn(async move {
        l2.hold_async("k", |_| async {
            panic!("the held function panics") as Result<(), Error>
        })
        .await
    })
    .await;
    assert!(panicked.is_err());
    tokio::task::yield_now().await;
    assert!(free(&store));

    let l3 = lock.clone();
    let task = tokio::spawn(async move {
        l3.hold_async("k", |_| async {
            std::future::pending::<Result<(), Error>>().await
        })
        .await
    });
    while store_memory(&store).held() == 0 {
        tokio::task::yield_now().await;
    }
    task.abort();
    let _ = task.await;
    tokio::task::yield_now().await;
    assert!(free(&store));
}

// LOCK-11: the blocking hold releases on return and on panic.
#[test]
fn lock_11_blocking_hold_releases_on_panic() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let fence = lock.hold("k", |l| Ok::<_, Error>(l.fence())).unwrap();
    assert!(fence > 0);
    let l2 = lock.clone();
    let joined =
        std::thread::spawn(move || l2.hold("k", |_| -> Result<(), Error> { panic!("boom") }))
            .join();
    assert!(joined.is_err());
    let next = lock.hold("k", |l| Ok::<_, Error>(l.fence())).unwrap();
    assert!(next > fence);
}

#[tokio::test]
async fn blocking_hold_in_async_code_is_refused() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let err = lock.hold("k", |_| Ok::<_, Error>(())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

// LOCK-17: try_hold runs nothing when the key is held.
#[tokio::test]
async fn lock_17_try_hold_runs_nothing_when_held() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    let ran = AtomicUsize::new(0);
    let got = lock
        .try_hold_async("k", |_| async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(())
        })
        .await
        .unwrap();
    assert!(got.is_none());
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    h.end().await.unwrap();
    assert!(
        lock.try_hold_async("k", |_| async { Ok::<_, Error>(1) })
            .await
            .unwrap()
            == Some(1)
    );
}

// LOCK-18: wait bounds time in line; the timed-out request leaves the line.
#[tokio::test]
async fn lock_18_wait_timeout_leaves_the_line() {
    let (clock, store) = virtual_store(false);
    let lock = store.lock("l").wait(S(2)).open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    let l2 = lock.clone();
    let waiting =
        tokio::spawn(async move { l2.begin("k", &HoldOptions::default()).await.map(|_| ()) });
    clock.advance(S(3)).await;
    let err = waiting.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WaitTimeout);
    h.end().await.unwrap();
    assert_eq!(
        store_memory(&store).held(),
        0,
        "the timed-out request was granted"
    );
}

// LOCK-18: cancelling a waiting hold leaves the line, and dropping a waiting hold does too.
#[tokio::test]
async fn lock_18_cancel_and_drop_leave_the_line() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    let cancel = CancellationToken::new();
    let opts = HoldOptions {
        wait: None,
        cancel: Some(cancel.clone()),
    };
    let l2 = lock.clone();
    let waiting = tokio::spawn(async move { l2.begin("k", &opts).await.map(|_| ()) });
    let l3 = lock.clone();
    let dropped =
        tokio::spawn(async move { l3.begin("k", &HoldOptions::default()).await.map(|_| ()) });
    settle().await;
    cancel.cancel();
    assert_eq!(
        waiting.await.unwrap().unwrap_err().kind(),
        ErrorKind::Cancelled
    );
    dropped.abort();
    let _ = dropped.await;
    settle().await;
    h.end().await.unwrap();
    settle().await;
    assert_eq!(
        store_memory(&store).held(),
        0,
        "a request that gave up was granted"
    );
}

// LOCK-18: a hold whose token was cancelled before the call sends nothing and fails Cancelled.
#[tokio::test]
async fn lock_18_a_cancelled_token_asks_for_nothing() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let opts = HoldOptions {
        wait: None,
        cancel: Some(cancel),
    };
    assert_eq!(
        lock.begin("k", &opts).await.err().unwrap().kind(),
        ErrorKind::Cancelled
    );
    assert!(
        lock.try_begin("k").await.unwrap().is_some(),
        "the cancelled hold took the key"
    );
}

// LOCK-18: many waiters give up while grants race them; no grant is ever leaked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_18_grant_racing_give_up_is_released() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    for round in 0..200 {
        let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
        let cancel = CancellationToken::new();
        let opts = HoldOptions {
            wait: None,
            cancel: Some(cancel.clone()),
        };
        let l2 = lock.clone();
        let waiting = tokio::spawn(async move { l2.begin("k", &opts).await });
        tokio::task::yield_now().await;
        let (end, _) = tokio::join!(h.end(), async { cancel.cancel() });
        end.unwrap();
        match waiting.await.unwrap() {
            Ok(holding) => holding.end().await.unwrap(),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Cancelled, "round {round}"),
        }
        for _ in 0..1000 {
            if store_memory(&store).held() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(
            store_memory(&store).held(),
            0,
            "round {round}: a grant leaked"
        );
    }
}

// LOCK-19: an embedded holder needs no renewal: an hour passes and nothing is lost.
#[tokio::test]
async fn lock_19_embedded_holder_needs_no_renewal() {
    let (clock, store) = virtual_store(false);
    let lock = store.lock("l").ttl(S(1)).open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    assert_eq!(h.lease().remaining(), None);
    clock.advance(S(3600)).await;
    assert!(!h.lease().lost());
    assert!(holder_of(&store, "l", "k")
        .unwrap()
        .grant
        .expires_at
        .is_none());
    h.end().await.unwrap();
}

// LOCK-13: bad ttl, maxHold and margin are refused before anything is sent; names are checked.
#[tokio::test]
async fn lock_13_bad_options_are_refused() {
    let store = Store::memory();
    let err = |b: leasehold::LockBuilder| b.open().unwrap_err().kind();
    assert_eq!(
        err(store.lock("l").ttl(Duration::from_millis(500))),
        ErrorKind::InvalidTtl
    );
    assert_eq!(err(store.lock("l").ttl(S(3601))), ErrorKind::InvalidTtl);
    assert_eq!(
        err(store.lock("l").ttl(S(10)).max_hold(S(5))),
        ErrorKind::InvalidTtl
    );
    assert_eq!(
        err(store.lock("l").ttl(S(10)).margin(S(5))),
        ErrorKind::InvalidTtl
    );
    assert_eq!(err(store.lock("")), ErrorKind::EmptyName);
    assert_eq!(
        err(store.lock(&"x".repeat(5000))),
        ErrorKind::InvalidArgument
    );
    let lock = store.lock("l").open().unwrap();
    assert_eq!(lock.ttl(), S(10));
    assert_eq!(
        lock.begin("", &HoldOptions::default())
            .await
            .err()
            .unwrap()
            .kind(),
        ErrorKind::EmptyName
    );
    assert_eq!(store_memory(&store).held(), 0);
}

// A closed store ends its leases (Closed) and refuses new calls; its
// holders know it by the time `close` returns.
#[tokio::test]
async fn closing_the_store_ends_leases() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    store.close().await;
    assert_eq!(h.lease().loss_reason(), Some(LossReason::Closed));
    assert_eq!(
        lock.begin("k", &HoldOptions::default())
            .await
            .err()
            .unwrap()
            .kind(),
        ErrorKind::Closed
    );
    assert_eq!(
        store.try_acquire("m", S(5)).await.unwrap_err().kind(),
        ErrorKind::Closed
    );
}

// LOCK-20: a key's line never delays another key.
#[tokio::test]
async fn lock_20_other_keys_are_not_delayed() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let held = lock.begin("a", &HoldOptions::default()).await.unwrap();
    let waiters: Vec<_> = (0..10)
        .map(|_| {
            let l = lock.clone();
            tokio::spawn(async move { l.begin("a", &HoldOptions::default()).await.map(drop) })
        })
        .collect();
    tokio::task::yield_now().await;
    let b = lock.try_begin("b").await.unwrap();
    assert!(b.is_some());
    held.end().await.unwrap();
    for w in waiters {
        w.await.unwrap().unwrap();
    }
}

// LOCK-06, LOCK-04: the leases one store handle holds with one ttl are
// renewed together, one renewal for all of them every ttl/3; each keeps a
// holder's deadline before the store's expiry, and a released lease is no
// longer renewed (its key goes to the next in line on time).
#[tokio::test]
async fn lock_06_leases_of_one_ttl_share_one_renewal() {
    let (clock, memory) = renewal_driver();
    let counting = Arc::new(Instrumented::new(memory.clone(), None));
    let store = Store::from_driver(counting.clone(), tokio::runtime::Handle::current());
    let holder_of = |_: &Store, lock: &str, key: &str| {
        memory
            .table_holders(Some(lock))
            .into_iter()
            .find(|h| h.name == KeyName::new(lock, key))
    };
    let lock = store.lock("l").ttl(S(9)).margin(S(1)).open().unwrap();
    let mut held = Vec::new();
    for i in 0..200 {
        held.push(
            lock.begin(&format!("k{i}"), &HoldOptions::default())
                .await
                .unwrap(),
        );
    }
    let released = held.pop().unwrap();
    released.end().await.unwrap();
    for _ in 0..6 {
        clock.advance(S(3)).await;
        let now = clock.now();
        for (i, h) in held.iter().enumerate() {
            assert!(!h.lease().lost(), "k{i}: {:?}", h.lease().loss_reason());
            let expiry = holder_of(&store, "l", &format!("k{i}"))
                .unwrap()
                .grant
                .expires_at
                .unwrap();
            let deadline = now + h.lease().remaining().unwrap();
            assert!(deadline < expiry, "k{i}: {deadline:?} >= {expiry:?}");
            assert!(h.lease().remaining().unwrap() >= S(5));
        }
    }
    assert!(holder_of(&store, "l", "k199").is_none());
    let renewals = counting.groups.load(Ordering::SeqCst);
    assert!(
        (5..=7).contains(&renewals),
        "{renewals} group renewals in 18 s at ttl 9 s"
    );
    assert_eq!(
        counting.leases.load(Ordering::SeqCst),
        0,
        "no lease renewed by id"
    );
    for h in held {
        h.end().await.unwrap();
    }
}

// LOCK-06, LOCK-04: a holder that takes one lease at a time, each after
// the last ended, keeps one renewal task: the group's task waits on after
// its last lease ends, and a lease that joins meanwhile is renewed on its
// own schedule, every ttl/3 from its grant, never later.
#[tokio::test]
async fn lock_06_a_lease_taken_after_the_last_ended_is_renewed_on_time() {
    let (clock, memory) = renewal_driver();
    let counting = Arc::new(Instrumented::new(memory, None));
    let store = Store::from_driver(counting.clone(), tokio::runtime::Handle::current());
    let lock = store.lock("l").ttl(S(9)).margin(S(1)).open().unwrap();
    // Granted at 0 (its group due for renewal at 3) and ended at once.
    lock.begin("a", &HoldOptions::default())
        .await
        .unwrap()
        .end()
        .await
        .unwrap();
    clock.advance(S(1)).await;
    // Granted at 1: due at 4, 7, 10, …; its deadline 8 s after each.
    let held = lock.begin("b", &HoldOptions::default()).await.unwrap();
    for _ in 0..20 {
        clock.advance(S(1)).await;
        let left = held.lease().remaining().unwrap();
        assert!(left >= S(5), "{left:?} left at {:?}", clock.now());
    }
    let renewals = counting.groups.load(Ordering::SeqCst);
    assert!(
        (6..=7).contains(&renewals),
        "{renewals} group renewals in 20 s at ttl 9 s"
    );
    held.end().await.unwrap();
}

// LOCK-04, LOCK-10: a grant answered after the holder's deadline (found by
// the chaos harness on etcd: a hold answered 3.5 s late with a 2 s ttl) is
// renewed before the function starts; when the store let the lease go
// meanwhile, the hold fails Lost and the function never runs: on a store
// that renews by group, and on one that renews by id.
#[tokio::test]
async fn lock_04_a_grant_answered_past_the_deadline_runs_nothing() {
    for group in [true, false] {
        let (clock, memory) = renewal_driver();
        let late = Arc::new(Instrumented {
            by_group: group,
            ..Instrumented::new(memory.clone(), Some((clock.clone(), S(12))))
        });
        let store = Store::from_driver(late.clone(), tokio::runtime::Handle::current());
        let lock = store.lock("l").ttl(S(9)).margin(S(1)).open().unwrap();
        let ran = AtomicUsize::new(0);
        let outcome = lock
            .hold_async("k", |_| async {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>(())
            })
            .await;
        let err = outcome.expect_err("a lease the store let go was held");
        assert_eq!(err.kind(), ErrorKind::Lost, "group {group}: {err}");
        assert_eq!(
            ran.load(Ordering::SeqCst),
            0,
            "group {group}: the function ran"
        );
        assert_eq!(
            late.leases.load(Ordering::SeqCst),
            1,
            "group {group}: one renewal first"
        );
    }
}

/// An embedded driver in renewal mode (leases run out unless renewed) on a
/// virtual clock, on the test's runtime.
fn renewal_driver() -> (VirtualClock, Arc<MemoryDriver>) {
    let clock = VirtualClock::new();
    let memory = Arc::new(MemoryDriver::new(
        MemoryOptions::default()
            .clock(clock.clone().into())
            .renewal(true),
        &tokio::runtime::Handle::current(),
    ));
    (clock, memory)
}

/// A store that counts the renewals it is asked for; given `late`, it
/// answers a hold late (the virtual clock moved on by that much before the
/// answer comes) and renews by id only, as the etcd store does.
struct Instrumented {
    inner: Arc<MemoryDriver>,
    groups: AtomicUsize,
    leases: AtomicUsize,
    late: Option<(VirtualClock, Duration)>,
    by_group: bool,
}

impl Instrumented {
    fn new(inner: Arc<MemoryDriver>, late: Option<(VirtualClock, Duration)>) -> Instrumented {
        Instrumented {
            inner,
            groups: AtomicUsize::new(0),
            leases: AtomicUsize::new(0),
            late,
            by_group: true,
        }
    }
}

#[async_trait::async_trait]
impl Driver for Instrumented {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            groups: self.by_group && self.inner.capabilities().groups,
            ..self.inner.capabilities()
        }
    }
    fn clock(&self) -> &Clock {
        self.inner.clock()
    }
    async fn hold(&self, request: HoldRequest) -> leasehold::Result<HoldAnswer> {
        let answer = self.inner.hold(request).await;
        if let Some((clock, by)) = &self.late {
            clock.advance(*by).await;
        }
        answer
    }
    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> leasehold::Result<Grant> {
        self.leases.fetch_add(1, Ordering::SeqCst);
        self.inner.renew(lease, ttl).await
    }
    async fn renew_group(&self, group: GroupId, ttl: Duration) -> leasehold::Result<()> {
        self.groups.fetch_add(1, Ordering::SeqCst);
        self.inner.renew_group(group, ttl).await
    }
    async fn release(&self, lease: LeaseId) -> leasehold::Result<()> {
        self.inner.release(lease).await
    }
    async fn give_up(&self, request: RequestId) -> leasehold::Result<GiveUp> {
        self.inner.give_up(request).await
    }
    async fn holders(&self, lock: Option<&str>) -> leasehold::Result<Vec<HolderInfo>> {
        self.inner.holders(lock).await
    }
    async fn holder(&self, name: &KeyName) -> leasehold::Result<Option<HolderInfo>> {
        self.inner.holder(name).await
    }
    async fn slot_acquire(&self, request: SlotRequest) -> leasehold::Result<AcquireResult> {
        self.inner.slot_acquire(request).await
    }
    async fn slot_renew(
        &self,
        lease: &SlotLease,
        ttl: Duration,
    ) -> leasehold::Result<Option<SlotLease>> {
        self.inner.slot_renew(lease, ttl).await
    }
    async fn slot_release(&self, lease: &SlotLease, last_issued: u64) -> leasehold::Result<bool> {
        self.inner.slot_release(lease, last_issued).await
    }
    async fn close(&self) {
        self.inner.close().await
    }
}

fn shard_keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("shard-{i}")).collect()
}

// LOCK-22: begin_many holds every key, each a lease of its own with its own
// fence, in the order asked; each ends on its own.
#[tokio::test]
async fn lock_22_begin_many_holds_every_key_with_its_own_lease() {
    let (_clock, store) = virtual_store(true);
    let lock = store.lock("shards").open().unwrap();
    let keys = shard_keys(1_000);
    let held = lock
        .begin_many(&keys, &HoldOptions::default())
        .await
        .unwrap();
    assert_eq!(held.len(), keys.len());
    let mut fences = std::collections::HashSet::new();
    for (holding, key) in held.iter().zip(&keys) {
        assert_eq!(holding.lease().key(), key);
        assert!(fences.insert(holding.lease().fence()));
        assert!(!holding.lease().lost());
    }
    assert_eq!(
        store_memory(&store).table_holders(Some("shards")).len(),
        1_000
    );
    let mut held = held.into_iter();
    held.next().unwrap().end().await.unwrap();
    assert!(holder_of(&store, "shards", "shard-0").is_none());
    assert!(holder_of(&store, "shards", "shard-1").is_some());
    for holding in held {
        holding.end().await.unwrap();
    }
    assert!(store_memory(&store)
        .table_holders(Some("shards"))
        .is_empty());
    let none: [&str; 0] = [];
    assert!(lock
        .begin_many(&none, &HoldOptions::default())
        .await
        .unwrap()
        .is_empty());
}

// LOCK-22: all or none: a key that cannot be had within the wait fails the
// call, and every lease it took is released; the key's own holder keeps it.
#[tokio::test]
async fn lock_22_begin_many_is_all_or_none() {
    let (clock, store) = virtual_store(true);
    let lock = store.lock("shards").open().unwrap();
    let other = lock
        .begin("shard-3", &HoldOptions::default())
        .await
        .unwrap();
    let keys = shard_keys(6);
    let options = HoldOptions {
        wait: Some(S(5)),
        cancel: None,
    };
    let lock2 = lock.clone();
    let keys2 = keys.clone();
    let call =
        tokio::spawn(async move { lock2.begin_many(&keys2, &options).await.map(|h| h.len()) });
    settle().await;
    assert!(
        holder_of(&store, "shards", "shard-0").is_some(),
        "the free keys are held meanwhile"
    );
    clock.advance(S(6)).await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WaitTimeout);
    settle().await;
    let holders = store_memory(&store).table_holders(Some("shards"));
    assert_eq!(holders.len(), 1, "{holders:?}");
    assert_eq!(holders[0].grant.fence, other.lease().fence());
    assert!(!other.lease().lost());
    other.end().await.unwrap();
}

// LOCK-22, LOCK-01: a key in line is granted when its holder lets it go, and
// the call returns once every key is held; cancelling leaves every line.
#[tokio::test]
async fn lock_22_begin_many_waits_in_line_and_can_be_cancelled() {
    let (_clock, store) = virtual_store(true);
    let lock = store.lock("shards").open().unwrap();
    let other = lock
        .begin("shard-1", &HoldOptions::default())
        .await
        .unwrap();
    let before = other.lease().fence();
    let keys = shard_keys(3);
    let (lock2, keys2) = (lock.clone(), keys.clone());
    let call = tokio::spawn(async move { lock2.begin_many(&keys2, &HoldOptions::default()).await });
    settle().await;
    assert!(!call.is_finished());
    other.end().await.unwrap();
    let held = tokio::time::timeout(S(5), call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(held[1].lease().fence() > before);
    let cancel = CancellationToken::new();
    let options = HoldOptions {
        wait: None,
        cancel: Some(cancel.clone()),
    };
    let more = shard_keys(5);
    let lock3 = lock.clone();
    let call =
        tokio::spawn(async move { lock3.begin_many(&more, &options).await.map(|h| h.len()) });
    settle().await;
    assert!(holder_of(&store, "shards", "shard-4").is_some());
    cancel.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    settle().await;
    assert!(holder_of(&store, "shards", "shard-4").is_none());
    for holding in held {
        holding.end().await.unwrap();
    }
    assert!(store_memory(&store)
        .table_holders(Some("shards"))
        .is_empty());
}

// LOCK-22, ERR-01: a key named twice fails InvalidArgument, an empty key
// EmptyName, and nothing is held.
#[tokio::test]
async fn lock_22_begin_many_refuses_a_key_named_twice() {
    let store = Store::memory();
    let lock = store.lock("shards").open().unwrap();
    for (keys, kind) in [
        (vec!["a", "b", "a"], ErrorKind::InvalidArgument),
        (vec!["a", ""], ErrorKind::EmptyName),
    ] {
        let err = lock
            .begin_many(&keys, &HoldOptions::default())
            .await
            .err()
            .expect("refused");
        assert_eq!(err.kind(), kind, "{err}");
    }
    assert!(store_memory(&store).table_holders(None).is_empty());
}

// LOCK-22, LOCK-10, LOCK-11: hold_many_async runs the function holding every
// key, ends them all afterwards, and fails Lost when any lease was lost,
// keeping the function's own outcome as the cause; the blocking form too.
#[tokio::test]
async fn lock_22_hold_many_ends_every_lease_and_reports_a_loss() {
    let (clock, store) = virtual_store(true);
    let lock = store
        .lock("shards")
        .ttl(S(2))
        .max_hold(S(5))
        .open()
        .unwrap();
    let keys = shard_keys(3);
    let fences = lock
        .hold_many_async(&keys, |leases| async move {
            assert_eq!(leases.len(), 3);
            Ok::<_, Error>(leases.iter().map(|l| l.fence()).collect::<Vec<_>>())
        })
        .await
        .unwrap();
    assert_eq!(fences.len(), 3);
    assert!(store_memory(&store).table_holders(None).is_empty());
    let clock2 = clock.clone();
    let err = lock
        .hold_many_async(&keys, |leases| async move {
            clock2.advance(S(6)).await;
            assert!(leases.iter().all(|l| l.lost()));
            Ok::<_, Error>(())
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert_eq!(err.loss_reason(), Some(LossReason::Revoked));
    settle().await;
    assert!(store_memory(&store).table_holders(None).is_empty());
}

// LOCK-22: the blocking hold_many holds every key while the function runs on
// this thread and releases them all after it.
#[test]
fn lock_22_blocking_hold_many_releases_every_key() {
    let store = Store::memory();
    let lock = store.lock("shards").open().unwrap();
    let keys = shard_keys(4);
    let held = lock
        .hold_many(&keys, |leases| {
            Ok::<_, Error>(
                leases
                    .iter()
                    .map(|l| l.key().to_owned())
                    .collect::<Vec<_>>(),
            )
        })
        .unwrap();
    assert_eq!(held, keys);
    assert!(store_memory(&store).table_holders(None).is_empty());
}

// LOCK-22, LOCK-18: a wait of zero bounds only the time in line: free keys
// are had (the fuzz target ffi_input found them refused WaitTimeout), and a
// held one fails the call at once, leaving the free ones unheld.
#[tokio::test]
async fn lock_22_begin_many_with_a_zero_wait_takes_free_keys() {
    let store = Store::memory();
    let lock = store.lock("shards").open().unwrap();
    let zero = HoldOptions {
        wait: Some(Duration::ZERO),
        cancel: None,
    };
    let held = lock.begin_many(&shard_keys(3), &zero).await.unwrap();
    assert_eq!(held.len(), 3);
    let more = ["shard-9", "shard-1"];
    let err = lock
        .begin_many(&more, &zero)
        .await
        .err()
        .expect("shard-1 is held");
    assert_eq!(err.kind(), ErrorKind::WaitTimeout);
    settle().await;
    assert!(holder_of(&store, "shards", "shard-9").is_none());
    Holding::end_all(held).await.unwrap();
}

// A hold's future stays small: waiting in line, a renewal before the
// start and what stops an ask early (a cancel token, a wait bound) are
// boxed, so that the future of a hold had at once, with what a binding
// adds to it, fits the allocator's fast cache of small blocks when the
// binding boxes it to poll (glibc's tcache: blocks up to 1,032 bytes;
// the C ABI's own test checks its box). It was 2,160 bytes, then 976.
#[test]
fn a_holds_future_stays_under_800_bytes() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let options = HoldOptions::default();
    let begin = lock.begin("k", &options);
    assert!(
        std::mem::size_of_val(&begin) <= 800,
        "{} bytes",
        std::mem::size_of_val(&begin)
    );
    let try_begin = lock.try_begin("k");
    assert!(
        std::mem::size_of_val(&try_begin) <= 800,
        "{} bytes",
        std::mem::size_of_val(&try_begin)
    );
}
