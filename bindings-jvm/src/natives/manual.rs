//! Manual leases on the hot path: `manualExtend` and `manualRelease` on a
//! lease's handle, and its name and fence.

use jni::objects::{JClass, JObject};
use jni::sys::{jlong, jstring};
use jni::JNIEnv;
use leasehold::{give_up, ManualLease};
use leasehold_bridge::{Cancel, Spawned};

use super::failure::{guarded, Answer};
use super::handles::borrow;
use super::pending;
use crate::calls;
use crate::durations;
use crate::manual::NativeManualLease;

/// The error message of an extension given up by its caller.
const GAVE_UP_EXTENDING: &str =
    "gave up extending the lease; the store may have extended it, which an extension repeated does again";

fn reading<'l, T>(
    env: &mut JNIEnv<'l>,
    lease: jlong,
    fallback: T,
    read: impl FnOnce(&mut JNIEnv<'l>, &ManualLease) -> Answer<T>,
) -> T {
    guarded(env, fallback, |env| {
        // SAFETY: the Kotlin `ManualLease` owns the handle and is reachable during the call.
        let lease = unsafe { borrow::<NativeManualLease>(lease) }?;
        read(env, lease.core())
    })
}

/// `Natives.manualName(lease)`.
pub(super) extern "system" fn name<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lease: jlong,
) -> jstring {
    reading(&mut env, lease, std::ptr::null_mut(), |env, lease| {
        Ok(env.new_string(lease.name())?.into_raw())
    })
}

/// `Natives.manualFence(lease)` (MANUAL-07).
pub(super) extern "system" fn fence<'l>(mut env: JNIEnv<'l>, _: JClass<'l>, lease: jlong) -> jlong {
    reading(&mut env, lease, 0, |_, lease| Ok(lease.fence() as jlong))
}

/// `Natives.manualExtend(lease, nanos, call)`: sets the expiry to now +
/// `nanos` (MANUAL-03); 0 when done, or `PENDING`. Giving up stops
/// waiting for the store's answer.
pub(super) extern "system" fn extend<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lease: jlong,
    nanos: jlong,
    call: JObject<'l>,
) -> jlong {
    reading(&mut env, lease, 0, |env, lease| {
        let lease = lease.clone();
        let d = durations::duration("the extension", nanos)?;
        let (token, cancel) = Cancel::token();
        let work = Spawned::new(calls::runtime(), cancel, async move {
            let extend = async move { lease.extend(d).await };
            give_up::unless_given_up(
                Some(token),
                &calls::runtime(),
                GAVE_UP_EXTENDING,
                extend,
                give_up::dropped,
            )
            .await
        });
        pending::answer_done(env, &call, work)
    })
}

/// `Natives.manualRelease(lease, call)`: releases the lease if it still
/// owns its name (MANUAL-04); 0 when done, or `PENDING`. It runs on to
/// its end even if its caller gives up.
pub(super) extern "system" fn release<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lease: jlong,
    call: JObject<'l>,
) -> jlong {
    reading(&mut env, lease, 0, |env, lease| {
        let lease = lease.clone();
        let work = Spawned::new(calls::runtime(), Cancel::RunOn, async move {
            lease.release().await
        });
        pending::answer_done(env, &call, work)
    })
}
