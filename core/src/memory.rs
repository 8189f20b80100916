//! The embedded store: the lease table in the caller's own process.

use crate::hashed::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Notify};

use crate::clock::{Clock, Instant};
use crate::driver::{
    loss_channel, Capabilities, Driver, Granted, HoldAnswer, HolderInfo, LossReceiver, LossSender,
    LossSink,
};
use crate::error::{Error, ErrorKind, Result};
use crate::fence::{EpochSource, Fences};
use crate::identity::Identity;
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::loss::LossReason;
use crate::overview::{Activity, Overview, OverviewQuery};
use crate::slots::{AcquireResult, Recovered, SlotJournal, SlotLease, SlotRequest, SlotTable};
use crate::table::{
    Event, GiveUp, Grant, HoldRequest, Holder, KeyHolder, KeyName, LeaseTable, Limits,
};

/// How an embedded store behaves.
///
/// ```
/// use leasehold::{clock::VirtualClock, MemoryOptions, Store};
/// let clock = VirtualClock::new();
/// let store = Store::memory_with(MemoryOptions::default().clock(clock.clone().into()));
/// # drop(store);
/// ```
#[derive(Debug, Clone)]
pub struct MemoryOptions {
    pub(crate) clock: Clock,
    pub(crate) capabilities: Capabilities,
    pub(crate) limits: Limits,
    pub(crate) identity: Option<Identity>,
}

impl Default for MemoryOptions {
    fn default() -> MemoryOptions {
        MemoryOptions {
            clock: Clock::monotonic(),
            capabilities: Capabilities {
                renewal: false,
                push: true,
                groups: false,
            },
            limits: Limits::default(),
            identity: None,
        }
    }
}

impl MemoryOptions {
    /// The clock of the table and its holders (a [`crate::clock::VirtualClock`] in tests).
    pub fn clock(mut self, clock: Clock) -> MemoryOptions {
        self.clock = clock;
        self
    }

    /// Whether held leases run out unless renewed, as they do on a store
    /// reached over a network. Off by default: a holder in the store's own
    /// process needs no renewal (LOCK-19). On, the same table and engine
    /// behave as the server store does, which tests of renewal use.
    pub fn renewal(mut self, on: bool) -> MemoryOptions {
        self.capabilities.renewal = on;
        self.capabilities.groups = on;
        self
    }

    /// Whether grants are pushed to waiters (on by default). Off, waiting
    /// polls, as it must on stores that cannot push (MANUAL-02).
    pub fn push(mut self, on: bool) -> MemoryOptions {
        self.capabilities.push = on;
        self
    }

    /// The most requests that may wait in one key's line.
    pub fn waiters_per_key(mut self, n: usize) -> MemoryOptions {
        self.limits.waiters_per_key = n;
        self
    }

    /// The identity the store records with the leases taken through it
    /// (WHO-01); by default this process's, `hostname:pid`.
    pub fn identity(mut self, identity: Identity) -> MemoryOptions {
        self.identity = Some(identity);
        self
    }
}

/// How many holds the embedded store grants under one taking of its lock
/// in a `begin_many` (so that other callers are not kept out for long).
const MEMORY_HOLD_STEP: usize = 1024;

/// The embedded store's tables and what hangs on them: the lease table,
/// the channels of its waiters and holders, the slot table and its journal.
struct MemoryTables {
    table: LeaseTable,
    waiters: HashMap<RequestId, oneshot::Sender<Result<Granted>>>,
    losses: HashMap<LeaseId, LossSender>,
    /// Holders told the losses of all their leases at once
    /// ([`MemoryDriver::tell_losses`]): their leases have no channel of their own.
    sinks: HashMap<u64, LossSink>,
    slots: SlotTable,
    journal: Option<Box<dyn SlotJournal>>,
    /// The deadline the timer task sleeps until.
    timer_at: Option<Instant>,
    closed: bool,
}

