//! The PostgreSQL driver: one row per key (its lock), one per request
//! (its place in line, then its lease), fences from one sequence taken
//! after the key's row lock, grants pushed by NOTIFY, every call one
//! function of the store's schema (docs/postgres.md).

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::runtime::Handle;
use tokio::sync::{oneshot, Notify};
use tokio_postgres::config::SslMode;
use tokio_postgres::types::Type;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_util::sync::CancellationToken;

use super::answer::{reason, Answer};
use super::book::{NewLease, PostgresBook, Request};
use super::calls::{Bounds, Calls};
use super::listener::{self, Hearing};
use super::schema::{self, quoted};
use super::target::PostgresTarget;
use crate::clock::Clock;
use crate::connect::ConnectOptions;
use crate::driver::{
    Capabilities, Driver, GiveUp, Grant, HoldAnswer, HoldRequest, HolderInfo, KeyName,
};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{GroupId, LeaseId, RequestId};
use crate::loss::LossReason;
use crate::slots::{AcquireResult, SlotLease, SlotRequest};

/// How long a request that is over stays, for a retry to find (PG-05).
const KEEP_OVER: &str = "10 minutes";
/// How often a store forgets what no retry can still ask about.
const FORGET_EVERY: Duration = Duration::from_secs(60);

/// The statements of the driver's calls, with the schema filled in.
struct Sql {
    hold: String,
    look_again: String,
    renew: String,
    renew_group: String,
    release: String,
    give_up: String,
    holders: String,
    forget: String,
}

impl Sql {
    fn new(schema: &str) -> Sql {
        let s = quoted(schema);
        Sql {
            hold: format!("SELECT * FROM {s}.hold($1, $2, $3, $4, $5, $6, $7, $8)"),
            look_again: format!("SELECT * FROM {s}.look_again($1)"),
            renew: format!("SELECT * FROM {s}.renew($1, $2)"),
            renew_group: format!("SELECT {s}.renew_group($1, $2) AS expires_in_ms"),
            release: format!("SELECT {s}.release($1) AS answer"),
            give_up: format!("SELECT {s}.give_up($1) AS answer"),
            holders: format!("SELECT * FROM {s}.holders($1, $2)"),
            forget: format!("SELECT {s}.forget('{KEEP_OVER}')"),
        }
    }
}

/// What the driver's tasks share.
pub(crate) struct PostgresCore {
    pub(crate) calls: Calls,
    /// The schema of the store's tables.
    pub(crate) schema: String,
    sql: Sql,
    pub(crate) clock: Clock,
    pub(crate) closed: CancellationToken,
    pub(crate) runtime: Handle,
    state: Mutex<PostgresBook>,
    /// Recorded with every request this driver makes (WHO-01).
    identity: String,
}

impl PostgresCore {
    /// The live holders of `lock` (of every lock when `None`), or of its
    /// key `key` alone, from one read on the primary (WHO-02).
    async fn holders(&self, lock: Option<&str>, key: Option<&str>) -> Result<Vec<HolderInfo>> {
        if self.lock().closed {
            return Err(closed());
        }
        let rows = self
            .calls
            .query(
                "listing holders",
                &self.sql.holders,
                &[(&lock, Type::TEXT), (&key, Type::TEXT)],
            )
            .await?;
        let mut list = Vec::with_capacity(rows.len());
        for row in rows {
            let read = |column: &str| -> Result<u64> {
                let v: Option<i64> = row.try_get(column).map_err(|e| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("PostgreSQL listed a holder that is not Leasehold's: {e}"),
                    )
                })?;
                Ok(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0))
            };
            let identity: Option<String> = row.get("identity");
            list.push(HolderInfo {
                lock: row.get("lock"),
                key: row.get("key"),
                fence: read("fence")?,
                held_for: Duration::from_millis(read("held_ms")?),
                expires_in: Some(Duration::from_millis(read("expires_in_ms")?)),
                identity: identity.unwrap_or_default(),
                waiting: usize::try_from(read("waiting")?).unwrap_or(usize::MAX),
            });
        }
        Ok(list)
    }
}

/// The driver of a store on PostgreSQL, reached over `postgres://` or
/// `postgresql://`.
pub struct PostgresDriver {
    shared: Arc<PostgresCore>,
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the store is closed")
}

