//! The generator on the embedded store with a virtual clock: the IDGEN
//! contracts one rule at a time.

use std::collections::HashSet;
use std::time::Duration;

use super::{IdGenerator, IdLayout};
use crate::clock::{VirtualClock, VIRTUAL_UNIX_ORIGIN_MS};
use crate::error::ErrorKind;
use crate::{MemoryOptions, Store};

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

/// The default layout from the virtual clock's day.
const LAYOUT: IdLayout = IdLayout::DEFAULT.with_epoch(VIRTUAL_UNIX_ORIGIN_MS);

fn store() -> (VirtualClock, Store) {
    let clock = VirtualClock::new();
    let store = Store::memory_with(MemoryOptions::default().clock(clock.clone().into()));
    (clock, store)
}

async fn open(store: &Store, layout: IdLayout, max_lead: Duration) -> IdGenerator {
    store
        .ids("ids")
        .layout(layout)
        .max_lead(max_lead)
        .open()
        .await
        .unwrap()
}

// IDGEN-03: one generator's IDs strictly increase, from `next` and from
// batches alike, and a tick's sequence used up carries into the next tick.
#[tokio::test(flavor = "current_thread")]
async fn idgen_03_ids_strictly_increase_across_ticks() {
    let (clock, store) = store();
    let ids = open(
        &store,
        IdLayout::custom(41, 10, 2).with_epoch(VIRTUAL_UNIX_ORIGIN_MS),
        S(1),
    )
    .await;
    let mut all = vec![ids.next().unwrap()];
    let mut batch = [0; 7];
    for round in 0..50 {
        if round % 3 == 0 {
            assert_eq!(ids.next_into(&mut batch).unwrap(), 7);
            all.extend_from_slice(&batch);
        } else {
            all.push(ids.next_async().await.unwrap());
        }
        if round % 10 == 0 {
            clock.advance(MS(3)).await;
        }
    }
    all.extend(ids.take(20).await.unwrap());
    assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
    let ticks: HashSet<u64> = all.iter().map(|&id| ids.layout().parts(id).tick).collect();
    assert!(
        ticks.len() > 40,
        "4 IDs a tick carry into later ticks: {}",
        ticks.len()
    );
    assert!(all
        .iter()
        .all(|&id| ids.layout().parts(id).node == ids.node()));
}

// IDGEN-02: only ticks in (floor, ceiling]: the first tick issued starts
// after the floor the previous holder left, and however far ahead the lead
// allows, no tick starts past the ceiling.
#[tokio::test(flavor = "current_thread")]
async fn idgen_02_issues_only_within_floor_and_ceiling() {
    let (clock, store) = store();
    let layout = IdLayout::custom(41, 10, 4).with_epoch(VIRTUAL_UNIX_ORIGIN_MS);
    let first = open(&store, layout, Duration::from_secs(3600)).await;
    let ceiling = first.lease().ceiling();
    let mut last = 0;
    let mut buf = vec![0; 4096];
    loop {
        match first.next_into(&mut buf) {
            Ok(n) => last = buf[n - 1],
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::NotReady, "{e}");
                break;
            }
        }
    }
    let last_ms = layout.parts(last).timestamp_ms;
    assert!(
        last_ms <= ceiling && last_ms + 1 > ceiling,
        "stopped at {last_ms}, ceiling {ceiling}"
    );
    assert_eq!(first.last_issued(), last_ms);
    first.close().await.unwrap();
    let second = open(&store, layout, Duration::from_secs(3600)).await;
    assert_eq!(second.lease().slot(), first.lease().slot());
    assert_eq!(
        second.lease().floor(),
        last_ms,
        "the release passed the last tick on"
    );
    // The floor is the lease's ceiling: nothing until a renewal moves it on.
    assert_eq!(second.next().unwrap_err().kind(), ErrorKind::NotReady);
    clock.advance(S(4)).await;
    let next = layout.parts(second.next().unwrap());
    assert!(next.timestamp_ms > last_ms, "issued at the floor: {next:?}");
}

// IDGEN-02: sealed before it releases: no clone issues after `close`, and a
// generator dropped without `close` releases with what it issued.
#[tokio::test(flavor = "current_thread")]
async fn idgen_02_a_closed_generator_issues_nothing_from_any_clone() {
    let (clock, store) = store();
    let ids = open(&store, LAYOUT, S(1)).await;
    let clone = ids.clone();
    let issued = ids.next().unwrap();
    ids.close().await.unwrap();
    assert_eq!(clone.next().unwrap_err().kind(), ErrorKind::Lost);
    assert_eq!(
        clone.next_async().await.unwrap_err().kind(),
        ErrorKind::Lost
    );
    ids.close().await.unwrap();
    let again = open(&store, LAYOUT, S(1)).await;
    assert!(again.lease().floor() >= LAYOUT.parts(issued).timestamp_ms);
    let before_drop = again.next().unwrap();
    drop(again);
    clock.advance(MS(1)).await;
    let third = open(&store, LAYOUT, S(1)).await;
    assert!(third.lease().floor() >= LAYOUT.parts(before_drop).timestamp_ms);
    assert!(third.next().unwrap() > before_drop);
}

// IDGEN-02: the holder deadline is checked on the issuing path itself: a
// clock jumped past it (a starved renewal loop, a process resumed from SIGSTOP)
// stops issuing before any renewal loop ran, and `close` then fails `Lost`.
#[tokio::test(flavor = "current_thread")]
async fn idgen_02_a_deadline_that_came_stops_issuing_at_once() {
    let (clock, store) = store();
    let ids = open(&store, LAYOUT, S(1)).await;
    ids.next().unwrap();
    clock.jump(S(10));
    let err = ids.next().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost, "{err}");
    assert!(ids.lost());
    assert_eq!(ids.close().await.unwrap_err().kind(), ErrorKind::Lost);
}

