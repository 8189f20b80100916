//! Many keys of a lock held at once (LOCK-22): `beginMany` and
//! `beginManyWithin` on a lock's handle, answering a `long[]` of holdings
//! (each a `Kept<Holding>`, as `begin`'s), `anyLostSignal` over them and
//! `endAll`. Not the per-cycle hot path, but the holdings' handles are the
//! hot path's own, and a grant that races a cancellation is freed by the
//! `NativeCall` that was given up, as `begin`'s is.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use jni::objects::{JClass, JLongArray, JObject, JObjectArray};
use jni::sys::{jlong, jlongArray, jsize, jstring};
use jni::JNIEnv;
use leasehold::{Error, HoldOptions, Holding};
use leasehold_bridge::{Cancel, Spawned};

use super::failure::{guarded, Answer};
use super::handles::{borrow, free};
use super::held;
use super::loaded::loaded;
use super::pending;
use super::strings::rust_strings;
use crate::calls;
use crate::durations;
use crate::kept::Kept;
use crate::lock::NativeLock;

/// `Natives.beginMany(lock, keys, call)`: waits in line for every key at
/// once as long as the lock's `wait` allows, all or none; the holdings'
/// handles in the order of `keys`, or null while it waits.
pub(super) extern "system" fn begin_many<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    keys: JObjectArray<'l>,
    call: JObject<'l>,
) -> jlongArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        begin_many_with(env, lock, &keys, None, &call)
    })
}

/// `Natives.beginManyWithin(lock, keys, waitNanos, call)`: [`begin_many`],
/// waiting in line at most `waitNanos`.
pub(super) extern "system" fn begin_many_within<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    lock: jlong,
    keys: JObjectArray<'l>,
    wait: jlong,
    call: JObject<'l>,
) -> jlongArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        begin_many_with(env, lock, &keys, Some(wait), &call)
    })
}

fn begin_many_with(
    env: &mut JNIEnv<'_>,
    lock: jlong,
    keys: &JObjectArray<'_>,
    wait: Option<i64>,
    call: &JObject<'_>,
) -> Answer<jlongArray> {
    // SAFETY: the Kotlin `Lock` owns the handle and is reachable during the call.
    let lock = unsafe { borrow::<NativeLock>(lock) }?.core().clone();
    let keys = rust_strings(env, keys)?;
    let wait = durations::optional("wait", wait)?;
    let (token, cancel) = Cancel::token();
    let work = Spawned::new(calls::runtime(), cancel, async move {
        let options = HoldOptions {
            wait,
            cancel: Some(token),
        };
        let holdings = lock.begin_many(&keys, &options).await?;
        unless_any_lost(holdings).await
    });
    let answer = pending::answer(env, call, work, |env, call, holdings| {
        let handles = array_of(env, holdings)?;
        let delivered = loaded().and_then(|loaded| loaded.succeeded_with(env, call, &handles));
        if delivered.is_err() {
            // SAFETY: the call did not take the handles: they are still ours alone.
            unsafe { free_all(env, &handles) };
        }
        delivered
    })?;
    match answer {
        Some(holdings) => Ok(array_of(env, holdings)?.into_raw()),
        None => Ok(std::ptr::null_mut()),
    }
}

/// `holdings`, unless one's deadline came before the block could start:
/// then all are ended at once and the call fails `Lost`, as
/// `kept::unless_lost` does for one.
async fn unless_any_lost(holdings: Vec<Holding>) -> leasehold::Result<Vec<Holding>> {
    match holdings.iter().find_map(|h| h.lease().loss_reason()) {
        None => Ok(holdings),
        Some(reason) => {
            let _ = Holding::end_all(holdings).await;
            Err(Error::lost(reason))
        }
    }
}

