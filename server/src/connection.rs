//! One client connection past its hello (`hello.rs` admits it): the
//! welcome, then requests answered by id, grants
//! and losses pushed, all in one loop per connection that also writes: the
//! answers to every frame already read go out in one write when the loop
//! would otherwise wait, with no task between reading and writing.
//!
//! A connection owns the requests it queued and the leases it was granted,
//! for three purposes: pushing their grants and losses, bounding how many one
//! connection may own (`--max-keys-per-connection`), and giving up its
//! waiting requests when it closes, after a grace period equal to their ttl,
//! unless a later `Hold` with the same request id (a client that reconnected)
//! claims them first. Its leases are left alone when it closes: they run out
//! by their ttl unless renewed from a new connection (LOCK-07).

use leasehold::hashed::{HashMap, HashSet};
use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, SinkExt, StreamExt};
use leasehold::driver::{
    Driver, Granted, HoldAnswer, HoldRequest, Holder, HolderInfo, KeyName, Waiting,
};
use leasehold::remote::protocol::{
    self, max_holds, ClientFrame, Reply, Request, Role, ServerFrame, WireError, WireGrant,
    WireHolder, WireSlotLease, HOLD_ENTRY_BYTES, VERSION,
};
use leasehold::slots::{NamespaceSpec, SlotLease, SlotRequest};
use leasehold::{duration, names, Error, ErrorKind, GroupId, LeaseId, LossReason, RequestId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec, LengthDelimitedCodecError};

use crate::hello::Admitted;
use crate::metrics::Op;
use crate::shared::{outbound_codec, ServerContextRef};

/// How many lock names a connection keeps to share among its holds.
const LOCK_NAMES: usize = 1024;
/// How many bytes of answers may wait in the connection's buffer before it
/// writes them out and stops reading until they are written.
const WRITE_BUFFER: usize = 64 * 1024;
/// How long a write may wait for the client to read before the connection
/// is given up as stalled (a client that does not read).
pub(crate) const WRITE_STALL: Duration = Duration::from_secs(30);
/// How long the writer may take to flush what is left when a connection ends.
const WRITER_DRAIN: Duration = Duration::from_secs(5);
/// How long, and how much, a closing connection reads and discards after its
/// goodbye, so that the client reads the goodbye instead of a reset.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1 << 20;
pub use leasehold::remote::protocol::RENEW_ENTRY_BYTES;
use leasehold::remote::protocol::{max_renewals, REPLY_ENVELOPE_BYTES};

/// The frames read from a connection.
pub(crate) type Frames<S> = FramedRead<ReadHalf<S>, LengthDelimitedCodec>;

/// Why a connection ended.
enum End {
    /// The client closed it.
    Eof,
    /// It broke: an I/O error, or a client that stopped reading.
    Broken,
    /// The server closes it with this goodbye.
    Goodbye(WireError),
}

/// An error as the wire carries it.
pub(crate) fn wire(kind: ErrorKind, message: impl Into<String>) -> WireError {
    WireError {
        code: kind.code().to_owned(),
        message: message.into(),
        reason: None,
    }
}

fn protocol_end(message: impl Into<String>) -> End {
    End::Goodbye(wire(ErrorKind::Protocol, message))
}

/// What a frame-level read error means for the connection.
fn read_error(e: io::Error) -> End {
    let oversized = e
        .get_ref()
        .is_some_and(|inner| inner.is::<LengthDelimitedCodecError>());
    if oversized {
        protocol_end(format!("frame too large: {e}"))
    } else {
        End::Broken
    }
}

/// A future with a tag that comes back with its output.
struct Tagged<T, F> {
    tag: T,
    fut: F,
}

impl<T: Copy + Unpin, F: Future + Unpin> Future for Tagged<T, F> {
    type Output = (T, F::Output);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let tag = self.tag;
        Pin::new(&mut self.fut).poll(cx).map(|out| (tag, out))
    }
}

