//! The slots of every namespace, and the four rules of slot leases: which slot
//! an acquire takes, how a renewal moves the expiry and ceiling, what a
//! release leaves as the next holder's floor, and what an expired lease leaves.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{AcquireResult, NamespaceSpec, Owner, SlotLease, SlotRequest};
use crate::error::{Error, ErrorKind, Result};
use crate::overview::{NamespaceRow, SlotRow};

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A slot's holder, current or last: its owner, its fence, the floor it
/// started above, and its expiry and ceiling as last renewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SlotHolder {
    owner: Owner,
    pub(crate) fence: u64,
    floor: u64,
    expires_at: u64,
    ceiling: u64,
}

/// One slot's state: what a store that keeps each slot in a record of its
/// own (etcd) writes, one compare-and-set per change (DIST-07).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Slot {
    /// The floor of the slot's next holder.
    floor: u64,
    /// The current holder, or the last one if it expired unreleased.
    pub(crate) holder: Option<SlotHolder>,
    /// Who released the slot last, and under which fence: a retried release answers `true` again.
    released: Option<(Owner, u64)>,
}

#[derive(Debug)]
struct Namespace {
    spec: NamespaceSpec,
    /// The slots ever taken; the others are free with the table's base floor.
    slots: BTreeMap<u32, Slot>,
    /// The slot each owner key took last.
    last_by_key: HashMap<String, u32>,
}

/// The slot namespaces of one store. Every change is one update of one slot
/// under the caller's lock, stamped with the store's now (SLOT-03); the
/// table's now never goes back, even when the wall clock does.
#[derive(Debug, Default)]
pub struct SlotTable {
    namespaces: HashMap<String, Namespace>,
    /// The floor of every slot never taken since the table was made.
    base_floor: u64,
    /// The largest ceiling the table gave.
    max_ceiling: u64,
    now: u64,
}

impl SlotTable {
    /// An empty table whose slots start with floor `base_floor`: a store
    /// that restarts passes the largest ceiling its last run may have given.
    pub fn new(base_floor: u64) -> SlotTable {
        SlotTable {
            base_floor,
            max_ceiling: base_floor,
            ..SlotTable::default()
        }
    }

    #[cfg(any(feature = "etcd", feature = "postgres"))]
    /// A table of one namespace, made from the records of its slots (a
    /// store that keeps each slot apart reads them, then writes back the
    /// one slot a call changed, [`SlotTable::slot_record`]).
    pub(crate) fn of_records(
        name: &str,
        spec: NamespaceSpec,
        slots: Vec<(u32, Slot)>,
    ) -> SlotTable {
        let mut last: HashMap<String, (u64, u32)> = HashMap::new();
        for (slot, state) in &slots {
            let holder = state.holder.as_ref().map(|h| (&h.owner, h.fence));
            if let Some((owner, fence)) = holder.or(state.released.as_ref().map(|(o, f)| (o, *f))) {
                let entry = last.entry(owner.key().to_owned()).or_insert((fence, *slot));
                if fence >= entry.0 {
                    *entry = (fence, *slot);
                }
            }
        }
        let mut table = SlotTable::new(0);
        table.namespaces.insert(
            name.to_owned(),
            Namespace {
                spec,
                slots: slots.into_iter().collect(),
                last_by_key: last.into_iter().map(|(k, (_, s))| (k, s)).collect(),
            },
        );
        table
    }

    #[cfg(any(feature = "etcd", feature = "postgres"))]
    /// One slot's record as the table has it now.
    pub(crate) fn slot_record(&self, name: &str, slot: u32) -> Option<Slot> {
        self.namespaces.get(name)?.slots.get(&slot).cloned()
    }

