//! Keys held while a block runs: `begin`, `beginWithin` and `tryBegin` on
//! a lock's handle, and the lease's reads on the holding's (its loss and
//! end are `held`'s). A holding is a `Kept<Holding>`; its handle belongs
//! to the Kotlin `Holding` that wraps it.

use jni::objects::{JClass, JObject, JString};
use jni::sys::jlong;
use jni::JNIEnv;
use leasehold::{give_up, HoldOptions, Holding, Lease};
use leasehold_bridge::{Cancel, Spawned};

use super::failure::{guarded, Answer};
use super::handles::borrow;
use super::held;
use super::pending;
use super::strings::rust_string;
use super::PENDING;
use crate::calls;
use crate::durations;
use crate::kept;
use crate::lock::NativeLock;

/// The answer of a `tryBegin` when the key is held (LOCK-17).
const HELD: jlong = 0;

/// The error message of a `tryBegin` given up by its caller.
const GAVE_UP_TRYING: &str = "gave up trying for the key";

/// `Natives.begin(lock, key, call)`: waits in line for `key` as long as the
/// lock's `wait` allows; the holding's handle, or [`PENDING`].
pub(super) extern "system" fn begin<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    key: JString<'l>,
    call: JObject<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| begin_with(env, lock, &key, None, &call))
}

/// `Natives.beginWithin(lock, key, waitNanos, call)`: [`begin`], waiting in
/// line at most `waitNanos`.
pub(super) extern "system" fn begin_within<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    key: JString<'l>,
    wait: jlong,
    call: JObject<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        begin_with(env, lock, &key, Some(wait), &call)
    })
}

fn begin_with(
    env: &mut JNIEnv<'_>,
    lock: jlong,
    key: &JString<'_>,
    wait: Option<i64>,
    call: &JObject<'_>,
) -> Answer<jlong> {
    // SAFETY: the Kotlin `Lock` owns the handle and is reachable during the call.
    let lock = unsafe { borrow::<NativeLock>(lock) }?.core().clone();
    let key = rust_string(env, key)?;
    let wait = durations::optional("wait", wait)?;
    let (token, cancel) = Cancel::token();
    let work = Spawned::new(calls::runtime(), cancel, async move {
        let options = HoldOptions {
            wait,
            cancel: Some(token),
        };
        let holding = lock.begin(&key, &options).await?;
        kept::unless_lost(holding).await
    });
    let answer = pending::answer(env, call, work, |env, call, holding| {
        deliver(env, call, handle_of(holding))
    })?;
    Ok(answer.map_or(PENDING, handle_of))
}

/// `Natives.tryBegin(lock, key, call)`: holds `key` if it is free; the
/// holding's handle, [`HELD`] when it is held (LOCK-17), or [`PENDING`].
pub(super) extern "system" fn try_begin<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    key: JString<'l>,
    call: JObject<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        // SAFETY: as in `begin`.
        let lock = unsafe { borrow::<NativeLock>(lock) }?.core().clone();
        let key = rust_string(env, &key)?;
        let (token, cancel) = Cancel::token();
        // Giving up fires the token: a grant that answers later is released (LOCK-18).
        let work = Spawned::new(calls::runtime(), cancel, async move {
            let attempt = async move { lock.try_begin(&key).await };
            let holding = give_up::unless_given_up(
                Some(token),
                &calls::runtime(),
                GAVE_UP_TRYING,
                attempt,
                give_up::dropped,
            )
            .await?;
            match holding {
                Some(holding) => Ok(Some(kept::unless_lost(holding).await?)),
                None => Ok(None),
            }
        });
        let answer = pending::answer(env, &call, work, |env, call, holding| {
            deliver(env, call, holding.map_or(HELD, handle_of))
        })?;
        Ok(answer.map_or(PENDING, |holding| holding.map_or(HELD, handle_of)))
    })
}

fn handle_of(holding: Holding) -> jlong {
    held::handle_of(holding)
}

fn deliver(env: &mut JNIEnv<'_>, call: &JObject<'_>, handle: jlong) -> jni::errors::Result<()> {
    held::deliver::<Holding>(env, call, handle)
}

/// `Natives.fence(holding)` (LOCK-02). Fences stay far below 2^63.
pub(super) extern "system" fn fence<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holding: jlong,
) -> jlong {
    held::viewing::<Holding, _>(&mut env, holding, 0, |_, lease: &Lease| {
        Ok(lease.fence() as jlong)
    })
}

/// `Natives.remaining(holding)`: nanoseconds before the holder's deadline,
/// or -1 without one.
pub(super) extern "system" fn remaining<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holding: jlong,
) -> jlong {
    held::viewing::<Holding, _>(&mut env, holding, 0, |_, lease: &Lease| {
        Ok(lease.remaining().map_or(-1, durations::nanos))
    })
}
