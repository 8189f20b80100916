//! The driver of the server store: one multiplexed connection, reconnected
//! with backoff; held leases renewed by id on every new connection
//! (LOCK-07); holds whose answer was lost asked again with the same request
//! id (LOCK-03); leases renewed by group, one small frame per group, and
//! renewals of single leases batched into one frame.

use crate::hashed::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use rand::Rng;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch, Notify};
use tokio_rustls::TlsConnector;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::connection::{self, Frames, Welcome};
use super::options::Target;
use super::outbox::Outbox;
use super::protocol::{
    self, millis, ClientFrame, Reply, Request, ServerFrame, WireGrant, WireHolder,
};
use crate::clock::Clock;
use crate::connect::ConnectOptions;
use crate::driver::{
    loss_channel, Capabilities, Driver, GiveUp, Grant, Granted, HoldAnswer, HoldRequest,
    HolderInfo, KeyName, LossReceiver, LossSender, LossSink, Waiting,
};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::loss::LossReason;
use crate::loss_channel::LossBook;
use crate::slots::{AcquireResult, SlotLease, SlotRequest};

const BACKOFF_FIRST: Duration = Duration::from_millis(50);
const BACKOFF_CAP: Duration = Duration::from_secs(2);

struct Conn {
    outbox: Arc<Outbox>,
}

struct Pending {
    tx: oneshot::Sender<Result<Reply>>,
    /// The holds the request asks for, so that a `Queued` answer marks their waiters.
    holds: Holds,
}

/// The hold requests one request on the wire carries.
enum Holds {
    /// None: not a hold.
    None,
    /// A `Hold`.
    One(RequestId),
    /// A `HoldMany`, its keys' requests in the order asked: a key answered
    /// `Queued` gets its waiter when the answer is read.
    Many(Vec<HoldRequest>),
}

struct Waiter {
    tx: oneshot::Sender<Result<Granted>>,
    /// What a new connection asks again.
    request: HoldRequest,
    /// The store answered `Queued`: a new connection asks again for it.
    queued: bool,
}

/// A lease this driver holds, as its book keeps it: 16 bytes, 32 with its
/// id (a million held leases).
struct BookedLease {
    /// Its ttl in milliseconds (at most [`crate::duration::MAX_TTL`]'s).
    ttl_ms: u32,
    epoch: u32,
    /// The renewal group that renews it, if any.
    group: Option<GroupPlace>,
    /// Its loss is told to its group's sink: its holder listened.
    heard: bool,
}

/// A renewal group's place in `RemoteBook::groups`, counted from 1 (4
/// bytes, where a group id is 16).
#[derive(Clone, Copy, PartialEq, Eq)]
struct GroupPlace(NonZeroU32);

impl GroupPlace {
    fn index(self) -> usize {
        self.0.get() as usize - 1
    }
}

/// A renewal group of held leases, as the book knows it.
struct BookedGroup {
    id: GroupId,
    /// Where the losses of its leases are told, by id, once their holders
    /// listened ([`Driver::tell_group_losses`]); without one, each lease
    /// has a channel of its own.
    sink: Option<LossSink>,
}

type RenewReply = oneshot::Sender<Result<WireGrant>>;

/// A request queued on a connection: where its answer will come, and the
/// outbox that writes it.
type Sent = (oneshot::Receiver<Result<Reply>>, Arc<Outbox>);

/// What became of a request.
enum Asked {
    /// The server answered (a failure it sent is its answer, never retried).
    Answered(Result<Reply>),
    /// The connection dropped before an answer came.
    Dropped,
}

/// The client's book of its connection and of everything on it: requests
/// awaiting answers, waiters, held leases and their renewal groups.
struct RemoteBook {
    /// The driver's own core, as the book that tells the losses of leases
    /// told by group ([`LossReceiver::booked`]).
    me: Weak<dyn LossBook>,
    conn: Option<Conn>,
    epoch: Option<u32>,
    role: Option<super::protocol::Role>,
    /// The largest frame both sides of the current connection accept.
    max_frame: usize,
    /// How many leases one `Renew` may name on the current connection.
    renew_batch: usize,
    next_id: u64,
    pending: HashMap<u64, Pending>,
    waiters: HashMap<RequestId, Waiter>,
    /// Where the grants of `HoldMany` keys answered `Queued` will arrive,
    /// until the `hold_many` that asked takes them.
    parked: HashMap<RequestId, Waiting>,
    held: HashMap<LeaseId, BookedLease>,
    /// The channels of held leases not told by group.
    losses: HashMap<LeaseId, LossSender>,
    /// Losses of leases told by group that came before their holders
    /// listened; each leaves when its holder listens or the lease is released.
    unheard: HashMap<LeaseId, LossReason>,
    /// The renewal groups of held leases (a held lease names its group by
    /// its place here).
    groups: Vec<BookedGroup>,
    renewals: Vec<(LeaseId, u64, RenewReply)>,
}

impl RemoteBook {
    fn new(me: Weak<dyn LossBook>) -> RemoteBook {
        RemoteBook {
            me,
            conn: None,
            epoch: None,
            role: None,
            max_frame: 0,
            renew_batch: 0,
            next_id: 0,
            pending: HashMap::default(),
            waiters: HashMap::default(),
            parked: HashMap::default(),
            held: HashMap::default(),
            losses: HashMap::default(),
            unheard: HashMap::default(),
            groups: Vec::new(),
            renewals: Vec::new(),
        }
    }

