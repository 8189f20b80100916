//! Slot leases on etcd (DIST-07): a namespace's parameters in one key, each
//! slot in a record of its own, read at one revision and written by one
//! compare-and-set of a record's mod revision (the rules and retries:
//! `slots/records.rs`). The stamps are the client's clock. A new lease's
//! fence is the revision of the transaction that took it.

use async_trait::async_trait;
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse};

use super::calls::revision_of;
use super::driver::EtcdDriverCore;
use crate::error::{Error, ErrorKind, Result};
use crate::slots::records::{RecordsRead, SlotRecords};
use crate::slots::{NamespaceSpec, Slot};

type Read = RecordsRead<i64>;

async fn read(shared: &EtcdDriverCore, namespace: &str) -> Result<Read> {
    let layout = &shared.layout;
    let txn = Txn::new().and_then([
        TxnOp::get(layout.slot_spec(namespace), None),
        TxnOp::get(
            layout.slots(namespace),
            Some(GetOptions::new().with_prefix()),
        ),
    ]);
    let answer = shared.calls.txn("reading a slot namespace", txn).await?;
    let ops = answer.op_responses();
    let (Some(TxnOpResponse::Get(spec)), Some(TxnOpResponse::Get(slots))) =
        (ops.first(), ops.get(1))
    else {
        return Err(Error::new(
            ErrorKind::Protocol,
            "etcd answered a read with no reads",
        ));
    };
    let spec = match spec.kvs().first() {
        Some(kv) => Some(serde_json::from_slice(kv.value()).map_err(|_| unreadable())?),
        None => None,
    };
    let mut records = Vec::new();
    for kv in slots.kvs() {
        let slot = layout.slot_of(namespace, kv.key()).ok_or_else(unreadable)?;
        let mut record: Slot = serde_json::from_slice(kv.value()).map_err(|_| unreadable())?;
        // A record written by the acquire that took it carries no fence:
        // its fence is that write's revision.
        if let Some(h) = record.holder.as_mut().filter(|h| h.fence == 0) {
            h.fence = u64::try_from(kv.mod_revision()).unwrap_or(0);
        }
        records.push((slot, record, kv.mod_revision()));
    }
    Ok(Read {
        spec,
        now_ms: shared.clock.unix_millis(),
        slots: records,
    })
}

fn unreadable() -> Error {
    Error::new(
        ErrorKind::Protocol,
        "a slot record in etcd is not Leasehold's",
    )
}

/// The compare that `slot`'s record is still as read.
fn unchanged(shared: &EtcdDriverCore, read: &Read, namespace: &str, slot: u32) -> Compare {
    let key = shared.layout.slot(namespace, slot);
    match read.version(slot) {
        Some(rev) => Compare::mod_revision(key, CompareOp::Equal, *rev),
        None => Compare::create_revision(key, CompareOp::Equal, 0),
    }
}

/// Writes one slot's record if neither it nor (for a first use) the
/// namespace changed since `read`: the transaction's revision, or
/// `Ok(None)` on a conflict.
async fn write(
    shared: &EtcdDriverCore,
    namespace: &str,
    read: &Read,
    spec: NamespaceSpec,
    slot: u32,
    record: &Slot,
) -> Result<Option<u64>> {
    let layout = &shared.layout;
    let mut when = vec![unchanged(shared, read, namespace, slot)];
    let mut then = vec![TxnOp::put(
        layout.slot(namespace, slot),
        serde_json::to_vec(record).expect("a slot record serialises"),
        None,
    )];
    if read.spec.is_none() {
        when.push(Compare::create_revision(
            layout.slot_spec(namespace),
            CompareOp::Equal,
            0,
        ));
        then.push(TxnOp::put(
            layout.slot_spec(namespace),
            serde_json::to_vec(&spec).expect("a namespace spec serialises"),
            None,
        ));
    }
    let answer = shared
        .calls
        .txn("writing a slot", Txn::new().when(when).and_then(then))
        .await?;
    if answer.succeeded() {
        Ok(Some(revision_of(&answer)?))
    } else {
        Ok(None)
    }
}

#[async_trait]
impl SlotRecords for EtcdDriverCore {
    type Version = i64;

    async fn read(&self, namespace: &str) -> Result<Read> {
        read(self, namespace).await
    }

    async fn write(
        &self,
        namespace: &str,
        read: &Read,
        spec: NamespaceSpec,
        slot: u32,
        record: &Slot,
        _fresh: bool,
    ) -> Result<Option<u64>> {
        write(self, namespace, read, spec, slot, record).await
    }
}