    /// Every namespace with the slots ever taken, as an overview shows
    /// them at `now_ms` (unix ms): a slot whose holder expired is free, its
    /// floor covering the old ceiling, as its next acquire would find it.
    pub fn overview(&self, now_ms: u64) -> Vec<NamespaceRow> {
        let now_ms = now_ms.max(self.now);
        let mut out: Vec<NamespaceRow> = self
            .namespaces
            .iter()
            .map(|(name, ns)| NamespaceRow {
                name: name.clone(),
                limit: ns.spec.limit,
                offset: ns.spec.offset,
                layout: ns.spec.layout,
                slots: ns
                    .slots
                    .iter()
                    .map(|(&slot, state)| slot_row(slot, state, now_ms))
                    .collect(),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Fixes a namespace's parameters as a store's journal recorded them.
    pub fn restore_namespace(&mut self, name: &str, spec: NamespaceSpec) {
        self.namespaces.insert(
            name.to_owned(),
            Namespace {
                spec,
                slots: BTreeMap::new(),
                last_by_key: HashMap::new(),
            },
        );
    }

    /// The parameters `name` was first used with.
    pub fn namespace(&self, name: &str) -> Option<NamespaceSpec> {
        self.namespaces.get(name).map(|n| n.spec)
    }

    /// The largest ceiling given so far (at least the base floor).
    pub fn max_ceiling(&self) -> u64 {
        self.max_ceiling
    }

    /// The ceiling a lease for `ttl` taken or renewed now in namespace
    /// `spec` would get, for a journal to record before the answer goes out.
    pub fn ceiling_for(&self, now_ms: u64, ttl: Duration, spec: &NamespaceSpec) -> u64 {
        self.now
            .max(now_ms)
            .saturating_add(millis(ttl))
            .saturating_add(millis(spec.tolerance))
    }

    /// Checks a request's parameters (names, ttl, spec, preferred slot), changing nothing.
    pub fn check_request(req: &SlotRequest) -> Result<()> {
        req.spec.check()?;
        crate::names::check("slot namespace", &req.namespace)?;
        crate::duration::check_ttl("a slot ttl", req.ttl)?;
        if let Some(p) = req.preferred {
            if p >= req.spec.limit {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("preferred slot {p} lies outside [0, {})", req.spec.limit),
                ));
            }
        }
        Ok(())
    }

    fn tick(&mut self, now_ms: u64) -> u64 {
        self.now = self.now.max(now_ms);
        self.now
    }

    /// Acquires a slot for `req.owner` (SLOT-01): the slot it holds already
    /// (renewed, same fence); else `preferred` if free; else the slot its
    /// key held last if free; else the lowest free slot. An expired slot is
    /// free, and its new holder's floor covers the old ceiling (SLOT-06).
    /// `next_fence` gives the fence of a new lease (SLOT-08).
    pub fn acquire(
        &mut self,
        req: &SlotRequest,
        now_ms: u64,
        next_fence: impl FnOnce() -> Result<u64>,
    ) -> Result<AcquireResult> {
        SlotTable::check_request(req)?;
        let now = self.tick(now_ms);
        let ns = self
            .namespaces
            .entry(req.namespace.clone())
            .or_insert_with(|| Namespace {
                spec: req.spec,
                slots: BTreeMap::new(),
                last_by_key: HashMap::new(),
            });
        if ns.spec != req.spec {
            return Err(Error::new(
                ErrorKind::NamespaceMismatch,
                format!(
                    "slot namespace {:?} was first used with limit {}, tolerance {}, offset {} and \
                     ID layout {}; this use asks for limit {}, tolerance {}, offset {} and ID layout {}",
                    req.namespace,
                    ns.spec.limit,
                    crate::duration::show(ns.spec.tolerance),
                    ns.spec.offset,
                    ns.spec.layout.describe(),
                    req.spec.limit,
                    crate::duration::show(req.spec.tolerance),
                    req.spec.offset,
                    req.spec.layout.describe()
                ),
            ));
        }
        let expires_at = now.saturating_add(millis(req.ttl));
        let ceiling = expires_at.saturating_add(millis(ns.spec.tolerance));

        let held = ns
            .slots
            .iter_mut()
            .find(|(_, s)| s.holder.as_ref().is_some_and(|h| h.owner == req.owner));
        if let Some((&slot, state)) = held {
            let h = state.holder.as_mut().expect("found by its holder");
            h.expires_at = h.expires_at.max(expires_at);
            h.ceiling = h.ceiling.max(ceiling);
            let lease = lease_of(&req.namespace, ns.spec, slot, h);
            self.max_ceiling = self.max_ceiling.max(lease.ceiling);
            return Ok(AcquireResult::Leased(lease));
        }

        let free = |slots: &BTreeMap<u32, Slot>, slot: u32| {
            slots
                .get(&slot)
                .is_none_or(|s| s.holder.as_ref().is_none_or(|h| h.expires_at <= now))
        };
        let chosen = req
            .preferred
            .filter(|&p| free(&ns.slots, p))
            .or_else(|| {
                ns.last_by_key
                    .get(req.owner.key())
                    .copied()
                    .filter(|&s| s < ns.spec.limit && free(&ns.slots, s))
            })
            .or_else(|| lowest_free(&ns.slots, ns.spec.limit, now));
        let Some(slot) = chosen else {
            return Ok(AcquireResult::Exhausted);
        };
        let fence = next_fence()?;
        let base_floor = self.base_floor;
        let state = ns.slots.entry(slot).or_insert_with(|| Slot {
            floor: base_floor,
            holder: None,
            released: None,
        });
        if let Some(expired) = state.holder.take() {
            state.floor = state.floor.max(expired.ceiling);
        }
        let holder = SlotHolder {
            owner: req.owner.clone(),
            fence,
            floor: state.floor,
            expires_at,
            ceiling,
        };
        let lease = lease_of(&req.namespace, ns.spec, slot, &holder);
        state.holder = Some(holder);
        state.released = None;
        ns.last_by_key.insert(req.owner.key().to_owned(), slot);
        self.max_ceiling = self.max_ceiling.max(ceiling);
        Ok(AcquireResult::Leased(lease))
    }

    /// Renews `lease` for `ttl` from the store's now (SLOT-04): the fence
    /// stays, the expiry and the ceiling never move back. `None` when the
    /// slot's owner or fence no longer match (taken by another, released).
    pub fn renew(
        &mut self,
        lease: &SlotLease,
        ttl: Duration,
        now_ms: u64,
    ) -> Result<Option<SlotLease>> {
        crate::duration::check_ttl("a slot ttl", ttl)?;
        let now = self.tick(now_ms);
        let Some(ns) = self.namespaces.get_mut(&lease.namespace) else {
            return Ok(None);
        };
        let spec = ns.spec;
        let Some(h) = ns
            .slots
            .get_mut(&lease.slot)
            .and_then(|s| s.holder.as_mut())
            .filter(|h| h.owner == lease.owner && h.fence == lease.fence)
        else {
            return Ok(None);
        };
        h.expires_at = h.expires_at.max(now.saturating_add(millis(ttl)));
        h.ceiling = h
            .ceiling
            .max(h.expires_at.saturating_add(millis(spec.tolerance)));
        let renewed = lease_of(&lease.namespace, spec, lease.slot, h);
        self.max_ceiling = self.max_ceiling.max(renewed.ceiling);
        Ok(Some(renewed))
    }

    /// The ceiling `lease` would have if renewed for `ttl` now, or `None` when it is not held as named.
    pub fn renewal_ceiling(&self, lease: &SlotLease, ttl: Duration, now_ms: u64) -> Option<u64> {
        let ns = self.namespaces.get(&lease.namespace)?;
        let h = ns
            .slots
            .get(&lease.slot)?
            .holder
            .as_ref()
            .filter(|h| h.owner == lease.owner && h.fence == lease.fence)?;
        Some(h.ceiling.max(self.ceiling_for(now_ms, ttl, &ns.spec)))
    }

    /// Releases `lease` (SLOT-05): the slot's floor becomes
    /// `max(floor, min(last_issued, ceiling))`. `false` when the slot's
    /// owner or fence no longer match; a release repeated by the same
    /// holder answers `true` again and changes nothing more.
    pub fn release(&mut self, lease: &SlotLease, last_issued: u64, now_ms: u64) -> bool {
        self.tick(now_ms);
        let Some(state) = self
            .namespaces
            .get_mut(&lease.namespace)
            .and_then(|ns| ns.slots.get_mut(&lease.slot))
        else {
            return false;
        };
        if state
            .released
            .as_ref()
            .is_some_and(|(o, f)| *o == lease.owner && *f == lease.fence)
        {
            return true;
        }
        match state.holder.take() {
            Some(h) if h.owner == lease.owner && h.fence == lease.fence => {
                state.floor = state.floor.max(last_issued.min(h.ceiling));
                state.released = Some((h.owner, h.fence));
                true
            }
            other => {
                state.holder = other;
                false
            }
        }
    }
}

fn lease_of(namespace: &str, spec: NamespaceSpec, slot: u32, h: &SlotHolder) -> SlotLease {
    SlotLease {
        namespace: namespace.to_owned(),
        owner: h.owner.clone(),
        slot,
        offset: spec.offset,
        fence: h.fence,
        floor: h.floor,
        expires_at: h.expires_at,
        ceiling: h.ceiling,
    }
}

/// The lowest slot below `limit` that no unexpired lease holds.
fn lowest_free(slots: &BTreeMap<u32, Slot>, limit: u32, now: u64) -> Option<u32> {
    let mut next = 0u32;
    for (&slot, state) in slots {
        if slot > next {
            break;
        }
        if state.holder.as_ref().is_none_or(|h| h.expires_at <= now) {
            return Some(slot);
        }
        next = slot + 1;
    }
    (next < limit).then_some(next)
}

/// One slot as an overview shows it at `now_ms`.
fn slot_row(slot: u32, state: &Slot, now_ms: u64) -> SlotRow {
    match state.holder.as_ref() {
        Some(h) if h.expires_at > now_ms => SlotRow {
            slot,
            owner: Some(h.owner.key().to_owned()),
            fence: Some(h.fence),
            floor: h.floor,
            ceiling: Some(h.ceiling),
            expires_in: Some(Duration::from_millis(h.expires_at - now_ms)),
        },
        expired => SlotRow {
            slot,
            owner: None,
            fence: None,
            floor: expired.map_or(state.floor, |h| state.floor.max(h.ceiling)),
            ceiling: None,
            expires_in: None,
        },
    }
}