/// A request of this connection waiting in line.
#[derive(Debug, Clone, Copy)]
struct Wait {
    /// Tells this connection's current receiver for the request from older ones.
    generation: u64,
    ttl: Duration,
}

/// What a `Hold` or `HoldMany` asks, past its keys and request ids.
struct HoldAsk {
    ttl_ms: u64,
    max_hold_ms: Option<u64>,
    queue: bool,
    group: Option<GroupId>,
}

/// A `HoldAsk` checked.
struct HoldTerms {
    ttl: Duration,
    max_hold: Option<Duration>,
    queue: bool,
    group: Option<GroupId>,
}

impl HoldTerms {
    /// The store's request for `name` on these terms.
    fn request(&self, name: KeyName, request_id: RequestId) -> HoldRequest {
        HoldRequest {
            name,
            request_id,
            ttl: Some(self.ttl),
            max_hold: self.max_hold,
            queue: self.queue,
            group: self.group,
        }
    }
}

/// While a request of a closed connection waits out its grace period, a
/// hold claims the grace lock (a hold that claims such a request again must
/// not race the grace period's give-up).
async fn claim_grace(shared: &ServerContextRef) -> Option<tokio::sync::MutexGuard<'_, ()>> {
    if shared.in_grace.load(Ordering::Acquire) > 0 {
        Some(shared.grace.lock().await)
    } else {
        None
    }
}

type GrantWatch = Tagged<(RequestId, u64), Waiting>;

/// The store's word that a lease of this connection was lost, as the
/// connection's loss sink sends it ([`MemoryDriver::tell_losses`]).
///
/// [`MemoryDriver::tell_losses`]: leasehold::MemoryDriver::tell_losses
struct LossNotice {
    lease_id: LeaseId,
    reason: LossReason,
}

/// What woke the connection's loop.
enum Event {
    Shutdown,
    Frame(Option<io::Result<bytes::BytesMut>>),
    Grant(
        (RequestId, u64),
        Result<leasehold::Result<Granted>, oneshot::error::RecvError>,
    ),
    Loss(LossNotice),
}

/// Serves a connection admitted past its hello (`frames` read it) until it
/// ends; `admitted` holds its places.
pub(crate) async fn serve<S>(
    shared: ServerContextRef,
    mut frames: Frames<S>,
    wr: WriteHalf<S>,
    peer: SocketAddr,
    admitted: Admitted,
) where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let id = shared.connection_id();
    shared.metrics.connections.inc();
    shared
        .live
        .connected(id, peer, admitted.role, admitted.identity.clone());
    tracing::debug!(connection = id, %peer, "connection opened");
    let mut sink = FramedWrite::new(wr, outbound_codec());
    sink.set_backpressure_boundary(WRITE_BUFFER);
    let role = admitted.role;
    let (tell, losses) = mpsc::unbounded_channel();
    shared.driver.tell_losses(
        id,
        Box::new(move |lease_id, reason| {
            let _ = tell.send(LossNotice { lease_id, reason });
        }),
    );
    let mut conn = Connection {
        id,
        holder: Arc::new(Holder {
            number: id,
            identity: admitted.identity.clone(),
        }),
        shared: shared.clone(),
        role,
        sink,
        waits: HashMap::default(),
        groups: HashSet::default(),
        lock_names: HashSet::default(),
        grants: FuturesUnordered::new(),
        losses,
        generation: 0,
    };
    let welcome = ServerFrame::Welcome {
        version: VERSION,
        epoch: shared.driver.epoch(),
        role,
        max_frame: u32::try_from(shared.limits.max_frame).unwrap_or(u32::MAX),
    };
    let end = if conn.send(&welcome).await {
        conn.run(&mut frames).await
    } else {
        End::Broken
    };
    let goodbye = match end {
        End::Goodbye(error) => {
            if error.code == ErrorKind::Protocol.code() {
                shared.metrics.protocol_errors.inc();
            }
            tracing::info!(connection = id, %peer, code = %error.code, message = %error.message, "closing connection");
            let frame = ServerFrame::Goodbye(error);
            let _ = tokio::time::timeout(LINGER, conn.send(&frame)).await;
            true
        }
        End::Eof | End::Broken => false,
    };
    let _ = tokio::time::timeout(WRITER_DRAIN, SinkExt::<Bytes>::close(&mut conn.sink)).await;
    let orphans = conn.orphans();
    drop(conn);
    shared.driver.forget_holder(id);
    if !orphans.is_empty() && !shared.shutdown.is_cancelled() {
        tracing::debug!(
            connection = id,
            waiting = orphans.len(),
            "closed with requests in line; giving them up after their ttl unless claimed"
        );
        adopt_orphans(&shared, orphans);
    }
    if goodbye {
        linger(frames.into_inner()).await;
    }
    drop(admitted);
    shared.live.disconnected(id);
    shared.metrics.connections.dec();
    tracing::debug!(connection = id, %peer, "connection closed");
}