    /// The store answered that request `rid` waits in line: a new
    /// connection asks again for it.
    fn mark_queued(&mut self, rid: &RequestId) {
        if let Some(w) = self.waiters.get_mut(rid) {
            w.queued = true;
        }
    }

    /// Registers the waiter of a `HoldMany` key the store answered
    /// `Queued`, before anything after the answer is read (its grant may
    /// follow at once); its receiver waits in `parked`.
    fn park(&mut self, request: &HoldRequest) {
        let (tx, rx) = oneshot::channel();
        let mut w = waiter(request, tx);
        w.queued = true;
        self.waiters.insert(request.request_id, w);
        self.parked.insert(request.request_id, rx);
    }

    /// Books the store's answer to hold `request` (`waiting`: where its
    /// grant arrives, if it may wait): a grant becomes a held lease, and a
    /// request that will not wait leaves the waiters.
    fn book_hold(
        &mut self,
        request: &HoldRequest,
        answer: Result<Reply>,
        waiting: Option<Waiting>,
    ) -> Result<HoldAnswer> {
        let rid = request.request_id;
        if let (Ok(Reply::Queued { ahead }), Some(waiting)) = (&answer, waiting) {
            return Ok(HoldAnswer::Queued {
                waiting,
                ahead: usize::try_from(*ahead).unwrap_or(usize::MAX),
            });
        }
        self.waiters.remove(&rid);
        match answer? {
            Reply::Granted(w) => Ok(HoldAnswer::Granted(Granted {
                grant: grant_of(&w),
                lost: self.book_lease(LeaseId(w.lease_id), request),
            })),
            Reply::NotHeld => Ok(HoldAnswer::NotHeld),
            other => Err(unexpected("hold", &other)),
        }
    }

    /// Books the lease `id` granted to `request`; returns the receiver
    /// its loss will come on: the book's own where its group has a sink,
    /// else a channel of its own.
    fn book_lease(&mut self, id: LeaseId, request: &HoldRequest) -> LossReceiver {
        let group = request.group.map(|g| self.group_place(g));
        let by_group = group.is_some_and(|g| self.groups[g.index()].sink.is_some());
        self.held.insert(
            id,
            BookedLease {
                ttl_ms: request.ttl.map_or(0, ttl_ms),
                epoch: self.epoch.unwrap_or(0),
                group,
                heard: false,
            },
        );
        if by_group {
            return LossReceiver::booked(self.me.clone(), id);
        }
        let (loss, lost) = loss_channel();
        self.losses.insert(id, loss);
        lost
    }

    /// Takes the lease `id` out of the book: it was released.
    fn unbook(&mut self, id: &LeaseId) -> Option<BookedLease> {
        self.losses.remove(id);
        self.unheard.remove(id);
        self.held.remove(id)
    }

    /// Tells the holder of `lease`, just taken out of `held`, that it is
    /// lost: on its channel, to its group's sink once its holder listened,
    /// else kept until it does.
    fn tell_loss(&mut self, id: LeaseId, lease: &BookedLease, reason: LossReason) {
        if let Some(loss) = self.losses.remove(&id) {
            return loss.send(reason);
        }
        if !lease.heard {
            self.unheard.insert(id, reason);
            return;
        }
        let group = lease.group.map(|g| &self.groups[g.index()]);
        if let Some(sink) = group.and_then(|g| g.sink.as_ref()) {
            sink(id, reason);
        }
    }

    /// The holder of `lease` listened: its loss goes to its group's sink
    /// from now on. Returns the loss that came before, if one did.
    fn heard(&mut self, lease: LeaseId) -> Option<LossReason> {
        match self.held.get_mut(&lease) {
            Some(h) => {
                h.heard = true;
                None
            }
            None => self.unheard.remove(&lease),
        }
    }

    /// Takes every held lease out of the book and tells each holder it is
    /// lost for `reason`.
    fn lose_all(&mut self, reason: LossReason) {
        let held: Vec<_> = self.held.drain().collect();
        for (id, lease) in held {
            self.tell_loss(id, &lease, reason);
        }
    }

    /// The place of `group` in `groups`, added if new.
    fn group_place(&mut self, group: GroupId) -> GroupPlace {
        let at = match self.groups.iter().position(|g| g.id == group) {
            Some(at) => at,
            None => {
                self.groups.push(BookedGroup {
                    id: group,
                    sink: None,
                });
                self.groups.len() - 1
            }
        };
        // A store handle has one group per ttl and margin: far fewer than 2^32.
        GroupPlace(NonZeroU32::MIN.saturating_add(u32::try_from(at).unwrap_or(u32::MAX)))
    }
}

/// A ttl in the book's milliseconds; a ttl is at most
/// [`crate::duration::MAX_TTL`], well within them.
fn ttl_ms(ttl: Duration) -> u32 {
    u32::try_from(millis(ttl)).unwrap_or(u32::MAX)
}

/// What the driver and its connection and renewal tasks share: the target
/// and its options, the clock, the book under its lock, and the signals.
struct RemoteDriverCore {
    target: Target,
    options: ConnectOptions,
    tls: Option<TlsConnector>,
    clock: Clock,
    state: Mutex<RemoteBook>,
    /// 0 while no connection is up, else the current connection's number.
    up: watch::Sender<u64>,
    closed: CancellationToken,
    renew_wake: Arc<Notify>,
}

/// The driver of a server store reached over `leasehold://` or `leaseholds://`.
pub struct RemoteDriver {
    shared: Arc<RemoteDriverCore>,
}