// IDGEN-04: a floor ahead of the store's clock by more than the lead: the
// non-waiting call fails `NotReady`, the waiting one waits for the clock.
#[tokio::test(flavor = "current_thread")]
async fn idgen_04_a_floor_ahead_of_the_clock_is_not_ready_until_it_passes() {
    let (clock, store) = store();
    let ahead = open(&store, LAYOUT, S(5)).await;
    let mut buf = vec![0; 1 << 16];
    while ahead.next_into(&mut buf).is_ok() {}
    ahead.close().await.unwrap();
    let behind = open(&store, LAYOUT, MS(100)).await;
    let err = behind.next().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotReady, "{err}");
    let mut batch = [0; 3];
    assert_eq!(
        behind.next_into(&mut batch).unwrap_err().kind(),
        ErrorKind::NotReady
    );
    let waiting = tokio::spawn({
        let behind = behind.clone();
        async move { behind.next_async().await }
    });
    clock.advance(S(4)).await;
    assert!(!waiting.is_finished(), "issued with the floor still ahead");
    clock.advance(S(2)).await;
    let id = waiting.await.unwrap().unwrap();
    assert!(LAYOUT.parts(id).timestamp_ms > behind.lease().floor());
}

// IDGEN-04: a layout whose time range is used up fails `Overflow` on every call.
#[tokio::test(flavor = "current_thread")]
async fn idgen_04_a_used_up_time_range_overflows() {
    let (_clock, store) = store();
    let layout = IdLayout::custom(8, 10, 12).with_epoch(VIRTUAL_UNIX_ORIGIN_MS - 1000);
    let ids = open(&store, layout, S(1)).await;
    assert_eq!(ids.next().unwrap_err().kind(), ErrorKind::Overflow);
    assert_eq!(
        ids.next_async().await.unwrap_err().kind(),
        ErrorKind::Overflow
    );
    assert_eq!(ids.take(2).await.unwrap_err().kind(), ErrorKind::Overflow);
}

// IDGEN-01: generators of one namespace, opened, used and closed or dropped
// in turn and side by side, never issue an ID twice.
#[tokio::test(flavor = "current_thread")]
async fn idgen_01_generators_of_a_namespace_never_repeat() {
    let (clock, store) = store();
    let layout = IdLayout::custom(41, 2, 3).with_epoch(VIRTUAL_UNIX_ORIGIN_MS);
    let mut seen = HashSet::new();
    let mut live: Vec<IdGenerator> = Vec::new();
    for round in 0..40u64 {
        if live.len() < 4 {
            live.push(open(&store, layout, MS(20)).await);
        }
        for ids in &live {
            let mut buf = [0; 16];
            if let Ok(n) = ids.next_into(&mut buf) {
                for id in &buf[..n] {
                    assert!(seen.insert(*id), "{id} issued twice");
                }
            }
        }
        match round % 4 {
            0 => live.remove(0).close().await.unwrap(),
            2 => drop(live.remove(0)),
            _ => {}
        }
        clock.advance(MS(round % 3)).await;
    }
    assert!(seen.len() > 500, "{}", seen.len());
}

// Bad input: a layout that does not fit, a node range past the node bits.
#[tokio::test(flavor = "current_thread")]
async fn err_01_bad_layouts_fail_clearly() {
    let (_clock, store) = store();
    for layout in [
        IdLayout::custom(41, 10, 13),
        IdLayout::custom(0, 10, 12),
        IdLayout::DEFAULT.with_tick_ms(0),
    ] {
        let err = store.ids("bad").layout(layout).open().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{layout:?}: {err}");
    }
    let err = store
        .ids("bad")
        .limit(1024)
        .offset(1)
        .open()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    store.ids("fixed").layout(LAYOUT).open().await.unwrap();
    let err = store
        .ids("fixed")
        .layout(IdLayout::js_safe())
        .open()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NamespaceMismatch, "{err}");
}

// IDGEN-01: the store's wall clock stepped back while a generator holds its
// slot, and a generator opened after the step: nothing is issued twice, and
// the one held issues on, its clock tracked on the local monotonic clock.
#[tokio::test(flavor = "current_thread")]
async fn idgen_01_a_store_clock_stepped_back_repeats_nothing() {
    let (clock, store) = store();
    let virt = clock.clone();
    let held = open(&store, LAYOUT, MS(50)).await;
    let mut seen = HashSet::new();
    let mut buf = [0; 64];
    for _ in 0..20 {
        if let Ok(n) = held.next_into(&mut buf) {
            seen.extend(buf[..n].iter().copied());
        }
        clock.advance(MS(5)).await;
    }
    virt.set_wall_offset(-30_000);
    clock.advance(S(4)).await;
    for _ in 0..20 {
        let n = held.next_into(&mut buf).unwrap();
        for id in &buf[..n] {
            assert!(seen.insert(*id), "{id} issued twice after the step back");
        }
        clock.advance(MS(5)).await;
    }
    let last = held.last_issued();
    held.close().await.unwrap();
    let after = open(&store, LAYOUT, MS(50)).await;
    assert!(
        after.lease().floor() >= last,
        "the floor passed on covers the last tick"
    );
    assert_eq!(
        after.next().unwrap_err().kind(),
        ErrorKind::NotReady,
        "the clock is 30 s behind the floor"
    );
}