/// Reads and discards what the client still sends, until it closes, for a
/// short while: closing a socket with unread input would reset it, and the
/// client could lose the goodbye.
async fn linger<R: AsyncRead + Unpin>(mut rd: R) {
    let mut buf = vec![0u8; 8192];
    let mut total = 0;
    let _ = tokio::time::timeout(LINGER, async {
        while let Ok(n) = rd.read(&mut buf).await {
            total += n;
            if n == 0 || total > LINGER_BYTES {
                break;
            }
        }
    })
    .await;
}

/// One connection past its hello, writing to `W`.
struct Connection<W> {
    id: u64,
    /// The connection as the store's holder: its number (the id) and the
    /// identity its hello gave (WHO-01), shared by its leases.
    holder: Arc<Holder>,
    shared: ServerContextRef,
    role: Role,
    sink: FramedWrite<W, LengthDelimitedCodec>,
    waits: HashMap<RequestId, Wait>,
    /// The renewal groups this connection named, whose leases it watches.
    groups: HashSet<GroupId>,
    /// The lock names its holds named lately (at most `LOCK_NAMES`).
    lock_names: HashSet<Arc<str>>,
    grants: FuturesUnordered<GrantWatch>,
    /// The losses of its leases, sent by its loss sink (one channel for
    /// all, rather than one per lease).
    losses: mpsc::UnboundedReceiver<LossNotice>,
    generation: u64,
}

impl<W: AsyncWrite + Unpin> Connection<W> {
    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// Adds a frame to the write buffer, writing out what it holds first
    /// when it is full; `false` when the connection is gone (or its client
    /// stopped reading, or the server shuts down).
    async fn send(&mut self, frame: &ServerFrame) -> bool {
        let Ok(bytes) = protocol::encode(frame) else {
            tracing::error!(connection = self.id, "cannot encode {frame:?}");
            return false;
        };
        let sink = &mut self.sink;
        if !self
            .shared
            .bounded_write(poll_fn(|cx| SinkExt::<Bytes>::poll_ready_unpin(sink, cx)))
            .await
        {
            return false;
        }
        SinkExt::<Bytes>::start_send_unpin(&mut self.sink, Bytes::from(bytes)).is_ok()
    }

    /// Writes out the buffered frames.
    async fn flush(&mut self) -> bool {
        let sink = &mut self.sink;
        self.shared
            .bounded_write(poll_fn(|cx| SinkExt::<Bytes>::poll_flush_unpin(sink, cx)))
            .await
    }

    /// The next thing to handle: shutdown, a grant or loss of ours, a frame.
    async fn next_event<S: AsyncRead>(&mut self, frames: &mut Frames<S>) -> Event {
        tokio::select! {
            biased;
            _ = self.shared.shutdown.cancelled() => Event::Shutdown,
            Some((tag, out)) = self.grants.next(), if !self.grants.is_empty() => Event::Grant(tag, out),
            Some(notice) = self.losses.recv() => Event::Loss(notice),
            frame = frames.next() => Event::Frame(frame),
        }
    }

