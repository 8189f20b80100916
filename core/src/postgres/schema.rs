//! The store's schema: made on first use, migrated forward, refused when
//! newer than this build knows (docs/postgres.md). Its version is one row
//! of its `version` table; a migration runs in one transaction that locks
//! that table, so two stores opening a fresh database at once make it once.

use tokio_postgres::Client;

use crate::error::{Error, ErrorKind, Result};

/// The schema version this build makes and understands.
pub(crate) const VERSION: i32 = 3;

/// The migrations' SQL, in order: the `n`th takes a schema from version
/// `n` to `n + 1` (version 1 makes the tables and functions; version 2
/// makes the calls leaner; version 3 records identities), with `@schema@`
/// and `@channel@` to fill in.
const STEPS: [&str; VERSION as usize] = [
    include_str!("schema_v1.sql"),
    include_str!("schema_v2.sql"),
    include_str!("schema_v3.sql"),
];

/// The migrations for `schema`, filled in.
fn migrations(schema: &str) -> Vec<String> {
    STEPS
        .iter()
        .map(|step| {
            step.replace("@schema@", &quoted(schema))
                .replace("@channel@", &format!("'{}'", channel(schema)))
        })
        .collect()
}

/// `name` quoted as an SQL identifier (the store's schema names need no escaping).
pub(crate) fn quoted(name: &str) -> String {
    format!("\"{name}\"")
}

/// The channel grants are told on: the schema's name.
pub(crate) fn channel(schema: &str) -> String {
    schema.to_owned()
}

/// Brings `schema` to [`VERSION`]: nothing when it is there already,
/// everything when the schema is new; `Unavailable` when it is newer.
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<()> {
    let q = quoted(schema);
    let read = format!("SELECT version FROM {q}.version");
    if let Ok(rows) = client.simple_query(&read).await {
        if current(&rows) == Some(VERSION) {
            return Ok(());
        }
    }
    // Two stores making the schema at once may collide on its catalog
    // rows before either holds the version table's lock: the loser tries again.
    let mut tries = 0;
    loop {
        tries += 1;
        match migrate_once(client, schema).await {
            Err(e) if tries < 5 && is_race(&e) => continue,
            Err(e) => return Err(failed(schema, &e)),
            Ok(Some(newer)) => {
                return Err(Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "schema {schema} is at version {newer}, newer than the {VERSION} this \
                         Leasehold knows: upgrade Leasehold, or use another schema (?schema=)"
                    ),
                ))
            }
            Ok(None) => return Ok(()),
        }
    }
}

/// One migration transaction; `Some(version)` when the schema is newer than this build.
async fn migrate_once(
    client: &mut Client,
    schema: &str,
) -> std::result::Result<Option<i32>, tokio_postgres::Error> {
    let q = quoted(schema);
    let tx = client.transaction().await?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {q};
         CREATE TABLE IF NOT EXISTS {q}.version (
             one boolean PRIMARY KEY DEFAULT true CHECK (one),
             version integer NOT NULL);
         LOCK TABLE {q}.version IN EXCLUSIVE MODE;"
    ))
    .await?;
    let rows = tx
        .simple_query(&format!("SELECT version FROM {q}.version"))
        .await?;
    let at = current(&rows).unwrap_or(0);
    if at > VERSION {
        return Ok(Some(at));
    }
    let steps = migrations(schema);
    for step in steps.iter().skip(usize::try_from(at).unwrap_or(0)) {
        tx.batch_execute(step).await?;
    }
    tx.batch_execute(&format!(
        "INSERT INTO {q}.version VALUES (true, {VERSION})
         ON CONFLICT (one) DO UPDATE SET version = excluded.version"
    ))
    .await?;
    tx.commit().await?;
    Ok(None)
}

/// The version a `SELECT version` answered, if it answered one.
fn current(rows: &[tokio_postgres::SimpleQueryMessage]) -> Option<i32> {
    rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0)?.parse().ok(),
        _ => None,
    })
}

/// A collision with another store making the same schema.
fn is_race(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        matches!(
            c.code(),
            "23505" | "42P06" | "42P07" | "42710" | "40001" | "40P01"
        )
    })
}

fn failed(schema: &str, e: &tokio_postgres::Error) -> Error {
    let cause = super::calls::of(&format!("making schema {schema}"), e);
    match cause.kind() {
        ErrorKind::Internal => Error::new(ErrorKind::Unavailable, cause.message()),
        _ => cause,
    }
}
