//! Unique 64-bit IDs on slot leases (IDGEN): the ID generator machine
//! slots exist for.
//!
//! A generator holds one slot lease of a namespace and issues IDs of
//! timestamp | node | sequence in the namespace's [`IdLayout`]. They are
//! unique by construction, whatever the clocks say:
//!
//! - a holder issues only ticks whose start lies in (floor, ceiling] of its
//!   lease; the store gives the slot's next holder a floor at or above the
//!   largest tick issued (a release passes it on, SLOT-05) or at the ceiling
//!   (an expiry, SLOT-06), so two holders of one slot never share a tick;
//! - the node bits differ between slots, and one generator's IDs strictly
//!   increase, one packed counter issuing them (IDGEN-03);
//! - a generator is sealed in the same word it issues from before it
//!   releases, so nothing is issued after the floor it passes on was read.
//!
//! Time is the store's, tracked on the local monotonic clock from the
//! lease's answers: a client whose wall clock is off issues neither early
//! nor past its ceiling. `docs/ids.md` says more.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> leasehold::Result<()> {
//! let store = leasehold::Store::memory();
//! let ids = store.ids("order-ids").open().await?;
//! let first = ids.next()?;
//! let more = ids.take(100).await?;
//! assert!(more.iter().all(|&id| id > first));
//! let parts = ids.layout().parts(first);
//! assert_eq!(parts.node, ids.node());
//! ids.close().await?;
//! # Ok(())
//! # }
//! ```

mod generator;
mod issuer;
mod layout;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod mutants;
#[cfg(test)]
mod tests;

pub use generator::{IdGenerator, IdsBuilder, DEFAULT_MAX_LEAD, DEFAULT_OWNER_KEY};
pub use layout::{IdLayout, IdParts, DEFAULT_EPOCH_MS, MAX_ID_BITS, MAX_TICK_MS};
