//! Error objects: an ERR-01 code, a message and, for `Lost`, the reason.

use std::collections::BTreeSet;
use std::ffi::{c_char, CString};
use std::sync::{Mutex, MutexGuard, OnceLock};

use leasehold::{Error, ErrorKind, LossReason};

/// The stable codes of ERR-01, in the order of `leasehold::ErrorKind::ALL`
/// (`docs/errors.md`). 0 is no error.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum lh_code {
    /// No error (what `lh_error_code(NULL)` answers).
    LH_OK = 0,
    /// The lease is gone: it ran out, was revoked, released or the store restarted.
    LH_LOST = 1,
    /// A ttl, maxHold, margin or extension outside its range, or a bad duration.
    LH_INVALID_TTL = 2,
    /// An empty lock name, key or lease name.
    LH_EMPTY_NAME = 3,
    /// The connection may read but not hold (LOCK-14).
    LH_PERMISSION_DENIED = 4,
    /// The connection has no valid credentials (LOCK-14).
    LH_UNAUTHENTICATED = 5,
    /// A hold spent its `wait` in line (LOCK-18).
    LH_WAIT_TIMEOUT = 6,
    /// The caller gave up: its cancellation fired (an `lh_cancel`, a Go ctx).
    LH_CANCELLED = 7,
    /// The store cannot be reached; the call may be retried.
    LH_UNAVAILABLE = 8,
    /// A store operation took too long; its outcome is unknown.
    LH_TIMEOUT = 9,
    /// A slot namespace was opened with other parameters than its first use.
    LH_NAMESPACE_MISMATCH = 10,
    /// A malformed, oversized or hostile frame or request (ERR-02).
    LH_PROTOCOL = 11,
    /// A bug in Leasehold (a panic caught at the ABI is one).
    LH_INTERNAL = 12,
    /// An argument not of the form the call takes: a null pointer, invalid
    /// UTF-8, a zero or unknown handle, a name over 1024 bytes.
    LH_INVALID_ARGUMENT = 13,
    /// The store or the handle was closed or freed before the call.
    LH_CLOSED = 14,
    /// Nothing can be issued yet (an ID generator); retryable.
    LH_NOT_READY = 15,
    /// A range is used up for good (an ID layout's time bits).
    LH_OVERFLOW = 16,
}

/// How many codes there are, `LH_OK` included: codes are `0..LH_CODE_COUNT`.
pub const LH_CODE_COUNT: i32 = 17;

impl lh_code {
    /// The code of a core error kind.
    pub fn of(kind: ErrorKind) -> lh_code {
        match kind {
            ErrorKind::Lost => lh_code::LH_LOST,
            ErrorKind::InvalidTtl => lh_code::LH_INVALID_TTL,
            ErrorKind::EmptyName => lh_code::LH_EMPTY_NAME,
            ErrorKind::PermissionDenied => lh_code::LH_PERMISSION_DENIED,
            ErrorKind::Unauthenticated => lh_code::LH_UNAUTHENTICATED,
            ErrorKind::WaitTimeout => lh_code::LH_WAIT_TIMEOUT,
            ErrorKind::Cancelled => lh_code::LH_CANCELLED,
            ErrorKind::Unavailable => lh_code::LH_UNAVAILABLE,
            ErrorKind::Timeout => lh_code::LH_TIMEOUT,
            ErrorKind::NamespaceMismatch => lh_code::LH_NAMESPACE_MISMATCH,
            ErrorKind::Protocol => lh_code::LH_PROTOCOL,
            ErrorKind::InvalidArgument => lh_code::LH_INVALID_ARGUMENT,
            ErrorKind::Closed => lh_code::LH_CLOSED,
            ErrorKind::NotReady => lh_code::LH_NOT_READY,
            ErrorKind::Overflow => lh_code::LH_OVERFLOW,
            ErrorKind::Internal => lh_code::LH_INTERNAL,
            // A kind added to the core after this ABI: the nearest honest code.
            _ => lh_code::LH_INTERNAL,
        }
    }

    /// The core error kind of a code; `None` for `LH_OK`.
    pub fn kind(self) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| lh_code::of(*k) == self)
    }

    /// The code numbered `n`, if there is one.
    pub fn from_i32(n: i32) -> Option<lh_code> {
        if n == 0 {
            return Some(lh_code::LH_OK);
        }
        ErrorKind::ALL
            .into_iter()
            .map(lh_code::of)
            .find(|c| *c as i32 == n)
    }
}

/// Why a lease was lost (`leasehold::LossReason`); 0 when it was not.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum lh_loss_reason {
    /// Not lost (or not a `Lost` error).
    LH_REASON_NONE = 0,
    /// Its ttl ran out before a renewal was confirmed.
    LH_REASON_EXPIRED = 1,
    /// The store revoked it at its maxHold (LOCK-12).
    LH_REASON_REVOKED = 2,
    /// The store no longer knows its id (released elsewhere).
    LH_REASON_UNKNOWN = 3,
    /// The store restarted and holds no lease from before.
    LH_REASON_RESTARTED = 4,
    /// The store was closed while the lease was held.
    LH_REASON_CLOSED = 5,
}

impl lh_loss_reason {
    /// The code of a core loss reason (`None`: not lost).
    pub fn of(reason: Option<LossReason>) -> lh_loss_reason {
        match reason {
            None => lh_loss_reason::LH_REASON_NONE,
            Some(LossReason::Expired) => lh_loss_reason::LH_REASON_EXPIRED,
            Some(LossReason::Revoked) => lh_loss_reason::LH_REASON_REVOKED,
            Some(LossReason::Restarted) => lh_loss_reason::LH_REASON_RESTARTED,
            Some(LossReason::Closed) => lh_loss_reason::LH_REASON_CLOSED,
            Some(_) => lh_loss_reason::LH_REASON_UNKNOWN,
        }
    }
}