/// How many `HoldMany` frames one `hold_many` keeps in flight.
const HOLD_BATCHES_IN_FLIGHT: usize = 4;

/// A hold request as the wire carries it.
fn hold_wire(request: &HoldRequest) -> Request {
    Request::Hold {
        lock: request.name.lock.to_string(),
        key: request.name.key.to_string(),
        request_id: request.request_id.0,
        ttl_ms: request.ttl.map(millis).unwrap_or(0),
        max_hold_ms: request.max_hold.map(millis),
        queue: request.queue,
        group: request.group.map(|g| g.0),
    }
}

/// A waiter for `request`, whose grant goes to `tx`.
fn waiter(request: &HoldRequest, tx: oneshot::Sender<Result<Granted>>) -> Waiter {
    Waiter {
        tx,
        request: request.clone(),
        queued: false,
    }
}

/// Whether `a` and `b` can share a `HoldMany`: everything but their keys
/// and request ids is the same.
fn same_terms(a: &HoldRequest, b: &HoldRequest) -> bool {
    a.name.lock == b.name.lock
        && a.ttl == b.ttl
        && a.max_hold == b.max_hold
        && a.queue == b.queue
        && a.group == b.group
}

/// Splits hold requests into `HoldMany` batches in their order: each fits a
/// frame of `max_frame` bytes both ways and shares its terms.
fn hold_batches(requests: &[HoldRequest], max_frame: usize) -> Vec<&[HoldRequest]> {
    let most = protocol::max_holds(max_frame);
    let mut batches = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (at, request) in requests.iter().enumerate() {
        let cost = request.name.key.len() + protocol::HOLD_KEY_OVERHEAD;
        let fits = at > start
            && at - start < most
            && bytes + cost <= max_frame
            && same_terms(&requests[start], request);
        if !fits {
            if at > start {
                batches.push(&requests[start..at]);
            }
            start = at;
            bytes = protocol::HOLD_ENVELOPE_BYTES + request.name.lock.len();
        }
        bytes += cost;
    }
    if requests.len() > start {
        batches.push(&requests[start..]);
    }
    batches
}

/// A copy of `e` for each of many answers it fails.
fn copy_of(e: &Error) -> Error {
    protocol::WireError::from(e).into()
}

fn unavailable(why: &str) -> Error {
    Error::new(ErrorKind::Unavailable, why)
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the store is closed")
}

fn grant_of(w: &WireGrant) -> Grant {
    Grant {
        request_id: RequestId(w.request_id),
        lease_id: LeaseId(w.lease_id),
        fence: w.fence,
        expires_at: None,
        revoke_at: None,
        revoke_in: w.revoke_in_ms.map(Duration::from_millis),
    }
}

impl RemoteDriver {
    /// Connects to the store at `url` and keeps connected in the background on `runtime`.
    /// Fails as the first connection fails: `Unavailable`, `Unauthenticated`, `Protocol`.
    pub async fn connect(
        url: &str,
        options: ConnectOptions,
        runtime: &Handle,
    ) -> Result<RemoteDriver> {
        let target = Target::parse(url)?;
        let tls = if target.tls {
            Some(connection::tls_connector(&options)?)
        } else {
            None
        };
        let first = connection::open(&target, tls.as_ref(), &options).await?;
        let (up, _) = watch::channel(0);
        let shared = Arc::new_cyclic(|me: &Weak<RemoteDriverCore>| RemoteDriverCore {
            target,
            options,
            tls,
            clock: Clock::monotonic(),
            state: Mutex::new(RemoteBook::new(me.clone())),
            up,
            closed: CancellationToken::new(),
            renew_wake: Arc::new(Notify::new()),
        });
        let mut up = shared.up.subscribe();
        runtime.spawn(run_connections(Arc::downgrade(&shared), first));
        runtime.spawn(run_renewals(
            Arc::downgrade(&shared),
            shared.renew_wake.clone(),
            shared.closed.clone(),
        ));
        while *up.borrow_and_update() == 0 {
            up.changed()
                .await
                .map_err(|_| unavailable("the connection task ended"))?;
        }
        Ok(RemoteDriver { shared })
    }

    /// What the server admits this connection to do, as its last welcome said.
    pub fn role(&self) -> Option<super::protocol::Role> {
        self.shared.lock().role
    }

    /// The server's epoch, as its last welcome said.
    pub fn epoch(&self) -> Option<u32> {
        self.shared.lock().epoch
    }
}

impl Drop for RemoteDriver {
    fn drop(&mut self) {
        self.shared.closed.cancel();
    }
}

impl RemoteDriverCore {
    fn lock(&self) -> MutexGuard<'_, RemoteBook> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The largest frame both sides accept: the current connection's, or
    /// this client's own before the first welcome.
    fn max_frame(&self) -> usize {
        match self.lock().max_frame {
            0 => self.options.max_frame,
            known => known,
        }
    }

    /// Waits until a connection is up.
    async fn wait_up(&self) -> Result<()> {
        if *self.up.borrow() != 0 && !self.closed.is_cancelled() {
            return Ok(());
        }
        let mut up = self.up.subscribe();
        loop {
            if self.closed.is_cancelled() {
                return Err(closed());
            }
            if *up.borrow_and_update() != 0 {
                return Ok(());
            }
            tokio::select! {
                changed = up.changed() => changed.map_err(|_| closed())?,
                _ = self.closed.cancelled() => return Err(closed()),
            }
        }
    }

