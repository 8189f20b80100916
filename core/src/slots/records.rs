//! Slot leases on a store that keeps each slot in a record of its own
//! (etcd, PostgreSQL): a call reads the namespace at one moment, applies
//! the slot rules of [`SlotTable`] at that moment's clock, and writes the
//! one slot it changed, compared against what it read; a conflicting
//! writer makes it read and try again. The store says how to read and how
//! to write ([`SlotRecords`]); the rules and the retries are here.

use std::time::Duration;

use async_trait::async_trait;

use super::table::{Slot, SlotTable};
use super::{AcquireResult, NamespaceSpec, SlotLease, SlotRequest};
use crate::error::{Error, ErrorKind, Result};

/// How many conflicting writers a call tries again after.
const TRIES: usize = 64;

/// A namespace as read at one moment.
pub(crate) struct RecordsRead<V> {
    /// Its parameters, if its first use was recorded.
    pub(crate) spec: Option<NamespaceSpec>,
    /// The store's clock at the read, in milliseconds since the Unix epoch.
    pub(crate) now_ms: u64,
    /// Every slot's record, with the version a write compares.
    pub(crate) slots: Vec<(u32, Slot, V)>,
}

impl<V> RecordsRead<V> {
    fn table(&self, namespace: &str, spec: NamespaceSpec) -> SlotTable {
        let slots = self.slots.iter().map(|(n, s, _)| (*n, s.clone())).collect();
        SlotTable::of_records(namespace, self.spec.unwrap_or(spec), slots)
    }

    /// The version `slot` was read at; `None` if it has no record yet.
    pub(crate) fn version(&self, slot: u32) -> Option<&V> {
        self.slots
            .iter()
            .find(|(n, _, _)| *n == slot)
            .map(|(_, _, v)| v)
    }
}

/// How a store reads a namespace's records and writes one of them.
#[async_trait]
pub(crate) trait SlotRecords: Sync {
    /// What a write compares: a record's version as read.
    type Version: Send + Sync;

    /// Reads namespace `namespace`: its parameters, its slots, the store's clock.
    async fn read(&self, namespace: &str) -> Result<RecordsRead<Self::Version>>;

    /// Writes `record` as slot `slot`'s if neither it nor (on the
    /// namespace's first use, `read.spec` being `None`) the namespace
    /// changed since `read`, recording `spec` on first use. `fresh`: the
    /// record holds a new lease, whose fence the write gives. Answers that
    /// fence (or, for a store whose every write has one, the write's), or
    /// `None` on a conflict.
    async fn write(
        &self,
        namespace: &str,
        read: &RecordsRead<Self::Version>,
        spec: NamespaceSpec,
        slot: u32,
        record: &Slot,
        fresh: bool,
    ) -> Result<Option<u64>>;
}

fn contended() -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "too many writers changed the slot namespace at once; try again",
    )
}

/// SLOT-01: a new lease's record is written without a fence (0), and
/// takes the one its write gives.
pub(crate) async fn acquire(store: &impl SlotRecords, req: SlotRequest) -> Result<AcquireResult> {
    SlotTable::check_request(&req)?;
    for _ in 0..TRIES {
        let read = store.read(&req.namespace).await?;
        let mut table = read.table(&req.namespace, req.spec);
        let got = table.acquire(&req, read.now_ms, || Ok(0))?;
        let AcquireResult::Leased(mut lease) = got else {
            return Ok(AcquireResult::Exhausted);
        };
        let record = table
            .slot_record(&req.namespace, lease.slot)
            .expect("an acquired slot has a record");
        let fresh = lease.fence == 0;
        let written = store
            .write(&req.namespace, &read, req.spec, lease.slot, &record, fresh)
            .await?;
        if let Some(fence) = written {
            if fresh {
                lease.fence = fence;
            }
            return Ok(AcquireResult::Leased(lease));
        }
    }
    Err(contended())
}

/// SLOT-04.
pub(crate) async fn renew(
    store: &impl SlotRecords,
    lease: &SlotLease,
    ttl: Duration,
) -> Result<Option<SlotLease>> {
    crate::duration::check_ttl("a slot ttl", ttl)?;
    for _ in 0..TRIES {
        let read = store.read(&lease.namespace).await?;
        let Some(spec) = read.spec else {
            return Ok(None);
        };
        let mut table = read.table(&lease.namespace, spec);
        let Some(renewed) = table.renew(lease, ttl, read.now_ms)? else {
            return Ok(None);
        };
        let record = table
            .slot_record(&lease.namespace, lease.slot)
            .expect("a renewed slot has a record");
        let written = store
            .write(&lease.namespace, &read, spec, lease.slot, &record, false)
            .await?;
        if written.is_some() {
            return Ok(Some(renewed));
        }
    }
    Err(contended())
}

/// SLOT-05.
pub(crate) async fn release(
    store: &impl SlotRecords,
    lease: &SlotLease,
    last_issued: u64,
) -> Result<bool> {
    for _ in 0..TRIES {
        let read = store.read(&lease.namespace).await?;
        let Some(spec) = read.spec else {
            return Ok(false);
        };
        let mut table = read.table(&lease.namespace, spec);
        let before = table.slot_record(&lease.namespace, lease.slot);
        if !table.release(lease, last_issued, read.now_ms) {
            return Ok(false);
        }
        let record = table
            .slot_record(&lease.namespace, lease.slot)
            .expect("a released slot has a record");
        if before.as_ref() == Some(&record) {
            // Released before by the same holder: nothing to write.
            return Ok(true);
        }
        let written = store
            .write(&lease.namespace, &read, spec, lease.slot, &record, false)
            .await?;
        if written.is_some() {
            return Ok(true);
        }
    }
    Err(contended())
}