    async fn run<S: AsyncRead>(&mut self, frames: &mut Frames<S>) -> End {
        loop {
            // Everything already read is answered before the answers are
            // written: a client that sends many requests at once gets their
            // answers in one write.
            let event = match self.next_event(frames).now_or_never() {
                Some(event) => event,
                None => {
                    if !self.flush().await {
                        return End::Broken;
                    }
                    self.next_event(frames).await
                }
            };
            let sent = match event {
                Event::Shutdown => {
                    return End::Goodbye(wire(ErrorKind::Unavailable, "shutting down"))
                }
                Event::Frame(None) => return End::Eof,
                Event::Frame(Some(Err(e))) => return read_error(e),
                Event::Frame(Some(Ok(bytes))) => match protocol::decode::<ClientFrame>(&bytes) {
                    Err(e) => return protocol_end(e.message()),
                    Ok(ClientFrame::Hello { .. }) => {
                        return protocol_end("Hello may only be the first frame")
                    }
                    Ok(ClientFrame::Request { id, body }) => {
                        let body = self.answer(body).await.map_err(|e| WireError::from(&e));
                        self.send(&ServerFrame::Reply { id, body }).await
                    }
                },
                Event::Grant(tag, out) => self.on_grant(tag, out).await,
                Event::Loss(notice) => self.on_loss(notice).await,
            };
            if !sent {
                return End::Broken;
            }
        }
    }

    /// A request of ours that waited in line was granted, failed, or was
    /// claimed by another connection (its receiver closed).
    async fn on_grant(
        &mut self,
        (request_id, generation): (RequestId, u64),
        out: Result<leasehold::Result<Granted>, oneshot::error::RecvError>,
    ) -> bool {
        let current = self
            .waits
            .get(&request_id)
            .is_some_and(|w| w.generation == generation);
        if !current {
            // An older receiver: the request was answered or claimed since.
            return true;
        }
        self.waits.remove(&request_id);
        match out {
            Ok(Ok(granted)) => {
                let wire = WireGrant::from(&granted.grant);
                let lease_id = granted.grant.lease_id;
                self.granted();
                let sent = self.send(&ServerFrame::Granted(wire)).await;
                // The end of a handoff a page times (see `release`).
                if self.shared.live.watched() {
                    if let Some(key) = self.shared.driver.key_of(lease_id) {
                        self.shared.live.handed_over(&key);
                    }
                }
                sent
            }
            Ok(Err(e)) => {
                self.send(&ServerFrame::Failed {
                    request_id: request_id.0,
                    error: WireError::from(&e),
                })
                .await
            }
            // Claimed by a Hold on another connection, or given up.
            Err(_) => true,
        }
    }

    /// A lease of ours ended unseen.
    async fn on_loss(&mut self, LossNotice { lease_id, reason }: LossNotice) -> bool {
        self.shared.metrics.lost(reason);
        self.send(&ServerFrame::Lost {
            lease_id: lease_id.0,
            reason: reason.as_str().to_owned(),
        })
        .await
    }

    /// Counts a lease granted to this connection. Its loss comes through the
    /// connection's loss sink, which the store knows by the connection's
    /// number; the store, not the connection, keeps which leases are whose.
    fn granted(&self) {
        self.shared.metrics.grants.inc();
    }

    fn require_write(&self) -> leasehold::Result<()> {
        match self.role {
            Role::Write => Ok(()),
            Role::Read => Err(Error::new(
                ErrorKind::PermissionDenied,
                "this connection's token admits it to read only",
            )),
        }
    }

    fn owns_request(&self, request_id: RequestId) -> bool {
        self.waits.contains_key(&request_id)
            || self.shared.driver.holder_of_request(request_id) == Some(self.id)
    }

    /// The keys this connection holds or waits for, against
    /// `--max-keys-per-connection`.
    fn booked(&self) -> usize {
        self.waits.len() + self.shared.driver.held_by(self.id)
    }