    /// Queues a request on the current connection, after `register` ran
    /// under the same lock (so an answer cannot overtake it); the caller
    /// then writes it out. `None`: no connection is up (one whose writes
    /// failed is marked down).
    fn send(
        &self,
        body: Request,
        holds: Holds,
        register: impl FnOnce(&mut RemoteBook),
    ) -> Result<Option<Sent>> {
        let mut st = self.lock();
        if self.closed.is_cancelled() {
            return Err(closed());
        }
        let id = st.next_id;
        let Some(conn) = &st.conn else {
            return Ok(None);
        };
        if conn.outbox.is_broken() {
            st.conn = None;
            self.up.send_replace(0);
            return Ok(None);
        }
        let outbox = conn.outbox.clone();
        outbox.queue(ClientFrame::Request { id, body });
        st.next_id += 1;
        let (tx, rx) = oneshot::channel();
        st.pending.insert(id, Pending { tx, holds });
        register(&mut st);
        Ok(Some((rx, outbox)))
    }

    /// Sends a request and waits for the server's answer, or for the
    /// connection to drop first ([`Asked::Dropped`]: the request may or may
    /// not have reached the store).
    async fn ask(
        &self,
        body: Request,
        holds: Holds,
        register: impl FnOnce(&mut RemoteBook),
    ) -> Result<Asked> {
        let Some((rx, outbox)) = self.send(body, holds, register)? else {
            return Ok(Asked::Dropped);
        };
        outbox.write_out().await;
        Ok(match rx.await {
            Ok(answer) => Asked::Answered(answer),
            Err(_) => Asked::Dropped,
        })
    }

    /// Sends a request and waits for its answer; a connection that drops first fails `Unavailable`.
    async fn call(&self, body: Request) -> Result<Reply> {
        match self.ask(body, Holds::None, |_| {}).await? {
            Asked::Answered(answer) => answer,
            Asked::Dropped => Err(unavailable("the connection dropped before the answer")),
        }
    }

    /// Sends a request until the server answers it, through every reconnection
    /// (for requests that may be repeated: the caller bounds the time).
    async fn call_until_answered(&self, body: Request) -> Result<Reply> {
        loop {
            self.wait_up().await?;
            if let Asked::Answered(answer) = self.ask(body.clone(), Holds::None, |_| {}).await? {
                return answer;
            }
        }
    }

    /// Asks for one batch of holds in one `HoldMany` (LOCK-22), through
    /// every reconnection with the same request ids (LOCK-03); answers
    /// each as [`Driver::hold`] would.
    async fn hold_batch(&self, batch: &[HoldRequest]) -> Vec<Result<HoldAnswer>> {
        let fail_all = |e: Error| batch.iter().map(|_| Err(copy_of(&e))).collect();
        let first = &batch[0];
        loop {
            if let Err(e) = self.wait_up().await {
                return fail_all(e);
            }
            let wire = Request::HoldMany {
                lock: first.name.lock.to_string(),
                keys: batch
                    .iter()
                    .map(|r| (r.name.key.to_string(), r.request_id.0))
                    .collect(),
                ttl_ms: first.ttl.map(millis).unwrap_or(0),
                max_hold_ms: first.max_hold.map(millis),
                queue: first.queue,
                group: first.group.map(|g| g.0),
            };
            let answer = match self.ask(wire, Holds::Many(batch.to_vec()), |_| {}).await {
                Err(e) => return fail_all(e),
                Ok(Asked::Answered(answer)) => answer,
                Ok(Asked::Dropped) => continue,
            };
            let mut st = self.lock();
            let answers = match answer {
                Ok(Reply::HeldMany(answers)) if answers.len() == batch.len() => answers,
                other => {
                    for request in batch {
                        st.waiters.remove(&request.request_id);
                        st.parked.remove(&request.request_id);
                    }
                    return fail_all(match other {
                        Ok(other) => unexpected("hold many", &other),
                        Err(e) => e,
                    });
                }
            };
            return batch
                .iter()
                .zip(answers)
                .map(|(request, answer)| {
                    let waiting = match answer {
                        Ok(Reply::Queued { .. }) => st.parked.remove(&request.request_id),
                        _ => None,
                    };
                    st.book_hold(request, answer.map_err(Error::from), waiting)
                })
                .collect();
        }
    }

    /// Releases `lease` (taken out of the book already), through every
    /// reconnection: the caller bounds the time.
    async fn release(&self, lease: LeaseId) -> Result<()> {
        loop {
            self.wait_up().await?;
            let asked = self
                .ask(Request::Release { lease_id: lease.0 }, Holds::None, |_| {})
                .await?;
            match asked {
                Asked::Dropped => continue,
                Asked::Answered(Ok(Reply::Released)) => return Ok(()),
                Asked::Answered(Ok(other)) => return Err(unexpected("release", &other)),
                Asked::Answered(Err(e)) => return Err(e),
            }
        }
    }

    /// Sends a request whose answer nobody waits for.
    fn fire(&self, body: Request) {
        let mut st = self.lock();
        let id = st.next_id;
        if let Some(conn) = &st.conn {
            conn.outbox
                .queue_and_wake(ClientFrame::Request { id, body });
            st.next_id += 1;
        }
    }

