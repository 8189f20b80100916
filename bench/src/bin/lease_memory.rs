//! Memory used per held lease, with 1,000,000 leases held (or the count given
//! as the first argument), measured with a counting global allocator:
//!
//! 1. a bare `LeaseTable` holding N keys, each granted with ttl 10 s;
//! 2. the same table after N hold + release cycles (ttl 10 s), nothing held:
//!    what released leases leave behind until their ttl would have passed;
//! 3. the embedded store (`Store::memory()`), N `Holding`s from `lock.begin`
//!    kept alive: table, driver, holder engine and one keeper task each;
//! 4. the client of the server store, N `Holding`s from one
//!    `lock.begin_many` kept alive (the server, `target/release/leasehold`
//!    or `$LEASEHOLD_BIN`, runs in a process of its own and is not counted).
//!
//! Beside each, the live blocks per lease by size (rounded up to 16 bytes),
//! the biggest first: what each of the lease's allocations is, to be read
//! next to the types' sizes.
//!
//! "Bytes" are the bytes requested from the allocator and still live; the
//! allocator's own per-block overhead is not in them (the block count per
//! lease is printed to estimate it), and the resident set size (RSS) grown
//! meanwhile is printed beside them for comparison.
//!
//! Run: `cargo run --release -p leasehold-bench --bin lease_memory [-- N]`.
//! Each measurement runs in a child process of its own (`-- N table`,
//! `-- N churn`, `-- N embedded`, `-- N remote` run one).

// A `GlobalAlloc` impl is unsafe by nature; this binary is the only place in
// the crate that allows unsafe code (the crate denies it), and the unsafe code
// only forwards to `System` and counts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use leasehold::clock::Clock;
use leasehold::driver::HoldAnswer;
use leasehold::fence::Fences;
use leasehold::remote::ConnectOptions;
use leasehold::table::{HoldRequest, KeyName, LeaseTable, Limits};
use leasehold::{HoldOptions, Holding, RequestId, Store};

/// Bytes requested and not yet freed.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Blocks allocated and not yet freed.
static LIVE_BLOCKS: AtomicIsize = AtomicIsize::new(0);
/// The classes of [`BY_SIZE`]: blocks of up to 16 * (CLASSES - 1) bytes
/// by size rounded up to 16, the larger ones in the last.
const CLASSES: usize = 33;
/// Live blocks by size class.
static BY_SIZE: [AtomicIsize; CLASSES] = [const { AtomicIsize::new(0) }; CLASSES];

fn class(size: usize) -> usize {
    size.div_ceil(16).min(CLASSES - 1)
}

fn count(size: usize, blocks: isize) {
    LIVE_BYTES.fetch_add(blocks * size as isize, Ordering::Relaxed);
    LIVE_BLOCKS.fetch_add(blocks, Ordering::Relaxed);
    BY_SIZE[class(size)].fetch_add(blocks, Ordering::Relaxed);
}

/// The system allocator, counting live bytes and blocks.
struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counting touches
// only atomics and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which we pass on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size(), 1);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size(), 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (thus by `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(layout.size(), -1);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(layout.size(), -1);
            count(new_size, 1);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What the allocator and the kernel say at one moment.
#[derive(Clone, Copy)]
struct Snapshot {
    bytes: isize,
    blocks: isize,
    by_size: [isize; CLASSES],
    rss: Option<u64>,
}

fn snapshot() -> Snapshot {
    Snapshot {
        bytes: LIVE_BYTES.load(Ordering::SeqCst),
        blocks: LIVE_BLOCKS.load(Ordering::SeqCst),
        by_size: std::array::from_fn(|c| BY_SIZE[c].load(Ordering::SeqCst)),
        rss: rss_bytes(),
    }
}

