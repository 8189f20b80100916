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
};
use crate::error::{Error, ErrorKind, Result};
use crate::fence::{EpochSource, Fences};
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::loss::LossReason;
use crate::overview::{Activity, Overview, OverviewQuery};
use crate::slots::{AcquireResult, Recovered, SlotJournal, SlotLease, SlotRequest, SlotTable};
use crate::table::{Event, GiveUp, Grant, HoldRequest, LeaseTable, Limits};

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
}

/// The embedded store's tables and what hangs on them: the lease table,
/// the channels of its waiters and holders, the slot table and its journal.
struct MemoryTables {
    table: LeaseTable,
    waiters: HashMap<RequestId, oneshot::Sender<Result<Granted>>>,
    losses: HashMap<LeaseId, LossSender>,
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
                slots: SlotTable::new(0),
                journal: None,
                timer_at: None,
                closed: false,
            }),
            wake_timer: Arc::new(Notify::new()),
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

    /// A new channel on which the store will say that `lease` ended unseen,
    /// replacing the one its grant came with (for a server whose client
    /// came back on another connection); `None` when the lease is not held.
    pub fn watch_loss(&self, lease: LeaseId) -> Option<LossReceiver> {
        let mut st = self.shared.lock();
        st.table.holder_by_id(lease)?;
        let (tx, rx) = loss_channel();
        st.losses.insert(lease, tx);
        Some(rx)
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

    /// The leases of renewal group `group`, with the requests they were
    /// granted to (for a server whose client came back on another connection).
    pub fn group_members(&self, group: GroupId) -> Vec<(LeaseId, RequestId)> {
        self.shared.lock().table.group_members(group)
    }

    /// Releases a lease for someone other than the holder that watches it
    /// (a server's client on another connection, with the lease's id): the
    /// holder hears it lost (`Unknown`), as a renewal by group would not say so.
    pub fn release_unseen(&self, lease: LeaseId) -> Result<()> {
        self.shared.with_state(|st, now| {
            st.table.release(lease, now)?;
            if let Some(tx) = st.losses.remove(&lease) {
                tx.send(LossReason::Unknown);
            }
            Ok(())
        })
    }

    /// [`Driver::hold`] for `holder`, a number the caller gives its holders
    /// (the server, its connections') that [`MemoryDriver::overview`] and
    /// [`MemoryDriver::drain_activity`] show; it changes nothing else.
    pub fn hold_as(&self, request: HoldRequest, holder: u64) -> Result<HoldAnswer> {
        let request_id = request.request_id;
        let queue = request.queue && self.shared.capabilities.push;
        let request = HoldRequest { queue, ..request };
        self.shared.with_state(|st, now| {
            Ok(match st.table.hold_as(request, now, holder)? {
                HoldAnswer::Granted(grant) => {
                    let (tx, rx) = loss_channel();
                    st.losses.insert(grant.lease_id, tx);
                    HoldAnswer::Granted(Granted { grant, lost: rx })
                }
                HoldAnswer::NotHeld => HoldAnswer::NotHeld,
                HoldAnswer::Queued { ahead, .. } => {
                    let (tx, rx) = oneshot::channel();
                    st.waiters.insert(request_id, tx);
                    HoldAnswer::Queued { waiting: rx, ahead }
                }
            })
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
                    let (loss_tx, loss_rx) = loss_channel();
                    let delivered = st.waiters.remove(&grant.request_id).is_some_and(|tx| {
                        tx.send(Ok(Granted {
                            grant,
                            lost: loss_rx,
                        }))
                        .is_ok()
                    });
                    if delivered {
                        st.losses.insert(lease_id, loss_tx);
                    } else {
                        let _ = st.table.release(lease_id, now);
                    }
                }
                Event::Lost {
                    lease_id, reason, ..
                } => {
                    if let Some(tx) = st.losses.remove(&lease_id) {
                        tx.send(reason);
                    }
                }
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
        self.hold_as(request, 0)
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
        Ok(holders
            .into_iter()
            .map(|h| HolderInfo {
                lock: h.name.lock.to_string(),
                key: h.name.key.to_string(),
                fence: h.grant.fence,
                held_for: now.saturating_since(h.granted_at),
                expires_in: h.grant.expires_at.map(|e| e.saturating_since(now)),
            })
            .collect())
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
