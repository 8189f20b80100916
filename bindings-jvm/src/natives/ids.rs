//! IDs on the hot path: `nextNow`, `next`, `takeNow` and `take` on an ID
//! generator's handle. A batch is issued straight into a new Java array
//! (pinned while the core writes it, `GetPrimitiveArrayCritical`).

use jni::objects::{JClass, JLongArray, JObject, ReleaseMode};
use jni::sys::{jint, jlong, jlongArray};
use jni::JNIEnv;
use leasehold::idgen::IdGenerator;
use leasehold::ErrorKind;
use leasehold_bridge::{Cancel, Spawned};

use super::failure::{guarded, Answer};
use super::handles::borrow;
use super::loaded::loaded;
use super::pending;
use super::PENDING;
use crate::calls;
use crate::idgen::{count, NativeIdGenerator};

/// The generator of a handle.
///
/// # Safety
///
/// The Kotlin `IdGenerator` owns the handle and is reachable during the call.
unsafe fn generator<'a>(ids: jlong) -> Answer<&'a IdGenerator> {
    // SAFETY: the caller's promise.
    Ok(unsafe { borrow::<NativeIdGenerator>(ids) }?.core())
}

/// An ID as Java holds it: IDs have at most 63 bits.
fn java_id(id: u64) -> jlong {
    id as jlong
}

/// `Natives.nextNow(ids)`: the next ID without waiting; `NotReady` when
/// none can be issued yet, `Overflow`, `Lost` (IDGEN-04).
pub(super) extern "system" fn next_now<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    ids: jlong,
) -> jlong {
    guarded(&mut env, 0, |_| {
        // SAFETY: see `generator`.
        let ids = unsafe { generator(ids) }?;
        Ok(java_id(ids.next()?))
    })
}

/// `Natives.next(ids, call)`: the next ID, or [`PENDING`] while none can be
/// issued yet (answered by `call.succeeded(id)`).
pub(super) extern "system" fn next<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    ids: jlong,
    call: JObject<'l>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        // SAFETY: see `generator`.
        let ids = unsafe { generator(ids) }?;
        match ids.next() {
            Err(e) if e.kind() == ErrorKind::NotReady => {}
            issued => return Ok(java_id(issued?)),
        }
        let ids = ids.clone();
        let work = Spawned::new(calls::runtime(), Cancel::Drop, async move {
            ids.next_async().await
        });
        let answer = pending::answer(env, &call, work, |env, call, id| {
            loaded()?.succeeded(env, call, java_id(id))
        })?;
        Ok(answer.map_or(PENDING, java_id))
    })
}

/// Fills `out` from `from` with as many IDs as can be issued now, in
/// steps of one issue each; how many it wrote, and the error that stopped
/// it before the end, if one did.
fn fill_now(
    env: &mut JNIEnv<'_>,
    ids: &IdGenerator,
    out: &JLongArray<'_>,
    from: usize,
) -> Answer<(usize, Option<leasehold::Error>)> {
    // SAFETY: no JNI call is made while the array is pinned; IDs fit in
    // 63 bits, so a `u64` and a `jlong` have the same bits.
    let mut pinned = unsafe { env.get_array_elements_critical(out, ReleaseMode::CopyBack) }?;
    let longs: &mut [jlong] = &mut pinned;
    // SAFETY: `u64` and `i64` have the same size and alignment.
    let slots: &mut [u64] =
        unsafe { std::slice::from_raw_parts_mut(longs.as_mut_ptr().cast(), longs.len()) };
    let mut filled = from;
    while filled < slots.len() {
        match ids.next_into(&mut slots[filled..]) {
            Ok(n) => filled += n,
            Err(e) => return Ok((filled - from, Some(e))),
        }
    }
    Ok((filled - from, None))
}

/// A new array for `n` IDs, `n` checked: 1 to `MAX_TAKE` at once
/// (`InvalidArgument` otherwise, a negative `n` too).
fn array_for<'l>(env: &mut JNIEnv<'l>, n: jint) -> Answer<(JLongArray<'l>, usize)> {
    let n = count(u32::try_from(n).unwrap_or(0))?;
    Ok((
        env.new_long_array(jint::try_from(n).unwrap_or(jint::MAX))?,
        n,
    ))
}

/// `Natives.takeNow(ids, n)`: as many IDs as can be issued now, 1 to `n`;
/// fails as `nextNow` when none can.
pub(super) extern "system" fn take_now<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    ids: jlong,
    n: jint,
) -> jlongArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: see `generator`.
        let ids = unsafe { generator(ids) }?;
        let (out, n) = array_for(env, n)?;
        match fill_now(env, ids, &out, 0)? {
            (0, Some(error)) => Err(error.into()),
            (filled, _) if filled == n => Ok(out.into_raw()),
            (filled, _) => {
                let mut issued = vec![0; filled];
                env.get_long_array_region(&out, 0, &mut issued)?;
                let fewer = env.new_long_array(jint::try_from(filled).unwrap_or(jint::MAX))?;
                env.set_long_array_region(&fewer, 0, &issued)?;
                Ok(fewer.into_raw())
            }
        }
    })
}

/// `Natives.take(ids, n, call)`: `n` IDs, waiting while they cannot be
/// issued yet; null while it waits (answered by `call.succeededWith(ids)`
/// once the rest is written).
pub(super) extern "system" fn take<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    ids: jlong,
    n: jint,
    call: JObject<'l>,
) -> jlongArray {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: see `generator`.
        let ids = unsafe { generator(ids) }?;
        let (out, n) = array_for(env, n)?;
        let filled = match fill_now(env, ids, &out, 0)? {
            (_, None) => return Ok(out.into_raw()),
            (filled, Some(e)) if e.kind() == ErrorKind::NotReady => filled,
            (_, Some(error)) => return Err(error.into()),
        };
        let ids = ids.clone();
        let work = Spawned::new(calls::runtime(), Cancel::Drop, async move {
            ids.take(n - filled).await
        });
        let array = env.new_global_ref(&out)?;
        let answer = pending::answer(env, &call, work, move |env, call, rest| {
            let out: &JLongArray<'_> = array.as_obj().into();
            write_region(env, out, filled, &rest)?;
            loaded()?.succeeded_with(env, call, out)
        })?;
        match answer {
            Some(rest) => {
                write_region(env, &out, filled, &rest)?;
                Ok(out.into_raw())
            }
            None => Ok(std::ptr::null_mut()),
        }
    })
}

fn write_region(
    env: &mut JNIEnv<'_>,
    out: &JLongArray<'_>,
    from: usize,
    ids: &[u64],
) -> jni::errors::Result<()> {
    let ids: Vec<jlong> = ids.iter().copied().map(java_id).collect();
    env.set_long_array_region(out, jint::try_from(from).unwrap_or(jint::MAX), &ids)
}
