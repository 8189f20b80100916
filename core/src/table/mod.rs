//! The lease table: keys, their holders' leases, their lines of waiters, fences
//! and timers. One implementation serves the embedded store and the server store.
//!
//! The table is a plain data structure: it never sleeps and never locks. Its
//! owner (a driver) gives every call the current instant, calls
//! [`LeaseTable::advance`] when [`LeaseTable::next_deadline`] comes, and
//! delivers the [`Event`]s it drains.
//!
//! Public only with the feature `internals`, for the workspace's benches and
//! tests; not a stable API. What a driver deals in of it (requests, grants,
//! give-ups, key names) is re-exported by [`crate::driver`].

mod activity;
mod key_ref;
mod nanos;
mod overview;
mod places;
mod requests;
mod timers;

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use crate::hashed::{HashMap, HashSet, LookupMap};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Instant;
use crate::driver::HoldAnswer;
use crate::error::{Error, ErrorKind, Result};
use crate::fence::Fences;
use crate::identity::Identity;
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::loss::LossReason;
use crate::overview::ActivityKind;
use activity::Recorded;
use key_ref::{KeyRef, Lookup};
use nanos::Nanos;
use places::Places;
use requests::{RequestState, Requests};
use slab::Slab;
use timers::{Timer, TimerQueue};

// Named by the table's methods; outside the crate only with `internals`.
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use activity::{KeyActivity, ACTIVITY_KEPT};
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use overview::TableOverview;

/// A key of a lock: the pair (lock name, key).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyName {
    /// The lock's name.
    pub lock: Arc<str>,
    /// The key within the lock.
    pub key: Arc<str>,
}

impl KeyName {
    /// The key `key` of lock `lock`.
    pub fn new(lock: impl Into<Arc<str>>, key: impl Into<Arc<str>>) -> KeyName {
        KeyName {
            lock: lock.into(),
            key: key.into(),
        }
    }
}

/// Who asks the table for a key: the number its owner gives it (a
/// server, its connections'), which overviews and activity show and a
/// server's limits count by, and its identity (WHO-01). Every lease and
/// place in line of a holder points to its one `Arc<Holder>`: 8 bytes
/// each, whatever the identity's length.
#[derive(Debug, PartialEq, Eq)]
pub struct Holder {
    /// The owner's number for it.
    pub number: u64,
    /// What it is called wherever it is shown.
    pub identity: Identity,
}

/// A request to hold a key.
#[derive(Debug, Clone)]
pub struct HoldRequest {
    /// The key.
    pub name: KeyName,
    /// Recognises a retried request (LOCK-03).
    pub request_id: RequestId,
    /// How long the lease lasts without renewal; `None`: until released (LOCK-19).
    pub ttl: Option<Duration>,
    /// When given, the store revokes the lease this long after its grant (LOCK-12).
    pub max_hold: Option<Duration>,
    /// Whether to wait in line when the key is held (`false` for tryHold).
    pub queue: bool,
    /// The renewal group the lease joins: it expires with the group and is
    /// renewed with it ([`Driver::renew_group`](crate::driver::Driver::renew_group)).
    /// `None`: renewed by its own id. Ignored without a ttl.
    pub group: Option<GroupId>,
}

/// One grant of one key to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The request that was granted.
    pub request_id: RequestId,
    /// The lease's id, known only to its holder.
    pub lease_id: LeaseId,
    /// The lease's fence (LOCK-02).
    pub fence: u64,
    /// When the store lets the lease go unless renewed; `None`: never by ttl.
    pub expires_at: Option<Instant>,
    /// When the store revokes the lease whatever its renewals (maxHold).
    pub revoke_at: Option<Instant>,
    /// How long before the revocation, at the moment of this answer: what a
    /// holder on another clock bases its maxHold deadline on.
    pub revoke_in: Option<Duration>,
}

/// What giving up a request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// The request left the line.
    LeftLine,
    /// The request had been granted (a race with the give-up): the lease was released.
    Released(LeaseId),
    /// The store knew no such request.
    Unknown,
}

