//! The etcd driver: one etcd lease and one record per Leasehold lease,
//! fences from the revisions of the granting transactions, waiting pushed
//! by watches (docs/etcd.md).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, GetOptions, Identity, KeyValue, PutOptions,
    TlsOptions, Txn, TxnOp, TxnOpResponse,
};
use rand::Rng;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::book::{EtcdBook, NewHold, Request};
use super::calls::{lease_secs, revision_of, Bounds, Calls};
use super::keys::{range_end, Layout, RequestRecord};
use super::line::{self, InLine};
use super::members::Members;
use super::target::EtcdTarget;
use super::version;
use super::watcher::Watcher;
use crate::clock::Clock;
use crate::connect::ConnectOptions;
use crate::driver::{
    Capabilities, Driver, GiveUp, Grant, HoldAnswer, HoldRequest, HolderInfo, KeyName,
};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{LeaseId, RequestId};
use crate::loss::LossReason;
use crate::slots::{AcquireResult, SlotLease, SlotRequest};

/// Gives the holder found in `line`, if it is the last one found, the
/// line's other records as its waiters.
fn close_line(found: &mut [(KeyName, HolderInfo, i64)], line: Option<(KeyName, usize)>) {
    if let (Some((name, records)), Some((held, info, _))) = (line, found.last_mut()) {
        if *held == name {
            info.waiting = records - 1;
        }
    }
}

/// What the driver's tasks share: the etcd calls, the key layout, the
/// clock, the watcher, and the book of requests and leases.
pub(crate) struct EtcdDriverCore {
    pub(crate) calls: Calls,
    pub(crate) layout: Layout,
    pub(crate) clock: Clock,
    pub(crate) watcher: Watcher,
    pub(crate) closed: CancellationToken,
    state: Mutex<EtcdBook>,
    /// Recorded with every request this driver writes (WHO-01).
    identity: String,
}

impl EtcdDriverCore {
    pub(crate) fn lock(&self) -> MutexGuard<'_, EtcdBook> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The holders among the request records `kvs` (of one line or
    /// many, in key order, so a line's records come together), each with
    /// the number of the other records of its line (its waiters) and its
    /// etcd lease; time left is read apart.
    fn holders_in(&self, kvs: &[KeyValue]) -> Vec<(HolderInfo, i64)> {
        let now_ms = self.clock.unix_millis();
        let mut found = Vec::new();
        // The line being read: its key, and its records so far.
        let mut line: Option<(KeyName, usize)> = None;
        for kv in kvs {
            let (Some(name), Some(record)) = (
                self.layout.key_of(kv.key()),
                RequestRecord::parse(kv.value()),
            ) else {
                continue;
            };
            match &mut line {
                Some((current, records)) if *current == name => *records += 1,
                _ => {
                    close_line(&mut found, line.take());
                    line = Some((name.clone(), 1));
                }
            }
            if !record.held {
                continue;
            }
            let fence = record
                .fence
                .or_else(|| u64::try_from(kv.mod_revision()).ok())
                .unwrap_or(0);
            let info = HolderInfo {
                lock: name.lock.to_string(),
                key: name.key.to_string(),
                fence,
                held_for: Duration::from_millis(
                    now_ms.saturating_sub(record.granted_ms.unwrap_or(now_ms)),
                ),
                expires_in: None,
                identity: record.identity.unwrap_or_default(),
                waiting: 0,
            };
            found.push((name, info, kv.lease()));
        }
        close_line(&mut found, line);
        found
            .into_iter()
            .map(|(_, info, lease)| (info, lease))
            .collect()
    }

    /// The holders of the lines under `prefix`, from one range read
    /// (linearizable, as etcd's reads are by default), with the time their
    /// etcd leases have left.
    async fn holders_under(&self, doing: &str, prefix: Vec<u8>) -> Result<Vec<HolderInfo>> {
        if self.lock().closed {
            return Err(closed());
        }
        let listed = self
            .calls
            .get(doing, prefix, GetOptions::new().with_prefix())
            .await?;
        Ok(self.with_ttls(self.holders_in(listed.kvs())).await)
    }

