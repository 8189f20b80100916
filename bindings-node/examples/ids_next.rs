//! The ID generator's non-waiting calls in Rust, measured next to the same
//! calls through the Node binding by `make bench-node-ids`
//! (bench/ids.mjs): `ids.next()` per call and `ids.next_into(&mut buf)`
//! per ID, in the default layout (41/10/12 ms), on the embedded store.
//! Each measurement opens a generator of its own namespace with a lead of
//! 9 s, so that no call waits for the clock (the default layout issues at
//! most 4,096 IDs per millisecond). Prints one JSON line.
//!
//! `cargo run --release -p leasehold-node --example ids_next -- CALLS BATCHES BATCH`

use std::time::{Duration, Instant};

use leasehold::idgen::{IdGenerator, IdLayout};
use leasehold::Store;

/// How far ahead of the store's clock the measured generators may issue.
const LEAD: Duration = Duration::from_secs(9);

async fn open(store: &Store, name: &str) -> leasehold::Result<IdGenerator> {
    store
        .ids(name)
        .layout(IdLayout::DEFAULT)
        .ttl(Duration::from_secs(30))
        .max_lead(LEAD)
        .open()
        .await
}

fn main() -> leasehold::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: usize| args.next().and_then(|n| n.parse().ok()).unwrap_or(default);
    let (calls, batches, batch) = (arg(1_000_000), arg(500), arg(4096));
    let runtime = leasehold::runtime::process_runtime();
    let (next_ns, batch_ns) = runtime.block_on(async {
        let store = Store::memory();
        let ids = open(&store, "bench-rust-next").await?;
        let mut last = 0;
        let started = Instant::now();
        for _ in 0..calls {
            last = ids.next()?;
        }
        let next_ns = started.elapsed().as_secs_f64() * 1e9 / calls as f64;
        assert!(last > 0);
        ids.close().await?;

        let ids = open(&store, "bench-rust-batch").await?;
        let mut buf = vec![0; batch];
        let mut issued = 0;
        let started = Instant::now();
        for _ in 0..batches {
            issued += ids.next_into(&mut buf)?;
        }
        let batch_ns = started.elapsed().as_secs_f64() * 1e9 / issued as f64;
        ids.close().await?;
        store.close().await;
        Ok::<_, leasehold::Error>((next_ns, batch_ns))
    })?;
    println!(
        "{{\"layout\": \"{}\", \"next_ns\": {next_ns:.1}, \"next_into_ns_per_id\": {batch_ns:.2}}}",
        IdLayout::DEFAULT.describe()
    );
    Ok(())
}
