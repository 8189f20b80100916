//! The PostgreSQL store: Leasehold's leases on the database a team already
//! runs (PG-01..08). `docs/postgres.md` gives the schema and the SQL behind
//! every driver call.
//!
//! ```no_run
//! # async fn f() -> leasehold::Result<()> {
//! use leasehold::{ConnectOptions, Store};
//! let url = "postgres://app@db1,db2/jobs?target_session_attrs=read-write";
//! let store = Store::connect(url, ConnectOptions::default()).await?;
//! # Ok(())
//! # }
//! ```

mod answer;
mod book;
mod calls;
mod driver;
mod line;
mod listener;
mod schema;
mod slots;
mod target;

pub use driver::PostgresDriver;
pub use target::{PostgresTarget, DEFAULT_POOL_SIZE, DEFAULT_SCHEMA};
