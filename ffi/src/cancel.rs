//! Cancellation tokens: the caller fires one, from any thread, to end a
//! waiting call (`lh_lock_begin`, `lh_store_acquire`, `lh_store_connect`, …),
//! which then fails `LH_CANCELLED` and leaves the line (LOCK-18).

use leasehold::CancellationToken;

use crate::call::run;
use crate::error::lh_error;
use crate::handles;
use crate::input;

/// A cancellation token. The zero handle passed to a call means "none".
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_cancel {
    /// The library's id of the token; never dereferenced.
    pub id: u64,
}

/// Makes a new, unfired token.
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_cancel_new(out: *mut lh_cancel) -> *mut lh_error {
    run(|| {
        input::check_out("lh_cancel", out)?;
        let id = handles::insert(CancellationToken::new());
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_cancel", out, lh_cancel { id }) }
    })
}

/// Fires the token: every call waiting with it gives up. Firing twice is harmless.
#[no_mangle]
pub extern "C" fn lh_cancel_fire(cancel: lh_cancel) -> *mut lh_error {
    run(|| {
        handles::get::<CancellationToken>(cancel.id)?.cancel();
        Ok(())
    })
}

/// Frees the token (a call still waiting with it goes on waiting).
#[no_mangle]
pub extern "C" fn lh_cancel_free(cancel: lh_cancel) -> *mut lh_error {
    run(|| handles::remove::<CancellationToken>(cancel.id).map(drop))
}
