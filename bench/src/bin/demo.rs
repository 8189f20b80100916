//! A demo of the embedded store: holders contending for a few keys.
//!
//! Four threads hold keys with the blocking `lock.hold`, four tokio tasks
//! with `hold_async`, all on lock "summaries" with keys chat-1..chat-3, for
//! about 2.5 s. Each grant prints a line such as
//! `holder-3 holds summaries/chat-2 fence=7318...  (waited 12ms)`.
//! At the end it checks, per key, that fences grew strictly in grant order
//! and that no two holders held one key at once (an atomic per key, counted
//! inside the held function), and exits non-zero if either was violated.
//! It also shows `try_hold` skipping a held key and a manual lease
//! (`store.try_acquire`, `extend`, `release`).
//!
//! Run: `cargo run --release -p leasehold-bench --bin demo`.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use leasehold::{Error, HoldOptions, Lease, Lock, Store};

/// The contended keys of lock "summaries".
const KEYS: [&str; 3] = ["chat-1", "chat-2", "chat-3"];
/// Holders start no new hold after this much time.
const RUN_FOR: Duration = Duration::from_millis(2500);
const THREAD_HOLDERS: usize = 4;
const TASK_HOLDERS: usize = 4;

/// What the demo saw of one key.
#[derive(Default)]
struct KeyLog {
    /// Holders inside the held function right now (never more than one).
    inside: AtomicUsize,
    /// How many times a holder entered while another was inside.
    overlaps: AtomicUsize,
    /// Fences in the order the holders entered.
    fences: Mutex<Vec<u64>>,
}

/// Everything the holders share.
struct Shared {
    keys: Vec<KeyLog>,
    errors: AtomicUsize,
    end: Instant,
}

impl Shared {
    /// Called first thing in the held function: records the grant and prints it.
    fn enter(&self, holder: usize, k: usize, lease: &Lease, asked_at: Instant) {
        let log = &self.keys[k];
        if log.inside.fetch_add(1, Ordering::SeqCst) != 0 {
            log.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        log.fences
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lease.fence());
        println!(
            "holder-{holder} holds {}/{} fence={}  (waited {}ms)",
            lease.lock_name(),
            lease.key(),
            lease.fence(),
            asked_at.elapsed().as_millis()
        );
    }

    /// Called last thing in the held function.
    fn leave(&self, k: usize) {
        self.keys[k].inside.fetch_sub(1, Ordering::SeqCst);
    }

    fn failed(&self, holder: usize, e: &Error) {
        eprintln!("holder-{holder}: hold failed: {e}");
        self.errors.fetch_add(1, Ordering::SeqCst);
    }
}

/// A small deterministic random source (xorshift64*), one per holder.
struct Rng(u64);

impl Rng {
    fn new(seed: usize) -> Rng {
        Rng(0x9E37_79B9_7F4A_7C15 ^ ((seed as u64 + 1) << 17))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }

    /// How long to work while holding: 20 to 50 ms.
    fn work(&mut self) -> Duration {
        Duration::from_millis(20 + self.below(31))
    }

    /// How long to pause between holds: 0 to 10 ms.
    fn pause(&mut self) -> Duration {
        Duration::from_millis(self.below(11))
    }
}

/// A holder on its own thread, with the blocking `lock.hold`.
fn thread_holder(holder: usize, lock: Lock, shared: Arc<Shared>) {
    let mut rng = Rng::new(holder);
    while Instant::now() < shared.end {
        let k = rng.below(KEYS.len() as u64) as usize;
        let work = rng.work();
        let asked_at = Instant::now();
        let held = lock.hold(KEYS[k], |lease| {
            shared.enter(holder, k, lease, asked_at);
            thread::sleep(work);
            shared.leave(k);
            Ok::<_, Error>(())
        });
        if let Err(e) = held {
            shared.failed(holder, &e);
        }
        thread::sleep(rng.pause());
    }
}

/// A holder as a tokio task, with `hold_async`.
async fn task_holder(holder: usize, lock: Lock, shared: Arc<Shared>) {
    let mut rng = Rng::new(holder);
    while Instant::now() < shared.end {
        let k = rng.below(KEYS.len() as u64) as usize;
        let work = rng.work();
        let asked_at = Instant::now();
        let inner = shared.clone();
        let held = lock
            .hold_async(KEYS[k], |lease| async move {
                inner.enter(holder, k, &lease, asked_at);
                tokio::time::sleep(work).await;
                inner.leave(k);
                Ok::<_, Error>(())
            })
            .await;
        if let Err(e) = held {
            shared.failed(holder, &e);
        }
        tokio::time::sleep(rng.pause()).await;
    }
}

