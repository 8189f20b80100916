//! Slot leases through `Store::slots` on the embedded store, on a
//! virtual clock whose time of day the store stamps (SLOT-03).

use std::time::Duration;

use leasehold::clock::{Clock, VirtualClock};
use leasehold::slots::{AcquireResult, Owner};
use leasehold::{ErrorKind, LossReason, MemoryOptions, Store};

const S: fn(u64) -> Duration = Duration::from_secs;

fn store() -> (VirtualClock, Store) {
    let clock = VirtualClock::new();
    let store = Store::memory_with(MemoryOptions::default().clock(clock.clone().into()));
    (clock, store)
}

// SLOT-01, SLOT-03, SLOT-06: through the Rust API, a lease is stamped by the
// store's clock; once the clock passes its expiry another owner takes the
// slot, with the old ceiling as its floor.
#[tokio::test]
async fn slot_01_slot_03_slot_06_expiry_on_the_store_clock() {
    let (clock, store) = store();
    let ids = store
        .slots("ids")
        .limit(1)
        .ttl(S(10))
        .tolerance(S(2))
        .open()
        .unwrap();
    let a = ids
        .acquire(&Owner::new("a").unwrap(), None)
        .await
        .unwrap()
        .lease()
        .unwrap();
    let now = Clock::from(clock.clone()).unix_millis();
    assert_eq!((a.expires_at(), a.ceiling()), (now + 10_000, now + 12_000));
    let b = Owner::new("b").unwrap();
    assert_eq!(
        ids.acquire(&b, None).await.unwrap(),
        AcquireResult::Exhausted
    );
    clock.advance(S(10)).await;
    let taken = ids.acquire(&b, None).await.unwrap().lease().unwrap();
    assert_eq!(taken.floor(), a.ceiling());
    assert_eq!(ids.renew(&a).await.unwrap(), None);
    assert!(!ids.release(&a, 0).await.unwrap());
}

// SLOT-04, SLOT-05: renew keeps the fence; release hands the floor on.
#[tokio::test]
async fn slot_04_slot_05_renew_then_release() {
    let (clock, store) = store();
    let ids = store.slots("ids").limit(4).ttl(S(10)).open().unwrap();
    let me = Owner::with_instance("svc", "pid-1").unwrap();
    let a = ids.acquire(&me, Some(3)).await.unwrap().lease().unwrap();
    assert_eq!(a.slot(), 3);
    clock.advance(S(4)).await;
    let r = ids.renew(&a).await.unwrap().unwrap();
    assert_eq!(r.fence(), a.fence());
    assert_eq!(r.expires_at(), a.expires_at() + 4_000);
    assert!(ids.release(&r, r.expires_at() - 1).await.unwrap());
    let next = ids
        .acquire(&Owner::new("other").unwrap(), Some(3))
        .await
        .unwrap()
        .lease()
        .unwrap();
    assert_eq!(next.floor(), r.expires_at() - 1);
    assert!(next.fence() > a.fence());
}

