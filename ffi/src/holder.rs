//! Who holds a key (WHO-02): `lh_lock_holder`.

use std::sync::Arc;

use leasehold::remote::protocol::millis;
use leasehold::{CancellationToken, Lock, IDENTITY_MAX};

use crate::call::{block_on, given_up_or, run};
use crate::cancel::lh_cancel;
use crate::error::lh_error;
use crate::handles::{self, OnRuntime};
use crate::input;
use crate::lock::lh_lock;

/// The longest identity, in bytes (WHO-01): `lh_holder_info`'s buffer.
pub const LH_IDENTITY_MAX: usize = 256;
const _: () = assert!(LH_IDENTITY_MAX == IDENTITY_MAX);

/// A key's holder, as `lh_lock_holder` answers it. Durations are
/// milliseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lh_holder_info {
    /// Whether anybody holds the key; when false, the rest is zero.
    pub held: bool,
    /// The holder's fence (LOCK-02).
    pub fence: u64,
    /// How long ago the lease was granted.
    pub held_ms: u64,
    /// Whether the store lets the lease go by time (`expires_in_ms`).
    pub has_expires_in: bool,
    /// How long before the store lets the lease go unless renewed.
    pub expires_in_ms: u64,
    /// How many requests wait in the key's line.
    pub waiting: u64,
    /// The length of `identity` in bytes.
    pub identity_len: usize,
    /// The identity of the store handle that took the lease (WHO-01),
    /// `identity_len` bytes of UTF-8, not NUL-terminated; empty for a
    /// lease a store recorded before it kept identities.
    pub identity: [u8; LH_IDENTITY_MAX],
}

/// Who holds `key` of `lock` now, from a linearizable read of the store
/// (WHO-02): `out->held` false when nobody does, else the holder's fence,
/// times, identity and how many wait. A connection admitted only to read
/// may ask. `cancel` (zero: none) stops waiting for the store's answer
/// (`LH_CANCELLED`).
///
/// # Safety
/// `key` must be NULL or point to `key_len` readable bytes; `out` NULL (an
/// error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_lock_holder(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    cancel: lh_cancel,
    out: *mut lh_holder_info,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_holder_info", out)?;
        // SAFETY: passed on from the caller.
        let key = unsafe { input::string("key", key, key_len) }?;
        let lock = handles::get::<Arc<OnRuntime<Lock>>>(lock.id)?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let runtime = lock.runtime.clone();
        let asked = async move { lock.value.holder(&key).await };
        let holder = block_on(&runtime, given_up_or(asked, cancel))?;
        let mut info = lh_holder_info {
            held: false,
            fence: 0,
            held_ms: 0,
            has_expires_in: false,
            expires_in_ms: 0,
            waiting: 0,
            identity_len: 0,
            identity: [0; LH_IDENTITY_MAX],
        };
        if let Some(h) = holder {
            // A store's record longer than an identity may be is cut at a
            // character's end.
            let mut cut = h.identity.len().min(LH_IDENTITY_MAX);
            while !h.identity.is_char_boundary(cut) {
                cut -= 1;
            }
            info.identity[..cut].copy_from_slice(&h.identity.as_bytes()[..cut]);
            info = lh_holder_info {
                held: true,
                fence: h.fence,
                held_ms: millis(h.held_for),
                has_expires_in: h.expires_in.is_some(),
                expires_in_ms: h.expires_in.map_or(0, millis),
                waiting: u64::try_from(h.waiting).unwrap_or(u64::MAX),
                identity_len: cut,
                ..info
            };
        }
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_holder_info", out, info) }
    })
}
