//! The slot table's rules, on explicit store times (no clock, no sleeping).

use std::time::Duration;

use super::{
    AcquireResult, NamespaceSpec, Owner, SlotLease, SlotLeaseParts, SlotRequest, SlotTable,
};
use crate::error::ErrorKind;
use crate::idgen::IdLayout;

const T0: u64 = 1_000_000;
const TTL: Duration = Duration::from_secs(10);
const SPEC: NamespaceSpec = NamespaceSpec {
    limit: 4,
    tolerance: Duration::from_secs(2),
    offset: 100,
    layout: IdLayout::DEFAULT,
};

struct Rig {
    table: SlotTable,
    fence: u64,
}

impl Rig {
    fn new() -> Rig {
        Rig {
            table: SlotTable::new(0),
            fence: 0,
        }
    }

    fn request(owner: &Owner, preferred: Option<u32>) -> SlotRequest {
        SlotRequest {
            namespace: "ids".into(),
            owner: owner.clone(),
            spec: SPEC,
            ttl: TTL,
            preferred,
        }
    }

    fn try_acquire(&mut self, owner: &Owner, preferred: Option<u32>, now: u64) -> AcquireResult {
        let fence = &mut self.fence;
        self.table
            .acquire(&Rig::request(owner, preferred), now, || {
                *fence += 1;
                Ok(*fence)
            })
            .unwrap()
    }

    fn acquire(&mut self, owner: &Owner, preferred: Option<u32>, now: u64) -> SlotLease {
        self.try_acquire(owner, preferred, now)
            .lease()
            .expect("a free slot")
    }
}

fn owner(key: &str, instance: &str) -> Owner {
    Owner::with_instance(key, instance).unwrap()
}

// SLOT-01: the lowest free slot first; the node adds the offset.
#[test]
fn slot_01_lowest_free_slot() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0);
    let b = rig.acquire(&owner("b", "1"), None, T0);
    assert_eq!((a.slot(), b.slot()), (0, 1));
    assert_eq!((a.node(), b.node()), (100, 101));
    assert!(b.fence() > a.fence());
}

// SLOT-01: the slot the owner already holds comes back, same fence, renewed.
#[test]
fn slot_01_the_owners_slot_comes_back() {
    let mut rig = Rig::new();
    let me = owner("a", "1");
    rig.acquire(&owner("x", "1"), None, T0);
    let first = rig.acquire(&me, None, T0);
    let again = rig.acquire(&me, Some(3), T0 + 500);
    assert_eq!((again.slot(), again.fence()), (first.slot(), first.fence()));
    assert_eq!(again.expires_at(), T0 + 500 + 10_000);
}

// SLOT-01: `preferred` before the key's last slot and the lowest free one.
#[test]
fn slot_01_preferred_when_free() {
    let mut rig = Rig::new();
    assert_eq!(rig.acquire(&owner("a", "1"), Some(2), T0).slot(), 2);
    // Held: the lowest free slot instead.
    assert_eq!(rig.acquire(&owner("b", "1"), Some(2), T0).slot(), 0);
}

// SLOT-01: a new instance of a key gets the slot its key held last, if free.
#[test]
fn slot_01_the_keys_last_slot() {
    let mut rig = Rig::new();
    let x = rig.acquire(&owner("x", "1"), None, T0);
    let old = rig.acquire(&owner("svc", "old"), None, T0);
    assert_eq!(old.slot(), 1);
    assert!(rig.table.release(&old, T0 + 1, T0 + 1));
    assert!(rig.table.release(&x, T0 + 1, T0 + 1));
    // Slot 0 is free and lower, but the key held 1 last.
    assert_eq!(rig.acquire(&owner("svc", "new"), None, T0 + 2).slot(), 1);
}

