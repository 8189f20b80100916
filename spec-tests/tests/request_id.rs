//! LOCK-03 through the store's own driver: a hold request asked again with
//! the same request id is answered with the lease it already got, or keeps
//! its place in line. (The conformance suite checks the same of every driver;
//! this is the embedded store as `Store` builds it.)

use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::driver::{HoldAnswer, HoldRequest, KeyName};
use leasehold::{MemoryOptions, RequestId, Store};

fn store() -> Store {
    Store::memory_with(
        MemoryOptions::default()
            .clock(VirtualClock::new().into())
            .renewal(true),
    )
}

fn request(key: &str, id: RequestId) -> HoldRequest {
    HoldRequest {
        name: KeyName::new("l", key),
        request_id: id,
        ttl: Some(Duration::from_secs(10)),
        max_hold: None,
        queue: true,
        group: None,
    }
}

// LOCK-03: the same request id twice yields one lease: same id, same fence.
#[tokio::test]
async fn lock_03_a_retried_request_gets_the_same_lease() {
    let store = store();
    let driver = store.driver();
    let id = RequestId::random();
    let HoldAnswer::Granted(first) = driver.hold(request("k", id)).await.unwrap() else {
        panic!("a free key was not granted");
    };
    let HoldAnswer::Granted(again) = driver.hold(request("k", id)).await.unwrap() else {
        panic!("the retried request was not answered with its grant");
    };
    assert_eq!(again.grant.lease_id, first.grant.lease_id);
    assert_eq!(again.grant.fence, first.grant.fence);
    assert_eq!(store.memory_driver().unwrap().held(), 1);
    let other = driver.hold(HoldRequest {
        queue: false,
        ..request("k", RequestId::random())
    });
    assert!(matches!(other.await.unwrap(), HoldAnswer::NotHeld));
    driver.release(first.grant.lease_id).await.unwrap();
    assert_eq!(store.memory_driver().unwrap().held(), 0);
}

// LOCK-03: a retried request that waits keeps its place in line, and is
// granted once, before the request that came after it.
#[tokio::test]
async fn lock_03_a_retried_waiting_request_keeps_its_place() {
    let store = store();
    let driver = store.driver();
    let HoldAnswer::Granted(holder) = driver
        .hold(request("k", RequestId::random()))
        .await
        .unwrap()
    else {
        panic!("a free key was not granted");
    };
    let waiter = RequestId::random();
    let HoldAnswer::Queued {
        waiting: _lost_answer,
        ..
    } = driver.hold(request("k", waiter)).await.unwrap()
    else {
        panic!("a held key did not queue");
    };
    let HoldAnswer::Queued { waiting: retry, .. } =
        driver.hold(request("k", waiter)).await.unwrap()
    else {
        panic!("the retried request did not keep its place");
    };
    let HoldAnswer::Queued {
        waiting: mut behind,
        ..
    } = driver
        .hold(request("k", RequestId::random()))
        .await
        .unwrap()
    else {
        panic!("a held key did not queue");
    };
    assert_eq!(
        store.memory_driver().unwrap().waiting(),
        2,
        "one request, one place"
    );
    driver.release(holder.grant.lease_id).await.unwrap();
    let granted = retry.await.unwrap().unwrap();
    assert!(granted.grant.fence > holder.grant.fence);
    assert!(behind.try_recv().is_err(), "the later request went first");
    let HoldAnswer::Granted(again) = driver.hold(request("k", waiter)).await.unwrap() else {
        panic!("the retried request was not answered with its grant");
    };
    assert_eq!(again.grant.lease_id, granted.grant.lease_id);
    driver.release(granted.grant.lease_id).await.unwrap();
    assert!(behind.await.unwrap().is_ok());
}