/// The resident set size from /proc/self/statm (Linux; `None` elsewhere).
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn report(what: &str, n: usize, before: Snapshot, after: Snapshot, took: Duration) {
    let bytes = after.bytes - before.bytes;
    let blocks = after.blocks - before.blocks;
    let per = bytes as f64 / n as f64;
    let rss = match (before.rss, after.rss) {
        (Some(b), Some(a)) => format!("{:.0} B/lease RSS growth", (a as f64 - b as f64) / n as f64),
        _ => "RSS unknown".to_owned(),
    };
    println!(
        "{what}: {per:.1} B/lease live ({:.1} MiB for {n}), {:.2} blocks/lease, {rss}; took {:.2?}",
        bytes as f64 / (1024.0 * 1024.0),
        blocks as f64 / n as f64,
        took,
    );
    let mut classes: Vec<(usize, f64)> = (0..CLASSES)
        .map(|c| (c, (after.by_size[c] - before.by_size[c]) as f64 / n as f64))
        .filter(|(_, per)| *per >= 0.05)
        .collect();
    classes.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    let shown: Vec<String> = classes
        .iter()
        .map(|(c, per)| match *c {
            c if c == CLASSES - 1 => format!("{per:.2} x >{} B", 16 * (CLASSES - 2)),
            c => format!("{per:.2} x {}-{} B", 16 * c - 15, 16 * c),
        })
        .collect();
    if !shown.is_empty() {
        println!("  blocks per lease by size: {}", shown.join(", "));
    }
}

/// [`report`] for `n` holdings, and the bytes of the caller's vector of them.
fn report_holdings(what: &str, n: usize, before: Snapshot, took: Duration) {
    report(what, n, before, snapshot(), took);
    println!(
        "  plus the caller's Vec<Holding>: {} B/lease (size_of::<Holding>())",
        std::mem::size_of::<Holding>()
    );
}

fn new_table() -> LeaseTable {
    let fences = Fences::wall_clock();
    LeaseTable::new(fences, Limits::default())
}

fn request(lock: &std::sync::Arc<str>, i: usize) -> HoldRequest {
    HoldRequest {
        name: KeyName::new(lock.clone(), format!("key-{i}")),
        request_id: RequestId::random(),
        ttl: Some(Duration::from_secs(10)),
        max_hold: None,
        queue: true,
        group: None,
    }
}

/// 1. A bare table holding `n` keys with ttl 10 s.
fn table_held(n: usize) {
    let lock: std::sync::Arc<str> = "bench".into();
    let clock = Clock::monotonic();
    let before = snapshot();
    let start = Instant::now();
    let mut table = new_table();
    for i in 0..n {
        match table.hold(request(&lock, i), clock.now()).expect("hold") {
            HoldAnswer::Granted(_) => {}
            other => panic!("a free key was answered {other:?}"),
        }
    }
    let took = start.elapsed();
    assert_eq!(table.held(), n);
    report("table, held (ttl 10s)", n, before, snapshot(), took);
    drop(table);
}

/// 2. A bare table after `n` hold + release cycles with ttl 10 s.
fn table_churned(n: usize) {
    let lock: std::sync::Arc<str> = "bench".into();
    let clock = Clock::monotonic();
    let before = snapshot();
    let start = Instant::now();
    let mut table = new_table();
    for i in 0..n {
        let now = clock.now();
        let HoldAnswer::Granted(grant) = table.hold(request(&lock, i), now).expect("hold") else {
            panic!("a free key was not granted");
        };
        table.release(grant.lease_id, now).expect("release");
    }
    let took = start.elapsed();
    assert_eq!(table.held(), 0);
    report(
        "table, released again (ttl 10s), nothing held",
        n,
        before,
        snapshot(),
        took,
    );
    drop(table);
}

/// A runtime with two threads of its own, as the machine has two cores.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// 3. The embedded store with `n` `Holding`s alive.
fn embedded_held(n: usize) {
    let rt = runtime();
    // The caller's own vector of holdings is allocated before the first
    // snapshot: its n * size_of::<Holding>() bytes are printed apart.
    let mut holdings: Vec<Holding> = Vec::with_capacity(n);
    let before = snapshot();
    let start = Instant::now();
    let store = rt.block_on(async { Store::memory() });
    let lock = store
        .lock("bench")
        .open()
        .expect("default options are valid");
    let options = HoldOptions::default();
    rt.block_on(async {
        for i in 0..n {
            let key = format!("key-{i}");
            holdings.push(lock.begin(&key, &options).await.expect("granted"));
        }
        // Let every keeper task be polled once, as it is in a real program.
        tokio::time::sleep(Duration::from_millis(200)).await;
    });
    let took = start.elapsed();
    report_holdings("embedded store, held (lock.begin)", n, before, took);
    // This runs in a process of its own: ending a million holdings one by
    // one would take seconds and measure nothing, so the process just ends.
    drop(lock);
    std::mem::forget((holdings, store, rt));
}