    async fn answer(&mut self, body: Request) -> leasehold::Result<Reply> {
        let started = Instant::now();
        let (op, out) = match body {
            Request::Hold {
                lock,
                key,
                request_id,
                ttl_ms,
                max_hold_ms,
                queue,
                group,
            } => {
                let ask = HoldAsk {
                    ttl_ms,
                    max_hold_ms,
                    queue,
                    group: group.map(GroupId),
                };
                (
                    Op::Hold,
                    self.hold(lock, key, RequestId(request_id), ask).await,
                )
            }
            Request::HoldMany {
                lock,
                keys,
                ttl_ms,
                max_hold_ms,
                queue,
                group,
            } => {
                let ask = HoldAsk {
                    ttl_ms,
                    max_hold_ms,
                    queue,
                    group: group.map(GroupId),
                };
                (Op::HoldMany, self.hold_many(lock, keys, ask).await)
            }
            Request::RenewGroup { group_id, ttl_ms } => (
                Op::RenewGroup,
                self.renew_group(GroupId(group_id), ttl_ms).await,
            ),
            Request::Renew { leases } => (Op::Renew, self.renew(leases).await),
            Request::Release { lease_id } => (Op::Release, self.release(LeaseId(lease_id)).await),
            Request::GiveUp { request_id } => {
                (Op::GiveUp, self.give_up(RequestId(request_id)).await)
            }
            Request::List { lock } => (Op::List, self.list(lock).await),
            Request::Holder { lock, key } => (Op::Holder, self.holder(lock, key).await),
            Request::Ping => (Op::Ping, Ok(Reply::Pong)),
            Request::SlotAcquire {
                namespace,
                owner,
                limit,
                ttl_ms,
                tolerance_ms,
                offset,
                preferred,
                layout,
            } => {
                let request = SlotRequest {
                    namespace,
                    owner,
                    spec: NamespaceSpec {
                        limit,
                        tolerance: Duration::from_millis(tolerance_ms),
                        offset,
                        layout,
                    },
                    ttl: Duration::from_millis(ttl_ms),
                    preferred,
                };
                (Op::SlotAcquire, self.slot_acquire(request).await)
            }
            Request::SlotRenew { lease, ttl_ms } => (
                Op::SlotRenew,
                self.slot_renew(lease.into(), Duration::from_millis(ttl_ms))
                    .await,
            ),
            Request::SlotRelease { lease, last_issued } => (
                Op::SlotRelease,
                self.slot_release(lease.into(), last_issued).await,
            ),
        };
        self.shared.metrics.observe(op, started.elapsed());
        out
    }

    async fn slot_acquire(&self, request: SlotRequest) -> leasehold::Result<Reply> {
        self.require_write()?;
        let acquired = self.shared.driver.slot_acquire(request).await?;
        Ok(Reply::SlotAcquired(
            acquired.lease().as_ref().map(WireSlotLease::from),
        ))
    }

    async fn slot_renew(&self, lease: SlotLease, ttl: Duration) -> leasehold::Result<Reply> {
        self.require_write()?;
        let renewed = self.shared.driver.slot_renew(&lease, ttl).await?;
        Ok(Reply::SlotRenewed(
            renewed.as_ref().map(WireSlotLease::from),
        ))
    }

    async fn slot_release(&self, lease: SlotLease, last_issued: u64) -> leasehold::Result<Reply> {
        self.require_write()?;
        let released = self.shared.driver.slot_release(&lease, last_issued).await?;
        Ok(Reply::SlotReleased(released))
    }

    /// Checks what a `Hold` or `HoldMany` asks of each of its keys.
    fn hold_terms(&self, lock: &str, ask: &HoldAsk) -> leasehold::Result<HoldTerms> {
        self.require_write()?;
        // The empty lock name is the manual leases' namespace.
        if !lock.is_empty() {
            names::check("lock name", lock)?;
        }
        let ttl = duration::check_ttl("ttl", Duration::from_millis(ask.ttl_ms))?;
        let max_hold = duration::check_max_hold(ttl, ask.max_hold_ms.map(Duration::from_millis))?;
        Ok(HoldTerms {
            ttl,
            max_hold,
            queue: ask.queue,
            group: ask.group,
        })
    }

