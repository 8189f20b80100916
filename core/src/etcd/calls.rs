//! The etcd calls the driver makes, each bounded in time and failing with
//! an ERR-01 code. A call is made of tries: each try has a bound of its own
//! (the attempt timeout, short enough to be tried again well before a
//! holder's deadline), and a try that fails or is stuck goes on at once to
//! another member (`members.rs`), until the call's own bound. Every call the driver makes may be tried
//! again: its transactions compare what they change, and a grant's answer
//! is found again by its request id (LOCK-03, docs/etcd.md).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, Txn, TxnResponse};

use super::errors;
use super::members::Members;
use crate::error::{Error, ErrorKind, Result};

/// The first and the longest pause before a call is tried again when every
/// member failed lately (an election: every member answers "no leader").
const RETRY_FIRST: Duration = Duration::from_millis(20);
const RETRY_CAP: Duration = Duration::from_millis(200);

/// How long the driver's calls and each of their tries may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// A whole call, all its tries together.
    pub(crate) call: Duration,
    /// One try at one member.
    pub(crate) attempt: Duration,
}

/// The members' clients and the bounds of every call.
#[derive(Clone)]
pub(crate) struct Calls {
    pub(crate) members: Arc<Members>,
    pub(crate) bounds: Bounds,
    /// Where the driver's background work runs.
    pub(crate) runtime: tokio::runtime::Handle,
}

/// An etcd lease's ttl for a Leasehold ttl: whole seconds, rounded up.
pub(crate) fn lease_secs(ttl: Duration) -> i64 {
    let ms = ttl.as_millis().max(1);
    i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX)
}

/// Whether a failed try may succeed at another member or a moment later.
fn worth_another_try(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Timeout)
}

impl Calls {
    /// Runs a call within the call's bound, each try within the attempt's,
    /// at the member [`Members::pick`] names; a try that fails for want of
    /// etcd (a member down, frozen or cut off, an election) passes its
    /// member over and goes on at once to the next. `call` makes one try
    /// with the client it is given.
    pub(crate) async fn bounded<T, F, Fut>(&self, doing: &str, mut call: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let until = tokio::time::Instant::now() + self.bounds.call;
        let mut pause = RETRY_FIRST;
        let mut last: Option<Error> = None;
        loop {
            let pick = self.members.pick();
            if pick.all_failed {
                if let Some(e) = last.take() {
                    let again = tokio::time::Instant::now() + pause;
                    if again >= until {
                        return Err(e);
                    }
                    tokio::time::sleep_until(again).await;
                    pause = (pause * 2).min(RETRY_CAP);
                }
            }
            let attempt_until = (tokio::time::Instant::now() + self.bounds.attempt).min(until);
            let members = &self.members;
            let tried = tokio::time::timeout_at(attempt_until, async {
                let client = members.client(pick.member).await?.clone();
                call(client).await
            })
            .await;
            let e = match tried {
                Ok(Ok(v)) => {
                    self.members.answered(pick.member);
                    return Ok(v);
                }
                Ok(Err(e)) => errors::of(doing, e),
                Err(_) => errors::timed_out(doing),
            };
            if !worth_another_try(&e) {
                return Err(e);
            }
            self.members.failed(pick.member, self.bounds.attempt);
            if tokio::time::Instant::now() >= until {
                return Err(e);
            }
            last = Some(e);
        }
    }

    /// A new etcd lease of `secs` seconds.
    pub(crate) async fn grant(&self, secs: i64) -> Result<i64> {
        let grant = |client: Client| async move { client.lease_client().grant(secs, None).await };
        Ok(self.bounded("granting an etcd lease", grant).await?.id())
    }

    /// Revokes an etcd lease, deleting the record attached to it; `Lost` if
    /// it is gone. A lease found gone by a try after another was sent is
    /// taken as revoked by that earlier try, whose answer did not come: the
    /// driver revokes only leases it has not seen run out, and etcd lets a
    /// lease run out no sooner than its holder's deadline.
    pub(crate) async fn revoke(&self, id: i64) -> Result<()> {
        let mut tries = 0u32;
        let revoke = |client: Client| {
            tries += 1;
            async move { client.lease_client().revoke(id).await }
        };
        match self.bounded("revoking an etcd lease", revoke).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::Lost && tries > 1 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Revokes an etcd lease in the background, where nobody waits for the answer.
    pub(crate) fn revoke_later(&self, id: i64) {
        let calls = self.clone();
        self.runtime.spawn(async move {
            let _ = calls.revoke(id).await;
        });
    }

    /// Renews an etcd lease once; `Lost` if it is gone.
    ///
    /// A member that fell behind may answer that a lease it never heard of
    /// is gone: a leader thawed after a freeze still takes itself for the
    /// leader, for a moment, without the leases granted meanwhile. So "gone"
    /// is believed only once a linearizable read at the same member finds
    /// `record` (the key attached to the lease, which etcd deletes with it)
    /// gone too; a record still there sends the renewal on to another member.
    pub(crate) async fn keep_alive(&self, id: i64, record: &[u8]) -> Result<()> {
        // The stream's first answer, which keep_alive reads, renewed the
        // lease; the stream is then dropped (docs/etcd.md: one stream per renewal).
        let renew = |client: Client| async move {
            match client.lease_client().keep_alive(id).await {
                Err(e) if errors::lease_gone(&e) => {
                    let read = client.kv_client().get(record, None).await?;
                    if read.kvs().iter().any(|kv| kv.lease() == id) {
                        return Err(etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
                            "a member answered that a lease is gone while its record is not: \
                             the member is behind",
                        )));
                    }
                    Err(e)
                }
                answer => answer.map(drop),
            }
        };
        self.bounded("renewing an etcd lease", renew).await
    }

    /// One transaction.
    pub(crate) async fn txn(&self, doing: &str, txn: Txn) -> Result<TxnResponse> {
        let call = |client: Client| {
            let txn = txn.clone();
            async move { client.kv_client().txn(txn).await }
        };
        self.bounded(doing, call).await
    }

    /// One range read.
    pub(crate) async fn get(
        &self,
        doing: &str,
        key: Vec<u8>,
        options: etcd_client::GetOptions,
    ) -> Result<etcd_client::GetResponse> {
        let call = |client: Client| {
            let (key, options) = (key.clone(), options.clone());
            async move { client.kv_client().get(key, Some(options)).await }
        };
        self.bounded(doing, call).await
    }
}

/// The revision a response's header names.
pub(crate) fn revision_of(resp: &TxnResponse) -> Result<u64> {
    resp.header()
        .map(|h| h.revision())
        .and_then(|r| u64::try_from(r).ok())
        .ok_or_else(|| {
            Error::new(
                crate::ErrorKind::Protocol,
                "etcd answered without a revision",
            )
        })
}