/// A request id or group id as the schema keeps it.
fn id_bytes(id: u128) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl PostgresDriver {
    /// Connects to the PostgreSQL at `url`, makes or migrates the store's
    /// schema, checks the fence sequence (PG-04) and starts listening for
    /// grants. Fails as the first connection fails: `Unavailable`,
    /// `Unauthenticated`, `PermissionDenied`; `InvalidArgument` for a bad URL.
    pub async fn connect(
        url: &str,
        options: ConnectOptions,
        runtime: &Handle,
    ) -> Result<PostgresDriver> {
        let target = PostgresTarget::parse(url)?;
        let attempt = target.attempt_timeout.unwrap_or(options.attempt_timeout);
        crate::connect::check_attempt_timeout(attempt)?;
        let mut config = target.config.clone();
        with_options(&mut config, &options);
        let tls = tls_of(&mut config, &options)?;
        let listen_config = match &target.listen {
            Some(listen) => {
                let mut listen = listen.clone();
                with_options(&mut listen, &options);
                listen.ssl_mode(config.get_ssl_mode());
                listen
            }
            None => config.clone(),
        };
        prepare(&config, &tls, &target.schema, options.connect_timeout).await?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(target.pool_size)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| Error::new(ErrorKind::Internal, format!("a connection pool: {e}")))?;
        let closed = CancellationToken::new();
        let shared = Arc::new(PostgresCore {
            calls: Calls {
                pool,
                bounds: Bounds {
                    call: options.connect_timeout,
                    attempt,
                },
            },
            sql: Sql::new(&target.schema),
            schema: target.schema.clone(),
            clock: Clock::monotonic(),
            closed: closed.clone(),
            runtime: runtime.clone(),
            state: Mutex::new(PostgresBook::default()),
            identity: options.checked_identity()?.to_string(),
        });
        let hearing = Arc::new(Ears(Arc::downgrade(&shared)));
        let listening = listener::start(
            listen_config,
            tls,
            schema::channel(&target.schema),
            hearing,
            closed.clone(),
            runtime,
        )
        .await;
        if let Err(e) = listening {
            closed.cancel();
            return Err(e);
        }
        runtime.spawn(forget(Arc::downgrade(&shared)));
        Ok(PostgresDriver { shared })
    }
}

/// What the connect options add to a connection's parameters: the
/// credentials, the connect timeout and application name unless the URL
/// gives them, and TCP keepalives.
fn with_options(config: &mut tokio_postgres::Config, options: &ConnectOptions) {
    if let Some(user) = &options.user {
        config.user(user);
    }
    if let Some(password) = &options.password {
        config.password(password);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(options.connect_timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name(options.identity.as_deref().unwrap_or("leasehold"));
    }
    config.keepalives_idle(Duration::from_secs(10));
}

/// How the store speaks TLS to PostgreSQL (PG-01): verifying the server's
/// certificate against `ConnectOptions::ca_pem`, and its name (or IP
/// address) against the host's. Without those certificates `sslmode=require`
/// fails `InvalidArgument`, and any other `sslmode` connects in plain text:
/// the store encrypts only what it can verify.
fn tls_of(
    config: &mut tokio_postgres::Config,
    options: &ConnectOptions,
) -> Result<MakeRustlsConnect> {
    if let Some(pem) = &options.ca_pem {
        return Ok(MakeRustlsConnect::new(crate::remote::client_config(pem)?));
    }
    if config.get_ssl_mode() == SslMode::Require {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "sslmode=require needs the certificates to trust (ConnectOptions::ca_pem): \
             the store verifies the server's certificate",
        ));
    }
    config.ssl_mode(SslMode::Disable);
    let unused = ClientConfig::builder()
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(unused))
}