    /// Tells the holders of every lease of `group` that it is lost.
    fn lose_group(&self, group: GroupId, reason: LossReason) {
        let mut st = self.lock();
        let place = Some(st.group_place(group));
        let gone: Vec<LeaseId> = st
            .held
            .iter()
            .filter(|(_, h)| h.group == place)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(h) = st.held.remove(&id) {
                st.tell_loss(id, &h, reason);
            }
        }
    }

    /// Hands a grant to its waiter, or releases it when nobody waits (LOCK-18).
    fn deliver_grant(&self, st: &mut RemoteBook, w: &WireGrant) {
        let delivered = match st.waiters.remove(&RequestId(w.request_id)) {
            Some(waiter) => {
                let id = LeaseId(w.lease_id);
                let lost = st.book_lease(id, &waiter.request);
                let grant = grant_of(w);
                let ok = waiter.tx.send(Ok(Granted { grant, lost })).is_ok();
                if !ok {
                    st.unbook(&id);
                }
                ok
            }
            None => st.held.contains_key(&LeaseId(w.lease_id)),
        };
        if !delivered {
            let id = st.next_id;
            if let Some(conn) = &st.conn {
                conn.outbox.queue_and_wake(ClientFrame::Request {
                    id,
                    body: Request::Release {
                        lease_id: w.lease_id,
                    },
                });
                st.next_id += 1;
            }
        }
    }

    /// Handles one frame from the server; `false` ends the connection.
    fn on_frame(&self, frame: ServerFrame) -> bool {
        let mut st = self.lock();
        match frame {
            ServerFrame::Reply { id, body } => {
                if let Some(p) = st.pending.remove(&id) {
                    match (&p.holds, &body) {
                        (Holds::One(rid), Ok(Reply::Queued { .. })) => st.mark_queued(rid),
                        (Holds::Many(requests), Ok(Reply::HeldMany(answers))) => {
                            for (request, answer) in requests.iter().zip(answers) {
                                if matches!(answer, Ok(Reply::Queued { .. })) {
                                    st.park(request);
                                }
                            }
                        }
                        _ => {}
                    }
                    let _ = p.tx.send(body.map_err(Error::from));
                }
                true
            }
            ServerFrame::Granted(w) => {
                self.deliver_grant(&mut st, &w);
                true
            }
            ServerFrame::Failed { request_id, error } => {
                if let Some(w) = st.waiters.remove(&RequestId(request_id)) {
                    let _ = w.tx.send(Err(error.into()));
                }
                true
            }
            ServerFrame::Lost { lease_id, reason } => {
                let id = LeaseId(lease_id);
                if let Some(h) = st.held.remove(&id) {
                    let reason = LossReason::parse(&reason).unwrap_or(LossReason::Unknown);
                    st.tell_loss(id, &h, reason);
                }
                true
            }
            ServerFrame::Goodbye(_) | ServerFrame::Welcome { .. } => false,
        }
    }
}

impl LossBook for RemoteDriverCore {
    fn heard(&self, lease: LeaseId) -> Option<LossReason> {
        self.lock().heard(lease)
    }
}

/// Keeps a connection up: serves the current one until it drops, then
/// reconnects with jittered exponential backoff, until the store closes.
async fn run_connections(shared: Weak<RemoteDriverCore>, first: (Frames, Welcome)) {
    let mut next = Some(first);
    let mut backoff = BACKOFF_FIRST;
    loop {
        let Some(s) = shared.upgrade() else { return };
        if s.closed.is_cancelled() {
            return;
        }
        let (frames, welcome) = match next.take() {
            Some(c) => c,
            None => {
                let pause = rand::thread_rng().gen_range(backoff / 2..=backoff);
                backoff = (backoff * 2).min(BACKOFF_CAP);
                let closed = s.closed.clone();
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = closed.cancelled() => return,
                }
                match connection::open(&s.target, s.tls.as_ref(), &s.options).await {
                    Ok(c) => c,
                    Err(_) => continue,
                }
            }
        };
        backoff = BACKOFF_FIRST;
        serve(s, frames, welcome).await;
    }
}

/// Serves one connection until it drops or the store closes.
async fn serve(shared: Arc<RemoteDriverCore>, frames: Frames, welcome: Welcome) {
    let parts = frames.into_parts();
    let (rd, wr) = tokio::io::split(parts.io);
    let mut stream = FramedRead::new(rd, parts.codec.clone());
    stream.read_buffer_mut().extend_from_slice(&parts.read_buf);
    let outbox = Arc::new(Outbox::new(
        FramedWrite::new(wr, parts.codec),
        &shared.closed,
    ));
    let restarted = {
        let mut st = shared.lock();
        let restarted = st.epoch.is_some_and(|e| e != welcome.epoch);
        st.epoch = Some(welcome.epoch);
        st.role = Some(welcome.role);
        st.max_frame = welcome.max_frame.min(shared.options.max_frame);
        st.renew_batch = protocol::max_renewals(st.max_frame);
        st.conn = Some(Conn {
            outbox: outbox.clone(),
        });
        restarted
    };
    let number = *shared.up.borrow() + 1;
    shared.up.send_replace(number);
    tokio::spawn(resync(Arc::downgrade(&shared), restarted));
    // The writer is a task of its own, so that a frame read does not poll
    // it (nor it a read): the connection's task only reads, until the
    // outbox breaks (a write failed, or the store closed).
    let writer = outbox.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = writer.run() => {}
            _ = writer.broken() => {}
        }
    });
    let reader = async {
        while let Some(Ok(bytes)) = stream.next().await {
            let Ok(frame) = protocol::decode::<ServerFrame>(&bytes) else {
                return;
            };
            if !shared.on_frame(frame) {
                return;
            }
        }
    };
    tokio::select! {
        biased;
        _ = reader => {}
        _ = outbox.broken() => {}
    }
    outbox.shut();
    {
        let mut st = shared.lock();
        st.conn = None;
        // Dropping the answers' senders tells every caller its request got no answer.
        st.pending.clear();
    }
    shared.up.send_replace(0);
}

