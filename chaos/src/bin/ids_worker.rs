//! `ids_worker`: one process issuing IDs from a namespace of a real store
//! (the multi-process test of IDGEN-01, `chaos/tests/ids_processes.rs`),
//! appending every ID it issued to a log, until SIGTERM.
//!
//! It opens `store.ids(namespace)`, takes IDs in batches, and closes the
//! generator after a random lifetime to open a new one, so that slots change
//! hands; on `Lost` or any error it drops the generator and opens another,
//! retrying while every slot is held or the store is away. SIGTERM closes
//! the generator, flushes the log and exits 0.
//!
//! The log is a sequence of 16-byte records, little-endian: `kind: u32`,
//! `generator: u32` (this worker's count of generators opened, from 1),
//! `value: u64`. Kinds:
//!
//! - 1 `OPENING`: about to open generator `generator`; value: `CLOCK_MONOTONIC` ns.
//!   Repeated (same generator number) when an open fails and is retried.
//! - 2 `OPENED`: the generator is open; value: its node.
//! - 3 `ID`: an ID it issued.
//! - 4 `MARK`: value: `CLOCK_MONOTONIC` ns, after each batch of IDs (the IDs
//!   before it were issued before then).
//! - 5 `ENDED`: value: 0 closed (its lifetime ended), 1 `Lost`, 2 another
//!   error, 3 closed on SIGTERM.
//!
//! The log is flushed after every batch: a SIGKILLed worker loses at most
//! the records of a batch, and every ID logged was issued.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use leasehold::idgen::{IdGenerator, IdLayout};
use leasehold::{ConnectOptions, ErrorKind, Store};
use leasehold_chaos::clock::now_ns;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The record kinds of the log.
const OPENING: u32 = 1;
const OPENED: u32 = 2;
const ID: u32 = 3;
const MARK: u32 = 4;
const ENDED: u32 = 5;

/// The values of an `ENDED` record.
const ENDED_CLOSED: u64 = 0;
const ENDED_LOST: u64 = 1;
const ENDED_ERROR: u64 = 2;
const ENDED_STOPPED: u64 = 3;

/// The layouts a worker can issue in.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Layout {
    /// 41/10/12 in ms.
    Default,
    /// 41/6/6 in ms (below 2^53).
    JsSafe,
    /// 31/10/22 in s.
    Seconds,
}

impl Layout {
    fn layout(self) -> IdLayout {
        match self {
            Layout::Default => IdLayout::DEFAULT,
            Layout::JsSafe => IdLayout::js_safe(),
            Layout::Seconds => IdLayout::seconds(),
        }
    }
}

