//! What every held thing (a key's `Holding`, a slot's `SlotHolding`) has
//! alike on the hot path, generic over the core's `Held`: its handle (a
//! `Kept<H>`), its loss (`lost`, `lossReason`, `lostSignal`) and its end.
//! Each native is registered once per kind (`mod.rs`).

use std::sync::Arc;

use jni::objects::{JClass, JObject};
use jni::sys::{jboolean, jlong, jstring};
use jni::JNIEnv;
use leasehold::{Held, HeldView};
use leasehold_bridge::{Cancel, Spawned};

use super::failure::{guarded, Answer};
use super::handles::{self, borrow, free};
use super::loaded::loaded;
use super::pending;
use crate::calls;
use crate::kept::Kept;

/// The handle of a new `Kept` of `holding`.
pub(super) fn handle_of<H: Held + Send + Sync + 'static>(holding: H) -> jlong
where
    H::View: Send + Sync,
{
    handles::into_handle(Arc::new(Kept::new(holding)))
}

/// `call.succeeded(handle)`; a handle of a `Kept<H>` the call did not take is freed.
pub(super) fn deliver<H: Held>(
    env: &mut JNIEnv<'_>,
    call: &JObject<'_>,
    handle: jlong,
) -> jni::errors::Result<()> {
    let delivered = loaded().and_then(|loaded| loaded.succeeded(env, call, handle));
    if delivered.is_err() {
        // SAFETY: the call did not take the handle: it is still ours alone.
        unsafe { free::<Kept<H>>(handle) };
    }
    delivered
}

/// Runs `read` on what the work held under a `Kept<H>`'s handle sees.
pub(super) fn viewing<'l, H: Held, T>(
    env: &mut JNIEnv<'l>,
    held: jlong,
    fallback: T,
    read: impl FnOnce(&mut JNIEnv<'l>, &H::View) -> Answer<T>,
) -> T {
    guarded(env, fallback, |env| {
        // SAFETY: the handle's Kotlin owner is reachable during the call.
        let kept = unsafe { borrow::<Kept<H>>(held) }?;
        read(env, kept.view())
    })
}

/// `Natives.lost(held)` / `slotLost(held)` (LOCK-09).
pub(super) extern "system" fn lost<'l, H: Held>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    held: jlong,
) -> jboolean {
    viewing::<H, _>(&mut env, held, 0, |_, view| {
        Ok(jboolean::from(view.loss_reason().is_some()))
    })
}

/// `Natives.lossReason(held)` / `slotLossReason(held)`: why it was lost, or null.
pub(super) extern "system" fn loss_reason<'l, H: Held>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    held: jlong,
) -> jstring {
    viewing::<H, _>(
        &mut env,
        held,
        std::ptr::null_mut(),
        |env, view| match view.loss_reason() {
            Some(reason) => Ok(env.new_string(reason.as_str())?.into_raw()),
            None => Ok(std::ptr::null_mut()),
        },
    )
}

/// `Natives.lostSignal(held, call)` / `slotLostSignal`: the loss reason once
/// it is lost; null while it waits (answered by `call.succeededWith(reason)`).
pub(super) extern "system" fn lost_signal<'l, H: Held>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    held: jlong,
    call: JObject<'l>,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: the handle's Kotlin owner is reachable during the call.
        let kept = unsafe { borrow::<Kept<H>>(held) }?;
        let work = Spawned::new(calls::runtime(), Cancel::Drop, kept.lost_signal());
        let answer = pending::answer(env, &call, work, |env, call, reason| {
            let reason = env.new_string(reason)?;
            loaded()?.succeeded_with(env, call, &reason)
        })?;
        match answer {
            Some(reason) => Ok(env.new_string(reason)?.into_raw()),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// `Natives.end(held, call)` / `slotEnd`: releases it (LOCK-11); 0 when
/// done, or `PENDING`. Fails `Lost` if it was lost while held (LOCK-10),
/// `Closed` if it ended already.
pub(super) extern "system" fn end<'l, H: Held>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    held: jlong,
    call: JObject<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        // SAFETY: the handle's Kotlin owner is reachable during the call.
        let work = unsafe { borrow::<Kept<H>>(held) }?.end();
        pending::answer_done(env, &call, work)
    })
}
