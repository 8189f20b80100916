//! The PostgreSQL rows: a server of the comparison's own, and the two
//! recipes teams lock with on PostgreSQL today, driven from Rust with
//! `tokio-postgres` as the other systems' recipes are.
//!
//! - The advisory-lock recipe (DistributedLock.Postgres and most job
//!   queues): `pg_advisory_lock(key)` on a connection of the holder's own,
//!   which waits inside the server while another session holds the key;
//!   `pg_advisory_unlock(key)` to release. Held as long as the session.
//! - The `lock_until` table recipe (ShedLock's JDBC provider with the
//!   database's time): an upsert that takes the row when its `lock_until`
//!   has passed, and an update that sets `lock_until` to now at release.
//!   Nothing is pushed when a key is freed: a waiter tries again every
//!   [`POLL_RETRY`](super::systems::POLL_RETRY).

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use postgres_tests::server::PgServer;
use tokio_postgres::{Client, NoTls, Statement};

use super::systems::{Locker, LOCK_TTL_SECS, POLL_RETRY};

/// The server of this run, kept where the signal handler can stop it.
static RUNNING: Mutex<Option<PgServer>> = Mutex::new(None);

/// A handle on the run's PostgreSQL server (stopped by [`stop`]).
pub struct Postgres {
    /// Its loopback port.
    pub port: u16,
}

/// The settings the comparison's server adds to `PgServer`'s (loopback,
/// trust): durable commits as a production server makes them (the test
/// servers run with fsync off), and room for every plan's connections.
const SETTINGS: &[&str] = &["fsync = on", "max_connections = 500"];

/// Starts a PostgreSQL server of the run's own (Debian's `postgresql`,
/// `initdb` in a temporary folder), or says why it could not.
pub fn start() -> Result<Postgres> {
    let started = std::panic::catch_unwind(|| PgServer::start(SETTINGS));
    let server = started.map_err(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        anyhow!("PostgreSQL did not start: {why}")
    })?;
    let port = server.port;
    *RUNNING.lock().unwrap_or_else(|p| p.into_inner()) = Some(server);
    Ok(Postgres { port })
}

/// Stops the server, if one runs.
pub fn stop() {
    let server = RUNNING.lock().unwrap_or_else(|p| p.into_inner()).take();
    drop(server);
}

/// The server's version (`SHOW server_version`), for the report.
pub async fn version(port: u16) -> String {
    match connect(port).await {
        Ok(c) => c
            .query_one("SHOW server_version", &[])
            .await
            .map(|r| r.get::<_, String>(0))
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The process ids of the server: the postmaster and its backends.
pub fn pids() -> Vec<u32> {
    RUNNING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|s| {
            s.processes()
                .into_iter()
                .map(|p| p.as_raw() as u32)
                .collect()
        })
        .unwrap_or_default()
}

impl Postgres {
    /// The libpq URL of the benchmark's database.
    pub fn url(&self) -> String {
        format!("postgres://leasehold@127.0.0.1:{}/leasehold", self.port)
    }

    /// Leasehold's URL: the store's tables in a schema of their own.
    pub fn leasehold_url(&self) -> String {
        format!("{}?schema=bench", self.url())
    }
}

/// A connection as role `leasehold`, its task spawned.
pub async fn connect(port: u16) -> Result<Client> {
    let url = format!("postgres://leasehold@127.0.0.1:{port}/leasehold");
    let (client, conn) = tokio_postgres::connect(&url, NoTls)
        .await
        .context("connect to PostgreSQL")?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// The advisory-lock recipe: one connection (session) per client.
pub struct AdvisoryClient {
    client: Client,
    lock: Statement,
    unlock: Statement,
}

impl Locker for AdvisoryClient {
    type Held = String;

    async fn acquire(&mut self, key: &str) -> Result<String> {
        self.client.execute(&self.lock, &[&key]).await?;
        Ok(key.to_owned())
    }

    async fn release(&mut self, key: String) -> Result<()> {
        let row = self.client.query_one(&self.unlock, &[&key]).await?;
        if !row.get::<_, bool>(0) {
            bail!("the advisory lock on {key} was not this session's at release");
        }
        Ok(())
    }
}

/// Opens `n` advisory-lock clients, each with a connection of its own and
/// its two statements prepared.
pub async fn advisory_clients(port: u16, n: usize) -> Result<Vec<AdvisoryClient>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let client = connect(port).await?;
        let lock = client
            .prepare("SELECT pg_advisory_lock(hashtextextended($1::text, 0))")
            .await?;
        let unlock = client
            .prepare("SELECT pg_advisory_unlock(hashtextextended($1::text, 0))")
            .await?;
        out.push(AdvisoryClient {
            client,
            lock,
            unlock,
        });
    }
    Ok(out)
}

/// The `lock_until` recipe's table, as ShedLock's JDBC provider makes it.
const LOCK_UNTIL_TABLE: &str = "CREATE TABLE IF NOT EXISTS bench_lock_until (
    name text PRIMARY KEY,
    lock_until timestamptz NOT NULL,
    locked_at timestamptz NOT NULL,
    locked_by text NOT NULL)";

/// Takes the row of `$1` for `$2` seconds as `$3` when it is free or has run out.
const LOCK_UNTIL_TAKE: &str = "INSERT INTO bench_lock_until AS l (name, lock_until, locked_at, locked_by)
    VALUES ($1, now() + make_interval(secs => $2), now(), $3)
    ON CONFLICT (name) DO UPDATE
    SET lock_until = EXCLUDED.lock_until, locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by
    WHERE l.lock_until <= now()";

/// Frees the row of `$1` if `$2` still holds it.
const LOCK_UNTIL_FREE: &str =
    "UPDATE bench_lock_until SET lock_until = now() WHERE name = $1 AND locked_by = $2";

