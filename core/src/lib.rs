//! Leasehold: leases and fenced locks, one core for every store and language.
//!
//! A [`Store`] grants leases on keys of named locks. [`Lock::hold`] runs a
//! function while holding a key (renewing it where the store needs it, and
//! saying at once if it was lost); [`Store::try_acquire`] and
//! [`Store::acquire`] give manual leases the caller extends and releases.
//! Every lease carries a fence that only grows.
//!
//! ```
//! use std::time::Duration;
//! use leasehold::Store;
//!
//! let store = Store::memory();
//! let summaries = store.lock("summaries").ttl(Duration::from_secs(30)).open()?;
//! summaries.hold("chat-1", |lease| {
//!     println!("summarising with fence {}", lease.fence());
//!     Ok::<_, leasehold::Error>(())
//! })?;
//! # Ok::<(), leasehold::Error>(())
//! ```

// `duration`, `give_up`, `names` and `runtime` are plumbing public for
// Leasehold's own crates (the bindings, their bridge, the server), so that
// every language parses, names and gives up alike; they are not the API
// offered to users, so they are hidden from its docs.
pub mod clock;
mod connect;
mod deadline;
pub mod driver;
#[doc(hidden)]
pub mod duration;
mod engine;
mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod fence;
#[doc(hidden)]
pub mod give_up;
mod group;
pub mod hashed;
mod held;
mod identity;
pub mod idgen;
mod ids;
mod lease;
mod lock;
mod loss;
mod loss_channel;
mod manual;
mod memory;
#[doc(hidden)]
pub mod names;
pub mod overview;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod remote;
mod renewal;
#[doc(hidden)]
pub mod runtime;
pub mod slots;
mod store;
#[cfg(feature = "internals")]
pub mod table;
#[cfg(not(feature = "internals"))]
mod table;

pub use connect::{is_etcd_url, is_postgres_url, store_kind, ConnectOptions};
pub use engine::{HoldOptions, Holding};
pub use error::{Error, ErrorKind, Result};
pub use held::{Held, HeldView};
pub use identity::{Identity, IDENTITY_MAX};
pub use ids::{GroupId, LeaseId, RequestId};
pub use lease::Lease;
pub use lock::{Lock, LockBuilder};
pub use loss::LossReason;
pub use manual::ManualLease;
pub use memory::{MemoryDriver, MemoryOptions};
pub use store::Store;
pub use tokio_util::sync::CancellationToken;