/// `try_hold` on a key someone holds runs nothing and answers `None`.
/// Returns whether it behaved so.
fn show_try_hold(rt: &tokio::runtime::Runtime, lock: &Lock) -> Result<bool, Error> {
    let holding = rt.block_on(lock.begin("report", &HoldOptions::default()))?;
    println!(
        "main holds {}/report fence={}",
        lock.name(),
        holding.lease().fence()
    );
    let ran = lock.try_hold("report", |_| Ok::<_, Error>(()))?;
    match ran {
        None => println!(
            "try_hold {}/report: held, skipped (nothing ran)",
            lock.name()
        ),
        Some(()) => println!(
            "try_hold {}/report: RAN although the key was held",
            lock.name()
        ),
    }
    rt.block_on(holding.end())?;
    let after = lock.try_hold("report", |lease| Ok::<_, Error>(lease.fence()))?;
    match after {
        Some(fence) => println!(
            "try_hold {}/report after the release: held it, fence={fence}",
            lock.name()
        ),
        None => println!(
            "try_hold {}/report after the release: still held?",
            lock.name()
        ),
    }
    Ok(ran.is_none() && after.is_some())
}

/// A manual lease: try_acquire, a second try_acquire that finds it held,
/// extend, release, and a new lease with a larger fence. Returns whether
/// everything behaved so.
async fn show_manual(store: &Store) -> Result<bool, Error> {
    let ttl = Duration::from_secs(30);
    let Some(lease) = store.try_acquire("nightly-batch", ttl).await? else {
        println!("manual: nightly-batch is held by someone else?");
        return Ok(false);
    };
    println!(
        "manual: try_acquire {} fence={} (ttl 30s)",
        lease.name(),
        lease.fence()
    );
    let second = store.try_acquire("nightly-batch", ttl).await?;
    println!(
        "manual: a second try_acquire {}: {}",
        lease.name(),
        if second.is_none() {
            "held, None"
        } else {
            "GRANTED TWICE"
        }
    );
    lease.extend(Duration::from_secs(60)).await?;
    println!("manual: extend {} to now + 60s", lease.name());
    lease.release().await?;
    println!("manual: release {}", lease.name());
    let Some(again) = store.try_acquire("nightly-batch", ttl).await? else {
        println!("manual: nightly-batch still held after its release?");
        return Ok(false);
    };
    println!(
        "manual: try_acquire {} again: fence={} (larger: {})",
        again.name(),
        again.fence(),
        again.fence() > lease.fence()
    );
    again.release().await?;
    Ok(second.is_none() && again.fence() > lease.fence())
}

/// Checks every key's log; prints a summary and returns whether all held.
fn check(shared: &Shared) -> bool {
    let mut ok = true;
    for (k, log) in shared.keys.iter().enumerate() {
        let fences = log.fences.lock().unwrap_or_else(|p| p.into_inner());
        let increasing = fences.windows(2).all(|w| w[0] < w[1]);
        let overlaps = log.overlaps.load(Ordering::SeqCst);
        println!(
            "summaries/{}: {} grants, fences {} in grant order, {} overlapping holders",
            KEYS[k],
            fences.len(),
            if increasing {
                "strictly increasing"
            } else {
                "NOT increasing"
            },
            overlaps
        );
        ok &= increasing && overlaps == 0 && !fences.is_empty();
    }
    let errors = shared.errors.load(Ordering::SeqCst);
    if errors > 0 {
        println!("{errors} holds failed");
    }
    ok && errors == 0
}

fn main() -> ExitCode {
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // Opened inside the runtime, the store does its background work there.
    let store = rt.block_on(async { Store::memory() });
    let lock = store
        .lock("summaries")
        .open()
        .expect("default options are valid");

    let mut ok = match show_try_hold(&rt, &lock) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("try_hold demo failed: {e}");
            false
        }
    };

    let shared = Arc::new(Shared {
        keys: KEYS.iter().map(|_| KeyLog::default()).collect(),
        errors: AtomicUsize::new(0),
        end: Instant::now() + RUN_FOR,
    });
    let threads: Vec<_> = (0..THREAD_HOLDERS)
        .map(|h| {
            let (lock, shared) = (lock.clone(), shared.clone());
            thread::spawn(move || thread_holder(h, lock, shared))
        })
        .collect();
    let tasks: Vec<_> = (THREAD_HOLDERS..THREAD_HOLDERS + TASK_HOLDERS)
        .map(|h| rt.spawn(task_holder(h, lock.clone(), shared.clone())))
        .collect();
    for t in threads {
        if t.join().is_err() {
            eprintln!("a holder thread panicked");
            ok = false;
        }
    }
    rt.block_on(async {
        for t in tasks {
            if t.await.is_err() {
                eprintln!("a holder task panicked");
                ok = false;
            }
        }
    });

    ok &= match rt.block_on(show_manual(&store)) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("manual lease demo failed: {e}");
            false
        }
    };
    ok &= check(&shared);
    rt.block_on(store.close());
    println!(
        "{} in {:.2?}",
        if ok {
            "all checks passed"
        } else {
            "CHECKS FAILED"
        },
        started.elapsed()
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