/// What happened in the table that someone else must hear of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A request that waited in line was granted.
    Granted(Grant),
    /// A request that waited in line could not be granted (the store failed to
    /// take a new epoch); it has left the line.
    Failed {
        /// The request.
        request_id: RequestId,
        /// What went wrong.
        message: String,
    },
    /// A lease ended without its holder letting it go.
    Lost {
        /// The lease.
        lease_id: LeaseId,
        /// The request it was granted to.
        request_id: RequestId,
        /// Its holder, as the table's owner numbered it ([`LeaseTable::hold_as`]).
        holder: u64,
        /// Why.
        reason: LossReason,
    },
}

/// What the table holds of a key's current holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHolder {
    /// The key.
    pub name: KeyName,
    /// The grant, with its current expiry.
    pub grant: Grant,
    /// When the lease was granted.
    pub granted_at: Instant,
    /// The identity of whoever took it (WHO-01).
    pub identity: Identity,
    /// How many requests wait in the key's line.
    pub waiting: usize,
}

/// What the table keeps of a key's holder: its grant's ids and fence, its
/// times in 8 bytes each ([`Nanos`]), its group's place and its holder,
/// 96 bytes in all where a `Grant`, the times beside it and a group's id
/// took 192.
#[derive(Debug)]
struct HolderState {
    request_id: RequestId,
    lease_id: LeaseId,
    /// The renewal group whose expiry is this lease's, by its place in
    /// the table's groups.
    group: Option<u32>,
    fence: u64,
    /// Who holds it, as the table's owner named the hold ([`LeaseTable::hold_as`]).
    holder: Arc<Holder>,
    granted_at: Nanos,
    /// When the store lets the lease go unless renewed (in a group: its
    /// group's expiry when it joined; the group's own is the one that counts).
    expires_at: Nanos,
    /// When the store revokes the lease whatever its renewals (maxHold).
    revoke_at: Nanos,
    ttl: Nanos,
    /// The deadline of this lease's pending `Expire` timer (none in a group).
    armed: Nanos,
}

impl HolderState {
    /// The grant as it was made, with the expiry kept here.
    fn grant(&self) -> Grant {
        let revoke_at = self.revoke_at.instant();
        Grant {
            request_id: self.request_id,
            lease_id: self.lease_id,
            fence: self.fence,
            expires_at: self.expires_at.instant(),
            revoke_at,
            revoke_in: revoke_at.map(|at| at.saturating_since(self.granted_at())),
        }
    }

    fn granted_at(&self) -> Instant {
        self.granted_at.instant().unwrap_or_default()
    }
}

#[derive(Debug)]
struct Waiter {
    request_id: RequestId,
    ttl: Option<Duration>,
    max_hold: Option<Duration>,
    group: Option<GroupId>,
    holder: Arc<Holder>,
    /// When it joined the line.
    queued_at: Instant,
}

/// Leases that expire together unless their group is renewed: one timer
/// and one renewal for all of them, however many they are.
#[derive(Debug)]
struct GroupState {
    id: GroupId,
    /// When the group's leases expire; it only moves later.
    expires_at: Instant,
    /// The deadline of the group's pending `ExpireGroup` timer.
    armed: Instant,
    /// Its leases, by their places (4 bytes each rather than an id's 16).
    members: HashSet<u32>,
}

/// A key's holder and line. Both are boxed, so that the map of keys keeps
/// 16 bytes per key in its slots (which a hash map keeps about twice as
/// many of as it holds) and a key that nobody waits for has no line at all.
#[derive(Debug, Default)]
struct KeyState {
    holder: Option<Box<HolderState>>,
    line: Line,
}

/// A key's line of waiters, first come first served; nothing while empty.
#[derive(Debug, Default)]
#[allow(
    clippy::box_collection,
    reason = "8 bytes in every key's slot instead of a VecDeque's 32: most keys have no line"
)]
struct Line(Option<Box<VecDeque<Waiter>>>);

impl Line {
    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |l| l.len())
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push_back(&mut self, waiter: Waiter) {
        self.0.get_or_insert_with(Box::default).push_back(waiter);
    }

    fn pop_front(&mut self) -> Option<Waiter> {
        let line = self.0.as_mut()?;
        let first = line.pop_front();
        if line.is_empty() {
            self.0 = None;
        }
        first
    }

    /// The place of `request_id` in line.
    fn position(&self, request_id: RequestId) -> Option<usize> {
        self.0
            .as_ref()?
            .iter()
            .position(|w| w.request_id == request_id)
    }

    fn remove(&mut self, request_id: RequestId) {
        if let Some(line) = self.0.as_mut() {
            line.retain(|w| w.request_id != request_id);
            if line.is_empty() {
                self.0 = None;
            }
        }
    }
}

