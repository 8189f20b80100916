//! A key held while the caller's code runs: its lease's state, learning of a
//! loss as it happens (a callback or a blocking wait, `crate::kept`), and
//! ending the hold, or many holds at once (LOCK-22).

use std::future::Future;
use std::sync::Arc;

use leasehold::{runtime, Holding, Result};
use tokio::runtime::Handle;

use crate::call::{block_on, not_in_runtime, run};
use crate::cancel::lh_cancel;
use crate::error::{lh_error, lh_loss_reason};
use crate::handles;
use crate::input;
use crate::kept::Kept;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};

/// A held key, from `lh_lock_begin` or `lh_lock_try_begin` until `lh_holding_end`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_holding {
    /// The library's id of the holding; never dereferenced.
    pub id: u64,
}

/// What a held lease is like now.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lh_lease_info {
    /// The fence: larger than every fence the store granted before (LOCK-02).
    pub fence: u64,
    /// Whether the lease was lost (LOCK-09); once true, it stays true.
    pub lost: bool,
    /// Why, once lost.
    pub reason: lh_loss_reason,
    /// Whether the lease has a deadline (an embedded lease without maxHold has none).
    pub has_remaining: bool,
    /// The time left before the holder's deadline, in nanoseconds (0 once lost).
    pub remaining_ns: u64,
}

/// Called once when a held lease or slot is lost, with the `user` value
/// given to `lh_holding_on_lost` or `lh_slot_holding_on_lost` and the
/// reason. It runs on a thread of the library's runtime (or, if it was lost
/// already, on the registering thread), must return soon, and must make no
/// blocking `lh_` call.
pub type lh_lost_fn = Option<unsafe extern "C" fn(user: u64, reason: lh_loss_reason)>;

/// The object behind an `lh_holding`: the lease, and the core's holding
/// until the hold ends.
pub(crate) type HeldLease = Kept<Holding>;

/// What the lease is like now: fence, loss, time left.
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_holding_info(
    holding: lh_holding,
    out: *mut lh_lease_info,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_lease_info", out)?;
        let held = handles::get::<Arc<HeldLease>>(holding.id)?;
        let lease = held.view();
        let remaining = lease.remaining();
        let info = lh_lease_info {
            fence: lease.fence(),
            lost: lease.lost(),
            reason: lh_loss_reason::of(lease.loss_reason()),
            has_remaining: remaining.is_some(),
            remaining_ns: remaining.map_or(0, input::nanos),
        };
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_lease_info", out, info) }
    })
}

/// Calls `callback(user, reason)` once when the lease is lost (LOCK-09), at
/// once if it is lost already; never after `lh_holding_end` returned. One
/// callback per holding: a second registration fails `LH_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn lh_holding_on_lost(
    holding: lh_holding,
    callback: lh_lost_fn,
    user: u64,
) -> *mut lh_error {
    run(|| HeldLease::on_lost_of(holding.id, callback, user))
}

/// Blocks until the lease is lost (`*lost` true) or the hold ends (`*lost`
/// false); `cancel` (zero: none) gives up with `LH_CANCELLED`.
///
/// # Safety
/// `lost` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_holding_wait_lost(
    holding: lh_holding,
    cancel: lh_cancel,
    lost: *mut bool,
) -> *mut lh_error {
    // SAFETY: passed on from the caller.
    run(|| unsafe { HeldLease::wait_lost_of(holding.id, cancel, lost) })
}

/// Ends the hold: releases the lease (the next in line is granted at once,
/// LOCK-11) and frees the handle. Fails `LH_LOST` if the lease was lost at
/// any point while held (LOCK-10). Ending twice fails `LH_CLOSED`. It takes
/// no cancel token: its release is bounded by the holder's deadline
/// (LOCK-21), and an end given up would leave the key held until its ttl.
#[no_mangle]
pub extern "C" fn lh_holding_end(holding: lh_holding) -> *mut lh_error {
    run(|| HeldLease::end_of(holding.id))
}

/// `lh_holding_end` without blocking: its outcome (no handle) comes as
/// `lh_outcome`s do. The handle is freed before this returns.
///
/// # Safety
/// `now` must be NULL or valid for a write; `done` callable from any thread
/// with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_holding_end_async(
    holding: lh_holding,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe { HeldLease::end_async_of(holding.id, done, user, now) }
}

/// Ends every hold of the `count` handles at `holdings` at once (those of
/// `lh_lock_begin_many`, LOCK-22), through the core's `Holding::end_all`:
/// each lease is released as `lh_holding_end` releases it, and every
/// handle is freed. The answer is the first failure in their order:
/// `LH_LOST` if any lease was lost while held. A handle that is not a
/// holding, or one named twice, fails `LH_INVALID_ARGUMENT`, one ended
/// already `LH_CLOSED`, and then none is ended. No handles end nothing.
///
/// # Safety
/// `holdings` must be NULL or point to `count` readable handles.
#[no_mangle]
pub unsafe extern "C" fn lh_holding_end_all(
    holdings: *const lh_holding,
    count: usize,
) -> *mut lh_error {
    run(|| {
        not_in_runtime()?;
        // SAFETY: passed on from the caller.
        let (runtime, ended) = unsafe { ending_all(holdings, count) }?;
        block_on(&runtime, ended).map(drop)
    })
}

/// `lh_holding_end_all` without blocking: its outcome (no handle) comes as
/// `lh_outcome`s do. The handles are read, and freed, before this returns.
///
/// # Safety
/// As for `lh_holding_end_all`; `now` NULL or valid for a write; `done`
/// callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_holding_end_all_async(
    holdings: *const lh_holding,
    count: usize,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe { pending::start(|| ending_all(holdings, count), done, user, now) }
}

/// The end of the holds behind `holdings`: their handles freed and their
/// loss callbacks stopped now, the core's holdings ended by the future.
///
/// # Safety
/// As for `lh_holding_end_all`.
unsafe fn ending_all(
    holdings: *const lh_holding,
    count: usize,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let ids: Vec<u64> = unsafe { input::slice("lh_holding array", holdings, count) }?
        .iter()
        .map(|h| h.id)
        .collect();
    let kept = handles::remove_all::<Arc<HeldLease>>(&ids)?;
    let runtime = kept
        .first()
        .map_or_else(runtime::process_runtime, |k| k.runtime().clone());
    let held = kept.iter().map(|k| k.take()).collect::<Result<Vec<_>>>()?;
    Ok((runtime, async move {
        Holding::end_all(held).await.map(|()| Done::OK)
    }))
}
