//! A slot held while the caller's code runs (the core's `SlotHolding`):
//! renewed in the background by the core, its state, the timestamps the
//! caller issued, learning of a loss as for a key (`crate::kept`), and
//! ending the hold, which releases the slot with the largest timestamp issued.

use std::future::Future;
use std::sync::Arc;

use leasehold::slots::{SlotHolding, Slots};
use leasehold::{CancellationToken, Result};
use tokio::runtime::Handle;

use super::{lh_slot_info, lh_slot_lease, lh_slots};
use crate::call::{block_on, given_up_or, run};
use crate::cancel::lh_cancel;
use crate::error::{lh_error, lh_loss_reason};
use crate::handles::{self, OnRuntime};
use crate::holding::lh_lost_fn;
use crate::input;
use crate::kept::Kept;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};

/// A held slot, from `lh_slots_begin` until `lh_slot_holding_end`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_slot_holding {
    /// The library's id of the holding; never dereferenced.
    pub id: u64,
}

/// What a held slot is like now.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lh_held_slot_info {
    /// The lease as last renewed: the fence stays, the expiry and the
    /// ceiling move on with every renewal.
    pub lease: lh_slot_info,
    /// The largest timestamp recorded by `lh_slot_holding_issued` (0: none).
    pub last_issued: u64,
    /// Whether the slot was lost; once true, it stays true.
    pub lost: bool,
    /// Why, once lost.
    pub reason: lh_loss_reason,
    /// The time left before the holder's deadline (the send time of the
    /// last confirmed call + ttl − margin), in nanoseconds; 0 once lost.
    pub remaining_ns: u64,
}

/// The object behind an `lh_slot_holding`: the held slot, and the core's
/// holding until the hold ends.
pub(crate) type HeldSlotHolding = Kept<SlotHolding>;

/// Acquires a slot for the owner `key` / `instance` as `lh_slots_acquire`
/// does (SLOT-01) and holds it until `lh_slot_holding_end`: the library
/// renews it every ttl/3. `*held` says whether it got one: false when every
/// slot is held (an outcome, not an error), and then nothing else is
/// written. The slot is lost when a renewal answers nothing (another owner
/// has it) or none is confirmed by the holder's deadline. `LH_TIMEOUT` and
/// `cancel` as for `lh_slots_acquire`.
///
/// # Safety
/// `key` and `instance` must each be NULL or point to their length in
/// readable bytes; `out` and `held` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slots_begin(
    slots: lh_slots,
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
    has_preferred: bool,
    preferred: u32,
    cancel: lh_cancel,
    out: *mut lh_slot_holding,
    held: *mut bool,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_slot_holding", out)?;
        input::check_out("held", held)?;
        // SAFETY: passed on from the caller.
        let (runtime, begun) = unsafe {
            begin(
                slots,
                key,
                key_len,
                instance,
                instance_len,
                has_preferred.then_some(preferred),
                cancel,
            )
        }?;
        let done = block_on(&runtime, begun)?;
        // SAFETY: passed on from the caller.
        unsafe {
            if done.held {
                input::write("lh_slot_holding", out, lh_slot_holding { id: done.handle })?;
            }
            input::write("held", held, done.held)
        }
    })
}

/// `lh_slots_begin` without blocking: the outcome (`held`; when held,
/// `handle`, an `lh_slot_holding`, and `fence`) comes as `lh_outcome`s do.
///
/// # Safety
/// As for `lh_slots_begin`'s `key` and `instance`; `now` NULL or valid for
/// a write; `done` callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_slots_begin_async(
    slots: lh_slots,
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
    has_preferred: bool,
    preferred: u32,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    let preferred = has_preferred.then_some(preferred);
    // SAFETY: passed on from the caller.
    unsafe {
        pending::start(
            || {
                begin(
                    slots,
                    key,
                    key_len,
                    instance,
                    instance_len,
                    preferred,
                    cancel,
                )
            },
            done,
            user,
            now,
        )
    }
}