/// Makes or migrates the schema on a connection of its own, and refuses a
/// database whose fence sequence is behind a fence it gave (PG-04).
async fn prepare(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    schema: &str,
    bound: Duration,
) -> Result<()> {
    let doing = "connecting to PostgreSQL";
    let connected = tokio::time::timeout(bound, config.connect(tls.clone()))
        .await
        .map_err(|_| Error::new(ErrorKind::Timeout, format!("{doing}: no answer in time")))?;
    let (mut client, connection) = connected.map_err(|e| super::calls::of(doing, &e))?;
    let driving = tokio::spawn(connection);
    let checked = async {
        schema::migrate(&mut client, schema).await?;
        // Unnamed (one round trip, no prepared statement): a pooler in
        // transaction mode may give the next statement another server.
        let rows = client
            .query_typed(
                &format!("SELECT * FROM {}.fence_check()", quoted(schema)),
                &[],
            )
            .await
            .map_err(|e| super::calls::of("checking the fence sequence", &e))?;
        let row = rows
            .first()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "fence_check() answered no row"))?;
        let (sequence, given): (Option<i64>, Option<i64>) = (row.get(0), row.get(1));
        let (sequence, given) = (sequence.unwrap_or(0), given.unwrap_or(0));
        if sequence < given {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "schema {schema}'s fence sequence is at {sequence}, behind fence {given} \
                     that this database already gave: fences would go back. Is this a standby \
                     promoted after asynchronous replication, a restored backup, or a logical \
                     replica? (docs/postgres.md)"
                ),
            ));
        }
        Ok(())
    };
    let outcome = tokio::time::timeout(bound, checked)
        .await
        .unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Timeout,
                format!("making schema {schema}: no answer in time"),
            ))
        });
    drop(client);
    driving.abort();
    outcome
}

/// Forgets, now and then, what no retry can still ask about.
async fn forget(shared: Weak<PostgresCore>) {
    loop {
        let Some(closed) = shared.upgrade().map(|s| s.closed.clone()) else {
            return;
        };
        tokio::select! {
            _ = closed.cancelled() => return,
            _ = tokio::time::sleep(FORGET_EVERY) => {}
        }
        let Some(s) = shared.upgrade() else { return };
        let _ = s
            .calls
            .query("forgetting old requests", &s.sql.forget, &[])
            .await;
    }
}

/// What the listener tells, passed on to the waiters.
struct Ears(Weak<PostgresCore>);

impl Hearing for Ears {
    fn told(&self, id: RequestId) {
        if let Some(s) = self.0.upgrade() {
            if let Some(Request::Asking { wake, .. } | Request::Waiting { wake, .. }) =
                s.lock().requests.get(&id)
            {
                wake.notify_one();
            }
        }
    }

    fn listening(&self) {
        if let Some(s) = self.0.upgrade() {
            for request in s.lock().requests.values() {
                if let Request::Asking { wake, .. } | Request::Waiting { wake, .. } = request {
                    wake.notify_one();
                }
            }
        }
    }
}

impl Drop for PostgresDriver {
    fn drop(&mut self) {
        self.shared.closed.cancel();
    }
}

impl PostgresCore {
    pub(crate) fn lock(&self) -> MutexGuard<'_, PostgresBook> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Books a grant and starts its watch.
    pub(crate) fn book(
        self: &Arc<PostgresCore>,
        st: &mut PostgresBook,
        new: NewLease,
    ) -> crate::driver::Granted {
        let lease_id = new.lease_id;
        let (granted, stop) = st.book(new);
        self.runtime
            .spawn(watch_lease(Arc::downgrade(self), lease_id, stop));
        granted
    }

    /// Gives request `id` up in the database, in the background: what a
    /// hold answered after the store closed.
    fn give_up_later(self: &Arc<PostgresCore>, id: RequestId) {
        let s = self.clone();
        self.runtime.spawn(async move {
            let bytes = id_bytes(id.0);
            let _ = s
                .calls
                .query(
                    "giving up a request",
                    &s.sql.give_up,
                    &[(&bytes, Type::BYTEA)],
                )
                .await;
        });
    }

    /// Looks at request `id` in line again (`look_again`): its answer.
    pub(crate) async fn look_again(&self, id: RequestId) -> Result<Answer> {
        let rid = id_bytes(id.0);
        let row = self
            .calls
            .query_one(
                "looking at the line",
                &self.sql.look_again,
                &[(&rid, Type::BYTEA)],
            )
            .await?;
        Answer::of(&row)
    }