    /// `holders` with the time their etcd leases have left, as etcd says.
    async fn with_ttls(&self, holders: Vec<(HolderInfo, i64)>) -> Vec<HolderInfo> {
        let ttls = futures::future::join_all(holders.iter().map(|(_, lease)| {
            let lease = *lease;
            async move {
                let read = |client: Client| async move {
                    client.lease_client().time_to_live(lease, None).await
                };
                self.calls
                    .bounded("reading a lease's ttl", read)
                    .await
                    .ok()
                    .and_then(|r| u64::try_from(r.ttl()).ok())
                    .map(Duration::from_secs)
            }
        }))
        .await;
        holders
            .into_iter()
            .zip(ttls)
            .map(|((info, _), ttl)| HolderInfo {
                expires_in: ttl,
                ..info
            })
            .collect()
    }

    /// Lets a held lease go: revoking its etcd lease deletes its record.
    pub(crate) async fn release(&self, lease: LeaseId) -> Result<()> {
        let s = self;
        let etcd_lease = {
            let mut st = s.lock();
            if st.closed {
                return Err(closed());
            }
            match st.held.get_mut(&lease) {
                Some(h) => {
                    h.releasing = true;
                    h.etcd_lease
                }
                None => {
                    let reason = s.why_ended(&st, lease);
                    st.ended.remove(&lease);
                    return Err(Error::lost(reason));
                }
            }
        };
        // Revoking the etcd lease deletes the record attached to it, and
        // nothing else: the lease is this Leasehold lease's alone.
        let revoked = s.calls.revoke(etcd_lease).await;
        let mut st = s.lock();
        match revoked {
            Err(e) if e.kind() != ErrorKind::Lost => {
                if let Some(h) = st.held.get_mut(&lease) {
                    h.releasing = false;
                }
                Err(e)
            }
            outcome => {
                if let Some(h) = st.held.remove(&lease) {
                    st.requests.remove(&h.request_id);
                }
                outcome
            }
        }
    }
}

/// The driver of a store on etcd, reached over `etcd://` or `etcds://`.
pub struct EtcdDriver {
    shared: Arc<EtcdDriverCore>,
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the store is closed")
}

/// A random token for a new record (DIST-05).
fn token() -> String {
    format!("{:032x}", rand::thread_rng().gen::<u128>())
}

fn tls_of(options: &ConnectOptions) -> Result<TlsOptions> {
    let mut tls = TlsOptions::new();
    if let Some(ca) = &options.ca_pem {
        tls = tls.ca_certificate(Certificate::from_pem(ca));
    }
    match (&options.client_cert_pem, &options.client_key_pem) {
        (Some(cert), Some(key)) => tls = tls.identity(Identity::from_pem(cert, key)),
        (None, None) => {}
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "a client certificate needs its key, and a key its certificate",
            ))
        }
    }
    Ok(tls)
}

impl EtcdDriver {
    /// Connects to the etcd cluster at `url`, checks its version (DIST-08)
    /// and keeps its watches on `runtime`. Fails as the first call fails:
    /// `Unavailable`, `Unauthenticated`, `Protocol` (a refused version).
    pub async fn connect(
        url: &str,
        options: ConnectOptions,
        runtime: &Handle,
    ) -> Result<EtcdDriver> {
        let target = EtcdTarget::parse(url)?;
        let attempt = target.attempt_timeout.unwrap_or(options.attempt_timeout);
        crate::connect::check_attempt_timeout(attempt)?;
        // A member's connection is made within one try's bound, and one
        // that stops answering pings is dropped within it (past etcd's
        // smallest ping interval, --grpc-keepalive-min-time: 5 s).
        let mut etcd = etcd_client::ConnectOptions::new()
            .with_connect_timeout(attempt)
            .with_keep_alive(Duration::from_secs(10), attempt)
            .with_keep_alive_while_idle(true)
            .with_require_leader(true);
        let user = options
            .user
            .clone()
            .map(|u| (u, options.password.clone().unwrap_or_default()))
            .or(target.user.clone());
        if let Some((name, password)) = user {
            etcd = etcd.with_user(name, password);
        }
        if target.tls {
            etcd = etcd.with_tls(tls_of(&options)?);
        }
        let timeout = options.connect_timeout;
        let calls = Calls {
            members: Arc::new(Members::new(&target.endpoints, etcd)),
            bounds: Bounds {
                call: timeout,
                attempt,
            },
            runtime: runtime.clone(),
        };
        let status = |client: Client| async move { client.maintenance_client().status().await };
        let server_version = match calls.bounded("reading etcd's version", status).await {
            Ok(status) => status.version().to_owned(),
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                let tls = match target.tls {
                    true => Some(crate::remote::tls_connector(&options)?),
                    false => None,
                };
                // Each member in turn, each within a try's bound: the first
                // may be the one that is down.
                let mut read = Err(super::errors::timed_out("reading etcd's version"));
                for endpoint in &target.endpoints {
                    let tried =
                        tokio::time::timeout(attempt, version::over_http(endpoint, tls.as_ref()));
                    read = tried.await.unwrap_or_else(|_| {
                        Err(super::errors::timed_out("reading etcd's version"))
                    });
                    if read.is_ok() {
                        break;
                    }
                }
                read?
            }
            Err(e) => return Err(e),
        };
        version::check(&server_version, options.accept_old_etcd)?;
        let closed = CancellationToken::new();
        let watcher = Watcher::start(calls.clone(), closed.clone());
        Ok(EtcdDriver {
            shared: Arc::new(EtcdDriverCore {
                calls,
                layout: Layout::new(&target.prefix),
                clock: Clock::monotonic(),
                watcher,
                closed,
                state: Mutex::new(EtcdBook::default()),
                identity: options.checked_identity()?.to_string(),
            }),
        })
    }
}