/// What the driver and its timer task share: the clock, the capabilities,
/// the tables under their lock, and the timer's wake-up.
struct MemoryDriverCore {
    clock: Clock,
    capabilities: Capabilities,
    state: Mutex<MemoryTables>,
    wake_timer: Arc<Notify>,
    /// Who holds what is asked through [`Driver::hold`] (the embedded
    /// store's own handle): number 0 and the options' identity.
    own: Arc<Holder>,
}

/// The embedded store's driver.
pub struct MemoryDriver {
    shared: Arc<MemoryDriverCore>,
}

impl MemoryDriver {
    /// A new, empty store whose timer runs on `runtime`, with the embedded
    /// store's fences ([`Fences::wall_clock`]).
    pub fn new(options: MemoryOptions, runtime: &Handle) -> MemoryDriver {
        MemoryDriver::with_fences(options, Fences::wall_clock(), runtime)
    }

    /// A new, empty store taking its epochs from `epochs` (the server store
    /// persists them), whose timer runs on `runtime`.
    pub fn with_epochs(
        options: MemoryOptions,
        epochs: Box<dyn EpochSource>,
        runtime: &Handle,
    ) -> Result<MemoryDriver> {
        Ok(MemoryDriver::with_fences(
            options,
            Fences::new(epochs)?,
            runtime,
        ))
    }

    fn with_fences(options: MemoryOptions, fences: Fences, runtime: &Handle) -> MemoryDriver {
        let shared = Arc::new(MemoryDriverCore {
            clock: options.clock,
            capabilities: options.capabilities,
            state: Mutex::new(MemoryTables {
                table: LeaseTable::new(fences, options.limits),
                waiters: HashMap::default(),
                losses: HashMap::default(),
                sinks: HashMap::default(),
                slots: SlotTable::new(0),
                journal: None,
                timer_at: None,
                closed: false,
            }),
            wake_timer: Arc::new(Notify::new()),
            own: Arc::new(Holder {
                number: 0,
                identity: options.identity.unwrap_or_else(Identity::of_process),
            }),
        });
        runtime.spawn(run_timer(Arc::downgrade(&shared)));
        MemoryDriver { shared }
    }

    /// The epoch the store's fences come from now.
    pub fn epoch(&self) -> u32 {
        self.shared.lock().table.epoch()
    }

    /// How many requests wait in lines now.
    pub fn waiting(&self) -> usize {
        self.shared.lock().table.waiting()
    }

    /// Tells `holder` the losses of every lease granted to it from now on
    /// through `sink`, rather than through a channel per lease (a server's
    /// connection, with its many leases): their grants come with
    /// [`LossReceiver::told_elsewhere`]. Until [`MemoryDriver::forget_holder`].
    /// The sink is called under the store's lock: it must not call the store.
    pub fn tell_losses(&self, holder: u64, sink: LossSink) {
        self.shared.lock().sinks.insert(holder, sink);
    }

    /// Stops telling `holder` its losses: those of its leases are told to
    /// nobody until another holder takes them over ([`MemoryDriver::take_over`]).
    pub fn forget_holder(&self, holder: u64) {
        self.shared.lock().sinks.remove(&holder);
    }

    /// The lease granted to `request`, if it is held.
    pub fn lease_of(&self, request: RequestId) -> Option<LeaseId> {
        self.shared.lock().table.lease_of(request)
    }

    /// The number of the holder of the lease granted to `request`, if it is held.
    pub fn holder_of_request(&self, request: RequestId) -> Option<u64> {
        let st = self.shared.lock();
        st.table
            .lease_of(request)
            .and_then(|lease| st.table.holder_number(lease))
    }

    /// How many leases `holder` holds (a server's connection, against its
    /// limit of keys).
    pub fn held_by(&self, holder: u64) -> usize {
        self.shared.lock().table.held_by(holder)
    }