/// The `lock_until` recipe: one connection per client, statements prepared.
pub struct LockUntilClient {
    client: Client,
    take: Statement,
    free: Statement,
    me: u64,
    seq: u64,
}

impl Locker for LockUntilClient {
    type Held = (String, String);

    async fn acquire(&mut self, key: &str) -> Result<(String, String)> {
        self.seq += 1;
        let token = format!("{}-{}", self.me, self.seq);
        let ttl = LOCK_TTL_SECS as f64;
        loop {
            if self
                .client
                .execute(&self.take, &[&key, &ttl, &token])
                .await?
                == 1
            {
                return Ok((key.to_owned(), token));
            }
            tokio::time::sleep(POLL_RETRY).await;
        }
    }

    async fn release(&mut self, (key, token): (String, String)) -> Result<()> {
        if self.client.execute(&self.free, &[&key, &token]).await? != 1 {
            bail!("the lock_until row of {key} was not ours at release");
        }
        Ok(())
    }
}

/// Opens `n` `lock_until` clients (making the table on first use).
pub async fn lock_until_clients(port: u16, n: usize) -> Result<Vec<LockUntilClient>> {
    let mut out = Vec::with_capacity(n);
    for me in 0..n as u64 {
        let client = connect(port).await?;
        client.batch_execute(LOCK_UNTIL_TABLE).await?;
        let take = client.prepare(LOCK_UNTIL_TAKE).await?;
        let free = client.prepare(LOCK_UNTIL_FREE).await?;
        out.push(LockUntilClient {
            client,
            take,
            free,
            me,
            seq: 0,
        });
    }
    Ok(out)
}

/// The server's write counters: transactions given an id, and WAL bytes.
#[derive(Debug, Clone, Copy)]
pub struct Writes {
    xids: i64,
    wal: i64,
}

/// Reads the next transaction id (without taking one) and the WAL position.
pub async fn writes(admin: &Client) -> Result<Writes> {
    let row = admin
        .query_one(
            "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
                    (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint",
            &[],
        )
        .await?;
    Ok(Writes {
        xids: row.get(0),
        wal: row.get(1),
    })
}

/// What a system's hold cycle costs the database, per cycle.
#[derive(Debug, Clone, Copy)]
pub struct CycleWrites {
    /// Committed transactions that wrote (each one a WAL flush, that is an fsync).
    pub commits: f64,
    /// WAL written.
    pub wal_bytes: f64,
}

/// Cycles each system runs while its writes are counted.
pub const COUNTED_CYCLES: usize = 1_000;

/// Runs [`COUNTED_CYCLES`] hold cycles of one client on one key and
/// counts the database's writes over them.
pub async fn count_writes<L: Locker>(admin: &Client, mut client: L) -> Result<CycleWrites> {
    let before = writes(admin).await?;
    for _ in 0..COUNTED_CYCLES {
        let held = client.acquire("counted").await?;
        client.release(held).await?;
    }
    let after = writes(admin).await?;
    let per = |d: i64| d as f64 / COUNTED_CYCLES as f64;
    Ok(CycleWrites {
        commits: per(after.xids - before.xids),
        wal_bytes: per(after.wal - before.wal),
    })
}

/// The `lock_until` recipe's renewal of `n` rows every ttl/3, 1,000 rows
/// per statement (the careful way: one UPDATE per row would commit, and
/// flush the WAL, once per row), in the renewal child. Lost: rows a renewal found run
/// out (or gone), or rows not held at the end.
pub async fn lock_until_renew(port: u16, n: usize, ttl: Duration, span: Duration) -> Result<()> {
    use super::renew::{ready, report, self_cpu, self_rss, spanned};
    let client = connect(port).await?;
    client.batch_execute(LOCK_UNTIL_TABLE).await?;
    let secs = ttl.as_secs_f64();
    let names: Vec<String> = (0..n).map(|i| format!("renew-{i}")).collect();
    let renew = client
        .prepare(
            "UPDATE bench_lock_until SET lock_until = now() + make_interval(secs => $2)
             WHERE name = ANY($1) AND locked_by = 'renew' AND lock_until > now()",
        )
        .await?;
    let rss = self_rss();
    let t = std::time::Instant::now();
    // Taken 1,000 rows per statement: the setup is not what is measured.
    for chunk in names.chunks(1000) {
        client
            .execute(
                "INSERT INTO bench_lock_until
                 SELECT name, now() + make_interval(secs => $2), now(), 'renew' FROM unnest($1::text[]) AS name",
                &[&chunk, &secs],
            )
            .await?;
    }
    let rss_grew = self_rss().saturating_sub(rss);
    ready(t.elapsed());
    let cpu = self_cpu();
    let t = std::time::Instant::now();
    let mut lost = 0;
    let mut tick = tokio::time::interval(ttl / 3);
    tick.tick().await;
    while t.elapsed() + ttl / 3 <= span + Duration::from_millis(50) {
        tick.tick().await;
        for chunk in names.chunks(1000) {
            let renewed = client.execute(&renew, &[&chunk, &secs]).await?;
            lost += chunk.len() - renewed as usize;
        }
    }
    tokio::time::sleep(span.saturating_sub(t.elapsed())).await;
    spanned(t.elapsed(), self_cpu() - cpu);
    let held: i64 = client
        .query_one(
            "SELECT count(*) FROM bench_lock_until WHERE locked_by = 'renew' AND lock_until > now()",
            &[],
        )
        .await?
        .get(0);
    report(lost.max(n.saturating_sub(held as usize)), rss_grew);
    client
        .execute(
            "DELETE FROM bench_lock_until WHERE locked_by = 'renew'",
            &[],
        )
        .await?;
    Ok(())
}
