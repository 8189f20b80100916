//! Machine slot leases: a namespace has `limit` slots, and an
//! owner leases one at a time to derive a node number for an ID generator.
//!
//! Every slot lease carries a floor and a ceiling in milliseconds of the
//! store's clock: a holder issues timestamps above its floor and never past
//! its ceiling, so two holders of one slot, one after the other, never issue
//! the same timestamp (SLOT-05, SLOT-06).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> leasehold::Result<()> {
//! use leasehold::slots::{AcquireResult, Owner};
//! let store = leasehold::Store::memory();
//! let slots = store.slots("order-ids").limit(1024).open()?;
//! let owner = Owner::new("order-service")?;
//! let AcquireResult::Leased(lease) = slots.acquire(&owner, None).await? else {
//!     panic!("a new namespace has free slots");
//! };
//! assert_eq!(lease.slot(), 0);
//! let lease = slots.renew(&lease).await?.expect("still ours");
//! assert!(slots.release(&lease, lease.floor() + 1).await?);
//! # Ok(())
//! # }
//! ```

mod handle;
mod holding;
#[cfg(any(feature = "etcd", feature = "postgres"))]
pub(crate) mod records;
mod table;
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::idgen::IdLayout;
use crate::names;

pub use handle::{Slots, SlotsBuilder, DEFAULT_LIMIT, DEFAULT_TIMEOUT, DEFAULT_TOLERANCE};
pub(crate) use holding::HeldSlotCell;
pub use holding::{HeldSlot, SlotHolding};
#[cfg(any(feature = "etcd", feature = "postgres"))]
pub(crate) use table::Slot;
pub use table::SlotTable;

/// The most slots a namespace may have.
pub const MAX_LIMIT: u32 = 65_536;

/// The longest tolerance a namespace may have.
pub const MAX_TOLERANCE: Duration = Duration::from_secs(3600);

/// Who leases a slot: a stable key (a service, a deployment) and the
/// instance id of one process of it.
///
/// An owner holds at most one slot of a namespace. A new process of the
/// same key gets a new instance id and prefers the slot its key held last.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    key: String,
    instance: String,
}

impl Owner {
    /// An owner with key `key` and a fresh random instance id.
    pub fn new(key: &str) -> Result<Owner> {
        Owner::with_instance(key, &format!("{:032x}", crate::ids::RequestId::random().0))
    }

    /// An owner with key `key` and instance id `instance` (both non-empty,
    /// at most [`names::MAX_NAME_BYTES`]).
    pub fn with_instance(key: &str, instance: &str) -> Result<Owner> {
        names::check("owner key", key)?;
        names::check("owner instance", instance)?;
        Ok(Owner {
            key: key.to_owned(),
            instance: instance.to_owned(),
        })
    }

    /// The stable key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// This process's instance id.
    pub fn instance(&self) -> &str {
        &self.instance
    }
}

/// What a namespace's first use fixes (SLOT-02).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceSpec {
    /// The slots are `[0, limit)`; 1 to [`MAX_LIMIT`].
    pub limit: u32,
    /// How far a lease's ceiling lies beyond its expiry.
    pub tolerance: Duration,
    /// What clients add to a slot to get their node number; it does not
    /// change which slot is chosen.
    pub offset: u32,
    /// The bit layout of the namespace's IDs (IDGEN). Metadata written
    /// before layouts existed reads as the default layout.
    #[serde(default)]
    pub layout: IdLayout,
}

impl NamespaceSpec {
    /// Checks the ranges: `limit` 1 to [`MAX_LIMIT`], `tolerance` at most
    /// [`MAX_TOLERANCE`], node numbers (`offset + slot`) within `u32`, and
    /// the layout ([`IdLayout::check`]).
    pub fn check(&self) -> Result<()> {
        if self.limit == 0 || self.limit > MAX_LIMIT {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "a slot limit must lie from 1 to {MAX_LIMIT}, got {}",
                    self.limit
                ),
            ));
        }
        if self.tolerance > MAX_TOLERANCE {
            return Err(Error::new(
                ErrorKind::InvalidTtl,
                format!(
                    "a slot tolerance must be at most 1h, got {}",
                    crate::duration::show(self.tolerance)
                ),
            ));
        }
        self.layout.check()?;
        if self.offset.checked_add(self.limit).is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "slot offset {} plus limit {} overflows a node number",
                    self.offset, self.limit
                ),
            ));
        }
        Ok(())
    }
}

/// A request for a slot, as a driver takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRequest {
    /// The namespace.
    pub namespace: String,
    /// Who asks.
    pub owner: Owner,
    /// The namespace's parameters, checked against its first use.
    pub spec: NamespaceSpec,
    /// The lease expires this long after the store's now.
    pub ttl: Duration,
    /// The slot to try after one this owner holds already.
    pub preferred: Option<u32>,
}

