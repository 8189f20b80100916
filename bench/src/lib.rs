//! Benchmarks and demos of Leasehold's stores.
//!
//! - `benches/embedded.rs` (criterion): the hold cycle on the embedded store,
//!   the same at the lease-table level, and the contended handoff.
//! - `src/bin/lease_memory.rs`: memory per held lease with 1,000,000 leases.
//! - `src/bin/demo.rs`: holders contending for a few keys, with checks.
//!
//! How to run them and what they measured: `docs/benchmarks.md`.

/// `n` distinct keys, `"{prefix}-0"` to `"{prefix}-{n-1}"`.
///
/// ```
/// assert_eq!(leasehold_bench::keys("chat", 2), ["chat-0", "chat-1"]);
/// ```
pub fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}
