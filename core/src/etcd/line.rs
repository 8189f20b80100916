//! Waiting in a key's line (DIST-04): a request's record waits behind the
//! record created just before it; its waiter watches that one record (the
//! watch made first, then the record read again), and when no record is
//! ahead it promotes its own in one transaction, whose revision is the
//! fence (DIST-03). The transaction compares the record's token, so a
//! waiter whose etcd lease ran out is never told that it holds the key.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::book::{NewHold, Request};
use super::calls::revision_of;
use super::driver::EtcdDriverCore;
use super::keys::{range_end, RequestRecord};
use super::watcher::Notice;
use crate::clock::Instant;
use crate::error::{Error, ErrorKind, Result};
use crate::ids::{LeaseId, RequestId};
use crate::renewal::retry_after;

/// A request in line, as its waiter task keeps it.
pub(crate) struct InLine {
    pub(crate) request_id: RequestId,
    /// The lease id its grant will carry.
    pub(crate) lease_id: LeaseId,
    /// Its record.
    pub(crate) key: Vec<u8>,
    /// Its key's line.
    pub(crate) line: Vec<u8>,
    /// Its record's create revision: its place in line.
    pub(crate) create_revision: i64,
    /// Its record as written while it waits.
    pub(crate) waiting: RequestRecord,
    pub(crate) etcd_lease: i64,
    pub(crate) lease_secs: i64,
    pub(crate) max_hold: Option<Duration>,
    /// Fires when the request is given up.
    pub(crate) stop: CancellationToken,
}

/// A promotion: its fence, the record as it now reads, and when it was sent.
struct Promoted {
    fence: u64,
    record: RequestRecord,
    sent_at: Instant,
}

/// Keeps a request's place in line and takes its turn; hands the grant (or
/// the failure) to its waiter.
pub(crate) async fn wait(shared: Arc<EtcdDriverCore>, w: InLine) {
    let outcome = tokio::select! {
        biased;
        _ = w.stop.cancelled() => return,
        _ = shared.closed.cancelled() => return,
        lost = keep_place(&shared, &w) => Err(lost),
        turn = take_turn(&shared, &w) => turn,
    };
    finish(shared, w, outcome).await;
}

fn place_lost() -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "the request's place in line ran out: its etcd lease expired while it waited",
    )
}

/// Renews the waiting record's etcd lease every third of its ttl; returns
/// once etcd says the lease is gone. A renewal that fails for want of etcd
/// is tried again however long that lasts: a waiter holds nothing, its
/// promotion compares its record (gone with its lease), and its wait has a
/// bound of its own, so only etcd's word ends its place.
async fn keep_place(shared: &EtcdDriverCore, w: &InLine) -> Error {
    let clock = shared.clock.clone();
    let ttl = Duration::from_secs(u64::try_from(w.lease_secs).unwrap_or(1));
    let mut next = clock.now() + ttl / 3;
    loop {
        clock.sleep_until(next).await;
        let sent = clock.now();
        match shared.calls.keep_alive(w.etcd_lease, &w.key).await {
            Ok(()) => next = sent + ttl / 3,
            Err(e) if e.kind() == ErrorKind::Lost => return place_lost(),
            Err(_) => next = clock.now() + retry_after(ttl),
        }
    }
}

/// Waits until no record is ahead, then promotes the request's own. Once
/// the record ahead is gone, the promotion is tried at once (its compare
/// says whether another record is still ahead), so a handoff costs the
/// release's commit, a watch event and the promotion's commit.
async fn take_turn(shared: &EtcdDriverCore, w: &InLine) -> Result<Promoted> {
    let ahead = GetOptions::new()
        .with_range(range_end(&w.line))
        .with_max_create_revision(w.create_revision - 1)
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_limit(1)
        .with_keys_only();
    let mut promote_first = false;
    loop {
        if promote_first {
            promote_first = false;
            match promote(shared, w).await {
                Ok(Some(promoted)) => return Ok(promoted),
                Ok(None) => {}
                Err(e) if e.kind() == ErrorKind::Lost => return Err(place_lost()),
                Err(_) => pause(shared).await,
            }
        }
        let found = shared
            .calls
            .get("reading the line", w.line.clone(), ahead.clone())
            .await;
        let Ok(found) = found else {
            pause(shared).await;
            continue;
        };
        match found.kvs().first() {
            Some(before) => {
                wait_gone(shared, before.key().to_vec()).await;
                promote_first = true;
            }
            None => match promote(shared, w).await {
                Ok(Some(promoted)) => return Ok(promoted),
                Ok(None) => continue,
                Err(e) if e.kind() == ErrorKind::Lost => return Err(place_lost()),
                Err(_) => pause(shared).await,
            },
        }
    }
}