    async fn hold(
        &mut self,
        lock: String,
        key: String,
        request_id: RequestId,
        ask: HoldAsk,
    ) -> leasehold::Result<Reply> {
        let terms = self.hold_terms(&lock, &ask)?;
        names::check("key", &key)?;
        let name = KeyName::new(self.lock_name(lock), key);
        self.admit(request_id, self.booked())?;
        if let Some(group) = terms.group {
            self.watch_group(group);
        }
        let shared = self.shared.clone();
        let answer = {
            let _claim = claim_grace(&shared).await;
            shared
                .driver
                .hold_as(terms.request(name, request_id), &self.holder)?
        };
        Ok(self.book(request_id, answer, &terms))
    }

    /// Answers a `HoldMany` in one pass: every key is checked first (one bad
    /// key fails the request), then the store is asked for all of them at
    /// once, under one lock, each as a `Hold` of its own.
    async fn hold_many(
        &mut self,
        lock: String,
        keys: Vec<(String, u128)>,
        ask: HoldAsk,
    ) -> leasehold::Result<Reply> {
        let terms = self.hold_terms(&lock, &ask)?;
        let most = max_holds(self.shared.limits.max_frame);
        if keys.len() > most {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "a HoldMany may name at most {most} keys (max-frame / {HOLD_ENTRY_BYTES}), got {}",
                    keys.len()
                ),
            ));
        }
        for (key, _) in &keys {
            names::check("key", key)?;
        }
        let lock = self.lock_name(lock);
        if let Some(group) = terms.group {
            self.watch_group(group);
        }
        // `None`: asked of the store; a refusal is its own answer.
        let mut refusals: Vec<Option<WireError>> = Vec::with_capacity(keys.len());
        let mut asked = Vec::with_capacity(keys.len());
        let booked = self.booked();
        for (key, request_id) in keys {
            let request_id = RequestId(request_id);
            match self.admit(request_id, booked + asked.len()) {
                Ok(()) => {
                    refusals.push(None);
                    asked.push(terms.request(KeyName::new(lock.clone(), key), request_id));
                }
                Err(e) => refusals.push(Some(WireError::from(&e))),
            }
        }
        let ids: Vec<RequestId> = asked.iter().map(|r| r.request_id).collect();
        let shared = self.shared.clone();
        let answers = {
            let _claim = claim_grace(&shared).await;
            shared.driver.hold_many_as(asked, &self.holder)?
        };
        let mut answers = ids.into_iter().zip(answers);
        let replies = refusals
            .into_iter()
            .map(|refused| {
                if let Some(e) = refused {
                    return Err(e);
                }
                match answers.next() {
                    Some((request_id, Ok(answer))) => Ok(self.book(request_id, answer, &terms)),
                    Some((_, Err(e))) => Err(WireError::from(&e)),
                    None => Err(wire(ErrorKind::Internal, "a hold went unanswered")),
                }
            })
            .collect();
        Ok(Reply::HeldMany(replies))
    }

    /// Refuses a hold past `--max-keys-per-connection` (`booked`: the keys
    /// this connection holds or waits for, with the holds of its frame not
    /// booked yet), unless it asks again for a request this connection has.
    fn admit(&self, request_id: RequestId, booked: usize) -> leasehold::Result<()> {
        let limit = self.shared.limits.max_keys_per_connection;
        if booked >= limit && !self.owns_request(request_id) {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!("this connection already holds or waits for {limit} keys (--max-keys-per-connection)"),
            ));
        }
        Ok(())
    }

    /// Books the store's answer to one hold of this connection: a grant is
    /// watched for its loss, a place in line for its grant.
    fn book(&mut self, request_id: RequestId, answer: HoldAnswer, terms: &HoldTerms) -> Reply {
        match answer {
            HoldAnswer::Granted(granted) => {
                // A retried request may have waited here: its old receiver is stale now.
                self.waits.remove(&request_id);
                let wire = WireGrant::from(&granted.grant);
                self.granted();
                Reply::Granted(wire)
            }
            HoldAnswer::NotHeld => Reply::NotHeld,
            HoldAnswer::Queued { waiting, ahead } => {
                let generation = self.next_generation();
                self.waits.insert(
                    request_id,
                    Wait {
                        generation,
                        ttl: terms.ttl,
                    },
                );
                self.grants.push(Tagged {
                    tag: (request_id, generation),
                    fut: waiting,
                });
                Reply::Queued {
                    ahead: u64::try_from(ahead).unwrap_or(u64::MAX),
                }
            }
        }
    }

    async fn renew(&mut self, leases: Vec<(u128, u64)>) -> leasehold::Result<Reply> {
        self.require_write()?;
        let most = max_renewals(self.shared.limits.max_frame);
        if leases.len() > most {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "a Renew may name at most {most} leases (max-frame / {RENEW_ENTRY_BYTES}), got {}",
                    leases.len()
                ),
            ));
        }
        let mut answers = Vec::with_capacity(leases.len());
        for (lease_id, ttl_ms) in leases {
            let lease_id = LeaseId(lease_id);
            let renewed = match duration::check_ttl("ttl", Duration::from_millis(ttl_ms)) {
                Ok(ttl) => self.shared.driver.renew(lease_id, Some(ttl)).await,
                Err(e) => Err(e),
            };
            if renewed.is_ok() {
                self.shared.metrics.renewals.inc();
                // Its losses are told here from now on (a client that came
                // back on this connection after another one dropped).
                self.shared.driver.take_over(lease_id, &self.holder);
            }
            answers.push(
                renewed
                    .map(|g| WireGrant::from(&g))
                    .map_err(|e| WireError::from(&e)),
            );
        }
        Ok(Reply::Renewed(answers))
    }

    async fn renew_group(&mut self, group: GroupId, ttl_ms: u64) -> leasehold::Result<Reply> {
        self.require_write()?;
        let ttl = duration::check_ttl("ttl", Duration::from_millis(ttl_ms))?;
        self.shared.driver.renew_group(group, ttl).await?;
        self.shared.metrics.renewals.inc();
        self.watch_group(group);
        Ok(Reply::GroupRenewed)
    }

    /// The lock name `lock`, shared with the holds of this connection that
    /// named it before, so that a held key does not keep a copy of its own.
    fn lock_name(&mut self, lock: String) -> Arc<str> {
        if let Some(name) = self.lock_names.get(lock.as_str()) {
            return name.clone();
        }
        if self.lock_names.len() >= LOCK_NAMES {
            self.lock_names.clear();
        }
        let name: Arc<str> = lock.into();
        self.lock_names.insert(name.clone());
        name
    }

    /// Watches for loss every lease of `group` the first time this
    /// connection names the group (a client that came back on a new
    /// connection): their losses are told here from now on.
    fn watch_group(&mut self, group: GroupId) {
        if self.groups.insert(group) {
            self.shared.driver.take_over_group(group, &self.holder);
        }
    }

    async fn release(&mut self, lease_id: LeaseId) -> leasehold::Result<Reply> {
        self.require_write()?;
        // Timed from here to the next holder's pushed grant, while a page looks.
        if self.shared.live.watched() {
            if let Some(key) = self.shared.driver.handover_of(lease_id) {
                self.shared.live.releasing(key);
            }
        }
        self.shared.driver.release_for(lease_id, self.id)?;
        self.shared.metrics.releases.inc();
        Ok(Reply::Released)
    }

    async fn give_up(&mut self, request_id: RequestId) -> leasehold::Result<Reply> {
        self.require_write()?;
        let out = self.shared.driver.give_up(request_id).await?;
        self.waits.remove(&request_id);
        if let leasehold::driver::GiveUp::Released(_) = out {
            self.shared.metrics.releases.inc();
        }
        Ok(Reply::GaveUp(out.into()))
    }

    /// The holders, as many as fit in one frame.
    async fn list(&mut self, lock: Option<String>) -> leasehold::Result<Reply> {
        let holders = self.shared.driver.holders(lock.as_deref()).await?;
        let budget = self
            .shared
            .limits
            .max_frame
            .saturating_sub(REPLY_ENVELOPE_BYTES);
        let mut used = 0;
        let mut out = Vec::with_capacity(holders.len());
        for h in holders {
            let wire = wire_holder(h);
            used += protocol::encode(&wire)?.len();
            if used > budget {
                tracing::debug!(
                    connection = self.id,
                    shown = out.len(),
                    "List answer truncated to one frame"
                );
                break;
            }
            out.push(wire);
        }
        Ok(Reply::Holders(out))
    }

    /// Who holds one key (WHO-02); a read-only connection may ask.
    async fn holder(&mut self, lock: String, key: String) -> leasehold::Result<Reply> {
        names::check("key", &key)?;
        let name = KeyName::new(lock, key);
        let holder = self.shared.driver.holder(&name).await?;
        Ok(Reply::Holder(holder.map(wire_holder)))
    }

    /// The requests still waiting for this connection, with their ttl, for
    /// the grace period after it closed.
    fn orphans(&mut self) -> Vec<(RequestId, Duration, Waiting)> {
        let waits = std::mem::take(&mut self.waits);
        std::mem::take(&mut self.grants)
            .into_iter()
            .filter_map(|t| {
                let (request_id, generation) = t.tag;
                let w = waits.get(&request_id)?;
                (w.generation == generation).then_some((request_id, w.ttl, t.fut))
            })
            .collect()
    }
}