    /// Lets a held lease go: the next in line is granted in the same transaction.
    pub(crate) async fn release(&self, lease: LeaseId) -> Result<()> {
        let rid = {
            let mut st = self.lock();
            if st.closed {
                return Err(closed());
            }
            match st.held.get_mut(&lease) {
                Some(h) => {
                    h.releasing = true;
                    h.request_id
                }
                None => {
                    let reason = st.why_ended(lease);
                    st.ended.remove(&lease);
                    return Err(Error::lost(reason));
                }
            }
        };
        let bytes = id_bytes(rid.0);
        let answered = self
            .calls
            .query_one(
                "releasing a lease",
                &self.sql.release,
                &[(&bytes, Type::BYTEA)],
            )
            .await;
        let mut st = self.lock();
        let word: String = match answered {
            Ok(row) => row.get("answer"),
            Err(e) => {
                if let Some(h) = st.held.get_mut(&lease) {
                    h.releasing = false;
                }
                return Err(e);
            }
        };
        if let Some(h) = st.held.remove(&lease) {
            st.requests.remove(&h.request_id);
        }
        match word.as_str() {
            "released" => Ok(()),
            other => Err(Error::lost(reason(other).unwrap_or(LossReason::Unknown))),
        }
    }
}

/// Tells the holder of its loss when the database lets its lease go
/// unseen (PG-03): at its expiry unless renewed meanwhile, or at its maxHold.
async fn watch_lease(shared: Weak<PostgresCore>, lease_id: LeaseId, stop: CancellationToken) {
    let Some(clock) = shared.upgrade().map(|s| s.clock.clone()) else {
        return;
    };
    loop {
        let Some((at, _)) = shared.upgrade().and_then(|s| s.lock().deadline(lease_id)) else {
            return;
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = clock.sleep_until(at) => {}
        }
        let Some(s) = shared.upgrade() else { return };
        let mut st = s.lock();
        match st.deadline(lease_id) {
            Some((at, reason)) if at <= clock.now() => {
                st.lose(lease_id, reason);
                return;
            }
            Some(_) => {}
            None => return,
        }
    }
}

