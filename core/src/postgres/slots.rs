//! Slot leases on PostgreSQL (PG-03): a namespace's parameters in one
//! row, each slot in a row of its own. A call reads the namespace and the
//! database's clock in one statement, and writes the one slot it changed
//! in one statement that compares the row's version (the rules and
//! retries: `slots/records.rs`). A new lease's fence is taken from the
//! fence sequence by the statement that writes it (PG-04).

use async_trait::async_trait;
use tokio_postgres::types::Type;

use super::driver::PostgresCore;
use super::schema::quoted;
use crate::error::{Error, ErrorKind, Result};
use crate::slots::records::{RecordsRead, SlotRecords};
use crate::slots::{NamespaceSpec, Slot};

type Read = RecordsRead<i64>;

fn unreadable() -> Error {
    Error::new(
        ErrorKind::Protocol,
        "a slot row in PostgreSQL is not Leasehold's",
    )
}

async fn read(shared: &PostgresCore, namespace: &str) -> Result<Read> {
    let s = quoted(&shared.schema);
    let sql = format!(
        "SELECT n.spec, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms,
                t.slot, t.record, t.fence, t.version
         FROM (SELECT 1) AS one
         LEFT JOIN {s}.slot_namespaces n ON n.name = $1
         LEFT JOIN {s}.slots t ON t.namespace = $1"
    );
    let rows = shared
        .calls
        .query(
            "reading a slot namespace",
            &sql,
            &[(&namespace, Type::TEXT)],
        )
        .await?;
    let first = rows.first().ok_or_else(unreadable)?;
    let spec: Option<String> = first.get("spec");
    let spec = match spec {
        Some(text) => Some(serde_json::from_str(&text).map_err(|_| unreadable())?),
        None => None,
    };
    let now_ms: i64 = first.get("now_ms");
    let mut slots = Vec::new();
    for row in &rows {
        let Some(slot) = row.get::<_, Option<i32>>("slot") else {
            continue;
        };
        let record: String = row.get("record");
        let mut record: Slot = serde_json::from_str(&record).map_err(|_| unreadable())?;
        // A record written by the acquire that took it carries no fence:
        // its fence is the one its row's write took.
        if let Some(h) = record.holder.as_mut().filter(|h| h.fence == 0) {
            let fence: i64 = row.get("fence");
            h.fence = u64::try_from(fence).unwrap_or(0);
        }
        let slot = u32::try_from(slot).map_err(|_| unreadable())?;
        slots.push((slot, record, row.get("version")));
    }
    Ok(Read {
        spec,
        now_ms: u64::try_from(now_ms).unwrap_or(0),
        slots,
    })
}

/// Writes one slot's row if it did not change since `read` (records the
/// namespace's parameters first on its first use); a fresh lease's row
/// takes a new fence. Answers the row's fence, or `None` on a conflict.
async fn write(
    shared: &PostgresCore,
    namespace: &str,
    read: &Read,
    spec: NamespaceSpec,
    slot: u32,
    record: &Slot,
    fresh: bool,
) -> Result<Option<u64>> {
    let s = quoted(&shared.schema);
    if read.spec.is_none() {
        let text = serde_json::to_string(&spec).expect("a namespace spec serialises");
        let sql = format!(
            "INSERT INTO {s}.slot_namespaces (name, spec) VALUES ($1, $2) ON CONFLICT DO NOTHING
             RETURNING true"
        );
        let made = shared
            .calls
            .query(
                "recording a slot namespace",
                &sql,
                &[(&namespace, Type::TEXT), (&text, Type::TEXT)],
            )
            .await?;
        if made.is_empty() {
            // Another store recorded it first: read again and check.
            return Ok(None);
        }
    }
    let text = serde_json::to_string(record).expect("a slot record serialises");
    let slot_number = i32::try_from(slot).map_err(|_| unreadable())?;
    let rows = match read.version(slot).copied() {
        Some(version) => {
            let sql = format!(
                "UPDATE {s}.slots SET record = $3, version = version + 1,
                     fence = CASE WHEN $5 THEN nextval('{s}.fence') ELSE fence END
                 WHERE namespace = $1 AND slot = $2 AND version = $4
                 RETURNING fence"
            );
            shared
                .calls
                .query(
                    "writing a slot",
                    &sql,
                    &[
                        (&namespace, Type::TEXT),
                        (&slot_number, Type::INT4),
                        (&text, Type::TEXT),
                        (&version, Type::INT8),
                        (&fresh, Type::BOOL),
                    ],
                )
                .await?
        }
        None => {
            let sql = format!(
                "INSERT INTO {s}.slots (namespace, slot, record, fence, version)
                 VALUES ($1, $2, $3, nextval('{s}.fence'), 1) ON CONFLICT DO NOTHING
                 RETURNING fence"
            );
            shared
                .calls
                .query(
                    "writing a slot",
                    &sql,
                    &[
                        (&namespace, Type::TEXT),
                        (&slot_number, Type::INT4),
                        (&text, Type::TEXT),
                    ],
                )
                .await?
        }
    };
    Ok(rows.first().map(|row| {
        let fence: i64 = row.get("fence");
        u64::try_from(fence).unwrap_or(0)
    }))
}

#[async_trait]
impl SlotRecords for PostgresCore {
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
        fresh: bool,
    ) -> Result<Option<u64>> {
        write(self, namespace, read, spec, slot, record, fresh).await
    }
}
