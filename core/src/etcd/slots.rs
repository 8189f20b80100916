//! Slot leases on etcd (DIST-07): a namespace's parameters in one key, each
//! slot in a record of its own. A call reads the namespace at one revision,
//! applies the slot rules (the embedded store's [`SlotTable`]) on the
//! client's clock, and writes the one slot it changed in one
//! compare-and-set; a conflicting writer makes it read and try again.
//! A new lease's fence is the revision of the transaction that took it.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse};

use super::calls::revision_of;
use super::driver::EtcdDriverCore;
use crate::error::{Error, ErrorKind, Result};
use crate::slots::{AcquireResult, NamespaceSpec, Slot, SlotLease, SlotRequest, SlotTable};

/// How many conflicting writers a call tries again after.
const TRIES: usize = 64;

/// A namespace as read at one revision.
struct Read {
    /// Its parameters, if its first use was recorded.
    spec: Option<NamespaceSpec>,
    /// Every slot record, with the mod revision it was read at.
    slots: Vec<(u32, Slot, i64)>,
}

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
        slots: records,
    })
}

fn unreadable() -> Error {
    Error::new(
        ErrorKind::Protocol,
        "a slot record in etcd is not Leasehold's",
    )
}

impl Read {
    fn table(&self, namespace: &str, spec: NamespaceSpec) -> SlotTable {
        let slots = self.slots.iter().map(|(n, s, _)| (*n, s.clone())).collect();
        SlotTable::of_records(namespace, self.spec.unwrap_or(spec), slots)
    }

    /// The compare that the slot's record is still as read.
    fn unchanged(&self, shared: &EtcdDriverCore, namespace: &str, slot: u32) -> Compare {
        let key = shared.layout.slot(namespace, slot);
        match self.slots.iter().find(|(n, _, _)| *n == slot) {
            Some((_, _, rev)) => Compare::mod_revision(key, CompareOp::Equal, *rev),
            None => Compare::create_revision(key, CompareOp::Equal, 0),
        }
    }
}

/// Writes one slot's record if neither it nor (for a first use) the
/// namespace changed since `read`; `Ok(None)` on a conflict.
async fn write(
    shared: &EtcdDriverCore,
    namespace: &str,
    read: &Read,
    spec: NamespaceSpec,
    slot: u32,
    record: &Slot,
) -> Result<Option<u64>> {
    let layout = &shared.layout;
    let mut when = vec![read.unchanged(shared, namespace, slot)];
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

fn contended() -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "too many writers changed the slot namespace at once; try again",
    )
}

/// SLOT-01 on etcd.
pub(crate) async fn acquire(shared: &EtcdDriverCore, req: SlotRequest) -> Result<AcquireResult> {
    SlotTable::check_request(&req)?;
    for _ in 0..TRIES {
        let read = read(shared, &req.namespace).await?;
        let mut table = read.table(&req.namespace, req.spec);
        let got = table.acquire(&req, shared.clock.unix_millis(), || Ok(0))?;
        let AcquireResult::Leased(mut lease) = got else {
            return Ok(AcquireResult::Exhausted);
        };
        let record = table
            .slot_record(&req.namespace, lease.slot)
            .expect("an acquired slot has a record");
        if let Some(revision) =
            write(shared, &req.namespace, &read, req.spec, lease.slot, &record).await?
        {
            if lease.fence == 0 {
                lease.fence = revision;
            }
            return Ok(AcquireResult::Leased(lease));
        }
    }
    Err(contended())
}

/// SLOT-04 on etcd.
pub(crate) async fn renew(
    shared: &EtcdDriverCore,
    lease: &SlotLease,
    ttl: Duration,
) -> Result<Option<SlotLease>> {
    crate::duration::check_ttl("a slot ttl", ttl)?;
    for _ in 0..TRIES {
        let read = read(shared, &lease.namespace).await?;
        let Some(spec) = read.spec else {
            return Ok(None);
        };
        let mut table = read.table(&lease.namespace, spec);
        let Some(renewed) = table.renew(lease, ttl, shared.clock.unix_millis())? else {
            return Ok(None);
        };
        let record = table
            .slot_record(&lease.namespace, lease.slot)
            .expect("a renewed slot has a record");
        if write(shared, &lease.namespace, &read, spec, lease.slot, &record)
            .await?
            .is_some()
        {
            return Ok(Some(renewed));
        }
    }
    Err(contended())
}

/// SLOT-05 on etcd.
pub(crate) async fn release(
    shared: &EtcdDriverCore,
    lease: &SlotLease,
    last_issued: u64,
) -> Result<bool> {
    for _ in 0..TRIES {
        let read = read(shared, &lease.namespace).await?;
        let Some(spec) = read.spec else {
            return Ok(false);
        };
        let mut table = read.table(&lease.namespace, spec);
        let before = table.slot_record(&lease.namespace, lease.slot);
        if !table.release(lease, last_issued, shared.clock.unix_millis()) {
            return Ok(false);
        }
        let record = table
            .slot_record(&lease.namespace, lease.slot)
            .expect("a released slot has a record");
        if before.as_ref() == Some(&record) {
            // Released before by the same holder: nothing to write.
            return Ok(true);
        }
        if write(shared, &lease.namespace, &read, spec, lease.slot, &record)
            .await?
            .is_some()
        {
            return Ok(true);
        }
    }
    Err(contended())
}