#[async_trait]
impl Driver for PostgresDriver {
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
        let ttl = request.ttl.ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                "a lease on PostgreSQL needs a ttl: the database lets a key go only when \
                 its lease runs out",
            )
        })?;
        let (lease_id, wake) = {
            let mut st = s.lock();
            if st.closed {
                return Err(closed());
            }
            // The same request again (LOCK-03): the lease it got, or its place in line.
            match st.requests.get_mut(&rid) {
                Some(Request::Granted(lease_id)) => {
                    let lease_id = *lease_id;
                    let now = s.clock.now();
                    return match st.granted_again(lease_id, now) {
                        Some(granted) => Ok(HoldAnswer::Granted(granted)),
                        None => Err(Error::lost(st.why_ended(lease_id))),
                    };
                }
                Some(Request::Waiting { tx, .. }) => {
                    let (wtx, wrx) = oneshot::channel();
                    *tx = Some(wtx);
                    return Ok(HoldAnswer::Queued {
                        waiting: wrx,
                        ahead: 0,
                    });
                }
                Some(Request::Asking { lease_id, wake }) => (*lease_id, wake.clone()),
                None => {
                    let (lease_id, wake) = (LeaseId::random(), Arc::new(Notify::new()));
                    st.requests.insert(
                        rid,
                        Request::Asking {
                            lease_id,
                            wake: wake.clone(),
                        },
                    );
                    (lease_id, wake)
                }
            }
        };
        let sent_at = s.clock.now();
        let bytes = id_bytes(rid.0);
        let group = request.group.map(|g: GroupId| id_bytes(g.0));
        let (ttl_ms, max_hold_ms) = (millis(ttl), request.max_hold.map(millis));
        let row = s
            .calls
            .query_one(
                "holding a key",
                &s.sql.hold,
                &[
                    (&bytes, Type::BYTEA),
                    (&&*request.name.lock, Type::TEXT),
                    (&&*request.name.key, Type::TEXT),
                    (&ttl_ms, Type::INT8),
                    (&max_hold_ms, Type::INT8),
                    (&group, Type::BYTEA),
                    (&request.queue, Type::BOOL),
                    (&s.identity, Type::TEXT),
                ],
            )
            .await;
        let answer = match row.and_then(|row| Answer::of(&row)) {
            Ok(answer) => answer,
            Err(e) => {
                s.lock().requests.remove(&rid);
                return Err(e);
            }
        };
        let mut st = s.lock();
        if st.closed {
            drop(st);
            s.give_up_later(rid);
            return Err(closed());
        }
        match answer {
            Answer::Granted {
                fence,
                revoke_in,
                expires_in,
            } => {
                let new = NewLease {
                    request_id: rid,
                    lease_id,
                    fence,
                    ttl,
                    group: request.group,
                    sent_at,
                    expires_in,
                    revoke_in,
                };
                Ok(HoldAnswer::Granted(s.book(&mut st, new)))
            }
            Answer::Queued { ahead, wait } => {
                let (tx, waiting) = oneshot::channel();
                let stop = CancellationToken::new();
                st.requests.insert(
                    rid,
                    Request::Waiting {
                        lease_id,
                        wake: wake.clone(),
                        tx: Some(tx),
                        stop: stop.clone(),
                    },
                );
                drop(st);
                s.runtime.spawn(super::line::wait(
                    s.clone(),
                    super::line::InLine {
                        request_id: rid,
                        lease_id,
                        ttl,
                        group: request.group,
                        wake,
                        stop,
                        first_look: wait,
                    },
                ));
                Ok(HoldAnswer::Queued { waiting, ahead })
            }
            Answer::NotHeld => {
                st.requests.remove(&rid);
                Ok(HoldAnswer::NotHeld)
            }
            Answer::Over(reason) => {
                st.requests.remove(&rid);
                Err(Error::lost(reason))
            }
        }
    }

    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant> {
        let s = &self.shared;
        let now = s.clock.now();
        let (rid, fence, revoke_at) = {
            let mut st = s.lock();
            if st.closed {
                return Err(closed());
            }
            let Some(h) = st.held.get(&lease).filter(|h| !h.releasing) else {
                let reason = st.why_ended(lease);
                return Err(Error::lost(reason));
            };
            let (rid, fence, revoke_at) = (h.request_id, h.fence, h.revoke_at);
            if revoke_at.is_some_and(|at| at <= now) {
                st.lose(lease, LossReason::Revoked);
                return Err(Error::lost(LossReason::Revoked));
            }
            (rid, fence, revoke_at)
        };
        let bytes = id_bytes(rid.0);
        let ttl_ms = ttl.map(millis);
        let row = s
            .calls
            .query_one(
                "renewing a lease",
                &s.sql.renew,
                &[(&bytes, Type::BYTEA), (&ttl_ms, Type::INT8)],
            )
            .await?;
        match Answer::of(&row)? {
            Answer::Granted {
                revoke_in,
                expires_in,
                ..
            } => {
                if let Some(h) = s.lock().held.get_mut(&lease) {
                    h.expires_at = h.expires_at.max(now + expires_in);
                    // Each answer bounds the maxHold anew from its own send
                    // time: the earliest bound stands, so that a lease the
                    // database lets live to its maxHold is seen revoked,
                    // not expired, whatever the latency of each call.
                    if let Some(left) = revoke_in {
                        let at = now + left;
                        h.revoke_at = Some(h.revoke_at.map_or(at, |old| old.min(at)));
                    }
                    if ttl.is_some_and(|t| t != h.ttl) {
                        h.group = None;
                    }
                }
                Ok(Grant {
                    request_id: rid,
                    lease_id: lease,
                    fence,
                    expires_at: None,
                    revoke_at: None,
                    revoke_in: revoke_in.or_else(|| revoke_at.map(|at| at.saturating_since(now))),
                })
            }
            Answer::Over(reason) => {
                s.lock().lose(lease, reason);
                Err(Error::lost(reason))
            }
            Answer::Queued { .. } | Answer::NotHeld => Err(Error::new(
                ErrorKind::Protocol,
                "PostgreSQL answered a renewal as if the lease were not granted",
            )),
        }
    }

    async fn renew_group(&self, group: GroupId, ttl: Duration) -> Result<()> {
        let s = &self.shared;
        if s.lock().closed {
            return Err(closed());
        }
        let sent_at = s.clock.now();
        let bytes = id_bytes(group.0);
        let ttl_ms = millis(ttl);
        let row = s
            .calls
            .query_one(
                "renewing a group",
                &s.sql.renew_group,
                &[(&bytes, Type::BYTEA), (&ttl_ms, Type::INT8)],
            )
            .await?;
        match row.get::<_, Option<i64>>("expires_in_ms") {
            Some(ms) => {
                let at = sent_at + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
                let mut st = s.lock();
                let known = st.groups.entry(group).or_insert(at);
                *known = (*known).max(at);
                Ok(())
            }
            None => Err(Error::lost(LossReason::Expired)),
        }
    }

    async fn release(&self, lease: LeaseId) -> Result<()> {
        self.shared.release(lease).await
    }

    async fn give_up(&self, request: RequestId) -> Result<GiveUp> {
        let s = &self.shared;
        let found = s.lock().requests.remove(&request);
        let lease_id = match found {
            None => return Ok(GiveUp::Unknown),
            Some(Request::Granted(lease_id)) => {
                s.lock()
                    .requests
                    .insert(request, Request::Granted(lease_id));
                return match s.release(lease_id).await {
                    Ok(()) => Ok(GiveUp::Released(lease_id)),
                    Err(e) if e.kind() == ErrorKind::Lost => Ok(GiveUp::Released(lease_id)),
                    Err(e) => Err(e),
                };
            }
            Some(Request::Waiting { lease_id, stop, .. }) => {
                stop.cancel();
                lease_id
            }
            Some(Request::Asking { lease_id, .. }) => lease_id,
        };
        let bytes = id_bytes(request.0);
        let row = s
            .calls
            .query_one(
                "giving up a request",
                &s.sql.give_up,
                &[(&bytes, Type::BYTEA)],
            )
            .await?;
        let word: Option<String> = row.get("answer");
        Ok(match word.as_deref() {
            Some("released") => GiveUp::Released(lease_id),
            Some("unknown") | None => GiveUp::Unknown,
            Some(_) => GiveUp::LeftLine,
        })
    }

    async fn holders(&self, lock: Option<&str>) -> Result<Vec<HolderInfo>> {
        self.shared.holders(lock, None).await
    }

    async fn holder(&self, name: &KeyName) -> Result<Option<HolderInfo>> {
        let mut one = self
            .shared
            .holders(Some(&name.lock), Some(&name.key))
            .await?;
        Ok(one.pop())
    }

    async fn slot_acquire(&self, request: SlotRequest) -> Result<AcquireResult> {
        self.check_open()?;
        crate::slots::records::acquire(&*self.shared, request).await
    }

    async fn slot_renew(&self, lease: &SlotLease, ttl: Duration) -> Result<Option<SlotLease>> {
        self.check_open()?;
        crate::slots::records::renew(&*self.shared, lease, ttl).await
    }

    async fn slot_release(&self, lease: &SlotLease, last_issued: u64) -> Result<bool> {
        self.check_open()?;
        crate::slots::records::release(&*self.shared, lease, last_issued).await
    }

    async fn close(&self) {
        let s = &self.shared;
        let (held, waiting) = {
            let mut st = s.lock();
            if st.closed {
                return;
            }
            st.closed = true;
            let held: Vec<_> = st.held.drain().map(|(_, h)| h).collect();
            let waiting: Vec<_> = st
                .requests
                .drain()
                .filter_map(|(rid, r)| match r {
                    Request::Waiting { tx, stop, .. } => Some((rid, tx, stop)),
                    Request::Asking { .. } | Request::Granted(_) => None,
                })
                .collect();
            (held, waiting)
        };
        let mut ending = Vec::new();
        for mut h in held {
            if let Some(loss) = h.loss.take() {
                loss.send(LossReason::Closed);
            }
            ending.push((h.request_id, &s.sql.release));
        }
        for (rid, tx, stop) in waiting {
            stop.cancel();
            if let Some(tx) = tx {
                let _ = tx.send(Err(closed()));
            }
            ending.push((rid, &s.sql.give_up));
        }
        s.closed.cancel();
        futures::future::join_all(ending.into_iter().map(|(rid, sql)| async move {
            let bytes = id_bytes(rid.0);
            let _ = s
                .calls
                .query("closing the store", sql, &[(&bytes, Type::BYTEA)])
                .await;
        }))
        .await;
        s.calls.pool.close();
    }
}

impl PostgresDriver {
    fn check_open(&self) -> Result<()> {
        if self.shared.lock().closed {
            Err(closed())
        } else {
            Ok(())
        }
    }
}
