//! Slot leases: a namespace of numbered slots, the owners that
//! lease them and the leases, as plain values. Which slot an acquire takes
//! and what a renewal or a release changes are the core's
//! (`leasehold::slots`); holding a slot with background renewal and
//! renewing a lease are on the hot path (`natives::slots`).

use std::sync::Arc;

use leasehold::slots::{Owner, SlotLease, SlotLeaseParts, Slots};

use leasehold_bridge::Cancel;

use crate::calls;
use crate::durations;
use crate::errors::NativeError;
use crate::natives::handles;

/// Who leases a slot (`leasehold::slots::Owner`): a stable key and the
/// instance id of one process.
#[derive(uniffi::Record)]
pub struct NativeOwner {
    /// The stable key.
    pub key: String,
    /// This process's instance id.
    pub instance: String,
}

impl From<&Owner> for NativeOwner {
    fn from(owner: &Owner) -> NativeOwner {
        NativeOwner {
            key: owner.key().to_owned(),
            instance: owner.instance().to_owned(),
        }
    }
}

impl TryFrom<NativeOwner> for Owner {
    type Error = leasehold::Error;

    fn try_from(owner: NativeOwner) -> leasehold::Result<Owner> {
        Owner::with_instance(&owner.key, &owner.instance)
    }
}

/// An owner with key `key` and a fresh random instance id; a bad key fails
/// `EmptyName` or `InvalidArgument`.
#[uniffi::export]
pub fn new_owner(key: String) -> Result<NativeOwner, NativeError> {
    Ok(NativeOwner::from(&Owner::new(&key)?))
}

/// Checks an owner given whole: `EmptyName` or `InvalidArgument` for a bad
/// key or instance id.
#[uniffi::export]
pub fn check_owner(owner: NativeOwner) -> Result<(), NativeError> {
    Owner::try_from(owner)?;
    Ok(())
}

/// A lease on one slot as last returned by the store; times in
/// milliseconds since the Unix epoch on the store's clock.
#[derive(uniffi::Record)]
pub struct NativeSlotLease {
    /// The namespace.
    pub namespace: String,
    /// The owner.
    pub owner: NativeOwner,
    /// The slot, in `[0, limit)`.
    pub slot: u32,
    /// The namespace's offset: the node number is `slot + offset`.
    pub offset: u32,
    /// The fence (SLOT-08).
    pub fence: u64,
    /// Issue only timestamps above this one.
    pub floor: u64,
    /// When the lease expires unless renewed.
    pub expires_at: u64,
    /// Issue no timestamp past this one.
    pub ceiling: u64,
}

impl From<SlotLease> for NativeSlotLease {
    fn from(lease: SlotLease) -> NativeSlotLease {
        let p = lease.into_parts();
        NativeSlotLease {
            namespace: p.namespace,
            owner: NativeOwner::from(&p.owner),
            slot: p.slot,
            offset: p.offset,
            fence: p.fence,
            floor: p.floor,
            expires_at: p.expires_at,
            ceiling: p.ceiling,
        }
    }
}

impl TryFrom<NativeSlotLease> for SlotLease {
    type Error = leasehold::Error;

    fn try_from(l: NativeSlotLease) -> leasehold::Result<SlotLease> {
        SlotLease::from_parts(SlotLeaseParts {
            namespace: l.namespace,
            owner: Owner::try_from(l.owner)?,
            slot: l.slot,
            offset: l.offset,
            fence: l.fence,
            floor: l.floor,
            expires_at: l.expires_at,
            ceiling: l.ceiling,
        })
    }
}

/// A slot namespace opened on a store (`leasehold::slots::Slots`).
#[derive(uniffi::Object)]
pub struct NativeSlots {
    slots: Slots,
}

impl NativeSlots {
    /// Wraps core slots.
    pub(crate) fn new(slots: Slots) -> Arc<NativeSlots> {
        Arc::new(NativeSlots { slots })
    }

    /// The core namespace.
    pub(crate) fn core(&self) -> &Slots {
        &self.slots
    }
}

#[uniffi::export]
impl NativeSlots {
    /// The namespace's name.
    pub fn name(&self) -> String {
        self.slots.name().to_owned()
    }

    /// The slots are `[0, limit)`.
    pub fn limit(&self) -> u32 {
        self.slots.spec().limit
    }

    /// How far a lease's ceiling lies beyond its expiry, in nanoseconds.
    pub fn tolerance(&self) -> i64 {
        durations::nanos(self.slots.spec().tolerance)
    }

    /// What a node number adds to the slot.
    pub fn offset(&self) -> u32 {
        self.slots.spec().offset
    }

    /// The ttl of this handle's leases, in nanoseconds.
    pub fn ttl(&self) -> i64 {
        durations::nanos(self.slots.ttl())
    }

    /// How long before a held slot's expiry its holder declares it lost, in nanoseconds.
    pub fn margin(&self) -> i64 {
        durations::nanos(self.slots.margin())
    }

    /// A handle on this namespace for the natives of the hot path
    /// (`natives::slots`): a reference of its own, freed once by
    /// `Natives.freeSlots`.
    pub fn handle(self: Arc<Self>) -> i64 {
        handles::into_handle(self)
    }

    /// Acquires a slot for `owner` (SLOT-01); `None` when every slot is
    /// held. Cancelling the awaiting coroutine stops waiting: a slot the
    /// store gave meanwhile stays the owner's until it expires, and the
    /// owner's next acquire gets it back.
    pub async fn acquire(
        &self,
        owner: NativeOwner,
        preferred: Option<u32>,
    ) -> Result<Option<NativeSlotLease>, NativeError> {
        let slots = self.slots.clone();
        calls::spawn(Cancel::Drop, async move {
            let owner = Owner::try_from(owner)?;
            let answer = slots.acquire(&owner, preferred).await?;
            Ok(answer.lease().map(NativeSlotLease::from))
        })
        .await
    }

    /// Releases `lease`, having issued timestamps up to `last_issued` (ms,
    /// SLOT-05); whether it released. It runs on to its end even if the
    /// awaiting coroutine is cancelled.
    pub async fn release(
        &self,
        lease: NativeSlotLease,
        last_issued: u64,
    ) -> Result<bool, NativeError> {
        let slots = self.slots.clone();
        calls::spawn(Cancel::RunOn, async move {
            let lease = SlotLease::try_from(lease)?;
            slots.release(&lease, last_issued).await
        })
        .await
    }
}