/// Limits that keep one caller from growing the table without bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most requests that may wait in one key's line.
    pub waiters_per_key: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            waiters_per_key: 100_000,
        }
    }
}

/// The keys, their leases and their lines.
pub struct LeaseTable {
    keys: LookupMap<KeyRef, KeyState>,
    /// The key of each held lease, by the place its id names.
    leases: Places<KeyRef>,
    requests: Requests,
    /// Requests whose lease ended without its holder's release: a retry is
    /// answered `Lost` until the instant kept here.
    ended: HashMap<RequestId, Instant>,
    /// The renewal groups' places in `group_states`, by id.
    groups: HashMap<GroupId, u32>,
    group_states: Slab<GroupState>,
    /// How many leases each holder number holds ([`LeaseTable::hold_as`]).
    held_by: HashMap<u64, usize>,
    timers: TimerQueue,
    fences: Fences,
    limits: Limits,
    now: Instant,
    events: Vec<Event>,
    /// The grants, releases and losses since the last drain, while recorded.
    activity: Option<VecDeque<Recorded>>,
}

impl LeaseTable {
    /// An empty table granting fences from `fences`.
    pub fn new(fences: Fences, limits: Limits) -> LeaseTable {
        LeaseTable {
            keys: LookupMap::default(),
            leases: Places::default(),
            requests: Requests::default(),
            ended: HashMap::default(),
            groups: HashMap::default(),
            group_states: Slab::new(),
            held_by: HashMap::default(),
            timers: TimerQueue::default(),
            fences,
            limits,
            now: Instant::default(),
            events: Vec::new(),
            activity: None,
        }
    }

    /// The epoch fences come from now.
    pub fn epoch(&self) -> u32 {
        self.fences.epoch()
    }

    /// A fence larger than every fence given before, for a lease the table
    /// does not keep (a slot lease shares the store's fences, SLOT-08).
    pub fn next_fence(&mut self) -> Result<u64> {
        self.fences.next_fence()
    }

    /// Takes the events that calls since the last drain produced.
    pub fn drain_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// When the table next needs [`LeaseTable::advance`] (it may find nothing to do then).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// How many leases are held.
    pub fn held(&self) -> usize {
        self.leases.len()
    }

    /// How many requests wait in the line of `name`.
    pub fn line_len(&self, name: &KeyName) -> usize {
        self.keys.get(&Lookup(name)).map_or(0, |k| k.line.len())
    }

    /// How many requests wait in lines.
    pub fn waiting(&self) -> usize {
        self.keys.values().map(|k| k.line.len()).sum()
    }

    /// The current holder of a key, if any, and how many wait (WHO-02).
    pub fn holder(&self, name: &KeyName) -> Option<KeyHolder> {
        let state = self.keys.get(&Lookup(name))?;
        let h = state.holder.as_ref()?;
        Some(self.key_holder(name.clone(), h, &state.line))
    }

    fn key_holder(&self, name: KeyName, h: &HolderState, line: &Line) -> KeyHolder {
        KeyHolder {
            name,
            grant: self.current(h),
            granted_at: h.granted_at(),
            identity: h.holder.identity.clone(),
            waiting: line.len(),
        }
    }

    /// A holder's grant with its current expiry (its group's, in a group).
    fn current(&self, h: &HolderState) -> Grant {
        let mut grant = h.grant();
        if let Some(g) = h.group.and_then(|p| self.group_states.get(p as usize)) {
            grant.expires_at = Some(g.expires_at);
        }
        grant
    }

    /// The holder of the lease `lease_id`, if it is held.
    pub fn holder_by_id(&self, lease_id: LeaseId) -> Option<KeyHolder> {
        let key = self.held_key(lease_id)?;
        let state = self.keys.get(key)?;
        let h = state.holder.as_ref()?;
        Some(self.key_holder(key.name(), h, &state.line))
    }

