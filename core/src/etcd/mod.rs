//! The etcd store: Leasehold's leases on an etcd v3 cluster, for when one
//! machine is not enough (DIST-01..08). `docs/etcd.md` gives the recipe:
//! the keys, and the etcd operations behind every driver call.
//!
//! ```no_run
//! # async fn f() -> leasehold::Result<()> {
//! use leasehold::{ConnectOptions, Store};
//! let store = Store::connect("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/leasehold", ConnectOptions::default()).await?;
//! # Ok(())
//! # }
//! ```

mod book;
mod calls;
mod driver;
mod errors;
mod keys;
mod line;
mod members;
mod slots;
mod target;
mod version;
mod watcher;

pub use driver::EtcdDriver;
pub use target::{EtcdTarget, DEFAULT_PORT, DEFAULT_PREFIX};