// SLOT-01: none free is Exhausted, an outcome; an expired slot is free again.
#[test]
fn slot_01_exhausted_then_expired_is_free() {
    let mut rig = Rig::new();
    for i in 0..4 {
        rig.acquire(&owner(&format!("o{i}"), "1"), None, T0);
    }
    assert_eq!(
        rig.try_acquire(&owner("late", "1"), None, T0 + 9_999),
        AcquireResult::Exhausted
    );
    let late = rig.acquire(&owner("late", "1"), None, T0 + 10_000);
    assert_eq!(late.slot(), 0);
}

// SLOT-01: a preferred slot outside the namespace is bad input, not a silent choice.
#[test]
fn slot_01_preferred_outside_the_limit_is_refused() {
    let mut rig = Rig::new();
    let err = rig
        .table
        .acquire(&Rig::request(&owner("a", "1"), Some(4)), T0, || Ok(1))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

// SLOT-02: the first use fixes limit, tolerance, offset and ID layout.
#[test]
fn slot_02_first_use_fixes_the_namespace() {
    let mut rig = Rig::new();
    rig.acquire(&owner("a", "1"), None, T0);
    for other in [
        NamespaceSpec { limit: 8, ..SPEC },
        NamespaceSpec {
            tolerance: Duration::from_secs(3),
            ..SPEC
        },
        NamespaceSpec { offset: 0, ..SPEC },
        NamespaceSpec {
            layout: IdLayout::seconds(),
            ..SPEC
        },
    ] {
        let req = SlotRequest {
            spec: other,
            ..Rig::request(&owner("b", "1"), None)
        };
        let err = rig.table.acquire(&req, T0, || Ok(99)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NamespaceMismatch, "{other:?}");
    }
    assert_eq!(rig.table.namespace("ids"), Some(SPEC));
}

// SLOT-02: a namespace restored from a journal keeps its parameters; the
// offset does not change which slot is chosen.
#[test]
fn slot_02_restored_namespace_and_offset() {
    let mut table = SlotTable::new(0);
    let zero = NamespaceSpec { offset: 0, ..SPEC };
    table.restore_namespace("ids", zero);
    let req = Rig::request(&owner("a", "1"), None);
    let err = table.acquire(&req, T0, || Ok(1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NamespaceMismatch);
    let req = SlotRequest { spec: zero, ..req };
    let lease = table.acquire(&req, T0, || Ok(1)).unwrap().lease().unwrap();
    assert_eq!((lease.slot(), lease.node()), (0, 0));
}

// SLOT-03: the store's now stamps every change, and it never goes back:
// a clock that steps back does not shorten a lease.
#[test]
fn slot_03_store_time_never_goes_back() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0 + 5_000);
    assert_eq!(a.expires_at(), T0 + 15_000);
    let renewed = rig.table.renew(&a, TTL, T0).unwrap().unwrap();
    assert_eq!(renewed.expires_at(), T0 + 15_000);
    let b = rig.acquire(&owner("b", "1"), None, T0);
    assert_eq!(b.expires_at(), T0 + 15_000);
}

// SLOT-04: renewal keeps the fence, moves expiry to now + ttl (never back),
// the ceiling to expiry + tolerance, and repeats harmlessly.
#[test]
fn slot_04_renew() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0);
    assert_eq!((a.expires_at(), a.ceiling()), (T0 + 10_000, T0 + 12_000));
    let r = rig.table.renew(&a, TTL, T0 + 3_000).unwrap().unwrap();
    assert_eq!(r.fence(), a.fence());
    assert_eq!((r.expires_at(), r.ceiling()), (T0 + 13_000, T0 + 15_000));
    let shorter = rig
        .table
        .renew(&r, Duration::from_secs(1), T0 + 3_000)
        .unwrap()
        .unwrap();
    assert_eq!(shorter.expires_at(), T0 + 13_000);
    let again = rig.table.renew(&a, TTL, T0 + 3_000).unwrap().unwrap();
    assert_eq!(again, r);
}

