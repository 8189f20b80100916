//! Fenced writes to a real PostgreSQL (`make postgres`): the table
//! `chaos_fenced` has a row per key with the fence of the last write that
//! landed and how many landed; a write is one statement,
//!
//! ```sql
//! UPDATE chaos_fenced SET fence = $2::numeric, writes = writes + 1
//!  WHERE key = $1 AND fence < $2::numeric RETURNING writes
//! ```
//!
//! so a holder whose lease a larger fence has overtaken cannot land a late
//! write. `writes` orders the writes that landed on a key exactly, and the
//! table's rows at the end are checked against them.

use tokio_postgres::{Client, NoTls};

use crate::history::{Event, Kind, Recorder};

/// A connection to the run's database.
pub struct Fenced {
    client: Client,
}

async fn connect(url: &str) -> anyhow::Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

impl Fenced {
    /// Connects to `url`.
    pub async fn connect(url: &str) -> anyhow::Result<Fenced> {
        Ok(Fenced {
            client: connect(url).await?,
        })
    }

    /// Makes the table afresh with a row for each of `keys`, fence 0.
    pub async fn prepare(url: &str, keys: u32) -> anyhow::Result<()> {
        let client = connect(url).await?;
        client
            .batch_execute(
                "DROP TABLE IF EXISTS chaos_fenced;
                 CREATE TABLE chaos_fenced (key text PRIMARY KEY, fence numeric(20) NOT NULL, writes bigint NOT NULL);",
            )
            .await?;
        for k in 0..keys {
            client
                .execute(
                    "INSERT INTO chaos_fenced VALUES ($1, 0, 0)",
                    &[&format!("k{k}")],
                )
                .await?;
        }
        Ok(())
    }

    /// Writes `fence` to `key`, recording whether it landed.
    pub async fn write(&self, key: &str, fence: u64, recorder: &Recorder) -> anyhow::Result<bool> {
        let rows = self
            .client
            .query(
                "UPDATE chaos_fenced SET fence = $2::text::numeric, writes = writes + 1 \
                 WHERE key = $1 AND fence < $2::text::numeric RETURNING writes",
                &[&key, &fence.to_string()],
            )
            .await?;
        let e = Event::new(Kind::Write).key(key).fence(fence);
        Ok(match rows.first() {
            Some(row) => {
                let writes: i64 = row.get(0);
                recorder.record(e.reason("landed").seq(writes as u64));
                true
            }
            None => {
                recorder.record(e.reason("refused").seq(0));
                false
            }
        })
    }

    /// Records every row of the table as it is now (`final` writes).
    pub async fn record_rows(url: &str, recorder: &Recorder) -> anyhow::Result<()> {
        let client = connect(url).await?;
        for row in client
            .query("SELECT key, fence::text, writes FROM chaos_fenced", &[])
            .await?
        {
            let (key, fence, writes): (String, String, i64) = (row.get(0), row.get(1), row.get(2));
            recorder.record(
                Event::new(Kind::Write)
                    .key(&key)
                    .fence(fence.parse()?)
                    .reason("final")
                    .seq(writes as u64),
            );
        }
        Ok(())
    }
}