    /// Makes `holder`, told its losses through its sink, the holder of
    /// `lease` from now on (a server's client that came back on another
    /// connection); `false` when the lease is not held.
    pub fn take_over(&self, lease: LeaseId, holder: &Arc<Holder>) -> bool {
        take_over_in(&mut self.shared.lock(), lease, holder)
    }

    /// Makes the store's slot leases durable: starts from what `journal`
    /// kept of the last run, and records every new namespace and ceiling in
    /// it before answering. Call it before the store's first slot call.
    pub fn restore_slots(&self, recovered: Recovered, journal: Box<dyn SlotJournal>) {
        let mut st = self.shared.lock();
        let mut slots = SlotTable::new(recovered.base_floor);
        for (name, spec) in recovered.namespaces {
            slots.restore_namespace(&name, spec);
        }
        st.slots = slots;
        st.journal = Some(journal);
    }

    /// Makes `holder` the holder of every lease of renewal group `group`
    /// ([`MemoryDriver::take_over`], for a server whose client came back on
    /// another connection and renewed the group from there).
    pub fn take_over_group(&self, group: GroupId, holder: &Arc<Holder>) {
        let mut st = self.shared.lock();
        for lease in st.table.group_members(group) {
            take_over_in(&mut st, lease, holder);
        }
    }

    /// Releases a lease for `holder`. When another holder watches it (a
    /// server's client released it from another connection, with the
    /// lease's id), that one hears it lost (`Unknown`), as a renewal by
    /// group would not say so.
    pub fn release_for(&self, lease: LeaseId, holder: u64) -> Result<()> {
        self.shared.with_state(|st, now| {
            let watcher = st.table.holder_number(lease);
            st.table.release(lease, now)?;
            if watcher == Some(holder) {
                st.losses.remove(&lease);
            } else {
                tell_loss(st, lease, watcher, LossReason::Unknown);
            }
            Ok(())
        })
    }

    /// [`Driver::hold`] for `holder`: its number, which the caller gives
    /// its holders (the server, its connections') and
    /// [`MemoryDriver::overview`] and [`MemoryDriver::drain_activity`] show,
    /// and its identity, which the lease records (WHO-01).
    pub fn hold_as(&self, request: HoldRequest, holder: &Arc<Holder>) -> Result<HoldAnswer> {
        let push = self.shared.capabilities.push;
        self.shared
            .with_state(|st, now| hold_in(st, request, now, holder, push))
    }

    /// [`MemoryDriver::hold_as`] for many requests at once, under one lock
    /// and one reading of the clock (a server's `HoldMany`); each answered
    /// as `hold_as` would answer it alone, in order.
    pub fn hold_many_as(
        &self,
        requests: impl IntoIterator<Item = HoldRequest>,
        holder: &Arc<Holder>,
    ) -> Result<Vec<Result<HoldAnswer>>> {
        let push = self.shared.capabilities.push;
        self.shared.with_state(|st, now| {
            Ok(requests
                .into_iter()
                .map(|request| hold_in(st, request, now, holder, push))
                .collect())
        })
    }

    /// What the store holds now: the locks' counts, the keys `query`
    /// selects, and the slot namespaces (one pass over the keys, under the
    /// store's lock).
    pub fn overview(&self, query: &OverviewQuery) -> Overview {
        let now_ms = self.shared.clock.unix_millis();
        let mut st = self.shared.lock();
        let now = self.shared.clock.now();
        st.table.advance(now);
        let table = st.table.overview(query, now);
        Overview {
            locks: table.locks,
            keys: table.keys,
            matched: table.matched,
            namespaces: st.slots.overview(now_ms),
        }
    }

    /// Starts (or stops) recording grants, releases and losses for
    /// [`MemoryDriver::drain_activity`]; off (the default), it costs nothing.
    pub fn record_activity(&self, on: bool) {
        self.shared.lock().table.record_activity(on);
    }