/// Keeps the waiting requests of a closed connection in line for their ttl:
/// a `Hold` with the same request id from a new connection claims one (its
/// receiver here closes); one granted meanwhile keeps its lease, which the
/// client gets by asking again and which otherwise runs out by its ttl; the
/// others are given up when their ttl has passed.
fn adopt_orphans(shared: &ServerContextRef, orphans: Vec<(RequestId, Duration, Waiting)>) {
    shared.in_grace.fetch_add(orphans.len(), Ordering::AcqRel);
    let task_shared = shared.clone();
    shared.tracker.spawn(async move {
        let shared = task_shared;
        let mut grace: FuturesUnordered<_> = orphans
            .into_iter()
            .map(|(request_id, ttl, mut waiting)| {
                let shared = shared.clone();
                async move {
                    let claimed_or_granted = tokio::select! {
                        biased;
                        out = &mut waiting => {
                            if let Ok(Ok(granted)) = out {
                                tracing::debug!(lease = ?granted.grant.lease_id, "granted to a request whose connection closed");
                            }
                            true
                        }
                        _ = tokio::time::sleep(ttl) => false,
                    };
                    if !claimed_or_granted {
                        let _claims = shared.grace.lock().await;
                        // Not claimed by a hold since the sleep ended, nor granted?
                        if matches!(waiting.try_recv(), Err(oneshot::error::TryRecvError::Empty)) {
                            let _ = shared.driver.give_up(request_id).await;
                        }
                    }
                    shared.in_grace.fetch_sub(1, Ordering::AcqRel);
                }
            })
            .collect();
        tokio::select! {
            _ = shared.shutdown.cancelled() => {}
            _ = async { while grace.next().await.is_some() {} } => {}
        }
    });
}

/// A holder as the wire carries it.
fn wire_holder(h: HolderInfo) -> WireHolder {
    WireHolder {
        lock: h.lock,
        key: h.key,
        fence: h.fence,
        held_ms: protocol::millis(h.held_for),
        expires_in_ms: h.expires_in.map(protocol::millis),
        identity: h.identity,
        waiting: u64::try_from(h.waiting).unwrap_or(u64::MAX),
    }
}