impl Drop for EtcdDriver {
    fn drop(&mut self) {
        self.shared.closed.cancel();
    }
}

/// The `n`th answer of a transaction, if it is a read.
fn read_at(ops: &[TxnOpResponse], n: usize) -> Option<&etcd_client::GetResponse> {
    match ops.get(n) {
        Some(TxnOpResponse::Get(get)) => Some(get),
        _ => None,
    }
}

#[async_trait]
impl Driver for EtcdDriver {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            renewal: true,
            push: true,
            groups: false,
        }
    }

    fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    async fn hold(&self, request: HoldRequest) -> Result<HoldAnswer> {
        let s = &self.shared;
        let rid = request.request_id;
        {
            let mut st = s.lock();
            if st.closed {
                return Err(closed());
            }
            // The same request again (LOCK-03): the lease it got, or its place in line.
            match st.requests.get_mut(&rid) {
                Some(Request::Granted(lease_id)) => {
                    let lease_id = *lease_id;
                    return match s.granted_again(&mut st, lease_id) {
                        Some(granted) => Ok(HoldAnswer::Granted(granted)),
                        None => Err(Error::lost(s.why_ended(&st, lease_id))),
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
                None => {}
            }
        }
        let ttl = request.ttl.ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                "a lease on etcd needs a ttl: etcd lets a key go only when its lease runs out",
            )
        })?;
        let secs = lease_secs(ttl);
        let sent_at = s.clock.now();
        let etcd_lease = s.calls.grant(secs).await?;
        let key = s.layout.request(&request.name, rid);
        let line = s.layout.line(&request.name);
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let token = token();
        let held = RequestRecord {
            token: token.clone(),
            held: true,
            ttl_ms,
            fence: None,
            granted_ms: Some(s.clock.unix_millis()),
            identity: Some(s.identity.clone()),
        };
        let waiting = RequestRecord {
            token,
            held: false,
            ttl_ms,
            fence: None,
            granted_ms: None,
            identity: Some(s.identity.clone()),
        };
        let with_lease = || Some(PutOptions::new().with_lease(etcd_lease));
        let mut otherwise = Vec::new();
        if request.queue {
            otherwise.push(TxnOp::txn(
                Txn::new()
                    .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key.clone(), waiting.to_bytes(), with_lease())]),
            ));
        }
        otherwise.push(TxnOp::get(key.clone(), None));
        if request.queue {
            otherwise.push(TxnOp::get(
                line.clone(),
                Some(GetOptions::new().with_prefix().with_count_only()),
            ));
        }
        // Granted only when the key's line is empty: no holder, nobody waiting.
        let txn = Txn::new()
            .when([Compare::create_revision(line.clone(), CompareOp::Equal, 0)
                .with_range(range_end(&line))])
            .and_then([
                TxnOp::put(key.clone(), held.to_bytes(), with_lease()),
                TxnOp::put(s.layout.fence(), Vec::new(), None),
            ])
            .or_else(otherwise);
        let answer = match s.calls.txn("holding a key", txn).await {
            Ok(a) => a,
            Err(e) => {
                s.calls.revoke_later(etcd_lease);
                return Err(e);
            }
        };
        let lease_id = LeaseId::random();
        if answer.succeeded() {
            let fence = revision_of(&answer)?;
            let mut st = s.lock();
            if st.closed {
                s.calls.revoke_later(etcd_lease);
                return Err(closed());
            }
            let granted = s.book(
                &mut st,
                NewHold {
                    request_id: rid,
                    lease_id,
                    key,
                    record: held,
                    etcd_lease,
                    lease_secs: secs,
                    fence,
                    max_hold: request.max_hold,
                    sent_at,
                },
            );
            return Ok(HoldAnswer::Granted(granted));
        }
        // Otherwise: [put if absent,] the request's record[, the line's length].
        let ops = answer.op_responses();
        let at = usize::from(request.queue);
        let count = read_at(&ops, at + 1).map(|get| get.count());
        let Some(kv) = read_at(&ops, at).and_then(|get| get.kvs().first().cloned()) else {
            s.calls.revoke_later(etcd_lease);
            if request.queue {
                return Err(Error::new(
                    ErrorKind::Internal,
                    "etcd neither granted nor queued the request",
                ));
            }
            return Ok(HoldAnswer::NotHeld);
        };
        let record = RequestRecord::parse(kv.value()).ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                "a request record in etcd is not Leasehold's",
            )
        })?;
        if kv.lease() != etcd_lease {
            // The record of an earlier try of this request, whose answer was
            // lost (LOCK-03): it is the request's; the new etcd lease is not needed.
            s.calls.revoke_later(etcd_lease);
        }
        let record_lease = kv.lease();
        let record_ttl_ms = record.ttl_ms;
        let create_revision = kv.create_revision();
        if record.held {
            let fence = record
                .fence
                .or_else(|| u64::try_from(kv.mod_revision()).ok())
                .unwrap_or(0);
            let mut st = s.lock();
            let granted = s.book(
                &mut st,
                NewHold {
                    request_id: rid,
                    lease_id,
                    key,
                    record,
                    etcd_lease: record_lease,
                    lease_secs: lease_secs(Duration::from_millis(record_ttl_ms)),
                    fence,
                    max_hold: request.max_hold,
                    sent_at,
                },
            );
            return Ok(HoldAnswer::Granted(granted));
        }
        let (wtx, wrx) = oneshot::channel();
        let stop = CancellationToken::new();
        {
            let mut st = s.lock();
            if st.closed {
                s.calls.revoke_later(record_lease);
                return Err(closed());
            }
            st.requests.insert(
                rid,
                Request::Waiting {
                    etcd_lease: record_lease,
                    tx: Some(wtx),
                    stop: stop.clone(),
                },
            );
        }
        s.calls.runtime.spawn(line::wait(
            s.clone(),
            InLine {
                request_id: rid,
                lease_id,
                key,
                line,
                create_revision,
                waiting: record,
                etcd_lease: record_lease,
                lease_secs: lease_secs(Duration::from_millis(record_ttl_ms)),
                max_hold: request.max_hold,
                stop,
            },
        ));
        let ahead = count
            .and_then(|c| usize::try_from(c).ok())
            .unwrap_or(1)
            .saturating_sub(1);
        Ok(HoldAnswer::Queued {
            waiting: wrx,
            ahead,
        })
    }

    async fn renew(&self, lease: LeaseId, ttl: Option<Duration>) -> Result<Grant> {
        let s = &self.shared;
        let now = s.clock.now();
        let (etcd_lease, current, revoke_at, fence, rid, key) = {
            let st = s.lock();
            if st.closed {
                return Err(closed());
            }
            let Some(h) = st.held.get(&lease).filter(|h| !h.releasing) else {
                return Err(Error::lost(s.why_ended(&st, lease)));
            };
            (
                h.etcd_lease,
                h.lease_secs,
                h.revoke_at,
                h.fence,
                h.request_id,
                h.key.clone(),
            )
        };
        if revoke_at.is_some_and(|at| at <= now) {
            if let Some(id) = s.lose(lease, LossReason::Revoked) {
                s.calls.revoke_later(id);
            }
            return Err(Error::lost(LossReason::Revoked));
        }
        let wanted = ttl.map_or(current, lease_secs);
        let renewed = if wanted == current {
            s.calls.keep_alive(etcd_lease, &key).await
        } else {
            self.move_lease(lease, wanted, ttl.unwrap_or_default())
                .await
        };
        if let Err(e) = renewed {
            if e.kind() == ErrorKind::Lost {
                s.lose(lease, LossReason::Expired);
            }
            return Err(e);
        }
        Ok(Grant {
            request_id: rid,
            lease_id: lease,
            fence,
            expires_at: None,
            revoke_at: None,
            revoke_in: revoke_at.map(|at| at.saturating_since(now)),
        })
    }

    async fn release(&self, lease: LeaseId) -> Result<()> {
        self.shared.release(lease).await
    }

    async fn give_up(&self, request: RequestId) -> Result<GiveUp> {
        let s = &self.shared;
        let found = s.lock().requests.remove(&request);
        match found {
            None => Ok(GiveUp::Unknown),
            Some(Request::Waiting {
                etcd_lease, stop, ..
            }) => {
                stop.cancel();
                match s.calls.revoke(etcd_lease).await {
                    Ok(()) => Ok(GiveUp::LeftLine),
                    Err(e) if e.kind() == ErrorKind::Lost => Ok(GiveUp::LeftLine),
                    Err(e) => Err(e),
                }
            }
            Some(Request::Granted(lease_id)) => {
                s.lock()
                    .requests
                    .insert(request, Request::Granted(lease_id));
                match s.release(lease_id).await {
                    Ok(()) => Ok(GiveUp::Released(lease_id)),
                    Err(e) if e.kind() == ErrorKind::Lost => Ok(GiveUp::Released(lease_id)),
                    Err(e) => Err(e),
                }
            }
        }
    }

    async fn holders(&self, lock: Option<&str>) -> Result<Vec<HolderInfo>> {
        let s = &self.shared;
        let mut list = s
            .holders_under("listing holders", s.layout.lines(lock))
            .await?;
        list.sort_by(|a, b| (&a.lock, &a.key).cmp(&(&b.lock, &b.key)));
        Ok(list)
    }

    async fn holder(&self, name: &KeyName) -> Result<Option<HolderInfo>> {
        let s = &self.shared;
        let line = s.layout.line(name);
        Ok(s.holders_under("reading a key's holder", line).await?.pop())
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
                .filter_map(|(_, r)| match r {
                    Request::Waiting {
                        etcd_lease,
                        tx,
                        stop,
                        ..
                    } => Some((etcd_lease, tx, stop)),
                    Request::Granted(_) => None,
                })
                .collect();
            (held, waiting)
        };
        let mut leases = Vec::new();
        for mut h in held {
            if let Some(loss) = h.loss.take() {
                loss.send(LossReason::Closed);
            }
            leases.push(h.etcd_lease);
        }
        for (etcd_lease, tx, stop) in waiting {
            stop.cancel();
            if let Some(tx) = tx {
                let _ = tx.send(Err(closed()));
            }
            leases.push(etcd_lease);
        }
        s.closed.cancel();
        futures::future::join_all(leases.into_iter().map(|id| s.calls.revoke(id))).await;
    }
}

