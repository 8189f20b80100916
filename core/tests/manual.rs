//! Manual leases on the embedded store, on a virtual clock.

use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::{CancellationToken, ErrorKind, HoldOptions, MemoryOptions, Store};

const S: fn(u64) -> Duration = Duration::from_secs;

fn store(push: bool) -> (VirtualClock, Store) {
    let clock = VirtualClock::new();
    let store = Store::memory_with(
        MemoryOptions::default()
            .clock(clock.clone().into())
            .push(push),
    );
    (clock, store)
}

// MANUAL-01: try_acquire answers at once: a lease, or None when held.
#[tokio::test]
async fn manual_01_try_acquire_answers_at_once() {
    let (_, store) = store(true);
    let a = store
        .try_acquire("refresh", S(60))
        .await
        .unwrap()
        .expect("free");
    assert!(store.try_acquire("refresh", S(60)).await.unwrap().is_none());
    a.release().await.unwrap();
    assert!(store.try_acquire("refresh", S(60)).await.unwrap().is_some());
}

// MANUAL-02: acquire is woken by the pushed release; its ttl starts at the grant.
#[tokio::test]
async fn manual_02_acquire_is_woken_by_the_push() {
    let (clock, store) = store(true);
    let a = store.try_acquire("refresh", S(60)).await.unwrap().unwrap();
    let s2 = store.clone();
    let waiting =
        tokio::spawn(async move { s2.acquire("refresh", S(5), &HoldOptions::default()).await });
    clock.advance(S(30)).await;
    a.release().await.unwrap();
    let b = waiting.await.unwrap().unwrap();
    assert!(b.fence() > a.fence());
    clock.advance(S(4)).await;
    b.extend(S(5))
        .await
        .expect("the ttl started at the grant, not at the call");
}

// MANUAL-02: on a store that cannot push, acquire polls (jittered backoff, 10 ms to 250 ms) and
// its wait bound is separate from the ttl.
#[tokio::test]
async fn manual_02_acquire_polls_where_the_store_cannot_push() {
    let (clock, store) = store(false);
    let a = store.try_acquire("refresh", S(2)).await.unwrap().unwrap();
    let s2 = store.clone();
    let opts = HoldOptions {
        wait: Some(S(10)),
        cancel: None,
    };
    let waiting = tokio::spawn(async move { s2.acquire("refresh", S(60), &opts).await });
    clock.advance(Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished());
    clock.advance(Duration::from_millis(800)).await;
    let b = waiting.await.unwrap().unwrap();
    assert!(b.fence() > a.fence());

    let s3 = store.clone();
    let opts = HoldOptions {
        wait: Some(S(1)),
        cancel: None,
    };
    let timed_out = tokio::spawn(async move { s3.acquire("refresh", S(60), &opts).await });
    clock.advance(S(2)).await;
    assert_eq!(
        timed_out.await.unwrap().unwrap_err().kind(),
        ErrorKind::WaitTimeout
    );
}

// MANUAL-02, LOCK-18: a cancelled acquire leaves the line.
#[tokio::test]
async fn manual_02_cancelled_acquire_leaves_the_line() {
    let (_, store) = store(true);
    let a = store.try_acquire("refresh", S(60)).await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let opts = HoldOptions {
        wait: None,
        cancel: Some(cancel.clone()),
    };
    let s2 = store.clone();
    let waiting = tokio::spawn(async move { s2.acquire("refresh", S(60), &opts).await });
    tokio::task::yield_now().await;
    cancel.cancel();
    assert_eq!(
        waiting.await.unwrap().unwrap_err().kind(),
        ErrorKind::Cancelled
    );
    a.release().await.unwrap();
    assert!(store.try_acquire("refresh", S(60)).await.unwrap().is_some());
}