    /// Every holder of lock `lock` (or of every lock), sorted by key.
    pub fn holders(&self, lock: Option<&str>) -> Vec<KeyHolder> {
        let mut out: Vec<KeyHolder> = self
            .keys
            .iter()
            .filter(|(k, _)| lock.is_none_or(|l| &**k.lock() == l))
            .filter_map(|(k, s)| {
                s.holder
                    .as_ref()
                    .map(|h| self.key_holder(k.name(), h, &s.line))
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Moves the table's time to `now` (never back) and lets due leases expire,
    /// due revocations happen and forgotten requests go, granting the next in line.
    pub fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        while let Some((at, timer)) = self.timers.pop_due(self.now) {
            match timer {
                Timer::Expire(id) => self.on_expire_timer(id, at),
                Timer::ExpireGroup(id) => self.on_expire_group(id, at),
                Timer::Revoke(id) => {
                    let due = self
                        .holder_of(id)
                        .is_some_and(|h| h.revoke_at.instant() == Some(at));
                    if due {
                        self.end_unseen(id, LossReason::Revoked);
                    }
                }
                Timer::Forget(rid) => {
                    if self.ended.get(&rid).is_some_and(|at| *at <= self.now) {
                        self.ended.remove(&rid);
                    }
                }
            }
        }
    }

    fn on_expire_timer(&mut self, id: LeaseId, at: Instant) {
        let now = self.now;
        let Some(h) = self.holder_of_mut(id) else {
            return;
        };
        if h.armed.instant() != Some(at) {
            return;
        }
        match h.expires_at.instant() {
            Some(e) if e <= now => self.end_unseen(id, LossReason::Expired),
            Some(e) => {
                h.armed = Nanos::at(Some(e));
                self.timers.push(e, Timer::Expire(id));
            }
            None => h.armed = Nanos::NONE,
        }
    }

    fn on_expire_group(&mut self, id: GroupId, at: Instant) {
        let Some(&place) = self.groups.get(&id) else {
            return;
        };
        let g = &mut self.group_states[place as usize];
        if g.armed != at {
            return;
        }
        if g.expires_at > self.now {
            g.armed = g.expires_at;
            self.timers.push(g.expires_at, Timer::ExpireGroup(id));
            return;
        }
        self.groups.remove(&id);
        let members = self.group_states.remove(place as usize).members;
        let leases: Vec<LeaseId> = members
            .into_iter()
            .filter_map(|place| self.lease_at(place))
            .collect();
        for lease in leases {
            self.end_unseen(lease, LossReason::Expired);
        }
    }

    /// The lease granted to `request_id`, if it is held.
    pub fn lease_of(&self, request_id: RequestId) -> Option<LeaseId> {
        match self.requests.get(request_id)? {
            RequestState::Granted(place) => self.granted_to(request_id, place).map(|h| h.lease_id),
            RequestState::Waiting(_) => None,
        }
    }

    /// The number of the holder of lease `id` ([`LeaseTable::hold_as`]), if it is held.
    pub fn holder_number(&self, id: LeaseId) -> Option<u64> {
        self.holder_of(id).map(|h| h.holder.number)
    }

    /// Makes `holder` the holder of lease `id` from now on (a server's
    /// client that came back on another connection); `false` when the
    /// lease is not held.
    pub fn set_holder(&mut self, id: LeaseId, holder: &Arc<Holder>) -> bool {
        let Some(h) = self.holder_of_mut(id) else {
            return false;
        };
        let before = std::mem::replace(&mut h.holder, holder.clone());
        if before.number != holder.number {
            self.uncount_held(before.number);
            self.count_held(holder.number);
        }
        true
    }

    /// How many leases the holder numbered `holder` holds ([`LeaseTable::hold_as`]).
    pub fn held_by(&self, holder: u64) -> usize {
        self.held_by.get(&holder).copied().unwrap_or(0)
    }

    fn count_held(&mut self, holder: u64) {
        *self.held_by.entry(holder).or_default() += 1;
    }

    fn uncount_held(&mut self, holder: u64) {
        if let Entry::Occupied(mut held) = self.held_by.entry(holder) {
            *held.get_mut() -= 1;
            if *held.get() == 0 {
                held.remove();
            }
        }
    }

    /// The holder of the lease in `place`, if it was granted to `request_id`.
    fn granted_to(&self, request_id: RequestId, place: u32) -> Option<&HolderState> {
        let key = self.leases.at(place)?;
        self.keys
            .get(key)?
            .holder
            .as_deref()
            .filter(|h| h.request_id == request_id)
    }

    /// The id of the lease held in `place`.
    fn lease_at(&self, place: u32) -> Option<LeaseId> {
        let key = self.leases.at(place)?;
        Some(self.keys.get(key)?.holder.as_ref()?.lease_id)
    }

    /// The key of the held lease `id`: its place's key, if that key's
    /// holder is this very lease.
    fn held_key(&self, id: LeaseId) -> Option<&KeyRef> {
        let key = self.leases.get(id)?;
        let h = self.keys.get(key)?.holder.as_ref()?;
        (h.lease_id == id).then_some(key)
    }

    fn holder_of(&self, id: LeaseId) -> Option<&HolderState> {
        let key = self.leases.get(id)?;
        self.keys
            .get(key)?
            .holder
            .as_deref()
            .filter(|h| h.lease_id == id)
    }

    fn holder_of_mut(&mut self, id: LeaseId) -> Option<&mut HolderState> {
        let key = self.leases.get(id)?;
        self.keys
            .get_mut(key)?
            .holder
            .as_deref_mut()
            .filter(|h| h.lease_id == id)
    }

    /// Asks for a key. A request id seen before is answered as before:
    /// the same grant, or the same place in line (LOCK-03).
    #[cfg(any(test, feature = "internals"))]
    pub fn hold(&mut self, req: HoldRequest, now: Instant) -> Result<HoldAnswer<Grant, ()>> {
        let holder = Arc::new(Holder {
            number: 0,
            identity: Identity::new("table").expect("a valid identity"),
        });
        self.hold_as(req, now, &holder)
    }

    /// [`LeaseTable::hold`] for `holder`, whose number and identity the
    /// lease or the place in line records; they change nothing else.
    pub fn hold_as(
        &mut self,
        req: HoldRequest,
        now: Instant,
        holder: &Arc<Holder>,
    ) -> Result<HoldAnswer<Grant, ()>> {
        self.advance(now);
        match self.requests.get(req.request_id) {
            Some(RequestState::Granted(place)) => {
                let h = self.granted_to(req.request_id, place).ok_or_else(|| {
                    Error::new(ErrorKind::Internal, "granted request without lease")
                })?;
                return Ok(HoldAnswer::Granted(answer(self.current(h), self.now)));
            }
            Some(RequestState::Waiting(key)) => {
                let ahead = self.keys[key].line.position(req.request_id).unwrap_or(0);
                return Ok(HoldAnswer::Queued { waiting: (), ahead });
            }
            None if self.ended.contains_key(&req.request_id) => {
                return Err(Error::new(
                    ErrorKind::Lost,
                    "this request was granted a lease that has since ended",
                ));
            }
            None => {}
        }
        let key = match self.keys.get_key_value(&Lookup(&req.name)) {
            Some((k, _)) => k.clone(),
            None => KeyRef::new(&req.name),
        };
        let ask = Waiter {
            request_id: req.request_id,
            ttl: req.ttl,
            max_hold: req.max_hold,
            group: req.group,
            holder: holder.clone(),
            queued_at: self.now,
        };
        let state = self.keys.entry(key.clone()).or_default();
        if state.holder.is_none() && state.line.is_empty() {
            let grant = self.grant(&key, &ask)?;
            return Ok(HoldAnswer::Granted(grant));
        }
        if !req.queue {
            return Ok(HoldAnswer::NotHeld);
        }
        if state.line.len() >= self.limits.waiters_per_key {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "the line of this key is full ({} waiters)",
                    self.limits.waiters_per_key
                ),
            ));
        }
        state.line.push_back(ask);
        let ahead = state.line.len() - 1;
        self.requests.wait(req.request_id, key);
        Ok(HoldAnswer::Queued { waiting: (), ahead })
    }

    /// Grants a free key to the request `ask` (the caller checked it is free).
    fn grant(&mut self, key: &KeyRef, ask: &Waiter) -> Result<Grant> {
        let Waiter {
            request_id,
            ttl,
            max_hold,
            group,
            ..
        } = *ask;
        let now = self.now;
        let fence = self.fences.next_fence()?;
        let lease_id = self.leases.take(key.clone());
        let mut grant = Grant {
            request_id,
            lease_id,
            fence,
            expires_at: ttl.map(|t| now + t),
            revoke_at: max_hold.map(|m| now + m),
            revoke_in: max_hold,
        };
        let (armed, group) = match (group, grant.expires_at) {
            (Some(id), Some(at)) => {
                let (expires_at, place) = self.join_group(id, lease_id, at);
                grant.expires_at = Some(expires_at);
                (None, Some(place))
            }
            (None, Some(at)) => {
                self.timers.push(at, Timer::Expire(lease_id));
                (Some(at), None)
            }
            (_, None) => (None, None),
        };
        if let Some(at) = grant.revoke_at {
            self.timers.push(at, Timer::Revoke(lease_id));
        }
        let state = self.keys.get_mut(key).expect("granted key exists");
        state.holder = Some(Box::new(HolderState {
            request_id,
            lease_id,
            group,
            fence,
            holder: ask.holder.clone(),
            granted_at: Nanos::at(Some(now)),
            expires_at: Nanos::at(grant.expires_at),
            revoke_at: Nanos::at(grant.revoke_at),
            ttl: Nanos::of(ttl),
            armed: Nanos::at(armed),
        }));
        self.record(ActivityKind::Granted, key, fence, &ask.holder);
        self.count_held(ask.holder.number);
        self.requests.grant(request_id, places::place_of(lease_id));
        Ok(grant)
    }

    /// Adds a lease granted now to group `id` (created if the store does not
    /// know it, or no longer: it expired), whose expiry a grant moves to at
    /// least `expires_at`; answers the group's expiry and its place. A group
    /// left empty lives on until it expires, so that a renewal sent meanwhile
    /// still finds it.
    fn join_group(
        &mut self,
        id: GroupId,
        lease_id: LeaseId,
        expires_at: Instant,
    ) -> (Instant, u32) {
        let place = match self.groups.get(&id) {
            Some(&place) => place,
            None => {
                let entry = self.group_states.vacant_entry();
                let place = u32::try_from(entry.key()).expect("fewer than 2^32 groups");
                entry.insert(GroupState {
                    id,
                    expires_at,
                    armed: expires_at,
                    members: HashSet::default(),
                });
                self.groups.insert(id, place);
                self.timers.push(expires_at, Timer::ExpireGroup(id));
                place
            }
        };
        let g = &mut self.group_states[place as usize];
        g.expires_at = g.expires_at.max(expires_at);
        g.members.insert(places::place_of(lease_id));
        (g.expires_at, place)
    }

    /// The state of group `id`, if the table knows it.
    fn group_at(&mut self, id: GroupId) -> Option<&mut GroupState> {
        let place = *self.groups.get(&id)?;
        self.group_states.get_mut(place as usize)
    }

    /// Renews every lease of group `id` for `ttl` from now (a group's expiry
    /// never moves earlier). A group that expired (its leases with it) or
    /// that the store never knew fails `Lost` and changes nothing (LOCK-05).
    pub fn renew_group(&mut self, id: GroupId, ttl: Duration, now: Instant) -> Result<Instant> {
        self.advance(now);
        let at = self.now + ttl;
        let g = self.group_at(id).ok_or_else(|| lost(LossReason::Expired))?;
        g.expires_at = g.expires_at.max(at);
        Ok(g.expires_at)
    }

    /// The leases of group `id`.
    pub fn group_members(&self, id: GroupId) -> Vec<LeaseId> {
        self.groups
            .get(&id)
            .and_then(|p| self.group_states.get(*p as usize))
            .map(|g| g.members.iter().filter_map(|p| self.lease_at(*p)).collect())
            .unwrap_or_default()
    }

    /// Takes a lease out of its group, if it is in one.
    fn leave_group(&mut self, lease_id: LeaseId, group: Option<u32>) {
        if let Some(g) = group.and_then(|p| self.group_states.get_mut(p as usize)) {
            g.members.remove(&places::place_of(lease_id));
        }
    }

    /// Renews a lease by its id for `ttl` from now (the lease's own ttl when
    /// `None`). A lease in a group renewed for its own ttl renews its group
    /// (as a grant into the group does) and stays in it; for another ttl it
    /// leaves the group and is renewed on its own from then on. An unknown
    /// or expired id fails `Lost` and changes nothing (LOCK-05, LOCK-08).
    pub fn renew(
        &mut self,
        lease_id: LeaseId,
        ttl: Option<Duration>,
        now: Instant,
    ) -> Result<Grant> {
        self.advance(now);
        let now = self.now;
        let h = self
            .holder_of(lease_id)
            .ok_or_else(|| lost(LossReason::Unknown))?;
        let group = h.group.and_then(|p| self.group_states.get(p as usize));
        if let (Some(group), Some(own)) = (group.map(|g| g.id), h.ttl.duration()) {
            if ttl.is_none_or(|t| t == own) {
                let grant = answer(h.grant(), now);
                let expires = self.renew_group(group, own, now)?;
                return Ok(Grant {
                    expires_at: Some(expires),
                    ..grant
                });
            }
        }
        let left = self.holder_of_mut(lease_id).and_then(|h| h.group.take());
        self.leave_group(lease_id, left);
        let h = self
            .holder_of_mut(lease_id)
            .ok_or_else(|| lost(LossReason::Unknown))?;
        let mut rearm = None;
        if let Some(ttl) = ttl.or(h.ttl.duration()) {
            let expires = now + ttl;
            h.expires_at = Nanos::at(Some(expires));
            h.ttl = Nanos::of(Some(ttl));
            if h.armed.instant().is_none_or(|a| expires < a) {
                h.armed = Nanos::at(Some(expires));
                rearm = Some(expires);
            }
        }
        let out = answer(h.grant(), now);
        if let Some(at) = rearm {
            self.timers.push(at, Timer::Expire(lease_id));
        }
        Ok(out)
    }

    /// Releases a lease by its id and grants the key to the next in line.
    /// An unknown id fails `Lost` and changes nothing (LOCK-08).
    pub fn release(&mut self, lease_id: LeaseId, now: Instant) -> Result<()> {
        self.advance(now);
        let key = self
            .held_key(lease_id)
            .cloned()
            .ok_or_else(|| lost(LossReason::Unknown))?;
        self.leases.free(lease_id);
        let holder = self
            .keys
            .get_mut(&key)
            .and_then(|s| s.holder.take())
            .ok_or_else(|| Error::new(ErrorKind::Internal, "lease without holder"))?;
        self.leave_group(lease_id, holder.group);
        self.requests.remove(holder.request_id);
        self.uncount_held(holder.holder.number);
        self.record(ActivityKind::Released, &key, holder.fence, &holder.holder);
        self.hand_on(&key);
        self.prune_timers();
        Ok(())
    }

    /// Drops the timers of leases and requests that are gone once they
    /// outnumber the live ones, so that short holds with long ttls do not
    /// grow the heap by rate × ttl. Amortized O(log n) per release.
    fn prune_timers(&mut self) {
        let live =
            self.leases.len() * 2 + self.requests.len() + self.ended.len() + self.groups.len();
        if self.timers.len() <= 2 * live + 1024 {
            return;
        }
        let (leases, keys, ended) = (&self.leases, &self.keys, &self.ended);
        let (groups, group_states) = (&self.groups, &self.group_states);
        let holder = |id: &LeaseId| {
            leases
                .get(*id)
                .and_then(|k| keys.get(k))
                .and_then(|s| s.holder.as_ref())
                .filter(|h| h.lease_id == *id)
        };
        self.timers.retain(|at, timer| match timer {
            Timer::Expire(id) => holder(&id).is_some_and(|h| h.armed.instant() == Some(at)),
            Timer::ExpireGroup(id) => groups
                .get(&id)
                .and_then(|p| group_states.get(*p as usize))
                .is_some_and(|g| g.armed == at),
            Timer::Revoke(id) => holder(&id).is_some_and(|h| h.revoke_at.instant() == Some(at)),
            Timer::Forget(rid) => ended.get(&rid).is_some_and(|forget_at| *forget_at == at),
        });
    }

    /// Withdraws a request: out of the line if it waits, released if it was
    /// granted meanwhile (the grant raced the give-up), nothing if unknown (LOCK-18).
    pub fn give_up(&mut self, request_id: RequestId, now: Instant) -> GiveUp {
        self.advance(now);
        match self.requests.get(request_id) {
            Some(RequestState::Waiting(key)) => {
                let key = key.clone();
                self.requests.leave_line(request_id);
                if let Some(state) = self.keys.get_mut(&key) {
                    state.line.remove(request_id);
                    if state.holder.is_none() && state.line.is_empty() {
                        self.keys.remove(&key);
                    }
                }
                GiveUp::LeftLine
            }
            Some(RequestState::Granted(place)) => {
                let Some(id) = self.granted_to(request_id, place).map(|h| h.lease_id) else {
                    return GiveUp::Unknown;
                };
                match self.release(id, now) {
                    Ok(()) => GiveUp::Released(id),
                    Err(_) => GiveUp::Unknown,
                }
            }
            None => GiveUp::Unknown,
        }
    }

    /// Ends every lease and empties every line, as a closing store does; each
    /// holder hears `reason`.
    pub fn clear(&mut self, reason: LossReason) {
        let keys = std::mem::take(&mut self.keys);
        for (key, state) in keys {
            if let Some(h) = state.holder {
                self.record(ActivityKind::Lost(reason), &key, h.fence, &h.holder);
                self.events.push(Event::Lost {
                    lease_id: h.lease_id,
                    request_id: h.request_id,
                    holder: h.holder.number,
                    reason,
                });
            }
        }
        self.leases.clear();
        self.held_by.clear();
        self.requests.clear();
        self.ended.clear();
        self.groups.clear();
        self.group_states.clear();
        self.timers = TimerQueue::default();
    }

    /// Ends a lease its holder did not release, tells the holder, and hands the key on.
    fn end_unseen(&mut self, lease_id: LeaseId, reason: LossReason) {
        let Some(key) = self.held_key(lease_id).cloned() else {
            return;
        };
        self.leases.free(lease_id);
        let Some(holder) = self.keys.get_mut(&key).and_then(|s| s.holder.take()) else {
            return;
        };
        let request_id = holder.request_id;
        self.leave_group(lease_id, holder.group);
        self.uncount_held(holder.holder.number);
        let retention = holder.ttl.duration().unwrap_or(Duration::ZERO);
        if retention.is_zero() {
            self.requests.remove(request_id);
        } else {
            let forget_at = self.now + retention;
            self.requests.remove(request_id);
            self.ended.insert(request_id, forget_at);
            self.timers.push(forget_at, Timer::Forget(request_id));
        }
        self.events.push(Event::Lost {
            lease_id,
            request_id,
            holder: holder.holder.number,
            reason,
        });
        self.record(
            ActivityKind::Lost(reason),
            &key,
            holder.fence,
            &holder.holder,
        );
        self.hand_on(&key);
    }

    /// Grants a key whose holder just went to the first in line, or drops the
    /// key's entry when nobody waits.
    fn hand_on(&mut self, key: &KeyRef) {
        loop {
            let Some(state) = self.keys.get_mut(key) else {
                return;
            };
            let Some(w) = state.line.pop_front() else {
                self.keys.remove(key);
                return;
            };
            self.requests.leave_line(w.request_id);
            match self.grant(key, &w) {
                Ok(grant) => {
                    self.events.push(Event::Granted(grant));
                    return;
                }
                Err(e) => {
                    self.events.push(Event::Failed {
                        request_id: w.request_id,
                        message: e.message().to_owned(),
                    });
                }
            }
        }
    }
}

/// A holder's grant as an answer at `now`, with the time left before its revocation.
fn answer(grant: Grant, now: Instant) -> Grant {
    Grant {
        revoke_in: grant.revoke_at.map(|at| at.saturating_since(now)),
        ..grant
    }
}

fn lost(reason: LossReason) -> Error {
    Error::lost(reason)
}

#[cfg(test)]
mod tests;