/// A `leasehold serve` of its own, on a free loopback port, that takes `n`
/// keys on one connection; killed when dropped.
struct Server(std::process::Child, std::path::PathBuf);

impl Server {
    fn start(n: usize) -> (Server, String) {
        let bin = std::env::var_os("LEASEHOLD_BIN")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                let exe = std::env::current_exe().expect("this program's path");
                exe.with_file_name("leasehold")
            });
        let data = std::env::temp_dir().join(format!("lease-memory-{}", std::process::id()));
        std::fs::create_dir_all(&data).expect("a data directory");
        let mut child = std::process::Command::new(&bin)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .args(["--max-keys-per-connection", &n.max(1).to_string()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "start {} ({e}; cargo build --release -p leasehold-server)",
                    bin.display()
                )
            });
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("the server's first line");
        let addr = line
            .split_whitespace()
            .find(|w| w.parse::<std::net::SocketAddr>().is_ok())
            .unwrap_or_else(|| panic!("no address in the server's first line {line:?}"))
            .to_owned();
        (Server(child, data), format!("leasehold://{addr}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

/// 4. The server store's client with `n` `Holding`s alive, from one `begin_many`.
fn remote_held(n: usize) {
    let (server, url) = Server::start(n);
    let rt = runtime();
    let store = rt
        .block_on(Store::connect(&url, ConnectOptions::default()))
        .expect("the server answers");
    let lock = store
        .lock("bench")
        .ttl(Duration::from_secs(30))
        .open()
        .expect("the options are valid");
    // The keys, and the caller's vector of holdings begin_many answers,
    // are made before the first snapshot: the holdings' n *
    // size_of::<Holding>() bytes are printed apart.
    let keys = leasehold_bench::keys("key", n);
    let mut holdings: Vec<Holding> = Vec::with_capacity(n);
    let options = HoldOptions::default();
    let before = snapshot();
    let start = Instant::now();
    rt.block_on(async {
        let taken = lock.begin_many(&keys, &options).await.expect("granted");
        let after_begin = snapshot();
        holdings.extend(taken);
        // The vector begin_many answered was freed by the extend.
        assert!(snapshot().bytes <= after_begin.bytes);
        // Let a renewal round pass, as in a real program.
        tokio::time::sleep(Duration::from_secs(11)).await;
    });
    let took = start.elapsed();
    assert!(holdings.iter().all(|h| !h.lease().lost()));
    report_holdings(
        "server store client, held (lock.begin_many)",
        n,
        before,
        took,
    );
    drop(server);
    drop(lock);
    std::mem::forget((holdings, store, rt));
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = match args.next() {
        Some(arg) => arg.parse().expect("the lease count, a whole number"),
        None => 1_000_000,
    };
    match args.next().as_deref() {
        Some("table") => table_held(n),
        Some("churn") => table_churned(n),
        Some("embedded") => embedded_held(n),
        Some("remote") => remote_held(n),
        Some(other) => panic!("unknown measurement {other:?}: table, churn, embedded or remote"),
        None => {
            println!(
                "leases: {n}; key names \"key-0\"..\"key-{}\", lock \"bench\"",
                n.saturating_sub(1)
            );
            // Each measurement in a process of its own, so that the RSS
            // growth of one is not hidden by memory another freed.
            let me = std::env::current_exe().expect("this program's path");
            for which in ["table", "churn", "embedded", "remote"] {
                let status = std::process::Command::new(&me)
                    .args([n.to_string(), which.to_owned()])
                    .status()
                    .expect("the measurement runs");
                if !status.success() {
                    eprintln!("the {which} measurement failed: {status}");
                    std::process::exit(1);
                }
            }
        }
    }
}
