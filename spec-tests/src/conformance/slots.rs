//! The conformance checks of slot leases: the same rules on every
//! store, stamped by the store's own clock.

use std::time::Duration;

use leasehold::clock::Clock;
use leasehold::idgen::IdLayout;
use leasehold::slots::{AcquireResult, NamespaceSpec, Owner, SlotLease, SlotRequest};
use leasehold::{ErrorKind, RequestId};

use super::{Checked, Harness, NotPassed, Time, SHORT};

const SPEC: NamespaceSpec = NamespaceSpec {
    limit: 3,
    tolerance: Duration::from_millis(500),
    offset: 10,
    layout: IdLayout::DEFAULT,
};

/// A namespace of its own per check, so that checks on a shared store never meet.
struct Space {
    name: String,
}

impl Space {
    fn new() -> Space {
        Space {
            name: format!("conformance-{:032x}", RequestId::random().0),
        }
    }

    fn request(&self, owner: &Owner, ttl: Duration, preferred: Option<u32>) -> SlotRequest {
        SlotRequest {
            namespace: self.name.clone(),
            owner: owner.clone(),
            spec: SPEC,
            ttl,
            preferred,
        }
    }
}

fn owner(key: &str) -> Owner {
    Owner::new(key).expect("a valid owner key")
}

async fn acquire(h: &Harness, req: SlotRequest) -> Result<AcquireResult, NotPassed> {
    h.driver
        .slot_acquire(req)
        .await
        .map_err(|e| NotPassed::Failed(format!("slot acquire failed: {e}")))
}

async fn leased(h: &Harness, req: SlotRequest) -> Result<SlotLease, NotPassed> {
    match acquire(h, req).await? {
        AcquireResult::Leased(lease) => Ok(lease),
        AcquireResult::Exhausted => Err("expected a slot, got Exhausted".to_string().into()),
    }
}

async fn release(h: &Harness, lease: &SlotLease, last_issued: u64) -> Result<bool, NotPassed> {
    h.driver
        .slot_release(lease, last_issued)
        .await
        .map_err(|e| NotPassed::Failed(format!("slot release failed: {e}")))
}

async fn renew(
    h: &Harness,
    lease: &SlotLease,
    ttl: Duration,
) -> Result<Option<SlotLease>, NotPassed> {
    h.driver
        .slot_renew(lease, ttl)
        .await
        .map_err(|e| NotPassed::Failed(format!("slot renew failed: {e}")))
}

/// The store's time of day as the check can know it: exact on a virtual
/// clock, the local wall clock for a store on this machine.
fn store_now(h: &Harness) -> u64 {
    match &h.time {
        Time::Virtual(clock) => Clock::from(clock.clone()).unix_millis(),
        Time::Real => Clock::monotonic().unix_millis(),
    }
}

/// How far apart the store's stamp and [`store_now`] may be.
fn stamp_slack(h: &Harness) -> u64 {
    if h.time.is_virtual() {
        0
    } else {
        2_000
    }
}

const LONG: Duration = Duration::from_secs(60);

