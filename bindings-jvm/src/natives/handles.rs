//! Native objects as the JVM keeps them: a `long` that is one reference of
//! an `Arc`, owned by one Kotlin wrapper, which frees it once (a cleaner
//! when it is collected) and keeps itself reachable during every call that
//! passes it.

use std::sync::Arc;

use jni::objects::JClass;
use jni::sys::jlong;
use jni::JNIEnv;
use leasehold::{Error, ErrorKind};

use super::failure::guarded;

/// One reference of `value`, as a handle.
pub(crate) fn into_handle<T>(value: Arc<T>) -> i64 {
    Arc::into_raw(value) as i64
}

/// The object behind `handle`.
///
/// # Safety
///
/// `handle` came from [`into_handle`] with this `T` and is not freed yet:
/// its Kotlin owner is reachable for the whole call.
pub(super) unsafe fn borrow<'a, T>(handle: i64) -> leasehold::Result<&'a T> {
    if handle == 0 {
        return Err(Error::new(
            ErrorKind::Internal,
            "a native call got no object (handle 0)",
        ));
    }
    // SAFETY: the caller's promise; the handle is an `Arc`'s pointer.
    Ok(unsafe { &*(handle as *const T) })
}

/// Gives up the reference `handle` is.
///
/// # Safety
///
/// As for [`borrow`]; and nothing uses `handle` after.
pub(super) unsafe fn free<T>(handle: i64) {
    if handle != 0 {
        // SAFETY: the caller's promise: one reference, given up once.
        drop(unsafe { Arc::from_raw(handle as *const T) });
    }
}

/// `Natives.free…(handle)` for a handle of a `T`: its Kotlin owner was
/// collected. A key or slot still held is released in the background.
pub(super) extern "system" fn free_native<'l, T>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) {
    guarded(&mut env, (), |_| {
        // SAFETY: the owner's cleaner frees its handle once, after the owner is gone.
        unsafe { free::<T>(handle) };
        Ok(())
    });
}
