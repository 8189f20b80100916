//! Slot leases: a namespace of numbered slots on a store, the
//! owners that lease them and the leases. Which slot an acquire takes, and
//! what a renewal or a release changes, is the core's
//! (`leasehold::slots`); this module only translates values, errors and
//! the `AbortSignal` of a call. A slot held while a function runs is
//! `slot_holding`'s.

use leasehold::give_up;
use leasehold::slots::{Owner, SlotLease, Slots};
use leasehold::{Error, ErrorKind};
use napi::bindgen_prelude::BigInt;
use napi::Env;
use napi_derive::napi;
use tokio::runtime::Handle;

use crate::cancel::Canceller;
use crate::durations;
use crate::errors::{thrown, Thrown};
use crate::promise::{self, Eventually};
use crate::slot_holding::NativeSlotHolding;

/// Who leases a slot (`leasehold::slots::Owner`): a stable key and the
/// instance id of one process.
#[napi]
pub struct NativeOwner {
    owner: Owner,
}

/// An owner with key `key` and instance id `instance`, or a fresh random
/// instance id from the core when `null`.
#[napi(catch_unwind)]
pub fn owner(key: String, instance: Option<String>) -> Result<NativeOwner, Thrown> {
    match instance {
        Some(instance) => Owner::with_instance(&key, &instance),
        None => Owner::new(&key),
    }
    .map(|owner| NativeOwner { owner })
    .map_err(thrown)
}

#[napi]
impl NativeOwner {
    /// The stable key.
    #[napi(getter, catch_unwind)]
    pub fn key(&self) -> String {
        self.owner.key().to_owned()
    }

    /// This process's instance id.
    #[napi(getter, catch_unwind)]
    pub fn instance(&self) -> String {
        self.owner.instance().to_owned()
    }
}

/// A lease on one slot as last returned by the store
/// (`leasehold::slots::SlotLease`); times in milliseconds since the Unix
/// epoch on the store's clock.
#[napi]
pub struct NativeSlotLease {
    lease: SlotLease,
}

impl NativeSlotLease {
    /// Wraps a core lease.
    pub(crate) fn new(lease: SlotLease) -> NativeSlotLease {
        NativeSlotLease { lease }
    }
}

/// A time of the store's clock in milliseconds, as a JS number: exact up to
/// 2^53 ms, far past any clock's reach.
pub(crate) fn js_millis(ms: u64) -> f64 {
    ms as f64
}

/// A count of milliseconds passed as a bigint: 0 to 2^64 − 1, else `InvalidArgument`.
pub(crate) fn millis_arg(what: &str, ms: BigInt) -> leasehold::Result<u64> {
    match ms.get_u64() {
        (false, ms, true) => Ok(ms),
        _ => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} must be a count of milliseconds from 0 to 2^64 - 1"),
        )),
    }
}

#[napi]
impl NativeSlotLease {
    /// The namespace.
    #[napi(getter, catch_unwind)]
    pub fn namespace(&self) -> String {
        self.lease.namespace().to_owned()
    }

    /// The owner's key.
    #[napi(getter, catch_unwind)]
    pub fn owner_key(&self) -> String {
        self.lease.owner().key().to_owned()
    }

    /// The owner's instance id.
    #[napi(getter, catch_unwind)]
    pub fn owner_instance(&self) -> String {
        self.lease.owner().instance().to_owned()
    }

    /// The slot, in `[0, limit)`.
    #[napi(getter, catch_unwind)]
    pub fn slot(&self) -> u32 {
        self.lease.slot()
    }

    /// The node number: the slot plus the namespace's offset.
    #[napi(getter, catch_unwind)]
    pub fn node(&self) -> u32 {
        self.lease.node()
    }

    /// The fence (SLOT-08).
    #[napi(getter, catch_unwind)]
    pub fn fence(&self) -> BigInt {
        BigInt::from(self.lease.fence())
    }

    /// Issue only timestamps above this one (ms).
    #[napi(getter, catch_unwind)]
    pub fn floor(&self) -> f64 {
        js_millis(self.lease.floor())
    }

    /// When the lease expires unless renewed (ms).
    #[napi(getter, catch_unwind)]
    pub fn expires_at(&self) -> f64 {
        js_millis(self.lease.expires_at())
    }

    /// Issue no timestamp past this one (ms).
    #[napi(getter, catch_unwind)]
    pub fn ceiling(&self) -> f64 {
        js_millis(self.lease.ceiling())
    }
}

/// The error message of an acquire (or a begin) given up by its canceller.
const GAVE_UP_ACQUIRING: &str =
    "gave up acquiring a slot; the store may have leased one to this owner, \
     which an acquire by the same owner returns";

/// The error message of a renewal given up by its canceller.
const GAVE_UP_RENEWING: &str =
    "gave up renewing the slot; the store may have renewed it, which a renewal repeated returns";

/// The error message of a release given up by its canceller.
const GAVE_UP_RELEASING: &str =
    "gave up releasing the slot; the store may have released it, which a release repeated answers";

