//! The etcd calls the driver makes, each bounded in time and failing with
//! an ERR-01 code.

use std::future::Future;
use std::time::Duration;

use etcd_client::{Client, Txn, TxnResponse};

use super::errors;
use crate::error::{Error, ErrorKind, Result};

/// The first and the longest pause before a call is tried again.
const RETRY_FIRST: Duration = Duration::from_millis(20);
const RETRY_CAP: Duration = Duration::from_millis(500);

/// The etcd client and the bound of every call.
#[derive(Clone)]
pub(crate) struct Calls {
    pub(crate) client: Client,
    pub(crate) timeout: Duration,
    /// Where the driver's background work runs.
    pub(crate) runtime: tokio::runtime::Handle,
}

/// An etcd lease's ttl for a Leasehold ttl: whole seconds, rounded up.
pub(crate) fn lease_secs(ttl: Duration) -> i64 {
    let ms = ttl.as_millis().max(1);
    i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX)
}

impl Calls {
    /// Runs a call within the bound, trying it again while etcd cannot be
    /// reached (a member down, an election): the balanced channel may pick
    /// a dead member first. Every call the driver makes may be repeated:
    /// its transactions compare what they change (docs/etcd.md).
    pub(crate) async fn bounded<T, F, Fut>(&self, doing: &str, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let until = tokio::time::Instant::now() + self.timeout;
        let mut pause = RETRY_FIRST;
        loop {
            let attempt = tokio::time::timeout_at(until, call()).await;
            let e = match attempt {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => errors::of(doing, e),
                Err(_) => return Err(errors::timed_out(doing)),
            };
            let again = tokio::time::Instant::now() + pause;
            if e.kind() != ErrorKind::Unavailable || again >= until {
                return Err(e);
            }
            tokio::time::sleep_until(again).await;
            pause = (pause * 2).min(RETRY_CAP);
        }
    }

    /// A new etcd lease of `secs` seconds.
    pub(crate) async fn grant(&self, secs: i64) -> Result<i64> {
        let client = &self.client;
        let grant = || {
            let mut lease = client.lease_client();
            async move { lease.grant(secs, None).await }
        };
        Ok(self.bounded("granting an etcd lease", grant).await?.id())
    }

    /// Revokes an etcd lease, deleting the record attached to it; `Lost` if it is gone.
    pub(crate) async fn revoke(&self, id: i64) -> Result<()> {
        let client = &self.client;
        let revoke = || {
            let mut lease = client.lease_client();
            async move { lease.revoke(id).await }
        };
        self.bounded("revoking an etcd lease", revoke)
            .await
            .map(drop)
    }

    /// Revokes an etcd lease in the background, where nobody waits for the answer.
    pub(crate) fn revoke_later(&self, id: i64) {
        let calls = self.clone();
        self.runtime.spawn(async move {
            let _ = calls.revoke(id).await;
        });
    }

    /// Renews an etcd lease once; `Lost` if it is gone.
    pub(crate) async fn keep_alive(&self, id: i64) -> Result<()> {
        let client = &self.client;
        // The stream's first answer, which keep_alive reads, renewed the
        // lease; the stream is then dropped (docs/etcd.md: one stream per renewal).
        let renew = || {
            let mut lease = client.lease_client();
            async move { lease.keep_alive(id).await }
        };
        self.bounded("renewing an etcd lease", renew)
            .await
            .map(drop)
    }

    /// One transaction.
    pub(crate) async fn txn(&self, doing: &str, txn: Txn) -> Result<TxnResponse> {
        let client = &self.client;
        let call = || {
            let mut kv = client.kv_client();
            let txn = txn.clone();
            async move { kv.txn(txn).await }
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
        let client = &self.client;
        let call = || {
            let mut kv = client.kv_client();
            let (key, options) = (key.clone(), options.clone());
            async move { kv.get(key, Some(options)).await }
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