/// A lease on one slot, as last returned by the store. Times are
/// milliseconds since the Unix epoch on the store's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotLease {
    pub(crate) namespace: String,
    pub(crate) owner: Owner,
    pub(crate) slot: u32,
    pub(crate) offset: u32,
    pub(crate) fence: u64,
    pub(crate) floor: u64,
    pub(crate) expires_at: u64,
    pub(crate) ceiling: u64,
}

/// A slot lease taken apart, to be kept as a plain value and made into a
/// [`SlotLease`] again ([`SlotLease::from_parts`]): for callers whose leases
/// travel as values, as the Java slot store SPI passes them. The store checks
/// the owner and the fence of whatever lease it is given (SLOT-04, SLOT-05),
/// so a lease made up from parts renews or releases only what that owner
/// holds under that fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotLeaseParts {
    /// The namespace.
    pub namespace: String,
    /// The owner.
    pub owner: Owner,
    /// The slot.
    pub slot: u32,
    /// The namespace's offset: the node is `slot + offset`.
    pub offset: u32,
    /// The fence.
    pub fence: u64,
    /// The floor (ms since the Unix epoch, the store's clock).
    pub floor: u64,
    /// The expiry (ms).
    pub expires_at: u64,
    /// The ceiling (ms).
    pub ceiling: u64,
}

impl SlotLease {
    /// The lease of `parts`; a namespace that is not a name, or a node
    /// number (`slot + offset`) past `u32`, fails `InvalidArgument` /
    /// `EmptyName`.
    pub fn from_parts(parts: SlotLeaseParts) -> Result<SlotLease> {
        names::check("slot namespace", &parts.namespace)?;
        if parts.slot.checked_add(parts.offset).is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "slot {} plus offset {} overflows a node number",
                    parts.slot, parts.offset
                ),
            ));
        }
        Ok(SlotLease {
            namespace: parts.namespace,
            owner: parts.owner,
            slot: parts.slot,
            offset: parts.offset,
            fence: parts.fence,
            floor: parts.floor,
            expires_at: parts.expires_at,
            ceiling: parts.ceiling,
        })
    }

    /// The lease taken apart.
    pub fn into_parts(self) -> SlotLeaseParts {
        SlotLeaseParts {
            namespace: self.namespace,
            owner: self.owner,
            slot: self.slot,
            offset: self.offset,
            fence: self.fence,
            floor: self.floor,
            expires_at: self.expires_at,
            ceiling: self.ceiling,
        }
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The owner.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The slot, in `[0, limit)`.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The node number for IDs: the slot plus the namespace's offset.
    pub fn node(&self) -> u32 {
        self.slot + self.offset
    }

    /// The fence: larger than every fence the store gave before (SLOT-08).
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// Issue only timestamps above this one: the previous holder may have
    /// issued up to it (SLOT-05, SLOT-06).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// When the lease expires unless renewed.
    pub fn expires_at(&self) -> u64 {
        self.expires_at
    }

    /// Issue no timestamp past this one: the next holder's floor may be it.
    pub fn ceiling(&self) -> u64 {
        self.ceiling
    }
}

/// Where a store keeps what its slot leases need to survive a restart: the
/// namespaces' parameters (SLOT-02) and a ceiling above every ceiling it
/// gave, which starts every slot's floor after the restart (SLOT-06).
///
/// The store calls it under its lock, before it answers; a failure fails
/// the call (`Internal`), and nothing changes.
pub trait SlotJournal: Send + 'static {
    /// Records namespace `name`'s parameters at its first use.
    fn record_namespace(&mut self, name: &str, spec: NamespaceSpec) -> Result<()>;

    /// Makes sure that a restarted store starts every slot at or above `ceiling`.
    fn cover_ceiling(&mut self, ceiling: u64) -> Result<()>;
}

/// What a store's [`SlotJournal`] kept from its last run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Every slot's floor starts here: at or above every ceiling the last run gave.
    pub base_floor: u64,
    /// The namespaces and the parameters their first use fixed.
    pub namespaces: Vec<(String, NamespaceSpec)>,
}

/// The answer to an acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireResult {
    /// A slot is the owner's.
    Leased(SlotLease),
    /// Every slot is held: an outcome, not a failure (SLOT-01).
    Exhausted,
}

impl AcquireResult {
    /// The lease, if there is one.
    pub fn lease(self) -> Option<SlotLease> {
        match self {
            AcquireResult::Leased(lease) => Some(lease),
            AcquireResult::Exhausted => None,
        }
    }
}
