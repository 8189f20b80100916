//! Leasehold's shared specification tests.
//!
//! - [`scenario`]: the scenario format that every language's runner loads
//!   from `spec-tests/scenarios/*.json` (schema: `spec-tests/schema.json`).
//! - [`runner`]: the Rust runner of those scenarios, on the embedded store and
//!   a virtual clock.
//! - [`conformance`]: the checks every store driver must pass, reusable by
//!   the tests of each driver (embedded, server, distributed engine).

pub mod conformance;
pub mod runner;
pub mod scenario;
