//! The C ABI of Leasehold: the core behind opaque handles, for Go (cgo) and
//! C/C++ callers. It holds no lease logic of its own: every call translates
//! its arguments, runs the core, and translates the outcome.
//!
//! The rules every function keeps (see `docs/go.md` and `include/leasehold.h`):
//!
//! - Objects are opaque handles (`lh_store`, `lh_lock`, `lh_holding`,
//!   `lh_holdings`, `lh_manual`, `lh_slots`, `lh_slot_lease`, `lh_slot_holding`,
//!   `lh_ids`, `lh_cancel`, `lh_clock`): small structs carrying an id the library
//!   looks up, never a pointer the caller could dereference. A zero handle, a handle of another kind
//!   or a made-up one fails `InvalidArgument`; a handle already closed or
//!   freed fails `Closed` (ERR-03: no double free, no use after free).
//! - Borrowed inputs are `pointer + length`, copied before the call returns;
//!   strings must be UTF-8 (`InvalidArgument` otherwise). A null pointer
//!   with length 0 is the empty string. Many strings (`lh_lock_begin_many`'s
//!   keys) are packed: their bytes one after another, and an array of their
//!   lengths, so that neither array holds a pointer.
//! - Every fallible function returns an `lh_error *` (code + message, freed
//!   by `lh_error_free`) or NULL on success; never a thread-local last error.
//! - Every export catches panics: a panic becomes an `Internal` error.
//! - Blocking calls run the core on the process's runtime
//!   (`leasehold::runtime::process_runtime`) from the calling thread; they
//!   must not be called from a thread that runs that runtime (such as inside
//!   an `lh_lost_fn` callback), and fail `InvalidArgument` if they are.
//! - Every call that may wait (in line or on the store) has an `_async`
//!   form that returns at once and completes through an `lh_done_fn` with
//!   the caller's user value (`crate::pending`): no thread of the caller's
//!   waits, and the call's `lh_cancel` ends it. Every such call takes a
//!   cancel token.
//!
//! `lh_abi_version` says which version of these rules and signatures the
//! library implements; a caller compiled against another `LH_ABI_VERSION`
//! must refuse to run.

#![allow(non_camel_case_types)]

mod call;
mod cancel;
mod error;
mod handles;
mod holder;
mod holding;
mod holdings;
mod idgen;
mod input;
mod kept;
mod lock;
mod manual;
mod pending;
mod slots;
mod store;
#[cfg(feature = "testing")]
mod testing;

pub use cancel::{lh_cancel, lh_cancel_fire, lh_cancel_free, lh_cancel_new};
pub use error::{
    lh_code, lh_code_name, lh_error, lh_error_code, lh_error_free, lh_error_loss_reason,
    lh_error_message, lh_loss_reason, LH_CODE_COUNT,
};
pub use holder::{lh_holder_info, lh_lock_holder, LH_IDENTITY_MAX};
pub use holding::{
    lh_holding, lh_holding_end, lh_holding_end_all, lh_holding_end_all_async, lh_holding_end_async,
    lh_holding_info, lh_holding_on_lost, lh_holding_wait_lost, lh_lease_info, lh_lost_fn,
};
pub use holdings::{lh_holdings, lh_holdings_free, lh_holdings_take};
pub use idgen::{
    lh_id_generator_info, lh_id_layout, lh_id_layout_default, lh_id_layout_js_safe,
    lh_id_layout_parts, lh_id_layout_seconds, lh_id_parts, lh_ids, lh_ids_close,
    lh_ids_close_async, lh_ids_free, lh_ids_info, lh_ids_lease, lh_ids_next, lh_ids_next_async,
    lh_ids_next_into, lh_ids_open, lh_ids_open_async, lh_ids_options, lh_ids_owner,
};
pub use lock::{
    lh_call_options, lh_lock, lh_lock_begin, lh_lock_begin_async, lh_lock_begin_many,
    lh_lock_begin_many_async, lh_lock_begin_watched_async, lh_lock_free, lh_lock_open,
    lh_lock_options, lh_lock_try_begin, lh_lock_try_begin_async,
};
pub use manual::{
    lh_manual, lh_manual_extend, lh_manual_fence, lh_manual_free, lh_manual_release,
    lh_store_acquire, lh_store_acquire_async, lh_store_try_acquire, lh_store_try_acquire_async,
};
pub use pending::{lh_done_fn, lh_outcome};
pub use slots::holding::{
    lh_held_slot_info, lh_slot_holding, lh_slot_holding_end, lh_slot_holding_end_async,
    lh_slot_holding_info, lh_slot_holding_issued, lh_slot_holding_lease, lh_slot_holding_on_lost,
    lh_slot_holding_wait_lost, lh_slots_begin, lh_slots_begin_async,
};
pub use slots::{
    lh_owner_check, lh_owner_new, lh_slot_info, lh_slot_lease, lh_slot_lease_free,
    lh_slot_lease_info, lh_slots, lh_slots_acquire, lh_slots_acquire_async, lh_slots_free,
    lh_slots_open, lh_slots_options, lh_slots_release, lh_slots_renew, LH_NAME_MAX,
};
pub use store::{
    lh_connect_options, lh_store, lh_store_close, lh_store_connect, lh_store_connect_async,
    lh_store_free, lh_store_memory,
};
#[cfg(feature = "testing")]
pub use testing::{
    lh_clock, lh_clock_advance, lh_clock_free, lh_clock_new, lh_duration_parse, lh_memory_options,
    lh_store_memory_with, lh_testing_panic,
};

/// The version of the ABI: the header's `LH_ABI_VERSION` must equal
/// [`lh_abi_version`]'s answer, or the caller was compiled for another library.
pub const LH_ABI_VERSION: u32 = 8;

/// The ABI version this library implements (compare with `LH_ABI_VERSION`).
#[no_mangle]
pub extern "C" fn lh_abi_version() -> u32 {
    LH_ABI_VERSION
}

/// The library's version, as a static NUL-terminated string (never freed).
#[no_mangle]
pub extern "C" fn lh_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