// SLOT-04: a lease whose slot another owner took, or that was released,
// renews to nothing, and an expired lease nobody took still renews.
#[test]
fn slot_04_renew_answers_none_when_no_longer_held() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0);
    let renewed = rig.table.renew(&a, TTL, T0 + 11_000).unwrap().unwrap();
    assert_eq!(renewed.fence(), a.fence());
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), Some(0), T0);
    let b = rig.acquire(&owner("b", "1"), Some(0), T0 + 10_000);
    assert_eq!(b.slot(), 0);
    assert_eq!(rig.table.renew(&a, TTL, T0 + 10_001).unwrap(), None);
    assert!(rig.table.release(&b, 0, T0 + 10_002));
    assert_eq!(rig.table.renew(&b, TTL, T0 + 10_003).unwrap(), None);
}

// SLOT-05: the next holder's floor is max(floor, min(last_issued, ceiling)).
#[test]
fn slot_05_release_sets_the_next_floor() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0);
    assert!(rig.table.release(&a, T0 + 4_000, T0 + 4_000));
    let b = rig.acquire(&owner("b", "1"), None, T0 + 4_001);
    assert_eq!((b.slot(), b.floor()), (0, T0 + 4_000));
    // Issued past the ceiling (a broken holder): the floor stops at the ceiling.
    assert!(rig.table.release(&b, u64::MAX, T0 + 5_000));
    let c = rig.acquire(&owner("c", "1"), None, T0 + 5_001);
    assert_eq!(c.floor(), b.ceiling());
    // Issued less than the floor: the floor stays.
    assert!(rig.table.release(&c, 7, T0 + 5_002));
    let d = rig.acquire(&owner("d", "1"), None, T0 + 5_003);
    assert_eq!(d.floor(), b.ceiling());
}

// SLOT-05: a stale lease does not release; the same release twice answers true twice.
#[test]
fn slot_05_release_checks_owner_and_fence() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), Some(0), T0);
    let b = rig.acquire(&owner("b", "1"), Some(0), T0 + 10_000);
    assert!(!rig.table.release(&a, T0 + 9_000, T0 + 10_001));
    assert!(rig.table.release(&b, T0 + 10_001, T0 + 10_001));
    assert!(rig.table.release(&b, T0 + 10_001, T0 + 10_002));
    assert!(!rig.table.release(&a, T0 + 10_001, T0 + 10_002));
    // b took the slot from an expired lease: its floor was a's ceiling already.
    let c = rig.acquire(&owner("c", "1"), Some(0), T0 + 10_003);
    assert_eq!(c.floor(), a.ceiling());
}

// SLOT-06: taking a slot whose lease expired unreleased starts above its ceiling.
#[test]
fn slot_06_expired_lease_leaves_its_ceiling_as_floor() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0);
    let b = rig.acquire(&owner("b", "1"), Some(a.slot()), T0 + 10_000);
    assert_eq!(b.slot(), a.slot());
    assert_eq!(b.floor(), a.ceiling());
    assert!(b.ceiling() > b.floor());
}

// SLOT-06: a table made after a restart starts every slot above the
// largest ceiling its last run gave.
#[test]
fn slot_06_base_floor_after_restart() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0);
    let mut after = SlotTable::new(rig.table.max_ceiling());
    let req = Rig::request(&owner("b", "1"), None);
    let b = after
        .acquire(&req, T0 + 1, || Ok(50))
        .unwrap()
        .lease()
        .unwrap();
    assert_eq!(b.floor(), a.ceiling());
}

// SLOT-08: every new slot lease takes the store's next fence; the owner's
// own slot coming back keeps its fence.
#[test]
fn slot_08_fences_come_from_the_store() {
    let mut rig = Rig::new();
    let mut last = 0;
    for i in 0..4 {
        let lease = rig.acquire(&owner(&format!("o{i}"), "1"), None, T0);
        assert!(lease.fence() > last);
        last = lease.fence();
    }
    assert_eq!(rig.fence, 4);
}