async fn pause(shared: &EtcdDriverCore) {
    tokio::time::sleep(retry_after(shared.calls.bounds.attempt)).await;
}

/// Waits until the record `key` is deleted: the watch first, then a read.
async fn wait_gone(shared: &EtcdDriverCore, key: Vec<u8>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _watch = shared.watcher.watch(
        key.clone(),
        None,
        Arc::new(move |notice| {
            let _ = tx.send(notice);
        }),
    );
    let only_key = GetOptions::new().with_keys_only();
    while let Some(notice) = rx.recv().await {
        match notice {
            Notice::Deleted => return,
            Notice::Reset => {}
            Notice::Created { .. } => loop {
                match shared
                    .calls
                    .get("reading the record ahead", key.clone(), only_key.clone())
                    .await
                {
                    Ok(r) if r.kvs().is_empty() => return,
                    Ok(_) => break,
                    Err(_) => pause(shared).await,
                }
            },
        }
    }
}

/// Promotes the request's record when nothing is ahead of it: `None` when
/// a record is still ahead, `Lost` when the record is gone or not ours.
async fn promote(shared: &EtcdDriverCore, w: &InLine) -> Result<Option<Promoted>> {
    let record = RequestRecord {
        held: true,
        granted_ms: Some(shared.clock.unix_millis()),
        ..w.waiting.clone()
    };
    let sent_at = shared.clock.now();
    let txn = Txn::new()
        .when([
            Compare::value(w.key.clone(), CompareOp::Equal, w.waiting.to_bytes()),
            Compare::create_revision(w.line.clone(), CompareOp::Greater, w.create_revision - 1)
                .with_range(range_end(&w.line)),
        ])
        .and_then([
            TxnOp::put(
                w.key.clone(),
                record.to_bytes(),
                Some(PutOptions::new().with_ignore_lease()),
            ),
            TxnOp::put(shared.layout.fence(), Vec::new(), None),
        ])
        .or_else([TxnOp::get(w.key.clone(), None)]);
    let answer = shared.calls.txn("granting a waiter", txn).await?;
    if answer.succeeded() {
        return Ok(Some(Promoted {
            fence: revision_of(&answer)?,
            record,
            sent_at,
        }));
    }
    let current = answer.op_responses().into_iter().find_map(|op| match op {
        etcd_client::TxnOpResponse::Get(get) => get.kvs().first().cloned(),
        _ => None,
    });
    let Some(kv) = current else {
        return Err(Error::lost(crate::loss::LossReason::Expired));
    };
    match RequestRecord::parse(kv.value()) {
        // Promoted by an earlier try whose answer was lost.
        Some(r) if r.token == w.waiting.token && r.held => Ok(Some(Promoted {
            fence: u64::try_from(kv.mod_revision()).unwrap_or(0),
            record: r,
            sent_at,
        })),
        Some(r) if r == w.waiting => Ok(None),
        _ => Err(Error::lost(crate::loss::LossReason::Unknown)),
    }
}

/// Hands the outcome to the waiter; a grant nobody waits for any more is released (LOCK-18).
async fn finish(shared: Arc<EtcdDriverCore>, w: InLine, outcome: Result<Promoted>) {
    let undelivered = {
        let mut st = shared.lock();
        let closed = st.closed;
        let tx = match st.requests.get_mut(&w.request_id) {
            Some(Request::Waiting { tx, .. }) if !closed => tx.take(),
            _ => {
                drop(st);
                shared.calls.revoke_later(w.etcd_lease);
                return;
            }
        };
        match outcome {
            Ok(promoted) => {
                let granted = shared.book(
                    &mut st,
                    NewHold {
                        request_id: w.request_id,
                        lease_id: w.lease_id,
                        key: w.key,
                        record: promoted.record,
                        etcd_lease: w.etcd_lease,
                        lease_secs: w.lease_secs,
                        fence: promoted.fence,
                        max_hold: w.max_hold,
                        sent_at: promoted.sent_at,
                    },
                );
                drop(st);
                match tx {
                    Some(tx) => tx.send(Ok(granted)).is_err(),
                    None => true,
                }
            }
            Err(e) => {
                st.requests.remove(&w.request_id);
                drop(st);
                if let Some(tx) = tx {
                    let _ = tx.send(Err(e));
                }
                shared.calls.revoke_later(w.etcd_lease);
                false
            }
        }
    };
    if undelivered {
        let _ = shared.release(w.lease_id).await;
    }
}