    /// The grants, releases and losses since the last drain, oldest first
    /// (at most 4,096: older ones are dropped).
    pub fn drain_activity(&self) -> Vec<Activity> {
        let mut st = self.shared.lock();
        let drained = st.table.drain_activity();
        drop(st);
        let (now, now_ms) = (self.shared.clock.now(), self.shared.clock.unix_millis());
        drained
            .into_iter()
            .map(|a| Activity {
                at_ms: now_ms.saturating_sub(
                    u64::try_from(now.saturating_since(a.at).as_millis()).unwrap_or(u64::MAX),
                ),
                kind: a.kind,
                lock: a.lock.to_string(),
                key: a.key.to_string(),
                fence: a.fence,
                holder: a.holder,
                identity: a.identity.to_string(),
            })
            .collect()
    }

    /// The key lease `lease` holds, if it is held.
    pub fn key_of(&self, lease: LeaseId) -> Option<crate::driver::KeyName> {
        Some(self.shared.lock().table.holder_by_id(lease)?.name)
    }

    /// The key lease `lease` holds, if it is held and someone waits for
    /// it: its release will hand it over.
    pub fn handover_of(&self, lease: LeaseId) -> Option<crate::driver::KeyName> {
        let st = self.shared.lock();
        let name = st.table.holder_by_id(lease)?.name;
        (st.table.line_len(&name) > 0).then_some(name)
    }

    /// How many leases the store holds now.
    pub fn held(&self) -> usize {
        self.shared.lock().table.held()
    }

    /// The table's holders of `lock` (or of every lock), with their lease
    /// ids, for inspection by the workspace's tests (feature `internals`;
    /// not a stable API).
    #[cfg(feature = "internals")]
    pub fn table_holders(&self, lock: Option<&str>) -> Vec<crate::table::KeyHolder> {
        self.shared.lock().table.holders(lock)
    }
}

impl Drop for MemoryDriver {
    fn drop(&mut self) {
        self.shared.wake_timer.notify_one();
    }
}

impl MemoryDriverCore {
    fn lock(&self) -> MutexGuard<'_, MemoryTables> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `op` on the open store, then delivers what it caused.
    fn with_state<T>(&self, op: impl FnOnce(&mut MemoryTables, Instant) -> Result<T>) -> Result<T> {
        let mut st = self.lock();
        if st.closed {
            return Err(Error::new(ErrorKind::Closed, "the store is closed"));
        }
        let now = self.clock.now();
        let out = op(&mut st, now);
        deliver(&mut st, now);
        if st
            .table
            .next_deadline()
            .is_some_and(|d| st.timer_at.is_none_or(|t| d < t))
        {
            self.wake_timer.notify_one();
        }
        out
    }
}

/// A key's holder as a listing shows it, as of `now`.
fn info(h: KeyHolder, now: Instant) -> HolderInfo {
    HolderInfo {
        lock: h.name.lock.to_string(),
        key: h.name.key.to_string(),
        fence: h.grant.fence,
        held_for: now.saturating_since(h.granted_at),
        expires_in: h.grant.expires_at.map(|e| e.saturating_since(now)),
        identity: h.identity.to_string(),
        waiting: h.waiting,
    }
}

/// Asks the table for `request` on behalf of `holder`: a grant gets its
/// loss channel, a place in line its waiter's channel (waiting only where
/// the store pushes grants).
fn hold_in(
    st: &mut MemoryTables,
    request: HoldRequest,
    now: Instant,
    holder: &Arc<Holder>,
    push: bool,
) -> Result<HoldAnswer> {
    let request_id = request.request_id;
    let queue = request.queue && push;
    let request = HoldRequest { queue, ..request };
    Ok(match st.table.hold_as(request, now, holder)? {
        HoldAnswer::Granted(grant) => {
            // A retry may come from another of the holder's connections.
            st.table.set_holder(grant.lease_id, holder);
            let lost = loss_receiver(st, grant.lease_id, holder.number);
            HoldAnswer::Granted(Granted { grant, lost })
        }
        HoldAnswer::NotHeld => HoldAnswer::NotHeld,
        HoldAnswer::Queued { ahead, .. } => {
            let (tx, rx) = oneshot::channel();
            st.waiters.insert(request_id, tx);
            HoldAnswer::Queued { waiting: rx, ahead }
        }
    })
}

