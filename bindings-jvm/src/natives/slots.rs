//! Slots on the hot path: `slotBegin` and `slotRenew` on a namespace's
//! handle, and a held slot's reads on the holding's (its loss and end are
//! `held`'s). A lease crosses as its numbers, `[slot, offset, fence,
//! floor, expiresAt, ceiling]` (the `SlotLease` record's order); its
//! namespace and owner are the caller's, which the JVM side has already.

use jni::objects::{JClass, JLongArray, JObject, JString};
use jni::sys::{jint, jlong, jlongArray};
use jni::JNIEnv;
use leasehold::slots::{HeldSlot, Owner, SlotHolding, SlotLease, SlotLeaseParts, Slots};
use leasehold::{Error, ErrorKind};
use leasehold_bridge::{Cancel, Spawned};

use super::failure::{guarded, Answer};
use super::handles::borrow;
use super::held;
use super::loaded::loaded;
use super::pending;
use super::strings::rust_string;
use super::PENDING;
use crate::calls;
use crate::durations;
use crate::kept;
use crate::slots::NativeSlots;

/// How many numbers a lease crosses as.
const NUMBERS: usize = 6;

/// What `slotBegin` answers when every slot is held.
const EXHAUSTED: jlong = 0;

/// The core namespace of a handle.
///
/// # Safety
///
/// The Kotlin `Slots` owns the handle and is reachable during the call.
unsafe fn namespace<'a>(slots: jlong) -> Answer<&'a Slots> {
    // SAFETY: the caller's promise.
    Ok(unsafe { borrow::<NativeSlots>(slots) }?.core())
}

fn owner(env: &mut JNIEnv<'_>, key: &JString<'_>, instance: &JString<'_>) -> Answer<Owner> {
    let key = rust_string(env, key)?;
    let instance = rust_string(env, instance)?;
    Ok(Owner::with_instance(&key, &instance)?)
}

/// A lease's numbers, as `slotLease` and `slotRenew` answer them. IDs'
/// timestamps and fences stay far below 2^63.
fn numbers(lease: SlotLease) -> [jlong; NUMBERS] {
    let p = lease.into_parts();
    [
        jlong::from(p.slot),
        jlong::from(p.offset),
        p.fence as jlong,
        p.floor as jlong,
        p.expires_at as jlong,
        p.ceiling as jlong,
    ]
}

fn java_numbers<'l>(
    env: &mut JNIEnv<'l>,
    lease: Option<SlotLease>,
) -> jni::errors::Result<JLongArray<'l>> {
    let Some(lease) = lease else {
        return env.new_long_array(0);
    };
    let array = env.new_long_array(NUMBERS as jint)?;
    env.set_long_array_region(&array, 0, &numbers(lease))?;
    Ok(array)
}

/// A non-negative number of a lease, else `InvalidArgument`.
fn unsigned(what: &str, n: jlong) -> leasehold::Result<u64> {
    u64::try_from(n).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("the {what} must not be negative, got {n}"),
        )
    })
}

/// `Natives.slotBegin(slots, ownerKey, ownerInstance, preferred, call)`:
/// holds a slot with background renewal (`preferred` -1: none); the
/// holding's handle, 0 when every slot is held, or [`PENDING`].
pub(super) extern "system" fn begin<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    slots: jlong,
    owner_key: JString<'l>,
    owner_instance: JString<'l>,
    preferred: jint,
    call: JObject<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        // SAFETY: see `namespace`.
        let slots = unsafe { namespace(slots) }?.clone();
        let owner = owner(env, &owner_key, &owner_instance)?;
        let preferred = u32::try_from(preferred).ok();
        let work = Spawned::new(calls::runtime(), Cancel::Drop, async move {
            match slots.begin(&owner, preferred).await? {
                Some(holding) => Ok(Some(kept::unless_lost(holding).await?)),
                None => Ok(None),
            }
        });
        let answer = pending::answer(env, &call, work, |env, call, holding| match holding {
            Some(holding) => held::deliver::<SlotHolding>(env, call, held::handle_of(holding)),
            None => loaded()?.succeeded(env, call, EXHAUSTED),
        })?;
        Ok(match answer {
            Some(Some(holding)) => held::handle_of(holding),
            Some(None) => EXHAUSTED,
            None => PENDING,
        })
    })
}

