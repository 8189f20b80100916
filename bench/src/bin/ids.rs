//! The ID generator (IDGEN) on this machine, next to the ID sources teams
//! use instead, in one run: Redis `INCR` / `INCRBY` and an etcd put's
//! revision, each one round trip to a server on loopback.
//!
//! Leasehold's rows: `next()` per call, `next_into` per ID in batches of
//! one tick's sequence, and the rate one thread reaches when it asks for
//! IDs without pause (the layout's cap: 4,096,000 IDs/s per node in the
//! default 41/10/12 ms layout), on the embedded store and on the server
//! store (`leasehold serve`: the issuing path is local on either, only the
//! slot lease and its renewals cross the network). Every number names its
//! layout. Rounds interleave the systems, so load from outside falls on
//! all alike; the median round is reported, with the ratio to Redis.
//!
//! Run: `make bench-ids` (or `cargo run --release -p leasehold-bench
//! --features compare --bin ids -- --rounds 3`); the Markdown goes to
//! `target/bench-ids.md`.

#[path = "../compare/procs.rs"]
#[allow(dead_code)]
mod procs;

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use leasehold::idgen::{IdGenerator, IdLayout};
use leasehold::{ErrorKind, Store};

/// Calls per `next()` round: well within what the lead lets one burst take.
const CALLS: u64 = 1_000_000;
/// IDs per batch: one tick's sequence in the default layout.
const BATCH: usize = 4096;
/// Batches per round.
const BATCHES: usize = 200;
/// How long the cap is measured, per round.
const CAP_FOR: Duration = Duration::from_millis(1500);
/// Round trips per remote round.
const TRIPS: u64 = 5_000;

#[derive(Default)]
struct Rows {
    /// (row, unit, one value per round).
    rows: Vec<(String, &'static str, Vec<f64>)>,
}

impl Rows {
    fn add(&mut self, row: &str, unit: &'static str, value: f64) {
        match self.rows.iter_mut().find(|(r, _, _)| r == row) {
            Some((_, _, values)) => values.push(value),
            None => self.rows.push((row.to_owned(), unit, vec![value])),
        }
    }

    fn median(&self, row: &str) -> Option<f64> {
        let (_, _, values) = self.rows.iter().find(|(r, _, _)| r == row)?;
        let mut v = values.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    }
}

async fn generator(store: &Store, ns: &str, max_lead: Duration) -> Result<IdGenerator> {
    Ok(store
        .ids(ns)
        .layout(IdLayout::DEFAULT)
        .max_lead(max_lead)
        .open()
        .await?)
}

/// ns per `next()`, a fresh generator (its lead unused) per round.
async fn per_call(store: &Store, ns: &str) -> Result<f64> {
    let ids = generator(store, ns, Duration::from_secs(2)).await?;
    let start = Instant::now();
    for _ in 0..CALLS {
        black_box(ids.next()?);
    }
    let ns_per = start.elapsed().as_nanos() as f64 / CALLS as f64;
    ids.close().await?;
    Ok(ns_per)
}

/// ns per ID through `next_into` in batches of [`BATCH`].
async fn per_batched_id(store: &Store, ns: &str) -> Result<f64> {
    let ids = generator(store, ns, Duration::from_secs(2)).await?;
    let mut buf = vec![0u64; BATCH];
    let mut n = 0;
    let start = Instant::now();
    for _ in 0..BATCHES {
        n += ids.next_into(black_box(&mut buf))?;
    }
    let ns_per = start.elapsed().as_nanos() as f64 / n as f64;
    ids.close().await?;
    Ok(ns_per)
}

/// A generator of the default lead (1 s) whose lead is used up: it issues
/// at the layout's cap from here on, a thread preempted for less than the
/// lead losing no tick.
async fn at_the_lead(store: &Store, ns: &str) -> Result<IdGenerator> {
    let ids = generator(store, ns, leasehold::idgen::DEFAULT_MAX_LEAD).await?;
    let mut buf = vec![0u64; BATCH];
    loop {
        match ids.next_into(&mut buf) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotReady => return Ok(ids),
            Err(e) => return Err(e.into()),
        }
    }
}