/// On a new connection: renews every held lease by its id (LOCK-07) — or,
/// if the store restarted, tells their holders they are lost (LOCK-15) — and
/// asks again for every request waiting in line, by the same id (LOCK-03).
async fn resync(shared: Weak<RemoteDriverCore>, restarted: bool) {
    let Some(s) = shared.upgrade() else { return };
    let (leases, groups, holds) = {
        let mut st = s.lock();
        if restarted {
            st.lose_all(LossReason::Restarted);
        }
        let leases: Vec<(u128, u64)> = st
            .held
            .iter()
            .filter(|(_, h)| h.group.is_none())
            .map(|(id, h)| (id.0, u64::from(h.ttl_ms)))
            .collect();
        let groups: HashMap<GroupId, u64> = st
            .held
            .values()
            .filter_map(|h| Some((st.groups[h.group?.index()].id, u64::from(h.ttl_ms))))
            .collect();
        let holds: Vec<(RequestId, Request)> = st
            .waiters
            .iter()
            .filter(|(_, w)| w.queued)
            .map(|(id, w)| (*id, hold_wire(&w.request)))
            .collect();
        (leases, groups, holds)
    };
    for (group, ttl_ms) in groups {
        let answer = s
            .call(Request::RenewGroup {
                group_id: group.0,
                ttl_ms,
            })
            .await;
        if answer.is_err_and(|e| e.kind() == ErrorKind::Lost) {
            s.lose_group(group, LossReason::Expired);
        }
    }
    let batch = s.lock().renew_batch.max(1);
    for chunk in leases.chunks(batch) {
        let asked: Vec<u128> = chunk.iter().map(|(id, _)| *id).collect();
        let Ok(Reply::Renewed(results)) = s
            .call(Request::Renew {
                leases: chunk.to_vec(),
            })
            .await
        else {
            continue;
        };
        let mut st = s.lock();
        for (id, result) in asked.into_iter().zip(results) {
            if let Err(e) = result {
                if Error::from(e).kind() == ErrorKind::Lost {
                    let id = LeaseId(id);
                    if let Some(h) = st.held.remove(&id) {
                        st.tell_loss(id, &h, LossReason::Unknown);
                    }
                }
            }
        }
    }
    for (rid, hold) in holds {
        let Ok(Asked::Answered(answer)) = s.ask(hold, Holds::None, |_| {}).await else {
            continue;
        };
        let mut st = s.lock();
        match answer {
            Ok(Reply::Granted(w)) => s.deliver_grant(&mut st, &w),
            Ok(_) => {}
            Err(e) => {
                if let Some(w) = st.waiters.remove(&rid) {
                    let _ = w.tx.send(Err(e));
                }
            }
        }
    }
}

/// Sends the renewals asked for meanwhile in one frame, one batch at a time.
async fn run_renewals(
    shared: Weak<RemoteDriverCore>,
    wake: Arc<Notify>,
    closed: CancellationToken,
) {
    loop {
        let batch = match shared.upgrade() {
            Some(s) => {
                let mut st = s.lock();
                let most = st.renew_batch.max(1);
                let cut = st.renewals.len().min(most);
                let rest = st.renewals.split_off(cut);
                std::mem::replace(&mut st.renewals, rest)
            }
            None => return,
        };
        if batch.is_empty() {
            tokio::select! {
                _ = wake.notified() => {}
                _ = closed.cancelled() => return,
            }
            continue;
        }
        let Some(s) = shared.upgrade() else { return };
        let leases = batch.iter().map(|(id, ttl, _)| (id.0, *ttl)).collect();
        match s.call(Request::Renew { leases }).await {
            Ok(Reply::Renewed(results)) if results.len() == batch.len() => {
                let mut st = s.lock();
                let epoch = st.epoch;
                for ((id, ttl, tx), result) in batch.into_iter().zip(results) {
                    let result = result.map_err(Error::from);
                    match &result {
                        Ok(_) => {
                            if let Some(h) = st.held.get_mut(&id) {
                                h.ttl_ms = u32::try_from(ttl).unwrap_or(u32::MAX);
                            }
                        }
                        Err(e) if e.kind() == ErrorKind::Lost => {
                            let restarted = st.unbook(&id).is_some_and(|h| Some(h.epoch) != epoch);
                            if restarted {
                                let _ = tx.send(Err(Error::lost(LossReason::Restarted)));
                                continue;
                            }
                        }
                        Err(_) => {}
                    }
                    let _ = tx.send(result);
                }
            }
            Ok(other) => {
                for (_, _, tx) in batch {
                    let _ = tx.send(Err(Error::new(
                        ErrorKind::Protocol,
                        format!("renew answered {other:?}"),
                    )));
                }
            }
            Err(e) => {
                for (_, _, tx) in batch {
                    let _ = tx.send(Err(Error::new(e.kind(), e.message())));
                }
            }
        }
    }
}

fn unexpected(what: &str, reply: &Reply) -> Error {
    Error::new(ErrorKind::Protocol, format!("{what} answered {reply:?}"))
}

/// A holder as the wire carries it, as a listing shows it.
fn holder_info(h: WireHolder) -> HolderInfo {
    HolderInfo {
        lock: h.lock,
        key: h.key,
        fence: h.fence,
        held_for: Duration::from_millis(h.held_ms),
        expires_in: h.expires_in_ms.map(Duration::from_millis),
        identity: h.identity,
        waiting: usize::try_from(h.waiting).unwrap_or(usize::MAX),
    }
}