/// Makes `holder` the holder of `lease`, told its losses through its sink
/// rather than the lease's own channel; `false` when the lease is not held.
fn take_over_in(st: &mut MemoryTables, lease: LeaseId, holder: &Arc<Holder>) -> bool {
    if !st.table.set_holder(lease, holder) {
        return false;
    }
    st.losses.remove(&lease);
    true
}

/// Where the holder of a lease just granted hears of its loss: its sink,
/// if it has one, else a channel of the lease's own.
fn loss_receiver(st: &mut MemoryTables, lease: LeaseId, holder: u64) -> LossReceiver {
    if st.sinks.contains_key(&holder) {
        return LossReceiver::told_elsewhere();
    }
    let (tx, rx) = loss_channel();
    st.losses.insert(lease, tx);
    rx
}

/// Tells the holder of `lease` (numbered `holder`) that it is lost: through
/// the lease's channel, or its holder's sink.
fn tell_loss(st: &mut MemoryTables, lease: LeaseId, holder: Option<u64>, reason: LossReason) {
    if let Some(tx) = st.losses.remove(&lease) {
        tx.send(reason);
    } else if let Some(sink) = holder.and_then(|h| st.sinks.get(&h)) {
        sink(lease, reason);
    }
}

/// Sends the table's events to whoever waits for them. A grant whose waiter
/// went away is released at once, never leaked (LOCK-18).
fn deliver(st: &mut MemoryTables, now: Instant) {
    loop {
        let events = st.table.drain_events();
        if events.is_empty() {
            return;
        }
        for event in events {
            match event {
                Event::Granted(grant) => {
                    let lease_id = grant.lease_id;
                    let Some(tx) = st.waiters.remove(&grant.request_id) else {
                        let _ = st.table.release(lease_id, now);
                        continue;
                    };
                    let holder = st.table.holder_number(lease_id).unwrap_or_default();
                    let lost = loss_receiver(st, lease_id, holder);
                    if tx.send(Ok(Granted { grant, lost })).is_err() {
                        st.losses.remove(&lease_id);
                        let _ = st.table.release(lease_id, now);
                    }
                }
                Event::Lost {
                    lease_id,
                    holder,
                    reason,
                    ..
                } => tell_loss(st, lease_id, Some(holder), reason),
                Event::Failed {
                    request_id,
                    message,
                } => {
                    if let Some(tx) = st.waiters.remove(&request_id) {
                        let _ = tx.send(Err(Error::new(ErrorKind::Internal, message)));
                    }
                }
            }
        }
    }
}

/// Lets leases expire and revocations happen on time when no call comes.
async fn run_timer(shared: Weak<MemoryDriverCore>) {
    loop {
        let Some(s) = shared.upgrade() else { return };
        let (next, clock) = {
            let mut st = s.lock();
            if st.closed {
                return;
            }
            let next = st.table.next_deadline();
            st.timer_at = next;
            (next, s.clock.clone())
        };
        let wake = s.wake_timer.clone();
        let notified = wake.notified();
        let weak = Arc::downgrade(&s);
        drop(s);
        match next {
            Some(at) => {
                tokio::select! {
                    _ = clock.sleep_until(at) => {}
                    _ = notified => {}
                }
            }
            None => notified.await,
        }
        let Some(s) = weak.upgrade() else { return };
        let _ = s.with_state(|st, now| {
            st.table.advance(now);
            Ok(())
        });
    }
}

#[async_trait]
impl Driver for MemoryDriver {
    fn capabilities(&self) -> Capabilities {
        self.shared.capabilities
    }

    fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    async fn hold(&self, request: HoldRequest) -> Result<HoldAnswer> {
        self.hold_as(request, &self.shared.own)
    }

