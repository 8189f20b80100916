//! MANUAL-06 across threads: one manual lease used from several OS threads
//! at once (the scenario `manual-06-one-lease-many-tasks` shows it across
//! tasks of one thread).

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ErrorKind, ManualLease, Store};

fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

// MANUAL-06: a lease is Send + Sync; concurrent extends all succeed; concurrent
// releases all succeed, and the lease is released exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn manual_06_one_lease_from_many_threads() {
    assert_send_sync::<ManualLease>();
    let store = Store::memory();
    for round in 0..50 {
        let name = format!("batch-{round}");
        let lease = store
            .try_acquire(&name, Duration::from_secs(60))
            .await
            .unwrap()
            .expect("a free name");
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let mut calls = Vec::new();
        for i in 0..8 {
            let (lease, barrier) = (lease.clone(), barrier.clone());
            calls.push(tokio::spawn(async move {
                barrier.wait().await;
                if i % 2 == 0 {
                    lease.extend(Duration::from_secs(60)).await
                } else {
                    lease.release().await
                }
            }));
        }
        for call in calls {
            match call.await.unwrap() {
                Ok(()) => {}
                // An extend that came after a release finds the lease released.
                Err(e) if e.kind() == ErrorKind::Lost => {}
                Err(e) => panic!("round {round}: {e}"),
            }
        }
        let releases: Vec<_> = (0..8)
            .map(|_| {
                let lease = lease.clone();
                tokio::spawn(async move { lease.release().await })
            })
            .collect();
        for r in releases {
            r.await
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: a later release: {e}"));
        }
        let next = store
            .try_acquire(&name, Duration::from_secs(60))
            .await
            .unwrap();
        let next = next.unwrap_or_else(|| panic!("round {round}: the lease was not released"));
        next.release().await.unwrap();
    }
}

// MANUAL-06, MANUAL-04: releases racing on fresh leases: every one succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn manual_06_concurrent_releases_all_succeed() {
    let store = Store::memory();
    for round in 0..100 {
        let lease = store
            .try_acquire("x", Duration::from_secs(60))
            .await
            .unwrap()
            .expect("a free name");
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (lease, barrier) = (lease.clone(), barrier.clone());
                let handle = tokio::runtime::Handle::current();
                std::thread::spawn(move || {
                    barrier.wait();
                    handle.block_on(lease.release())
                })
            })
            .collect();
        for t in threads {
            t.join()
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: a concurrent release failed: {e}"));
        }
    }
}
