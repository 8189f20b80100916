//! Criterion benchmarks of the embedded store (`Store::memory()`).
//!
//! - `embedded/*`: the uncontended hold cycle (grant + release) through the
//!   public async API, `lock.begin` + `holding.end` and `hold_async`, on one
//!   key and on distinct keys; and the same cycle from several tasks at once,
//!   each on its own keys.
//! - `table/*`: the same cycle on a bare `LeaseTable`, to show what the driver
//!   and the holder engine add.
//! - `ids/*`: drawing one request or lease id from the OS random source.
//! - `contended/*`: N tasks on one key; the time reported is per handoff,
//!   from the moment the holder starts its release to the moment the next
//!   waiter's `begin` returns.
//!
//! Every async benchmark runs on a tokio multi-thread runtime with 2 workers;
//! its timed loop runs in `block_on` on the bench thread. Run with
//! `cargo bench -p leasehold-bench --bench embedded` (see docs/benchmarks.md).

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_main, BenchmarkId, Criterion};
use leasehold::clock::Clock;
use leasehold::driver::HoldAnswer;
use leasehold::fence::Fences;
use leasehold::table::{HoldRequest, KeyName, LeaseTable, Limits};
use leasehold::{HoldOptions, LeaseId, Lock, RequestId, Store};
use leasehold_bench::keys;
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

/// How many keys the "distinct keys" benchmarks cycle through.
const DISTINCT: usize = 4096;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// An embedded store whose background work runs on `rt`, and its lock "bench".
fn open(rt: &Runtime) -> (Store, Lock) {
    let store = rt.block_on(async { Store::memory() });
    let lock = store
        .lock("bench")
        .open()
        .expect("default options are valid");
    (store, lock)
}

/// (a) The uncontended hold cycle through the public async API.
fn uncontended(c: &mut Criterion) {
    let rt = runtime();
    let (_store, lock) = open(&rt);
    let keys = keys("key", DISTINCT);
    let options = HoldOptions::default();
    let mut group = c.benchmark_group("embedded");
    for (label, n) in [("one_key", 1), ("distinct_keys", DISTINCT)] {
        group.bench_function(BenchmarkId::new("begin_end", label), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for i in 0..iters {
                        let key = &keys[i as usize % n];
                        let holding = lock.begin(key, &options).await.expect("granted");
                        black_box(holding.lease().fence());
                        holding.end().await.expect("released");
                    }
                    start.elapsed()
                })
            })
        });
        group.bench_function(BenchmarkId::new("hold_async", label), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for i in 0..iters {
                        let key = &keys[i as usize % n];
                        let fence = lock
                            .hold_async(key, |lease| async move {
                                Ok::<_, leasehold::Error>(lease.fence())
                            })
                            .await
                            .expect("held");
                        black_box(fence);
                    }
                    start.elapsed()
                })
            })
        });
    }
    // The same cycle run inside a task on the runtime (where an async
    // program calls it), rather than in `block_on` on an outside thread.
    for (label, n) in [("one_key", 1), ("distinct_keys", DISTINCT)] {
        group.bench_function(BenchmarkId::new("begin_end_in_task", label), |b| {
            b.iter_custom(|iters| rt.block_on(parallel_cycles(&lock, 1, iters, n)))
        });
    }
    // The same cycle from several tasks at once, each on its own keys: the
    // time is per cycle, amortised over the tasks (lower than `begin_end`
    // only as far as the store lets distinct keys proceed in parallel).
    for tasks in [2usize, 16] {
        let id = BenchmarkId::new("begin_end_parallel_distinct_keys", format!("{tasks}_tasks"));
        group.bench_function(id, |b| {
            b.iter_custom(|iters| rt.block_on(parallel_cycles(&lock, tasks, iters, DISTINCT)))
        });
    }
    group.finish();
}