// SLOT-01: the owner's held slot comes back (same fence); `preferred` when
// free; a new instance of a key gets the slot its key held last; else the
// lowest free slot; none free is Exhausted; an expired slot is free again.
pub(super) async fn slot_acquire_order(h: Harness) -> Checked {
    let space = Space::new();
    let a = owner("a");
    let first = leased(&h, space.request(&a, LONG, Some(1))).await?;
    ensure!(
        first.slot() == 1,
        "preferred slot 1 was free, got {}",
        first.slot()
    );
    ensure!(
        first.node() == 11,
        "node {} is not slot + offset",
        first.node()
    );
    let again = leased(&h, space.request(&a, LONG, Some(2))).await?;
    ensure!(
        (again.slot(), again.fence()) == (first.slot(), first.fence()),
        "the owner's own slot did not come back: {again:?} after {first:?}"
    );
    let b_old = owner("b");
    let b_slot = leased(&h, space.request(&b_old, LONG, None)).await?;
    ensure!(
        b_slot.slot() == 0,
        "the lowest free slot was 0, got {}",
        b_slot.slot()
    );
    ensure!(
        release(&h, &b_slot, b_slot.floor()).await?,
        "a held lease did not release"
    );
    let c = leased(&h, space.request(&owner("c"), SHORT, None)).await?;
    ensure!(
        c.slot() == 0,
        "the lowest free slot was 0 again, got {}",
        c.slot()
    );
    let b_new = leased(&h, space.request(&owner("b"), LONG, None)).await?;
    ensure!(
        b_new.slot() == 2,
        "slot 0 is taken, so the key's last slot cannot come back: expected 2, got {}",
        b_new.slot()
    );
    let full = acquire(&h, space.request(&owner("d"), LONG, None)).await?;
    ensure!(
        full == AcquireResult::Exhausted,
        "every slot is held, yet: {full:?}"
    );
    h.time.pass(SHORT + SHORT / 5).await;
    let d = leased(&h, space.request(&owner("d"), LONG, None)).await?;
    ensure!(
        d.slot() == c.slot(),
        "the expired slot {} was not free: got {}",
        c.slot(),
        d.slot()
    );
    ensure!(release(&h, &b_new, 0).await?, "b did not release");
    ensure!(release(&h, &again, 0).await?, "a did not release");
    let b_third = leased(&h, space.request(&owner("b"), LONG, None)).await?;
    ensure!(
        b_third.slot() == 2,
        "a new instance of key b did not get its last slot 2 (1 is lower and free): got {}",
        b_third.slot()
    );
    Ok(())
}

// SLOT-02: a namespace's limit, tolerance, offset and ID layout are fixed by
// its first use.
pub(super) async fn slot_namespace_is_fixed(h: Harness) -> Checked {
    let space = Space::new();
    leased(&h, space.request(&owner("a"), LONG, None)).await?;
    for spec in [
        NamespaceSpec { limit: 4, ..SPEC },
        NamespaceSpec {
            tolerance: Duration::from_secs(1),
            ..SPEC
        },
        NamespaceSpec { offset: 0, ..SPEC },
        NamespaceSpec {
            layout: IdLayout::seconds(),
            ..SPEC
        },
    ] {
        let req = SlotRequest {
            spec,
            ..space.request(&owner("b"), LONG, None)
        };
        let got = h.driver.slot_acquire(req).await;
        ensure!(
            matches!(&got, Err(e) if e.kind() == ErrorKind::NamespaceMismatch),
            "{spec:?} after {SPEC:?}: {got:?}"
        );
    }
    Ok(())
}

// SLOT-03: the store's clock stamps the expiry (the request carries no
// time), and concurrent acquires each update one slot atomically: as many
// leases as slots, on distinct slots, the rest Exhausted.
pub(super) async fn slot_changes_are_atomic_and_store_stamped(h: Harness) -> Checked {
    let space = Space::new();
    let before = store_now(&h);
    let lease = leased(&h, space.request(&owner("a"), LONG, None)).await?;
    let want = before + 60_000;
    let slack = stamp_slack(&h);
    ensure!(
        lease.expires_at().abs_diff(want) <= slack,
        "expiry {} is not the store's now + ttl ({want} ± {slack})",
        lease.expires_at()
    );
    ensure!(
        lease.ceiling() == lease.expires_at() + 500,
        "ceiling {} is not expiry {} + tolerance",
        lease.ceiling(),
        lease.expires_at()
    );
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let driver = h.driver.clone();
            let req = space.request(&owner(&format!("r{i}")), LONG, Some(1));
            tokio::spawn(async move { driver.slot_acquire(req).await })
        })
        .collect();
    let mut slots = Vec::new();
    let mut exhausted = 0;
    for racer in racers {
        match racer.await.map_err(|e| format!("a racer panicked: {e}"))? {
            Ok(AcquireResult::Leased(l)) => slots.push(l.slot()),
            Ok(AcquireResult::Exhausted) => exhausted += 1,
            Err(e) => return Err(format!("a racer failed: {e}").into()),
        }
    }
    slots.sort_unstable();
    ensure!(
        slots == [1, 2] && exhausted == 6,
        "8 racers for 2 free slots got {slots:?} and {exhausted} Exhausted"
    );
    Ok(())
}

