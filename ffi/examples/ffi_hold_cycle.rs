//! The hold cycle in Rust, measured the way the Go binding runs it: the
//! blocking `Lock::hold` (begin and end each `block_on` the process's
//! runtime from a thread outside it), on one uncontended key, on the
//! embedded store and on a server store this program starts.
//!
//! `cargo run --release -p leasehold-ffi --example ffi_hold_cycle -- PATH/TO/leasehold [ITERATIONS]`
//! prints `rust embedded N ns/op` and `rust server N ns/op` (`make bench-go`
//! runs it next to `go test -bench HoldCycle` and prints the ratio).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leasehold::remote::ConnectOptions;
use leasehold::{runtime, Error, Store};

/// Nanoseconds per cycle of `lock.hold("k", …)` over `n` cycles, after a warm-up.
fn cycle(store: &Store, n: u32) -> f64 {
    let lock = store
        .lock("bench")
        .ttl(Duration::from_secs(10))
        .open()
        .expect("the lock opens");
    let once = || {
        lock.hold("k", |lease| Ok::<_, Error>(lease.fence()))
            .expect("the hold works")
    };
    for _ in 0..n / 10 {
        once();
    }
    let start = Instant::now();
    for _ in 0..n {
        once();
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let server = args
        .next()
        .expect("usage: ffi_hold_cycle PATH/TO/leasehold [ITERATIONS]");
    let n: u32 = args
        .next()
        .map_or(200_000, |s| s.parse().expect("a number"));

    let embedded = Store::memory();
    println!("rust embedded {:.0} ns/op", cycle(&embedded, n));

    let dir = std::env::temp_dir().join(format!("leasehold-bench-{}", std::process::id()));
    let mut child = Command::new(server)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    let stdout = child.stdout.take().expect("its stdout");
    let addr = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("listening on ").map(str::to_owned))
        .expect("the server says where it listens");
    let url = format!("leasehold://{}", addr.trim());
    let store = runtime::process_runtime()
        .block_on(Store::connect(&url, ConnectOptions::default()))
        .expect("the server store connects");
    println!("rust server {:.0} ns/op", cycle(&store, (n / 10).max(1)));
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