/// Runs at least `iters` hold cycles spread over `tasks` spawned tasks, each
/// on its own `keys / tasks` keys (at least one), and returns the wall time
/// scaled to exactly `iters` cycles.
async fn parallel_cycles(lock: &Lock, tasks: usize, iters: u64, keys: usize) -> Duration {
    let per_task = iters.div_ceil(tasks as u64);
    // The keys are made before the clock starts.
    let key_sets: Vec<Vec<String>> = (0..tasks)
        .map(|t| leasehold_bench::keys(&format!("task-{t}"), (keys / tasks).max(1)))
        .collect();
    let mut set = JoinSet::new();
    let start = Instant::now();
    for keys in key_sets {
        let lock = lock.clone();
        set.spawn(async move {
            let options = HoldOptions::default();
            for i in 0..per_task {
                let key = &keys[i as usize % keys.len()];
                let holding = lock.begin(key, &options).await.expect("granted");
                black_box(holding.lease().fence());
                holding.end().await.expect("released");
            }
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("a cycle task panicked");
    }
    let elapsed = start.elapsed();
    elapsed.mul_f64(iters as f64 / (per_task * tasks as u64) as f64)
}

fn new_table() -> LeaseTable {
    let fences = Fences::wall_clock();
    LeaseTable::new(fences, Limits::default())
}

/// One hold + release on a bare table; `Granted` is the only possible answer
/// since every key is free.
fn table_cycle(table: &mut LeaseTable, request: HoldRequest, now: leasehold::clock::Instant) {
    let HoldAnswer::Granted(grant) = table.hold(request, now).expect("hold") else {
        panic!("a free key was not granted");
    };
    black_box(grant.fence);
    table.release(grant.lease_id, now).expect("release");
}

/// (b) The same cycle at the lease-table level: no driver, no engine, no runtime.
fn table(c: &mut Criterion) {
    let keys = keys("key", DISTINCT);
    let lock: Arc<str> = Arc::from("bench");
    let clock = Clock::monotonic();
    let mut group = c.benchmark_group("table");
    for (label, n) in [("one_key", 1), ("distinct_keys", DISTINCT)] {
        // The request built as the engine builds it: the key copied into a
        // new `Arc<str>`, a request id from the OS random source.
        let mut table = new_table();
        group.bench_function(BenchmarkId::new("hold_release", label), |b| {
            let mut i = 0usize;
            b.iter(|| {
                let request = HoldRequest {
                    name: KeyName::new(lock.clone(), keys[i % n].as_str()),
                    request_id: RequestId::random(),
                    ttl: None,
                    max_hold: None,
                    queue: true,
                    group: None,
                };
                i += 1;
                table_cycle(&mut table, request, clock.now());
            })
        });
    }
    // The table's own work: names built beforehand and sequential request ids.
    // (The table still draws each lease id from the OS random source.)
    let names: Vec<KeyName> = keys
        .iter()
        .map(|k| KeyName::new(lock.clone(), k.as_str()))
        .collect();
    let mut table = new_table();
    group.bench_function(
        BenchmarkId::new("hold_release_prebuilt", "distinct_keys"),
        |b| {
            let mut i = 0u128;
            b.iter(|| {
                let request = HoldRequest {
                    name: names[i as usize % DISTINCT].clone(),
                    request_id: RequestId(i),
                    ttl: None,
                    max_hold: None,
                    queue: true,
                    group: None,
                };
                i += 1;
                table_cycle(&mut table, request, clock.now());
            })
        },
    );
    group.finish();
}

/// The ids every hold draws from the OS random source (LOCK-08): a request
/// id in the engine, a lease id in the table.
fn ids(c: &mut Criterion) {
    let mut group = c.benchmark_group("ids");
    group.bench_function("RequestId::random", |b| b.iter(RequestId::random));
    group.bench_function("LeaseId::random", |b| b.iter(LeaseId::random));
    group.finish();
}

/// What the holders of the contended key share: when the last release
/// started, and the handoffs measured so far.
#[derive(Default)]
struct Handoffs {
    released_at: Option<Instant>,
    total: Duration,
    count: u64,
}

/// (c) N tasks on one key; per-handoff latency.
fn contended(c: &mut Criterion) {
    let rt = runtime();
    let (_store, lock) = open(&rt);
    let mut group = c.benchmark_group("contended");
    for tasks in [2usize, 16] {
        group.bench_function(BenchmarkId::new("handoff", format!("{tasks}_tasks")), |b| {
            b.iter_custom(|iters| rt.block_on(handoffs(&lock, tasks, iters)))
        });
    }
    group.finish();
}

/// `tasks` tasks take turns on one key until `iters` handoffs were measured;
/// returns the sum of the handoff latencies (release started → next grant).
async fn handoffs(lock: &Lock, tasks: usize, iters: u64) -> Duration {
    let shared = Arc::new(Mutex::new(Handoffs::default()));
    let mut set = JoinSet::new();
    for _ in 0..tasks {
        let lock = lock.clone();
        let shared = shared.clone();
        set.spawn(async move {
            let options = HoldOptions::default();
            loop {
                let holding = lock.begin("handoff", &options).await.expect("granted");
                let granted = Instant::now();
                let done = {
                    // Only the holder of the key touches `shared`: no contention.
                    let mut s = shared.lock().expect("not poisoned");
                    if s.count < iters {
                        if let Some(released) = s.released_at.take() {
                            s.total += granted - released;
                            s.count += 1;
                        }
                    }
                    let done = s.count >= iters;
                    if !done {
                        s.released_at = Some(Instant::now());
                    }
                    done
                };
                holding.end().await.expect("released");
                if done {
                    return;
                }
            }
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("a handoff task panicked");
    }
    let total = shared.lock().expect("not poisoned").total;
    total
}

/// Every benchmark of this file, with short runs by default (the machine is
/// shared); the command line (`--warm-up-time`, `--measurement-time`, a
/// filter) overrides.
fn benches() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    uncontended(&mut c);
    table(&mut c);
    ids(&mut c);
    contended(&mut c);
}

criterion_main!(benches);