    fn hold_many_step(&self) -> usize {
        MEMORY_HOLD_STEP
    }

    async fn hold_many(&self, requests: &[HoldRequest]) -> Vec<Result<HoldAnswer>> {
        self.hold_many_as(requests.iter().cloned(), &self.shared.own)
            .unwrap_or_else(|e| {
                requests
                    .iter()
                    .map(|_| Err(Error::new(e.kind(), e.message())))
                    .collect()
            })
    }

    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant> {
        self.shared
            .with_state(|st, now| st.table.renew(lease, ttl, now))
    }

    async fn renew_group(&self, group: GroupId, ttl: Duration) -> Result<()> {
        self.shared
            .with_state(|st, now| st.table.renew_group(group, ttl, now).map(|_| ()))
    }

    async fn release(&self, lease: LeaseId) -> Result<()> {
        self.shared.with_state(|st, now| {
            st.table.release(lease, now)?;
            st.losses.remove(&lease);
            Ok(())
        })
    }

    async fn give_up(&self, request: RequestId) -> Result<GiveUp> {
        self.shared.with_state(|st, now| {
            st.waiters.remove(&request);
            let out = st.table.give_up(request, now);
            if let GiveUp::Released(lease) = out {
                st.losses.remove(&lease);
            }
            Ok(out)
        })
    }

    async fn holders(&self, lock: Option<&str>) -> Result<Vec<HolderInfo>> {
        let now = self.shared.clock.now();
        let holders = self.shared.with_state(|st, now| {
            st.table.advance(now);
            Ok(st.table.holders(lock))
        })?;
        Ok(holders.into_iter().map(|h| info(h, now)).collect())
    }

    async fn holder(&self, name: &KeyName) -> Result<Option<HolderInfo>> {
        let now = self.shared.clock.now();
        let holder = self.shared.with_state(|st, now| {
            st.table.advance(now);
            Ok(st.table.holder(name))
        })?;
        Ok(holder.map(|h| info(h, now)))
    }

    async fn slot_acquire(&self, request: SlotRequest) -> Result<AcquireResult> {
        let now_ms = self.shared.clock.unix_millis();
        self.shared.with_state(|st, _| {
            let MemoryTables {
                table,
                slots,
                journal,
                ..
            } = st;
            if let Some(journal) = journal {
                SlotTable::check_request(&request)?;
                let known = slots.namespace(&request.namespace);
                if known.is_none() {
                    journal.record_namespace(&request.namespace, request.spec)?;
                }
                if known.is_none_or(|spec| spec == request.spec) {
                    journal.cover_ceiling(slots.ceiling_for(now_ms, request.ttl, &request.spec))?;
                }
            }
            slots.acquire(&request, now_ms, || table.next_fence())
        })
    }

    async fn slot_renew(&self, lease: &SlotLease, ttl: Duration) -> Result<Option<SlotLease>> {
        let now_ms = self.shared.clock.unix_millis();
        self.shared.with_state(|st, _| {
            if let Some(journal) = &mut st.journal {
                if let Some(ceiling) = st.slots.renewal_ceiling(lease, ttl, now_ms) {
                    journal.cover_ceiling(ceiling)?;
                }
            }
            st.slots.renew(lease, ttl, now_ms)
        })
    }

    async fn slot_release(&self, lease: &SlotLease, last_issued: u64) -> Result<bool> {
        let now_ms = self.shared.clock.unix_millis();
        self.shared
            .with_state(|st, _| Ok(st.slots.release(lease, last_issued, now_ms)))
    }

    async fn close(&self) {
        let mut st = self.shared.lock();
        if st.closed {
            return;
        }
        st.closed = true;
        st.table.clear(LossReason::Closed);
        deliver(&mut st, self.shared.clock.now());
        for (_, tx) in st.waiters.drain() {
            let _ = tx.send(Err(Error::new(ErrorKind::Closed, "the store was closed")));
        }
        drop(st);
        self.shared.wake_timer.notify_one();
    }
}