/// A failure: its code, its message and, for `LH_LOST`, why. Returned by
/// every fallible function; read it with `lh_error_code`,
/// `lh_error_message`, `lh_error_loss_reason`; free it with `lh_error_free`.
pub struct lh_error {
    code: lh_code,
    reason: lh_loss_reason,
    message: CString,
}

/// The addresses of the error objects handed out and not yet freed, so that
/// a freed or made-up pointer is refused rather than read (ERR-03).
static LIVE: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

fn live() -> MutexGuard<'static, BTreeSet<usize>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

impl lh_error {
    /// Hands `err` to the caller as a new error object.
    pub(crate) fn into_raw(err: &Error) -> *mut lh_error {
        let text = err.message().replace('\0', "\\0");
        let boxed = Box::new(lh_error {
            code: lh_code::of(err.kind()),
            reason: lh_loss_reason::of(err.loss_reason()),
            message: CString::new(text).unwrap_or_default(),
        });
        let ptr = Box::into_raw(boxed);
        live().insert(ptr as usize);
        ptr
    }

    /// Reads a live error object; `None` for NULL or a pointer not handed out.
    fn with<T>(ptr: *const lh_error, f: impl FnOnce(&lh_error) -> T) -> Option<T> {
        let guard = live();
        if ptr.is_null() || !guard.contains(&(ptr as usize)) {
            return None;
        }
        // SAFETY: the pointer is in the live set, so it came from
        // `Box::into_raw` and has not been freed; the set's lock is held, so
        // no `lh_error_free` can free it meanwhile.
        Some(f(unsafe { &*ptr }))
    }
}

/// The error's code; `LH_OK` for NULL, `LH_INVALID_ARGUMENT` for a pointer
/// that is not a live error object.
#[no_mangle]
pub extern "C" fn lh_error_code(err: *const lh_error) -> lh_code {
    if err.is_null() {
        return lh_code::LH_OK;
    }
    crate::call::guard(lh_code::LH_INTERNAL, || {
        lh_error::with(err, |e| e.code).unwrap_or(lh_code::LH_INVALID_ARGUMENT)
    })
}

/// Why the lease was lost, for an `LH_LOST` error that knows; else `LH_REASON_NONE`.
#[no_mangle]
pub extern "C" fn lh_error_loss_reason(err: *const lh_error) -> lh_loss_reason {
    crate::call::guard(lh_loss_reason::LH_REASON_NONE, || {
        lh_error::with(err, |e| e.reason).unwrap_or(lh_loss_reason::LH_REASON_NONE)
    })
}

/// The error's message, NUL-terminated, valid until the error is freed;
/// a static message for NULL or a pointer that is not a live error object.
#[no_mangle]
pub extern "C" fn lh_error_message(err: *const lh_error) -> *const c_char {
    const NOT_AN_ERROR: &str = "not a live lh_error\0";
    crate::call::guard(NOT_AN_ERROR.as_ptr().cast(), || {
        lh_error::with(err, |e| e.message.as_ptr()).unwrap_or_else(|| NOT_AN_ERROR.as_ptr().cast())
    })
}

/// Frees an error object. NULL, an error already freed or a pointer that is
/// not an error object: nothing happens.
// Safe to call with any pointer: it is freed only if it is in the live set.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[no_mangle]
pub extern "C" fn lh_error_free(err: *mut lh_error) {
    crate::call::guard((), || {
        let mut guard = live();
        if guard.remove(&(err as usize)) {
            // SAFETY: the pointer was in the live set (it came from
            // `Box::into_raw` and was not freed); removing it under the
            // lock makes this the only free.
            drop(unsafe { Box::from_raw(err) });
        }
    })
}

/// The code's name as ERR-01 writes it (`"Lost"`, `"InvalidTtl"`, …;
/// `"Ok"` for 0), static and NUL-terminated; NULL for a number that is no code.
#[no_mangle]
pub extern "C" fn lh_code_name(code: i32) -> *const c_char {
    crate::call::guard(std::ptr::null(), || match lh_code::from_i32(code) {
        Some(lh_code::LH_OK) => c"Ok".as_ptr(),
        Some(c) => c.kind().map_or(std::ptr::null(), kind_name),
        None => std::ptr::null(),
    })
}

/// The static NUL-terminated name of a kind: its `code()`, made a C
/// string once for every kind.
fn kind_name(kind: ErrorKind) -> *const c_char {
    static NAMES: OnceLock<Vec<(ErrorKind, CString)>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            ErrorKind::ALL
                .iter()
                .map(|&k| (k, CString::new(k.code()).unwrap_or_default()))
                .collect()
        })
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(std::ptr::null(), |(_, name)| name.as_ptr())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    // ERR-01: every core code has its own C code and name, and LH_CODE_COUNT covers them.
    #[test]
    fn err_01_every_kind_has_a_c_code() {
        let mut seen = HashSet::new();
        for kind in ErrorKind::ALL {
            let code = lh_code::of(kind);
            assert!(seen.insert(code as i32), "{kind} shares a code");
            assert_eq!(code.kind(), Some(kind));
            assert!((code as i32) < LH_CODE_COUNT);
            // SAFETY: lh_code_name answers a static NUL-terminated string.
            let name = unsafe { std::ffi::CStr::from_ptr(lh_code_name(code as i32)) };
            assert_eq!(name.to_str().unwrap(), kind.code());
        }
        assert_eq!(seen.len() as i32, LH_CODE_COUNT - 1);
        assert!(lh_code_name(LH_CODE_COUNT).is_null());
        assert!(lh_code_name(-1).is_null());
    }
}
