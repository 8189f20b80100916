//! Reading what the caller passes: borrowed strings (copied at once),
//! durations, and the places results are written to.

use std::time::Duration;

use leasehold::{Error, ErrorKind, Result};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// Copies the caller's `ptr + len` bytes as a string: NULL with length 0 is
/// the empty string; NULL with a length, or bytes that are not UTF-8, fail
/// `InvalidArgument`.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes for this call.
pub(crate) unsafe fn string(what: &str, ptr: *const u8, len: usize) -> Result<String> {
    if ptr.is_null() {
        if len == 0 {
            return Ok(String::new());
        }
        return Err(invalid(format!(
            "the {what} is a NULL pointer with length {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(invalid(format!("the {what}'s length {len} is too large")));
    }
    // SAFETY: the caller promises `len` readable bytes at the non-NULL `ptr`,
    // and `len` fits an isize.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|e| invalid(format!("the {what} is not UTF-8: {e}")))
}

/// Like [`string`], with NULL meaning "not given".
///
/// # Safety
/// As for [`string`].
pub(crate) unsafe fn optional_string(
    what: &str,
    ptr: *const u8,
    len: usize,
) -> Result<Option<String>> {
    if ptr.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: passed on from the caller.
    unsafe { string(what, ptr, len) }.map(Some)
}

/// Copies the caller's bytes (NULL with length 0: not given).
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes for this call.
pub(crate) unsafe fn optional_bytes(
    what: &str,
    ptr: *const u8,
    len: usize,
) -> Result<Option<Vec<u8>>> {
    if ptr.is_null() {
        if len == 0 {
            return Ok(None);
        }
        return Err(invalid(format!(
            "the {what} is a NULL pointer with length {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(invalid(format!("the {what}'s length {len} is too large")));
    }
    // SAFETY: the caller promises `len` readable bytes at the non-NULL `ptr`.
    Ok(Some(
        unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec(),
    ))
}

/// A duration given in nanoseconds; a negative one fails `InvalidTtl`.
pub(crate) fn duration(what: &str, ns: i64) -> Result<Duration> {
    u64::try_from(ns).map(Duration::from_nanos).map_err(|_| {
        Error::new(
            ErrorKind::InvalidTtl,
            format!("the {what} is negative ({ns} ns)"),
        )
    })
}

/// A duration given in nanoseconds if `has` says it is given, as
/// [`duration`] checks it; `None` if not.
pub(crate) fn given_duration(what: &str, has: bool, ns: i64) -> Result<Option<Duration>> {
    has.then(|| duration(what, ns)).transpose()
}

/// `value` if `has` says it is given.
pub(crate) fn given<T>(has: bool, value: T) -> Option<T> {
    has.then_some(value)
}

/// Nanoseconds of a duration, saturating at `u64::MAX`.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Writes `value` where `out` points; NULL fails `InvalidArgument`.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub(crate) unsafe fn write<T>(what: &str, out: *mut T, value: T) -> Result<()> {
    if out.is_null() {
        return Err(invalid(format!("the {what} out-pointer is NULL")));
    }
    // SAFETY: non-NULL, and the caller promises it is valid for a write.
    unsafe { out.write(value) };
    Ok(())
}

/// Checks that `out` is not NULL before any work is done.
pub(crate) fn check_out<T>(what: &str, out: *mut T) -> Result<()> {
    if out.is_null() {
        return Err(invalid(format!("the {what} out-pointer is NULL")));
    }
    Ok(())
}

/// Reads the caller's options struct; NULL means all defaults.
///
/// # Safety
/// `ptr` must be NULL or point to a readable `T`.
pub(crate) unsafe fn options<T: Copy + Default>(ptr: *const T) -> T {
    if ptr.is_null() {
        return T::default();
    }
    // SAFETY: non-NULL, and the caller promises it is readable.
    unsafe { ptr.read() }
}