impl EtcdDriver {
    fn check_open(&self) -> Result<()> {
        if self.shared.lock().closed {
            Err(closed())
        } else {
            Ok(())
        }
    }

    /// Moves a held lease to a new etcd lease of `secs` seconds (an extend
    /// to another ttl, MANUAL-03): one transaction that compares the
    /// record's token and value, then the old etcd lease is revoked.
    async fn move_lease(&self, lease: LeaseId, secs: i64, ttl: Duration) -> Result<()> {
        let s = &self.shared;
        let (key, record, fence) = {
            let st = s.lock();
            let h = st
                .held
                .get(&lease)
                .ok_or_else(|| Error::lost(s.why_ended(&st, lease)))?;
            (h.key.clone(), h.record.clone(), h.fence)
        };
        let new_lease = s.calls.grant(secs).await?;
        let moved = RequestRecord {
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            fence: Some(fence),
            ..record.clone()
        };
        let txn = Txn::new()
            .when([Compare::value(
                key.clone(),
                CompareOp::Equal,
                record.to_bytes(),
            )])
            .and_then([TxnOp::put(
                key,
                moved.to_bytes(),
                Some(PutOptions::new().with_lease(new_lease)),
            )]);
        let answer = s.calls.txn("extending a lease", txn).await;
        let succeeded = matches!(&answer, Ok(a) if a.succeeded());
        if !succeeded {
            s.calls.revoke_later(new_lease);
            answer?;
            return Err(Error::lost(LossReason::Expired));
        }
        let old = {
            let mut st = s.lock();
            match st.held.get_mut(&lease) {
                Some(h) => {
                    h.record = moved;
                    h.lease_secs = secs;
                    Some(std::mem::replace(&mut h.etcd_lease, new_lease))
                }
                None => None,
            }
        };
        s.calls.revoke_later(old.unwrap_or(new_lease));
        Ok(())
    }
}