#[async_trait]
impl Driver for RemoteDriver {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            renewal: true,
            push: true,
            groups: true,
        }
    }

    fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    async fn hold(&self, request: HoldRequest) -> Result<HoldAnswer> {
        let s = &self.shared;
        let rid = request.request_id;
        loop {
            s.wait_up().await?;
            let (wtx, wrx) = oneshot::channel();
            let asked = s
                .ask(hold_wire(&request), Holds::One(rid), |st| {
                    if request.queue {
                        st.waiters.insert(rid, waiter(&request, wtx));
                    }
                })
                .await?;
            match asked {
                Asked::Answered(answer) => {
                    return s.lock().book_hold(&request, answer, Some(wrx));
                }
                Asked::Dropped => {
                    s.lock().waiters.remove(&rid);
                }
            }
        }
    }

    fn hold_many_step(&self) -> usize {
        HOLD_BATCHES_IN_FLIGHT * protocol::max_holds(self.shared.max_frame())
    }

    async fn hold_many(&self, requests: &[HoldRequest]) -> Vec<Result<HoldAnswer>> {
        let s = &self.shared;
        let max_frame = s.max_frame();
        let batches: Vec<_> = hold_batches(requests, max_frame)
            .into_iter()
            .map(|batch| s.hold_batch(batch))
            .collect();
        futures::stream::iter(batches)
            .buffered(HOLD_BATCHES_IN_FLIGHT)
            .flat_map(futures::stream::iter)
            .collect()
            .await
    }

    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant> {
        if self.shared.closed.is_cancelled() {
            return Err(closed());
        }
        let ttl_ms = match ttl {
            Some(t) => millis(t),
            None => self
                .shared
                .lock()
                .held
                .get(&lease)
                .map(|h| u64::from(h.ttl_ms))
                .ok_or_else(|| Error::lost(LossReason::Unknown))?,
        };
        let (tx, rx) = oneshot::channel();
        self.shared.lock().renewals.push((lease, ttl_ms, tx));
        self.shared.renew_wake.notify_one();
        let wire = rx.await.unwrap_or_else(|_| Err(closed()))?;
        Ok(grant_of(&wire))
    }

    async fn renew_group(&self, group: GroupId, ttl: Duration) -> Result<()> {
        let s = &self.shared;
        if s.closed.is_cancelled() {
            return Err(closed());
        }
        let epoch = s.lock().epoch;
        let body = Request::RenewGroup {
            group_id: group.0,
            ttl_ms: millis(ttl),
        };
        match s.call(body).await {
            Ok(Reply::GroupRenewed) => Ok(()),
            Ok(other) => Err(unexpected("renew group", &other)),
            Err(e) if e.kind() == ErrorKind::Lost => {
                let restarted = s.lock().epoch != epoch;
                let reason = if restarted {
                    LossReason::Restarted
                } else {
                    LossReason::Expired
                };
                s.lose_group(group, reason);
                Err(Error::lost(reason))
            }
            Err(e) => Err(e),
        }
    }

    fn tell_group_losses(&self, group: GroupId, sink: LossSink) {
        let mut st = self.shared.lock();
        let place = st.group_place(group);
        st.groups[place.index()].sink = Some(sink);
    }

    async fn release(&self, lease: LeaseId) -> Result<()> {
        let s = &self.shared;
        let ttl = s
            .lock()
            .unbook(&lease)
            .map_or(s.options.connect_timeout, |h| {
                Duration::from_millis(h.ttl_ms.into())
            });
        tokio::time::timeout(ttl, s.release(lease))
            .await
            .unwrap_or_else(|_| Err(unavailable("the store could not be reached to release")))
    }

    fn release_bounded_by_caller(
        &self,
        lease: LeaseId,
    ) -> futures::future::BoxFuture<'_, Result<()>> {
        let s = &self.shared;
        s.lock().unbook(&lease);
        Box::pin(s.release(lease))
    }

    async fn give_up(&self, request: RequestId) -> Result<GiveUp> {
        {
            let mut st = self.shared.lock();
            st.waiters.remove(&request);
            st.parked.remove(&request);
        }
        match self
            .shared
            .call(Request::GiveUp {
                request_id: request.0,
            })
            .await?
        {
            Reply::GaveUp(g) => Ok(g.into()),
            other => Err(unexpected("give up", &other)),
        }
    }

    async fn holders(&self, lock: Option<&str>) -> Result<Vec<HolderInfo>> {
        self.shared.wait_up().await?;
        match self
            .shared
            .call(Request::List {
                lock: lock.map(str::to_owned),
            })
            .await?
        {
            Reply::Holders(list) => Ok(list.into_iter().map(holder_info).collect()),
            other => Err(unexpected("list", &other)),
        }
    }

    async fn holder(&self, name: &KeyName) -> Result<Option<HolderInfo>> {
        self.shared.wait_up().await?;
        match self
            .shared
            .call(Request::Holder {
                lock: name.lock.to_string(),
                key: name.key.to_string(),
            })
            .await?
        {
            Reply::Holder(holder) => Ok(holder.map(holder_info)),
            other => Err(unexpected("holder", &other)),
        }
    }

    async fn slot_acquire(&self, request: SlotRequest) -> Result<AcquireResult> {
        match self.shared.call_until_answered(request.to_wire()).await? {
            Reply::SlotAcquired(Some(lease)) => Ok(AcquireResult::Leased(lease.into())),
            Reply::SlotAcquired(None) => Ok(AcquireResult::Exhausted),
            other => Err(unexpected("slot acquire", &other)),
        }
    }

    async fn slot_renew(&self, lease: &SlotLease, ttl: Duration) -> Result<Option<SlotLease>> {
        let body = Request::SlotRenew {
            lease: lease.into(),
            ttl_ms: millis(ttl),
        };
        match self.shared.call_until_answered(body).await? {
            Reply::SlotRenewed(renewed) => Ok(renewed.map(SlotLease::from)),
            other => Err(unexpected("slot renew", &other)),
        }
    }

    async fn slot_release(&self, lease: &SlotLease, last_issued: u64) -> Result<bool> {
        let body = Request::SlotRelease {
            lease: lease.into(),
            last_issued,
        };
        match self.shared.call_until_answered(body).await? {
            Reply::SlotReleased(released) => Ok(released),
            other => Err(unexpected("slot release", &other)),
        }
    }

    async fn close(&self) {
        let s = &self.shared;
        if s.closed.is_cancelled() {
            return;
        }
        // The held leases leave the book before their releases go out, so
        // that nothing answered meanwhile (a renewal that finds a lease
        // already released, a loss the server pushes) ends one otherwise
        // than Closed.
        let (waiters, held) = {
            let mut st = s.lock();
            (
                st.waiters.drain().collect::<Vec<_>>(),
                st.held.drain().collect::<Vec<_>>(),
            )
        };
        for (id, w) in waiters {
            s.fire(Request::GiveUp { request_id: id.0 });
            let _ = w.tx.send(Err(closed()));
        }
        for (id, _) in &held {
            s.fire(Request::Release { lease_id: id.0 });
        }
        let _ = tokio::time::timeout(s.options.connect_timeout, s.call(Request::Ping)).await;
        s.closed.cancel();
        let mut st = s.lock();
        for (id, h) in held {
            st.tell_loss(id, &h, LossReason::Closed);
        }
        st.lose_all(LossReason::Closed);
        for (_, w) in st.waiters.drain() {
            let _ = w.tx.send(Err(closed()));
        }
        for (_, _, tx) in st.renewals.drain(..) {
            let _ = tx.send(Err(closed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::KeyName;

    /// The losses a sink was told, in order.
    type Told = Arc<Mutex<Vec<(LeaseId, LossReason)>>>;

    /// A book whose group `group` tells its losses to a sink that records them.
    fn book_with_sink(group: GroupId) -> (RemoteBook, Told) {
        let no_core: Weak<dyn LossBook> = Weak::<RemoteDriverCore>::new();
        let mut book = RemoteBook::new(no_core);
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = told.clone();
        let place = book.group_place(group);
        book.groups[place.index()].sink = Some(Box::new(move |lease, reason| {
            sink.lock().unwrap().push((lease, reason));
        }));
        (book, told)
    }

    fn request(group: Option<GroupId>) -> HoldRequest {
        HoldRequest {
            name: KeyName::new("l", "k"),
            request_id: RequestId::random(),
            ttl: Some(Duration::from_secs(9)),
            max_hold: None,
            queue: true,
            group,
        }
    }

    #[test]
    fn a_booked_lease_takes_32_bytes_with_its_id() {
        assert_eq!(std::mem::size_of::<(LeaseId, BookedLease)>(), 32);
    }

    // LOCK-09: a lease told by group hears its loss through the group's
    // sink once its holder listened, and a loss that came before when it
    // listens; a loss nobody listened for leaves the book at the release.
    #[test]
    fn lock_09_a_loss_told_by_group_reaches_its_holder_before_or_after_it_listens() {
        let group = GroupId::random();
        let (mut book, told) = book_with_sink(group);
        let (early, late, dropped) = (LeaseId::random(), LeaseId::random(), LeaseId::random());
        for id in [early, late, dropped] {
            book.book_lease(id, &request(Some(group)));
        }
        for id in [early, dropped] {
            let lease = book.held.remove(&id).unwrap();
            book.tell_loss(id, &lease, LossReason::Revoked);
        }
        assert_eq!(book.heard(early), Some(LossReason::Revoked));
        assert_eq!(book.heard(early), None);
        assert_eq!(book.heard(late), None);
        let lease = book.held.remove(&late).unwrap();
        book.tell_loss(late, &lease, LossReason::Expired);
        assert_eq!(*told.lock().unwrap(), [(late, LossReason::Expired)]);
        assert!(book.unbook(&dropped).is_none());
        assert!(book.unheard.is_empty() && book.losses.is_empty());
    }

    // LOCK-09: a lease in no group (or in one without a sink) hears its
    // loss on a channel of its own.
    #[tokio::test]
    async fn lock_09_a_lease_not_told_by_group_hears_its_loss_on_its_channel() {
        let (mut book, told) = book_with_sink(GroupId::random());
        let id = LeaseId::random();
        let lost = book.book_lease(id, &request(None));
        let lease = book.held.remove(&id).unwrap();
        book.tell_loss(id, &lease, LossReason::Closed);
        assert_eq!(lost.await, Ok(LossReason::Closed));
        let other = LeaseId::random();
        let lost = book.book_lease(other, &request(Some(GroupId::random())));
        book.lose_all(LossReason::Restarted);
        assert_eq!(lost.await, Ok(LossReason::Restarted));
        assert!(told.lock().unwrap().is_empty());
    }
}
