//! The etcd calls the driver makes, each bounded in time and failing with
//! an ERR-01 code.

use std::future::Future;
use std::time::Duration;

use etcd_client::{Client, Txn, TxnResponse};

use super::errors;
use crate::error::{Error, Result};

/// The etcd client and the bound of every call.
#[derive(Clone)]
pub(crate) struct Calls {
    pub(crate) client: Client,
    pub(crate) timeout: Duration,
}

/// An etcd lease's ttl for a Leasehold ttl: whole seconds, rounded up.
pub(crate) fn lease_secs(ttl: Duration) -> i64 {
    let ms = ttl.as_millis().max(1);
    i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX)
}

impl Calls {
    /// Runs one call within the bound.
    pub(crate) async fn bounded<T>(
        &self,
        doing: &str,
        call: impl Future<Output = std::result::Result<T, etcd_client::Error>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(errors::of(doing, e)),
            Err(_) => Err(errors::timed_out(doing)),
        }
    }

    /// A new etcd lease of `secs` seconds.
    pub(crate) async fn grant(&self, secs: i64) -> Result<i64> {
        let mut lease = self.client.lease_client();
        Ok(self
            .bounded("granting an etcd lease", lease.grant(secs, None))
            .await?
            .id())
    }

    /// Revokes an etcd lease, deleting the record attached to it; `Lost` if it is gone.
    pub(crate) async fn revoke(&self, id: i64) -> Result<()> {
        let mut lease = self.client.lease_client();
        self.bounded("revoking an etcd lease", lease.revoke(id))
            .await
            .map(|_| ())
    }

    /// Revokes an etcd lease in the background, where nobody waits for the answer.
    pub(crate) fn revoke_later(&self, id: i64) {
        let calls = self.clone();
        tokio::spawn(async move {
            let _ = calls.revoke(id).await;
        });
    }

    /// Renews an etcd lease once; `Lost` if it is gone.
    pub(crate) async fn keep_alive(&self, id: i64) -> Result<()> {
        let mut lease = self.client.lease_client();
        // The stream's first answer, which keep_alive reads, renewed the
        // lease; the stream is then dropped (docs/etcd.md: one stream per renewal).
        self.bounded("renewing an etcd lease", lease.keep_alive(id))
            .await
            .map(drop)
    }

    /// One transaction.
    pub(crate) async fn txn(&self, doing: &str, txn: Txn) -> Result<TxnResponse> {
        let mut kv = self.client.kv_client();
        self.bounded(doing, kv.txn(txn)).await
    }

    /// One range read.
    pub(crate) async fn get(
        &self,
        doing: &str,
        key: Vec<u8>,
        options: etcd_client::GetOptions,
    ) -> Result<etcd_client::GetResponse> {
        let mut kv = self.client.kv_client();
        self.bounded(doing, kv.get(key, Some(options))).await
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