// MANUAL-03: extend sets now + d; on an expired lease it fails Lost; bad d fails InvalidTtl.
#[tokio::test]
async fn manual_03_extend_sets_now_plus_d() {
    let (clock, store) = store(true);
    let a = store.try_acquire("refresh", S(10)).await.unwrap().unwrap();
    clock.advance(S(8)).await;
    a.extend(S(5)).await.unwrap();
    clock.advance(S(4)).await;
    a.extend(S(1)).await.expect("now + 5s had not passed");
    assert_eq!(
        a.extend(Duration::ZERO).await.unwrap_err().kind(),
        ErrorKind::InvalidTtl
    );
    assert_eq!(
        a.extend(S(7200)).await.unwrap_err().kind(),
        ErrorKind::InvalidTtl
    );
    clock.advance(S(2)).await;
    assert_eq!(a.extend(S(5)).await.unwrap_err().kind(), ErrorKind::Lost);
}

// MANUAL-04, LOCK-05: release of a lost lease fails Lost once and spares the newer holder;
// later calls succeed and do nothing.
#[tokio::test]
async fn manual_04_release_after_loss() {
    let (clock, store) = store(true);
    let a = store.try_acquire("refresh", S(5)).await.unwrap().unwrap();
    clock.advance(S(6)).await;
    let b = store
        .try_acquire("refresh", S(60))
        .await
        .unwrap()
        .expect("expired lease frees the key");
    assert!(b.fence() > a.fence());
    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::Lost);
    a.release().await.unwrap();
    a.release().await.unwrap();
    assert!(
        store.try_acquire("refresh", S(60)).await.unwrap().is_none(),
        "b was released by a"
    );
    b.release().await.unwrap();
    b.release().await.unwrap();
    assert_eq!(b.extend(S(5)).await.unwrap_err().kind(), ErrorKind::Lost);
}

// MANUAL-04: a loss learnt by extend is still reported once by release.
#[tokio::test]
async fn manual_04_loss_seen_by_extend_is_reported_by_release_once() {
    let (clock, store) = store(true);
    let a = store.try_acquire("refresh", S(5)).await.unwrap().unwrap();
    clock.advance(S(6)).await;
    assert_eq!(a.extend(S(5)).await.unwrap_err().kind(), ErrorKind::Lost);
    assert_eq!(a.release().await.unwrap_err().kind(), ErrorKind::Lost);
    a.release().await.unwrap();
}

// MANUAL-05: empty names, bad ttls; a second acquire from the same caller contends.
#[tokio::test]
async fn manual_05_bad_input_and_no_reentrance() {
    let (_, store) = store(true);
    assert_eq!(
        store.try_acquire("", S(5)).await.unwrap_err().kind(),
        ErrorKind::EmptyName
    );
    assert_eq!(
        store
            .try_acquire("x", Duration::ZERO)
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidTtl
    );
    assert_eq!(
        store.try_acquire("x", S(3601)).await.unwrap_err().kind(),
        ErrorKind::InvalidTtl
    );
    let _a = store.try_acquire("x", S(5)).await.unwrap().unwrap();
    assert!(store.try_acquire("x", S(5)).await.unwrap().is_none());
}

// MANUAL-06: one lease used from many tasks at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_06_lease_is_safe_across_tasks() {
    let store = Store::memory();
    let a = store.try_acquire("x", S(60)).await.unwrap().unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let a = a.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    a.extend(S(60)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let releases: Vec<_> = (0..16)
        .map(|_| {
            let a = a.clone();
            tokio::spawn(async move { a.release().await })
        })
        .collect();
    for r in releases {
        r.await
            .unwrap()
            .expect("a release racing a confirmed release succeeds");
    }
    assert!(store.try_acquire("x", S(60)).await.unwrap().is_some());
}

// MANUAL-07: manual leases carry fences that grow, shared with the locks' fences.
#[tokio::test]
async fn manual_07_manual_leases_have_growing_fences() {
    let (_, store) = store(true);
    let lock = store.lock("x").open().unwrap();
    let mut last = 0;
    for _ in 0..5 {
        let m = store.try_acquire("x", S(5)).await.unwrap().unwrap();
        assert!(m.fence() > last);
        last = m.fence();
        let h = lock
            .try_begin("x")
            .await
            .unwrap()
            .expect("a lock's key is apart from manual leases");
        assert!(h.lease().fence() > last);
        last = h.lease().fence();
        h.end().await.unwrap();
        m.release().await.unwrap();
    }
}