/// IDs per second, sustained, from one thread asking without pause: the
/// non-waiting call retried at once on `NotReady`.
async fn cap(store: &Store, ns: &str) -> Result<f64> {
    let ids = at_the_lead(store, ns).await?;
    let mut n = 0u64;
    let start = Instant::now();
    while start.elapsed() < CAP_FOR {
        for _ in 0..256 {
            match ids.next() {
                Ok(id) => {
                    black_box(id);
                    n += 1;
                }
                Err(e) if e.kind() == ErrorKind::NotReady => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    ids.close().await?;
    Ok(rate)
}

/// The same with the waiting call, batch by batch (`take`).
async fn cap_waiting(store: &Store, ns: &str) -> Result<f64> {
    let ids = at_the_lead(store, ns).await?;
    let mut n = 0u64;
    let start = Instant::now();
    while start.elapsed() < CAP_FOR {
        n += ids.take(BATCH).await?.len() as u64;
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    ids.close().await?;
    Ok(rate)
}

async fn leasehold_rows(rows: &mut Rows, label: &str, store: &Store) -> Result<()> {
    let l = IdLayout::DEFAULT.describe();
    rows.add(
        &format!("{label}: next() [{l}]"),
        "ns/ID",
        per_call(store, "bench-next").await?,
    );
    rows.add(
        &format!("{label}: next_into, batches of {BATCH} [{l}]"),
        "ns/ID",
        per_batched_id(store, "bench-batch").await?,
    );
    rows.add(
        &format!("{label}: one thread without pause, next(), sustained [{l}]"),
        "IDs/s",
        cap(store, "bench-cap").await?,
    );
    rows.add(
        &format!("{label}: one thread, take({BATCH}) waiting, sustained [{l}]"),
        "IDs/s",
        cap_waiting(store, "bench-cap-wait").await?,
    );
    Ok(())
}

async fn redis_rows(rows: &mut Rows, port: u16) -> Result<()> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let start = Instant::now();
    for _ in 0..TRIPS {
        let id: u64 = redis::cmd("INCR")
            .arg("bench-ids")
            .query_async(&mut conn)
            .await?;
        black_box(id);
    }
    rows.add(
        "redis: INCR, one ID per round trip",
        "ns/ID",
        start.elapsed().as_nanos() as f64 / TRIPS as f64,
    );
    let start = Instant::now();
    for _ in 0..TRIPS / 10 {
        let top: u64 = redis::cmd("INCRBY")
            .arg("bench-ids")
            .arg(BATCH)
            .query_async(&mut conn)
            .await?;
        black_box(top);
    }
    rows.add(
        &format!("redis: INCRBY {BATCH}, a range per round trip"),
        "ns/ID",
        start.elapsed().as_nanos() as f64 / (TRIPS / 10 * BATCH as u64) as f64,
    );
    Ok(())
}

async fn etcd_rows(rows: &mut Rows, port: u16) -> Result<()> {
    let mut client =
        etcd_client::Client::connect([format!("http://127.0.0.1:{port}")], None).await?;
    let trips = TRIPS / 5;
    let start = Instant::now();
    for _ in 0..trips {
        let put = client.put("bench-ids", "", None).await?;
        black_box(put.header().map(|h| h.revision()));
    }
    rows.add(
        "etcd: a put's revision, one ID per round trip",
        "ns/ID",
        start.elapsed().as_nanos() as f64 / trips as f64,
    );
    Ok(())
}

fn show(unit: &str, v: f64) -> String {
    match unit {
        "IDs/s" => format!("{:.2} M IDs/s", v / 1e6),
        _ if v >= 1000.0 => format!("{:.1} µs/ID", v / 1000.0),
        _ => format!("{v:.1} ns/ID"),
    }
}

fn markdown(rows: &Rows, rounds: usize) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## IDs ({rounds} rounds, median; load {})\n",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let _ = writeln!(
        md,
        "| source | median | Redis INCR's time per ID / this one's |\n|---|---|---|"
    );
    let redis = rows.median("redis: INCR, one ID per round trip");
    for (row, unit, _) in &rows.rows {
        let Some(v) = rows.median(row) else { continue };
        let per_id = if *unit == "IDs/s" { 1e9 / v } else { v };
        let ratio = redis.map_or("-".to_owned(), |r| format!("{:.3}", r / per_id));
        let _ = writeln!(md, "| {row} | {} | {ratio} |", show(unit, v));
    }
    md
}

async fn run(rounds: usize) -> Result<Rows> {
    let bin = std::env::current_exe()?
        .parent()
        .context("the bench binary's folder")?
        .join("leasehold");
    let server = procs::start_leasehold(&bin, &[])?;
    let redis = procs::start_redis(&[]).await.ok();
    let etcd = if procs::etcd_available() {
        procs::start_etcd().await.ok()
    } else {
        None
    };
    let embedded = Store::memory();
    let url = format!("leasehold://127.0.0.1:{}", server.port);
    let remote = Store::connect(&url, leasehold::ConnectOptions::default()).await?;
    let mut rows = Rows::default();
    for round in 0..rounds {
        eprintln!("ids: round {} of {rounds}", round + 1);
        leasehold_rows(&mut rows, "leasehold embedded", &embedded).await?;
        leasehold_rows(&mut rows, "leasehold server store", &remote).await?;
        if let Some(redis) = &redis {
            redis_rows(&mut rows, redis.port).await?;
        }
        if let Some(etcd) = &etcd {
            etcd_rows(&mut rows, etcd.port).await?;
        }
    }
    Ok(rows)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = match args.as_slice() {
        [] => 3,
        [flag, n] if flag == "--rounds" => match n.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("ids: --rounds takes a positive number");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: ids [--rounds N]");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ids: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(rounds)) {
        Ok(rows) => {
            let md = markdown(&rows, rounds);
            println!("{md}");
            let path = PathBuf::from("target/bench-ids.md");
            if std::fs::write(&path, &md).is_ok() {
                eprintln!("(written to {})", path.display());
            }
            procs::stop_all();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ids: {e:#}");
            procs::stop_all();
            ExitCode::FAILURE
        }
    }
}
