//! The hold cycle in Rust, measured next to the same cycle through the Node
//! binding by `make bench-node` (bindings-node/bench/hold-cycle.mjs) and
//! through Kotlin and Java by `make bench-jvm`: `lock.begin` +
//! `holding.end` on one key, uncontended, on the embedded store and on the
//! server store at the URL given, driven from the main thread with
//! `block_on` on the core's process runtime (where the Node and JVM
//! bindings' calls run too). Prints one JSON line: microseconds per cycle.
//!
//! `cargo run --release -p leasehold-bench --bin hold_cycle -- CYCLES [URL]`

use std::time::Instant;

use leasehold::remote::ConnectOptions;
use leasehold::{HoldOptions, Store};

/// Microseconds per `begin` + `end` of one key, after a warm-up of a tenth as many.
async fn cycle(store: &Store, cycles: u32) -> leasehold::Result<f64> {
    let lock = store.lock("bench-rust").open()?;
    let options = HoldOptions::default();
    for _ in 0..cycles / 10 {
        lock.begin("k", &options).await?.end().await?;
    }
    let started = Instant::now();
    for _ in 0..cycles {
        lock.begin("k", &options).await?.end().await?;
    }
    Ok(started.elapsed().as_secs_f64() * 1e6 / f64::from(cycles))
}

fn main() -> leasehold::Result<()> {
    let mut args = std::env::args().skip(1);
    let cycles: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let url = args.next();
    let runtime = leasehold::runtime::process_runtime();
    let embedded = runtime.block_on(async {
        let store = Store::memory();
        let us = cycle(&store, cycles).await;
        store.close().await;
        us
    })?;
    let server = match url {
        Some(url) => Some(runtime.block_on(async {
            let store = Store::connect(&url, ConnectOptions::default()).await?;
            let us = cycle(&store, cycles).await;
            store.close().await;
            us
        })?),
        None => None,
    };
    let server = server.map_or("null".to_owned(), |us| format!("{us:.3}"));
    println!("{{\"embedded_us\": {embedded:.3}, \"server_us\": {server}}}");
    Ok(())
}