/// A slot namespace opened on a store (`leasehold::slots::Slots`).
#[napi]
pub struct NativeSlots {
    slots: Slots,
    runtime: Handle,
}

impl NativeSlots {
    /// Wraps a core slots handle whose calls run on `runtime`.
    pub(crate) fn new(slots: Slots, runtime: Handle) -> NativeSlots {
        NativeSlots { slots, runtime }
    }
}

#[napi]
impl NativeSlots {
    /// The namespace's name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.slots.name().to_owned()
    }

    /// The number of slots this handle asks for.
    #[napi(getter, catch_unwind)]
    pub fn limit(&self) -> u32 {
        self.slots.spec().limit
    }

    /// How far a lease's ceiling lies beyond its expiry, in milliseconds.
    #[napi(getter, catch_unwind)]
    pub fn tolerance(&self) -> f64 {
        durations::millis(self.slots.spec().tolerance)
    }

    /// What a node number adds to the slot.
    #[napi(getter, catch_unwind)]
    pub fn offset(&self) -> u32 {
        self.slots.spec().offset
    }

    /// The ttl of this handle's leases, in milliseconds.
    #[napi(getter, catch_unwind)]
    pub fn ttl(&self) -> f64 {
        durations::millis(self.slots.ttl())
    }

    /// How long before a held slot's expiry its holder declares it lost, in milliseconds.
    #[napi(getter, catch_unwind)]
    pub fn margin(&self) -> f64 {
        durations::millis(self.slots.margin())
    }

    /// Acquires a slot for `owner` (`Slots::acquire`, SLOT-01); `null` when
    /// every slot is held. When `cancel` fires first, the call stops
    /// waiting for the store's answer and fails `CANCELLED` (the lease an
    /// answer brings later is left to its ttl, or to the owner's next acquire).
    #[napi(catch_unwind)]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        owner: &NativeOwner,
        preferred: Option<u32>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, Option<NativeSlotLease>>> {
        let slots = self.slots.clone();
        let owner = owner.owner.clone();
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let acquire = async move { slots.acquire(&owner, preferred).await };
            let result = give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_ACQUIRING,
                acquire,
                give_up::dropped,
            )
            .await?;
            Ok(result.lease().map(|lease| NativeSlotLease { lease }))
        })
    }

    /// Acquires a slot for `owner` as `acquire` does and keeps it renewed
    /// until the returned holding ends (`Slots::begin`); `null` when every
    /// slot is held. When `cancel` fires first, the call stops waiting for
    /// the store's answer and fails `CANCELLED` (a holding an answer brings
    /// later is released at once).
    #[napi(catch_unwind)]
    pub fn begin<'env>(
        &self,
        env: &'env Env,
        owner: &NativeOwner,
        preferred: Option<u32>,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, Option<NativeSlotHolding>>> {
        let slots = self.slots.clone();
        let owner = owner.owner.clone();
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let begin = async move { slots.begin(&owner, preferred).await };
            let holding = give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_ACQUIRING,
                begin,
                give_up::dropped,
            )
            .await?;
            Ok(holding.map(|h| NativeSlotHolding::new(h, runtime)))
        })
    }

    /// Renews `lease` for this handle's ttl (`Slots::renew`, SLOT-04);
    /// `null` when the slot's owner or fence no longer match. When `cancel`
    /// fires first, the call stops waiting for the store's answer and fails
    /// `CANCELLED`.
    #[napi(catch_unwind)]
    pub fn renew<'env>(
        &self,
        env: &'env Env,
        lease: &NativeSlotLease,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, Option<NativeSlotLease>>> {
        let slots = self.slots.clone();
        let lease = lease.lease.clone();
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let renew = async move { slots.renew(&lease).await };
            let renewed = give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_RENEWING,
                renew,
                give_up::dropped,
            )
            .await?;
            Ok(renewed.map(|lease| NativeSlotLease { lease }))
        })
    }

    /// Releases `lease` having issued timestamps up to `last_issued` ms
    /// (`Slots::release`, SLOT-05); `false` when the slot's owner or fence
    /// no longer match. When `cancel` fires first, the call stops waiting
    /// for the store's answer and fails `CANCELLED`.
    #[napi(catch_unwind)]
    pub fn release<'env>(
        &self,
        env: &'env Env,
        lease: &NativeSlotLease,
        last_issued: BigInt,
        cancel: Option<&Canceller>,
    ) -> napi::Result<Eventually<'env, bool>> {
        let slots = self.slots.clone();
        let lease = lease.lease.clone();
        let last_issued = millis_arg("lastIssued", last_issued);
        let cancel = cancel.map(Canceller::token);
        let runtime = self.runtime.clone();
        promise::spawn(env, &self.runtime, async move {
            let last_issued = last_issued?;
            let release = async move { slots.release(&lease, last_issued).await };
            give_up::unless_given_up(
                cancel,
                &runtime,
                GAVE_UP_RELEASING,
                release,
                give_up::dropped,
            )
            .await
        })
    }
}
