//! The Rust API end to end on the embedded store.

use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::{Error, ErrorKind, HoldOptions, MemoryOptions, Store};

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

// LOCK-12: maxHold revokes on the virtual clock; hold fails Lost afterwards.
#[tokio::test]
async fn lock_12_max_hold_revokes() {
    let clock = VirtualClock::new();
    let store = Store::memory_with(MemoryOptions::default().clock(clock.clone().into()));
    let lock = store
        .lock("l")
        .ttl(Duration::from_secs(1))
        .max_hold(Duration::from_secs(5))
        .open()
        .unwrap();
    let c = clock.clone();
    let res: Result<(), Error> = lock
        .hold_async("k", |lease| async move {
            c.advance(Duration::from_secs(6)).await;
            assert!(lease.lost());
            Ok(())
        })
        .await;
    assert_eq!(res.unwrap_err().kind(), ErrorKind::Lost);
}

// LOCK-06: renewal keeps a lease alive past its ttl on a store whose leases run out.
#[tokio::test]
async fn lock_06_renewal_keeps_the_lease() {
    let clock = VirtualClock::new();
    let store = Store::memory_with(
        MemoryOptions::default()
            .clock(clock.clone().into())
            .renewal(true),
    );
    let lock = store.lock("l").ttl(Duration::from_secs(3)).open().unwrap();
    let h = lock.begin("k", &HoldOptions::default()).await.unwrap();
    clock.advance(Duration::from_secs(30)).await;
    assert!(!h.lease().lost());
    h.end().await.unwrap();
}

#[test]
fn blocking_hold_works() {
    let store = Store::memory();
    let lock = store.lock("l").open().unwrap();
    let f = lock.hold("k", |l| Ok::<_, Error>(l.fence())).unwrap();
    assert!(f > 0);
}