/// The hold of `lh_slots_begin` and its async form, its arguments read.
///
/// # Safety
/// As for `lh_slots_begin`'s `key` and `instance`.
unsafe fn begin(
    slots: lh_slots,
    key: *const u8,
    key_len: usize,
    instance: *const u8,
    instance_len: usize,
    preferred: Option<u32>,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let owner = unsafe { super::owner(key, key_len, instance, instance_len) }?;
    let slots = handles::get::<Arc<OnRuntime<Slots>>>(slots.id)?;
    let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
    let runtime = slots.runtime.clone();
    let attempt = async move { slots.value.begin(&owner, preferred).await };
    Ok((runtime.clone(), async move {
        let Some(holding) = given_up_or(attempt, cancel).await? else {
            return Ok(Done::NOTHING);
        };
        let kept = Kept::new(holding, runtime);
        let fence = kept.view().lease().fence();
        Ok(Done::made(handles::insert(Arc::new(kept)), fence))
    }))
}

/// What the held slot is like now: the lease as last renewed, the largest
/// timestamp recorded as issued, loss, time left.
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slot_holding_info(
    holding: lh_slot_holding,
    out: *mut lh_held_slot_info,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_held_slot_info", out)?;
        let kept = handles::get::<Arc<HeldSlotHolding>>(holding.id)?;
        let held = kept.view();
        let info = lh_held_slot_info {
            lease: super::info(&held.lease()),
            last_issued: held.last_issued(),
            lost: held.lost(),
            reason: lh_loss_reason::of(held.loss_reason()),
            remaining_ns: input::nanos(held.remaining()),
        };
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_held_slot_info", out, info) }
    })
}

/// Writes a new handle of the lease as last renewed (free it with
/// `lh_slot_lease_free`; it stays valid after the hold ended).
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slot_holding_lease(
    holding: lh_slot_holding,
    out: *mut lh_slot_lease,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_slot_lease", out)?;
        let kept = handles::get::<Arc<HeldSlotHolding>>(holding.id)?;
        let id = handles::insert(kept.view().lease());
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_slot_lease", out, lh_slot_lease { id }) }
    })
}

/// Records that a timestamp up to `ms` (milliseconds since the Unix epoch)
/// was issued: the end of the hold hands the largest one recorded to the
/// slot's next holder as its floor (SLOT-05).
#[no_mangle]
pub extern "C" fn lh_slot_holding_issued(holding: lh_slot_holding, ms: u64) -> *mut lh_error {
    run(|| {
        handles::get::<Arc<HeldSlotHolding>>(holding.id)?
            .view()
            .issued(ms)
    })
}

/// Calls `callback(user, reason)` once when the slot is lost, at once if it
/// is lost already; never after `lh_slot_holding_end` returned. One
/// callback per holding: a second registration fails `LH_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn lh_slot_holding_on_lost(
    holding: lh_slot_holding,
    callback: lh_lost_fn,
    user: u64,
) -> *mut lh_error {
    run(|| HeldSlotHolding::on_lost_of(holding.id, callback, user))
}

/// Blocks until the slot is lost (`*lost` true) or the hold ends (`*lost`
/// false); `cancel` (zero: none) gives up with `LH_CANCELLED`.
///
/// # Safety
/// `lost` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_slot_holding_wait_lost(
    holding: lh_slot_holding,
    cancel: lh_cancel,
    lost: *mut bool,
) -> *mut lh_error {
    // SAFETY: passed on from the caller.
    run(|| unsafe { HeldSlotHolding::wait_lost_of(holding.id, cancel, lost) })
}

/// Ends the hold: stops renewing, releases the slot with the largest
/// timestamp recorded as issued (SLOT-05) and frees the handle. Fails
/// `LH_LOST` if the slot was lost at any point while held, or the release
/// found it another's. A release that fails otherwise (the store cannot be
/// reached) does not fail the end: the slot runs out at the store, and its
/// next holder starts above its ceiling. Ending twice fails `LH_CLOSED`.
/// It takes no cancel token, as `lh_holding_end` takes none.
#[no_mangle]
pub extern "C" fn lh_slot_holding_end(holding: lh_slot_holding) -> *mut lh_error {
    run(|| HeldSlotHolding::end_of(holding.id))
}

/// `lh_slot_holding_end` without blocking: its outcome (no handle) comes as
/// `lh_outcome`s do. The handle is freed before this returns.
///
/// # Safety
/// `now` must be NULL or valid for a write; `done` callable from any thread
/// with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_slot_holding_end_async(
    holding: lh_slot_holding,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe { HeldSlotHolding::end_async_of(holding.id, done, user, now) }
}