// SLOT-04: renewal keeps the fence, moves the expiry to the store's now + ttl
// and never back, keeps the ceiling at expiry + tolerance, and answers
// nothing once another owner took the slot.
pub(super) async fn slot_renew_keeps_the_fence(h: Harness) -> Checked {
    let space = Space::new();
    let a = leased(&h, space.request(&owner("a"), SHORT, Some(0))).await?;
    h.time.pass(SHORT / 2).await;
    let r = renew(&h, &a, SHORT)
        .await?
        .ok_or_else(|| "a held lease did not renew".to_string())?;
    ensure!(r.fence() == a.fence(), "renewal changed the fence");
    ensure!(
        r.expires_at() > a.expires_at(),
        "renewal did not move the expiry"
    );
    ensure!(
        r.ceiling() == r.expires_at() + 500,
        "renewed ceiling {} is not expiry {} + tolerance",
        r.ceiling(),
        r.expires_at()
    );
    let shorter = renew(&h, &r, Duration::from_secs(1))
        .await?
        .ok_or_else(|| "the second renewal failed".to_string())?;
    ensure!(
        shorter.expires_at() >= r.expires_at(),
        "a renewal moved the expiry back: {} < {}",
        shorter.expires_at(),
        r.expires_at()
    );
    h.time.pass(SHORT + SHORT / 5).await;
    let b = leased(&h, space.request(&owner("b"), LONG, Some(0))).await?;
    ensure!(b.slot() == 0, "b did not take the expired slot 0");
    let stale = renew(&h, &shorter, SHORT).await?;
    ensure!(
        stale.is_none(),
        "a lease whose slot b took renewed: {stale:?}"
    );
    Ok(())
}

// SLOT-05: release sets the next holder's floor to max(floor, min(last_issued,
// ceiling)); a stale lease does not release; a repeated release answers true.
pub(super) async fn slot_release_sets_the_floor(h: Harness) -> Checked {
    let space = Space::new();
    let a = leased(&h, space.request(&owner("a"), LONG, Some(0))).await?;
    let issued = a.expires_at() - 30_000;
    ensure!(release(&h, &a, issued).await?, "a did not release");
    ensure!(
        release(&h, &a, issued).await?,
        "a repeated release said false"
    );
    let b = leased(&h, space.request(&owner("b"), LONG, Some(0))).await?;
    ensure!(
        b.floor() == issued,
        "b's floor {} is not a's last issued {issued}",
        b.floor()
    );
    ensure!(
        !release(&h, &a, u64::MAX).await?,
        "a's stale lease released b's slot"
    );
    ensure!(release(&h, &b, u64::MAX).await?, "b did not release");
    let c = leased(&h, space.request(&owner("c"), LONG, Some(0))).await?;
    ensure!(
        c.floor() == b.ceiling(),
        "issued past the ceiling: c's floor {} is not b's ceiling {}",
        c.floor(),
        b.ceiling()
    );
    Ok(())
}

// SLOT-06: a slot taken after its lease expired unreleased starts at that
// lease's ceiling.
pub(super) async fn slot_expiry_leaves_the_ceiling(h: Harness) -> Checked {
    let space = Space::new();
    let a = leased(&h, space.request(&owner("a"), SHORT, Some(2))).await?;
    h.time.pass(SHORT + SHORT / 5).await;
    let b = leased(&h, space.request(&owner("b"), LONG, Some(2))).await?;
    ensure!(b.slot() == 2, "b did not take the expired slot");
    ensure!(
        b.floor() == a.ceiling(),
        "b's floor {} is not the expired lease's ceiling {}",
        b.floor(),
        a.ceiling()
    );
    Ok(())
}

// SLOT-08: slot leases take the store's fences, which only grow, mixed with
// the fences of keys (LOCK-02).
pub(super) async fn slot_fences_grow(h: Harness) -> Checked {
    let space = Space::new();
    let mut fences = Vec::new();
    for i in 0..3 {
        let lease = leased(&h, space.request(&owner(&format!("o{i}")), LONG, None)).await?;
        fences.push(lease.fence());
        let key = leasehold::driver::KeyName::new("conformance-slots", space.name.clone());
        let g = super::granted(&h, &super::request(&key, Some(LONG), false)).await?;
        fences.push(g.grant.fence);
        super::release(&h, g.grant.lease_id).await?;
        ensure!(
            release(&h, &lease, 0).await?,
            "a slot lease did not release"
        );
    }
    ensure!(
        fences.windows(2).all(|w| w[1] > w[0]),
        "fences do not grow: {fences:?}"
    );
    Ok(())
}