/// A `long[]` of new handles of `holdings`, in their order; if the array
/// cannot be made, the handles are freed (the keys released).
fn array_of<'l>(
    env: &mut JNIEnv<'l>,
    holdings: Vec<Holding>,
) -> jni::errors::Result<JLongArray<'l>> {
    let handles: Vec<jlong> = holdings.into_iter().map(held::handle_of).collect();
    // As many as the keys of a `String[]`: they fit a `jsize`.
    let length = jsize::try_from(handles.len()).unwrap_or(jsize::MAX);
    let made = env.new_long_array(length).and_then(|array| {
        env.set_long_array_region(&array, 0, &handles)?;
        Ok(array)
    });
    if made.is_err() {
        for handle in handles {
            // SAFETY: the handles were made here and given to no one.
            unsafe { free::<Kept<Holding>>(handle) };
        }
    }
    made
}

/// Frees the handles of `array`, which nobody took.
///
/// # Safety
///
/// Every element of `array` is a handle of a `Kept<Holding>` still ours alone.
unsafe fn free_all(env: &mut JNIEnv<'_>, array: &JLongArray<'_>) {
    let Ok(handles) = handles_of(env, array) else {
        return;
    };
    for handle in handles {
        // SAFETY: the caller's promise.
        unsafe { free::<Kept<Holding>>(handle) };
    }
}

/// The handles a `long[]` holds.
fn handles_of(env: &mut JNIEnv<'_>, array: &JLongArray<'_>) -> jni::errors::Result<Vec<jlong>> {
    let length = env.get_array_length(array)?;
    let mut handles = vec![0; usize::try_from(length).unwrap_or(0)];
    env.get_long_array_region(array, 0, &mut handles)?;
    Ok(handles)
}

/// The holdings behind `handles`.
///
/// # Safety
///
/// Each handle is a `Kept<Holding>`'s whose Kotlin owner is reachable
/// during the call.
unsafe fn kept_of<'a>(handles: &[jlong]) -> leasehold::Result<Vec<&'a Kept<Holding>>> {
    handles
        .iter()
        // SAFETY: the caller's promise.
        .map(|&handle| unsafe { borrow::<Kept<Holding>>(handle) })
        .collect()
}

/// `Natives.anyLostSignal(holdings, call)`: the loss reason of the first of
/// `holdings` to be lost, at once if one is lost already; null while none
/// is (answered by `call.succeededWith(reason)`).
pub(super) extern "system" fn any_lost_signal<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holdings: JLongArray<'l>,
    call: JObject<'l>,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let handles = handles_of(env, &holdings)?;
        // SAFETY: the Kotlin holdings keep their handles during the call.
        let mut signals: Vec<Pin<Box<dyn Future<Output = leasehold::Result<String>> + Send>>> =
            unsafe { kept_of(&handles) }?
                .into_iter()
                .map(|kept| Box::pin(kept.lost_signal()) as Pin<Box<_>>)
                .collect();
        let first = poll_fn(move |cx| {
            for signal in &mut signals {
                if let Poll::Ready(reason) = signal.as_mut().poll(cx) {
                    return Poll::Ready(reason);
                }
            }
            Poll::Pending
        });
        let work = Spawned::new(calls::runtime(), Cancel::Drop, first);
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

/// `Natives.endAll(holdings, call)`: ends every holding at once
/// (`Holding::end_all`, LOCK-22); 0 when done, or `PENDING`. Fails `Lost`
/// if any was lost while held (LOCK-10), `Closed` if one ended already
/// (the others are ended all the same). The releases run on to their end
/// even if the caller gives up (LOCK-11).
pub(super) extern "system" fn end_all<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    holdings: JLongArray<'l>,
    call: JObject<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let handles = handles_of(env, &holdings)?;
        // SAFETY: the Kotlin holdings keep their handles during the call.
        let taken: Vec<_> = unsafe { kept_of(&handles) }?
            .into_iter()
            .map(Kept::take)
            .collect();
        let work = Spawned::new(calls::runtime(), Cancel::RunOn, async move {
            let mut closed = None;
            let mut holdings = Vec::with_capacity(taken.len());
            for holding in taken {
                match holding {
                    Ok(holding) => holdings.push(holding),
                    Err(e) => {
                        closed.get_or_insert(e);
                    }
                }
            }
            let ended = Holding::end_all(holdings).await;
            closed.map_or(ended, Err)
        });
        pending::answer_done(env, &call, work)
    })
}