/// `Natives.slotRenew(slots, namespace, ownerKey, ownerInstance, numbers,
/// call)`: renews the lease for the handle's ttl (SLOT-04); its new
/// numbers, an empty array when its owner or fence no longer match, or
/// null while it waits (answered by `call.succeededWith(numbers)`).
pub(super) extern "system" fn renew<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    slots: jlong,
    name: JString<'l>,
    owner_key: JString<'l>,
    owner_instance: JString<'l>,
    lease: JLongArray<'l>,
    call: JObject<'l>,
) -> jlongArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: see `namespace`.
        let slots = unsafe { namespace(slots) }?.clone();
        let namespace = rust_string(env, &name)?;
        let owner = owner(env, &owner_key, &owner_instance)?;
        if usize::try_from(env.get_array_length(&lease)?) != Ok(NUMBERS) {
            return Err(
                Error::new(ErrorKind::InvalidArgument, "a slot lease has six numbers").into(),
            );
        }
        let mut n = [0; NUMBERS];
        env.get_long_array_region(&lease, 0, &mut n)?;
        let lease = SlotLease::from_parts(SlotLeaseParts {
            namespace,
            owner,
            slot: u32::try_from(n[0])
                .map_err(|_| Error::new(ErrorKind::InvalidArgument, "a slot out of range"))?,
            offset: u32::try_from(n[1]).map_err(|_| {
                Error::new(ErrorKind::InvalidArgument, "a slot offset out of range")
            })?,
            fence: n[2] as u64,
            floor: unsigned("floor", n[3])?,
            expires_at: unsigned("expiry", n[4])?,
            ceiling: unsigned("ceiling", n[5])?,
        })?;
        let work = Spawned::new(calls::runtime(), Cancel::Drop, async move {
            slots.renew(&lease).await
        });
        let answer = pending::answer(env, &call, work, |env, call, renewed| {
            let array = java_numbers(env, renewed)?;
            loaded()?.succeeded_with(env, call, &array)
        })?;
        match answer {
            Some(renewed) => Ok(java_numbers(env, renewed)?.into_raw()),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// `Natives.slotLease(holding)`: the lease's numbers as last renewed.
pub(super) extern "system" fn lease<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holding: jlong,
) -> jlongArray {
    held::viewing::<SlotHolding, _>(
        &mut env,
        holding,
        std::ptr::null_mut(),
        |env, slot: &HeldSlot| Ok(java_numbers(env, Some(slot.lease()))?.into_raw()),
    )
}

/// `Natives.slotIssued(holding, ms)`: records that timestamps up to `ms`
/// were issued (SLOT-05); fails `Lost` once the slot was lost or released.
pub(super) extern "system" fn issued<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holding: jlong,
    ms: jlong,
) {
    held::viewing::<SlotHolding, _>(&mut env, holding, (), |_, slot: &HeldSlot| {
        Ok(slot.issued(unsigned("issued timestamp", ms)?)?)
    })
}

/// `Natives.slotLastIssued(holding)`: the largest timestamp recorded (0: none).
pub(super) extern "system" fn last_issued<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holding: jlong,
) -> jlong {
    held::viewing::<SlotHolding, _>(&mut env, holding, 0, |_, slot: &HeldSlot| {
        Ok(slot.last_issued() as jlong)
    })
}

/// `Natives.slotRemaining(holding)`: nanoseconds before the holder's
/// deadline, zero once lost.
pub(super) extern "system" fn remaining<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holding: jlong,
) -> jlong {
    held::viewing::<SlotHolding, _>(&mut env, holding, 0, |_, slot: &HeldSlot| {
        Ok(durations::nanos(slot.remaining()))
    })
}
