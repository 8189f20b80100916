//! Fenced writes to PostgreSQL (docs/fencing.md): a write that carries a
//! lease's fence lands only if the row's last fence is smaller, so a holder
//! that was paused past its lease cannot overwrite the work of the holder
//! after it.
//!
//! The table has a row per key with the fence of the last write that landed,
//! stored as `numeric(20)` because fences are unsigned 64-bit values that
//! outgrow `bigint` (docs/fencing.md says when):
//!
//! ```sql
//! CREATE TABLE summaries (
//!     key   text PRIMARY KEY,
//!     fence numeric(20) NOT NULL,
//!     text  text NOT NULL
//! );
//! ```
//!
//! [`FencedTable::write`] runs one statement, an `INSERT … ON CONFLICT … DO
//! UPDATE … WHERE fence < $fence` (or, with [`FencedTable::update`], the
//! plain `UPDATE … WHERE key = $key AND fence < $fence` for rows that
//! already exist), and fails [`Error::Refused`] when no row changed: the
//! fence was stale, and the holder should stop.
//!
//! ```no_run
//! # async fn save(client: &tokio_postgres::Client, lease: &leasehold::Lease, text: &str) -> Result<(), leasehold_postgres::Error> {
//! use leasehold_postgres::FencedTable;
//! let summaries = FencedTable::new("summaries");
//! summaries.write(client, "chat-1", lease.fence(), &[("text", &text)]).await?;
//! # Ok(())
//! # }
//! ```

use std::fmt;

use tokio_postgres::types::ToSql;
use tokio_postgres::GenericClient;

/// Why a fenced write did not land.
#[derive(Debug)]
pub enum Error {
    /// The row's fence was already as large as the write's or larger (or,
    /// for [`FencedTable::update`], there was no row): nothing changed.
    Refused {
        /// The key written.
        key: String,
        /// The write's fence.
        fence: u64,
    },
    /// PostgreSQL failed the statement.
    Postgres(tokio_postgres::Error),
}

impl Error {
    /// True for [`Error::Refused`].
    pub fn is_refused(&self) -> bool {
        matches!(self, Error::Refused { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Refused { key, fence } => write!(
                f,
                "the write to {key:?} with fence {fence} was refused: a write with a fence as large or larger landed first"
            ),
            Error::Postgres(e) => write!(f, "postgres: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Refused { .. } => None,
            Error::Postgres(e) => Some(e),
        }
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Error {
        Error::Postgres(e)
    }
}

/// A column name and the value a write gives it.
pub type Value<'a> = (&'a str, &'a (dyn ToSql + Sync));

/// A table with a row per key and each row's last fence, with the names of
/// its key and fence columns (`key` and `fence` unless set).
#[derive(Debug, Clone)]
pub struct FencedTable {
    table: String,
    key: String,
    fence: String,
}

impl FencedTable {
    /// The table `table` (`name` or `schema.name`, each part quoted as an identifier).
    pub fn new(table: &str) -> FencedTable {
        FencedTable {
            table: table.split('.').map(quote).collect::<Vec<_>>().join("."),
            key: quote("key"),
            fence: quote("fence"),
        }
    }

    /// The name of the key column (of type `text`).
    pub fn key_column(mut self, name: &str) -> FencedTable {
        self.key = quote(name);
        self
    }

    /// The name of the fence column (of type `numeric(20)`).
    pub fn fence_column(mut self, name: &str) -> FencedTable {
        self.fence = quote(name);
        self
    }

    /// The plain fenced update of `columns`: `$1` is the key, `$2` the fence
    /// as decimal text, `$3…` the columns' values.
    pub fn update_sql(&self, columns: &[&str]) -> String {
        let (t, k, f) = (&self.table, &self.key, &self.fence);
        let mut set = format!("{f} = $2::text::numeric");
        for (i, c) in columns.iter().enumerate() {
            set.push_str(&format!(", {} = ${}", quote(c), i + 3));
        }
        format!("UPDATE {t} SET {set} WHERE {k} = $1 AND {f} < $2::text::numeric")
    }

    /// The fenced upsert of `columns`, which also creates a missing row:
    /// parameters as for [`FencedTable::update_sql`].
    pub fn write_sql(&self, columns: &[&str]) -> String {
        let (t, k, f) = (&self.table, &self.key, &self.fence);
        let mut names = format!("{k}, {f}");
        let mut values = "$1, $2::text::numeric".to_owned();
        let mut set = format!("{f} = EXCLUDED.{f}");
        for (i, c) in columns.iter().enumerate() {
            let c = quote(c);
            names.push_str(&format!(", {c}"));
            values.push_str(&format!(", ${}", i + 3));
            set.push_str(&format!(", {c} = EXCLUDED.{c}"));
        }
        format!(
            "INSERT INTO {t} AS t ({names}) VALUES ({values}) \
             ON CONFLICT ({k}) DO UPDATE SET {set} WHERE t.{f} < EXCLUDED.{f}"
        )
    }

    /// Writes `values` to the row of `key` with `fence`, creating the row if
    /// there is none, in one statement (inside the caller's transaction if
    /// `client` is one). Fails [`Error::Refused`] when the row's fence is
    /// `fence` or larger: nothing changed, and the holder should stop.
    pub async fn write<C: GenericClient>(
        &self,
        client: &C,
        key: &str,
        fence: u64,
        values: &[Value<'_>],
    ) -> Result<(), Error> {
        let columns: Vec<&str> = values.iter().map(|(c, _)| *c).collect();
        self.execute(client, &self.write_sql(&columns), key, fence, values)
            .await
    }

    /// Like [`FencedTable::write`] for a row that must already exist: a
    /// missing row is refused too.
    pub async fn update<C: GenericClient>(
        &self,
        client: &C,
        key: &str,
        fence: u64,
        values: &[Value<'_>],
    ) -> Result<(), Error> {
        let columns: Vec<&str> = values.iter().map(|(c, _)| *c).collect();
        self.execute(client, &self.update_sql(&columns), key, fence, values)
            .await
    }

    async fn execute<C: GenericClient>(
        &self,
        client: &C,
        sql: &str,
        key: &str,
        fence: u64,
        values: &[Value<'_>],
    ) -> Result<(), Error> {
        // tokio-postgres binds no u64, and a fence may not fit an i64: it
        // goes as decimal text, which the statement casts to numeric.
        let fence_text = fence.to_string();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&key, &fence_text];
        params.extend(values.iter().map(|(_, v)| *v));
        match client.execute(sql, &params).await? {
            0 => Err(Error::Refused {
                key: key.to_owned(),
                fence,
            }),
            _ => Ok(()),
        }
    }
}

/// `name` as a quoted SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_quote_names_and_carry_the_check() {
        let t = FencedTable::new("app.sum\"s").key_column("chat");
        assert_eq!(
            t.update_sql(&["text"]),
            "UPDATE \"app\".\"sum\"\"s\" SET \"fence\" = $2::text::numeric, \"text\" = $3 \
             WHERE \"chat\" = $1 AND \"fence\" < $2::text::numeric"
        );
        assert_eq!(
            t.write_sql(&[]),
            "INSERT INTO \"app\".\"sum\"\"s\" AS t (\"chat\", \"fence\") VALUES ($1, $2::text::numeric) \
             ON CONFLICT (\"chat\") DO UPDATE SET \"fence\" = EXCLUDED.\"fence\" \
             WHERE t.\"fence\" < EXCLUDED.\"fence\""
        );
    }
}