// ERR-03: bad options are refused when the namespace is opened, each with its code.
#[tokio::test]
async fn err_03_bad_slot_options() {
    let (_, store) = store();
    let cases = [
        (store.slots(""), ErrorKind::EmptyName),
        (store.slots("ids").limit(0), ErrorKind::InvalidArgument),
        (
            store.slots("ids").ttl(Duration::from_millis(5)),
            ErrorKind::InvalidTtl,
        ),
        (store.slots("ids").tolerance(S(7200)), ErrorKind::InvalidTtl),
        (
            store.slots("ids").timeout(Duration::ZERO),
            ErrorKind::InvalidTtl,
        ),
        (
            store.slots("ids").offset(u32::MAX),
            ErrorKind::InvalidArgument,
        ),
    ];
    for (builder, kind) in cases {
        assert_eq!(builder.open().unwrap_err().kind(), kind);
    }
    let ids = store.slots("ids").limit(2).open().unwrap();
    let err = ids
        .acquire(&Owner::new("a").unwrap(), Some(2))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

// ERR-01: a closed store fails slot calls `Closed`.
#[tokio::test]
async fn err_01_slots_on_a_closed_store() {
    let (_, store) = store();
    let ids = store.slots("ids").open().unwrap();
    let lease = ids
        .acquire(&Owner::new("a").unwrap(), None)
        .await
        .unwrap()
        .lease()
        .unwrap();
    store.close().await;
    assert_eq!(
        ids.renew(&lease).await.unwrap_err().kind(),
        ErrorKind::Closed
    );
    assert_eq!(
        store.slots("ids").open().unwrap_err().kind(),
        ErrorKind::Closed
    );
}

// SLOT-04, SLOT-05: a held slot is renewed in the background (same fence,
// later expiry), and its end releases it with the largest timestamp issued.
#[tokio::test]
async fn slot_04_slot_05_a_held_slot_is_renewed_and_hands_on_its_issued() {
    let (clock, store) = store();
    let ids = store.slots("ids").limit(2).ttl(S(10)).open().unwrap();
    let me = Owner::new("svc").unwrap();
    let holding = ids.begin(&me, None).await.unwrap().unwrap();
    let held = holding.held().clone();
    let first = held.lease();
    for _ in 0..6 {
        clock.advance(S(5)).await;
    }
    assert!(!held.lost(), "{:?}", held.loss_reason());
    assert_eq!(held.fence(), first.fence());
    assert!(held.lease().expires_at() >= first.expires_at() + 25_000);
    held.issued(first.floor() + 7).unwrap();
    held.issued(first.floor() + 3).unwrap();
    holding.end().await.unwrap();
    let after = held.issued(first.floor() + 9).unwrap_err();
    assert_eq!(
        after.kind(),
        ErrorKind::Lost,
        "recorded after the release: {after}"
    );
    let next = ids
        .acquire(&Owner::new("other").unwrap(), Some(first.slot()))
        .await
        .unwrap()
        .lease()
        .unwrap();
    assert_eq!(next.floor(), first.floor() + 7);
}

// A held slot whose renewal did not come before the holder's deadline
// (send time + ttl − margin) is lost, and the work's result becomes `Lost`.
#[tokio::test]
async fn a_held_slot_past_its_deadline_is_lost() {
    let (clock, store) = store();
    let ids = store.slots("ids").limit(1).ttl(S(10)).open().unwrap();
    let other = ids.clone();
    let result = ids
        .hold_async(&Owner::new("a").unwrap(), None, |held| async move {
            // The keeper gets no chance to renew before the slot expires.
            clock.jump(S(11));
            let taken = other.acquire(&Owner::new("b").unwrap(), None).await?;
            assert!(matches!(taken, AcquireResult::Leased(_)));
            clock.advance(S(1)).await;
            held.lost_signal().await;
            assert_eq!(held.loss_reason(), Some(LossReason::Expired));
            Ok::<_, leasehold::Error>(())
        })
        .await;
    assert_eq!(result.unwrap_err().kind(), ErrorKind::Lost);
}

// A held slot whose renewal answers nothing (released behind its holder's
// back) is lost at the renewal, with the work's own error as the cause.
#[tokio::test]
async fn a_held_slot_whose_renewal_answers_nothing_is_lost() {
    let (clock, store) = store();
    let ids = store.slots("ids").limit(1).ttl(S(9)).open().unwrap();
    let behind = ids.clone();
    let result = ids
        .hold_async(&Owner::new("a").unwrap(), None, |held| async move {
            assert!(behind.release(&held.lease(), 0).await?);
            clock.advance(S(3)).await;
            held.lost_signal().await;
            assert_eq!(held.loss_reason(), Some(LossReason::Unknown));
            Err::<(), _>(leasehold::Error::new(ErrorKind::Internal, "the work's own"))
        })
        .await;
    let err = result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert!(std::error::Error::source(&err).is_some());
}

// A held slot read after its holding ended keeps what it was: no time
// left, and never lost after, its old deadline passing included.
#[tokio::test]
async fn a_held_slot_read_after_its_holding_ended_keeps_what_it_was() {
    let (clock, store) = store();
    let ids = store.slots("ids").limit(1).ttl(S(10)).open().unwrap();
    let holding = ids
        .begin(&Owner::new("a").unwrap(), None)
        .await
        .unwrap()
        .unwrap();
    let held = holding.held().clone();
    assert!(held.remaining() > Duration::ZERO);
    holding.end().await.unwrap();
    assert_eq!(held.remaining(), Duration::ZERO);
    clock.jump(S(11));
    assert!(!held.lost());
    assert_eq!(held.loss_reason(), None);
}

// SLOT-01: holding when every slot is held runs nothing.
#[tokio::test]
async fn slot_01_hold_when_exhausted_runs_nothing() {
    let (_, store) = store();
    let ids = store.slots("ids").limit(1).open().unwrap();
    let _first = ids.begin(&Owner::new("a").unwrap(), None).await.unwrap();
    let ran = ids
        .hold_async(&Owner::new("b").unwrap(), None, |_| async {
            Ok::<_, leasehold::Error>(())
        })
        .await
        .unwrap();
    assert_eq!(ran, None);
}

// A dropped holding releases its slot.
#[tokio::test]
async fn a_dropped_slot_holding_releases() {
    let (_, store) = store();
    let ids = store.slots("ids").limit(1).open().unwrap();
    drop(ids.begin(&Owner::new("a").unwrap(), None).await.unwrap());
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    let b = ids.acquire(&Owner::new("b").unwrap(), None).await.unwrap();
    assert!(matches!(b, AcquireResult::Leased(_)));
}

// A held slot is lost (`Closed`) by the time its store's close returns, as a held key is.
#[tokio::test]
async fn a_held_slot_is_lost_when_the_store_closes() {
    let (_, store) = store();
    let ids = store.slots("ids").open().unwrap();
    let holding = ids
        .begin(&Owner::new("a").unwrap(), None)
        .await
        .unwrap()
        .unwrap();
    let ended = ids
        .begin(&Owner::new("b").unwrap(), None)
        .await
        .unwrap()
        .unwrap();
    ended.end().await.unwrap();
    store.close().await;
    assert_eq!(holding.held().loss_reason(), Some(LossReason::Closed));
    assert_eq!(holding.end().await.unwrap_err().kind(), ErrorKind::Lost);
}