// ERR-03: every parameter out of range is refused with its code.
#[test]
fn err_03_bad_slot_requests() {
    let mut rig = Rig::new();
    let base = Rig::request(&owner("a", "1"), None);
    let cases = [
        (
            SlotRequest {
                spec: NamespaceSpec { limit: 0, ..SPEC },
                ..base.clone()
            },
            ErrorKind::InvalidArgument,
        ),
        (
            SlotRequest {
                spec: NamespaceSpec {
                    limit: super::MAX_LIMIT + 1,
                    ..SPEC
                },
                ..base.clone()
            },
            ErrorKind::InvalidArgument,
        ),
        (
            SlotRequest {
                spec: NamespaceSpec {
                    offset: u32::MAX,
                    ..SPEC
                },
                ..base.clone()
            },
            ErrorKind::InvalidArgument,
        ),
        (
            SlotRequest {
                spec: NamespaceSpec {
                    tolerance: Duration::from_secs(3601),
                    ..SPEC
                },
                ..base.clone()
            },
            ErrorKind::InvalidTtl,
        ),
        (
            SlotRequest {
                ttl: Duration::from_millis(10),
                ..base.clone()
            },
            ErrorKind::InvalidTtl,
        ),
        (
            SlotRequest {
                namespace: String::new(),
                ..base.clone()
            },
            ErrorKind::EmptyName,
        ),
    ];
    for (req, kind) in cases {
        let err = rig.table.acquire(&req, T0, || Ok(1)).unwrap_err();
        assert_eq!(err.kind(), kind, "{req:?}");
    }
    assert_eq!(
        Owner::with_instance("", "1").unwrap_err().kind(),
        ErrorKind::EmptyName
    );
    assert!(Owner::new("k").unwrap().instance().len() == 32);
}

// SLOT-04, SLOT-05: a lease kept as parts and made again renews and
// releases as the lease did; one made up with another fence does neither.
#[test]
fn slot_04_a_lease_made_again_from_its_parts() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "1"), None, T0);
    let again = SlotLease::from_parts(a.clone().into_parts()).unwrap();
    assert_eq!(again, a);
    let forged = SlotLease::from_parts(SlotLeaseParts {
        fence: a.fence() + 1,
        ..a.clone().into_parts()
    })
    .unwrap();
    assert_eq!(rig.table.renew(&forged, TTL, T0 + 1_000).unwrap(), None);
    assert!(!rig.table.release(&forged, T0 + 1_000, T0 + 1_000));
    assert!(rig.table.renew(&again, TTL, T0 + 1_000).unwrap().is_some());
    assert!(rig.table.release(&again, T0 + 1_000, T0 + 1_000));

    let bad = |namespace: &str, slot: u32, offset: u32| {
        SlotLease::from_parts(SlotLeaseParts {
            namespace: namespace.into(),
            slot,
            offset,
            ..a.clone().into_parts()
        })
        .unwrap_err()
        .kind()
    };
    assert_eq!(bad("", 0, 0), ErrorKind::EmptyName);
    assert_eq!(bad("ids", u32::MAX, 1), ErrorKind::InvalidArgument);
}

// The live page's overview: held slots with their owner key (never the
// instance), an expired one free with the floor its next holder gets.
#[test]
fn overview_shows_held_and_expired_slots() {
    let mut rig = Rig::new();
    let a = rig.acquire(&owner("a", "secret-1"), None, T0);
    rig.acquire(&owner("b", "secret-2"), None, T0 + 5_000);
    let rows = rig.table.overview(T0 + 12_000);
    assert_eq!(rows.len(), 1);
    let ns = &rows[0];
    assert_eq!((ns.name.as_str(), ns.limit, ns.offset), ("ids", 4, 100));
    let (s0, s1) = (&ns.slots[0], &ns.slots[1]);
    assert_eq!((s0.slot, s0.owner.as_deref(), s0.fence), (0, None, None));
    assert_eq!(
        s0.floor,
        a.ceiling(),
        "an expired slot's floor covers its ceiling"
    );
    assert_eq!((s1.owner.as_deref(), s1.fence), (Some("b"), Some(2)));
    assert_eq!(s1.expires_in, Some(Duration::from_secs(3)));
    assert_eq!(s1.ceiling, Some(T0 + 5_000 + 12_000));
}