#[derive(Debug, Parser)]
#[command(about = "Issues IDs from a namespace of a store until SIGTERM, logging each")]
struct Args {
    /// The store's URL (`leasehold://…` or `etcd://…`).
    #[arg(long)]
    url: String,
    /// The ID namespace.
    #[arg(long)]
    namespace: String,
    /// The log to write (created or truncated).
    #[arg(long)]
    log: PathBuf,
    /// The slot lease's ttl in ms.
    #[arg(long, default_value_t = 3000)]
    ttl_ms: u64,
    /// The slot lease's tolerance in ms.
    #[arg(long, default_value_t = 1000)]
    tolerance_ms: u64,
    /// The namespace's slots.
    #[arg(long, default_value_t = 4)]
    limit: u32,
    /// The layout.
    #[arg(long, value_enum, default_value_t = Layout::Default)]
    layout: Layout,
    /// IDs per batch.
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// The pause after each batch, in ms.
    #[arg(long, default_value_t = 2)]
    pause_ms: u64,
    /// A generator's mean lifetime in ms (each lives from half to one and a half of it).
    #[arg(long, default_value_t = 2000)]
    lifetime_ms: u64,
    /// The seed of the lifetimes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// The log, flushed after each batch.
struct Log {
    out: BufWriter<File>,
}

impl Log {
    fn record(&mut self, kind: u32, generator: u32, value: u64) -> std::io::Result<()> {
        let mut record = [0u8; 16];
        record[..4].copy_from_slice(&kind.to_le_bytes());
        record[4..8].copy_from_slice(&generator.to_le_bytes());
        record[8..].copy_from_slice(&value.to_le_bytes());
        self.out.write_all(&record)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// How a generator's run ended.
enum End {
    /// Its lifetime is over.
    Lifetime,
    /// SIGTERM.
    Stop,
    /// A call failed.
    Failed(leasehold::Error),
}

/// Whether an open that failed so is worth retrying.
fn retryable(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::NotReady | ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::Lost
    )
}

/// Issues from `ids` until its lifetime is over, SIGTERM or a failure.
async fn issue(
    ids: &IdGenerator,
    generator: u32,
    args: &Args,
    lifetime: Duration,
    log: &mut Log,
    term: &mut Signal,
) -> anyhow::Result<End> {
    let until = tokio::time::Instant::now() + lifetime;
    loop {
        let batch = tokio::select! {
            batch = ids.take(args.batch) => batch,
            _ = term.recv() => return Ok(End::Stop),
            _ = tokio::time::sleep_until(until) => return Ok(End::Lifetime),
        };
        match batch {
            Ok(batch) => {
                for id in batch {
                    log.record(ID, generator, id)?;
                }
                log.record(MARK, generator, now_ns())?;
                log.flush()?;
            }
            Err(e) => return Ok(End::Failed(e)),
        }
        if tokio::time::Instant::now() >= until {
            return Ok(End::Lifetime);
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(args.pause_ms)) => {}
            _ = term.recv() => return Ok(End::Stop),
        }
    }
}

/// Connects to the store, retrying while it is unreachable; `None` on SIGTERM.
async fn connect(url: &str, term: &mut Signal) -> anyhow::Result<Option<Store>> {
    loop {
        match Store::connect(url, ConnectOptions::default()).await {
            Ok(store) => return Ok(Some(store)),
            Err(e) if retryable(e.kind()) => {}
            Err(e) => return Err(e.into()),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = term.recv() => return Ok(None),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut term = signal(SignalKind::terminate())?;
    let mut log = Log {
        out: BufWriter::new(File::create(&args.log)?),
    };
    let Some(store) = connect(&args.url, &mut term).await? else {
        return Ok(());
    };
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut generator = 1;
    loop {
        log.record(OPENING, generator, now_ns())?;
        log.flush()?;
        let opened = store
            .ids(&args.namespace)
            .layout(args.layout.layout())
            .limit(args.limit)
            .ttl(Duration::from_millis(args.ttl_ms))
            .tolerance(Duration::from_millis(args.tolerance_ms))
            .open();
        let opened = tokio::select! {
            opened = opened => opened,
            _ = term.recv() => break,
        };
        let ids = match opened {
            Ok(ids) => ids,
            Err(e) if retryable(e.kind()) => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(rng.gen_range(10..50))) => continue,
                    _ = term.recv() => break,
                }
            }
            Err(e) => return Err(e.into()),
        };
        log.record(OPENED, generator, u64::from(ids.node()))?;
        log.flush()?;
        let lifetime =
            Duration::from_millis(rng.gen_range(args.lifetime_ms / 2..=args.lifetime_ms * 3 / 2));
        let end = issue(&ids, generator, &args, lifetime, &mut log, &mut term).await?;
        let ended = match &end {
            End::Lifetime | End::Stop => match ids.close().await {
                Ok(()) if matches!(end, End::Stop) => ENDED_STOPPED,
                Ok(()) => ENDED_CLOSED,
                Err(e) if e.kind() == ErrorKind::Lost => ENDED_LOST,
                Err(_) => ENDED_ERROR,
            },
            End::Failed(e) if e.kind() == ErrorKind::Lost => ENDED_LOST,
            End::Failed(e) => {
                eprintln!("generator {generator} on node {}: {e}", ids.node());
                ENDED_ERROR
            }
        };
        drop(ids);
        log.record(ENDED, generator, ended)?;
        log.flush()?;
        if matches!(end, End::Stop) {
            break;
        }
        generator += 1;
        if matches!(end, End::Lifetime) {
            // A pause before opening again, so that the workers waiting for
            // a slot get the one just released.
            let pause = Duration::from_millis(rng.gen_range(100..400));
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = term.recv() => break,
            }
        }
    }
    log.flush()?;
    store.close().await;
    Ok(())
}
