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

/// Borrows the caller's array of `len` values at `ptr` for this call: NULL
/// or anything with length 0 is empty; NULL with a length, a misaligned
/// pointer or a length too large for memory fail `InvalidArgument`.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable values for this call.
pub(crate) unsafe fn slice<'a, T>(what: &str, ptr: *const T, len: usize) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(invalid(format!(
            "the {what} is a NULL pointer with length {len}"
        )));
    }
    if !ptr.is_aligned() {
        return Err(invalid(format!("the {what} pointer is misaligned")));
    }
    if len
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        return Err(invalid(format!("the {what}'s length {len} is too large")));
    }
    // SAFETY: the caller promises `len` readable values at the non-NULL,
    // aligned `ptr`, and they fit an isize.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Copies `count` strings packed one after another in the caller's
/// `bytes_len` bytes at `bytes`, the length of each in `lens` (so that a
/// caller passes two flat arrays, neither holding a pointer): lengths that
/// do not add up to `bytes_len`, or a string that is not UTF-8, fail
/// `InvalidArgument`.
///
/// # Safety
/// `bytes` must be NULL or point to `bytes_len` readable bytes, and `lens`
/// NULL or point to `count` readable lengths, for this call.
pub(crate) unsafe fn packed_strings(
    what: &str,
    bytes: *const u8,
    bytes_len: usize,
    lens: *const usize,
    count: usize,
) -> Result<Vec<String>> {
    // SAFETY: passed on from the caller.
    let lens = unsafe { slice("lengths", lens, count) }?;
    let total = lens
        .iter()
        .try_fold(0usize, |sum, &len| sum.checked_add(len));
    if total != Some(bytes_len) {
        return Err(invalid(format!(
            "the {what}' lengths do not add up to their {bytes_len} bytes"
        )));
    }
    // SAFETY: passed on from the caller.
    let bytes = unsafe { slice(what, bytes, bytes_len) }?;
    let mut rest = bytes;
    lens.iter()
        .enumerate()
        .map(|(at, &len)| {
            let (one, after) = rest.split_at(len);
            rest = after;
            std::str::from_utf8(one)
                .map(str::to_owned)
                .map_err(|e| invalid(format!("{what} {at} is not UTF-8: {e}")))
        })
        .collect()
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
