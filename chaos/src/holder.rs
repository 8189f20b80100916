//! The Rust holder: one process (so that SIGSTOP freezes it alone) holding
//! keys of the lock `chaos` through the real library, one at a time, until
//! SIGTERM, recording its history. Each held function writes its fence to
//! the fenced register once, unless its lease is lost by then.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leasehold::driver::Driver;
use leasehold::etcd::EtcdDriver;
use leasehold::postgres::PostgresDriver;
use leasehold::remote::RemoteDriver;
use leasehold::{
    is_etcd_url, is_postgres_url, CancellationToken, ConnectOptions, HoldOptions, Holding, Store,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::runtime::Handle;

use crate::broken::{Breakage, BrokenDriver};
use crate::history::{Event, Kind, Recorder};
use crate::postgres::Fenced;
use crate::recording::RecordingDriver;
use crate::register::Register;

/// A holder's settings.
#[derive(Debug, Clone, clap::Args)]
pub struct HolderArgs {
    /// The store's URL.
    #[arg(long)]
    pub url: String,
    /// This holder's name in the run.
    #[arg(long)]
    pub name: String,
    /// The history file to append to.
    #[arg(long)]
    pub history: PathBuf,
    /// The fenced register's directory.
    #[arg(long)]
    pub register: PathBuf,
    /// The seed of its choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How many keys (`k0`, `k1`, …) it contends for.
    #[arg(long, default_value_t = 4)]
    pub keys: u32,
    /// The lock's ttl in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub ttl_ms: u64,
    /// The longest wait in line, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    pub wait_ms: u64,
    /// One hold in this many runs longer than the ttl (renewals at work).
    #[arg(long, default_value_t = 50)]
    pub long_every: u32,
    /// Writes fences to this PostgreSQL (`chaos/src/postgres.rs`) instead
    /// of the file register.
    #[arg(long)]
    pub postgres: Option<String>,
    /// Breaks the store on purpose (the checker's own tests).
    #[arg(long, value_enum)]
    pub broken: Option<Breakage>,
}

/// Where a holder's fenced writes go.
enum Writes {
    File(Register),
    Postgres(Fenced),
}

/// Connects to the server store, etcd or PostgreSQL, retrying while the store is
/// unreachable (it may be restarting).
async fn connect(url: &str) -> anyhow::Result<Arc<dyn Driver>> {
    let mut tries = 0;
    loop {
        let options = ConnectOptions::default();
        let driver: leasehold::Result<Arc<dyn Driver>> = if is_etcd_url(url) {
            EtcdDriver::connect(url, options, &Handle::current())
                .await
                .map(|d| Arc::new(d) as Arc<dyn Driver>)
        } else if is_postgres_url(url) {
            PostgresDriver::connect(url, options, &Handle::current())
                .await
                .map(|d| Arc::new(d) as Arc<dyn Driver>)
        } else {
            RemoteDriver::connect(url, options, &Handle::current())
                .await
                .map(|d| Arc::new(d) as Arc<dyn Driver>)
        };
        match driver {
            Ok(driver) => return Ok(driver),
            Err(e) if tries > 600 => return Err(e.into()),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Runs a holder until SIGTERM.
pub async fn run(args: HolderArgs) -> anyhow::Result<()> {
    let recorder = Arc::new(Recorder::create(&args.history, &args.name)?);
    let register = match &args.postgres {
        Some(url) => Writes::Postgres(Fenced::connect(url).await?),
        None => Writes::File(Register::open(&args.register)?),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let stopping = stop.clone();
    tokio::spawn(async move {
        term.recv().await;
        stopping.store(true, Ordering::SeqCst);
    });
    let mut driver = connect(&args.url).await?;
    if let Some(breakage) = args.broken {
        driver = Arc::new(BrokenDriver::new(driver, breakage));
    }
    let driver = Arc::new(RecordingDriver::new(driver, recorder.clone()));
    let store = Store::from_driver(driver, Handle::current());
    let ttl = Duration::from_millis(args.ttl_ms);
    let lock = store
        .lock("chaos")
        .ttl(ttl)
        .wait(Duration::from_millis(args.wait_ms))
        .open()?;
    let mut rng = StdRng::seed_from_u64(args.seed);
    while !stop.load(Ordering::SeqCst) {
        let key = format!("k{}", rng.gen_range(0..args.keys));
        let hold_for = if rng.gen_ratio(1, args.long_every) {
            rng.gen_range(ttl / 2..ttl * 3 / 2)
        } else {
            Duration::from_micros(rng.gen_range(0..3000))
        };
        let attempt = if rng.gen_ratio(1, 10) {
            lock.try_begin(&key).await
        } else {
            lock.begin(&key, &HoldOptions::default()).await.map(Some)
        };
        let outcome = Event::new(Kind::Outcome).key(&key);
        match attempt {
            Ok(None) => recorder.record(outcome.reason("not_held")),
            Err(e) => {
                if e.kind() != leasehold::ErrorKind::WaitTimeout {
                    // The history keeps the code; the message is for whoever looks into it.
                    eprintln!("{}: hold of {key} failed: {e}", args.name);
                }
                recorder.record(outcome.reason(e.kind().code()));
                tokio::time::sleep(Duration::from_millis(rng.gen_range(1..20))).await;
            }
            Ok(Some(holding)) => held(holding, &key, hold_for, &recorder, &register).await,
        }
    }
    store.close().await;
    Ok(())
}

/// Runs one held function: start, a fenced write halfway, end, the hold's outcome.
async fn held(
    holding: Holding,
    key: &str,
    hold_for: Duration,
    recorder: &Arc<Recorder>,
    register: &Writes,
) {
    let lease = holding.lease().clone();
    let fence = lease.fence();
    if lease.lost() {
        // As Lock::hold does: a lease lost between the grant and now (its
        // deadline came while this process was frozen) starts no function.
        let reason = match holding.end().await {
            Ok(()) => "ok",
            Err(e) => e.kind().code(),
        };
        recorder.record(
            Event::new(Kind::Outcome)
                .key(key)
                .fence(fence)
                .reason(reason),
        );
        return;
    }
    recorder.record(Event::new(Kind::Start).key(key).fence(fence));
    let done = CancellationToken::new();
    let watcher = {
        let (lease, done, recorder, key) = (
            lease.clone(),
            done.clone(),
            recorder.clone(),
            key.to_owned(),
        );
        tokio::spawn(async move {
            tokio::select! {
                _ = lease.lost_signal() => {
                    let reason = lease.loss_reason().map_or("", |r| r.as_str());
                    recorder.record(Event::new(Kind::Lost).key(&key).fence(fence).reason(reason));
                }
                _ = done.cancelled() => {}
            }
        })
    };
    tokio::time::sleep(hold_for / 2).await;
    if !lease.lost() {
        match register {
            Writes::File(r) => drop(r.write(key, fence, recorder).expect("write the register")),
            Writes::Postgres(pg) => drop(
                pg.write(key, fence, recorder)
                    .await
                    .expect("write to PostgreSQL"),
            ),
        }
    }
    tokio::time::sleep(hold_for / 2).await;
    recorder.record(Event::new(Kind::End).key(key).fence(fence));
    done.cancel();
    let _ = watcher.await;
    let reason = match holding.end().await {
        Ok(()) => "ok",
        Err(e) => e.kind().code(),
    };
    recorder.record(
        Event::new(Kind::Outcome)
            .key(key)
            .fence(fence)
            .reason(reason),
    );
}
