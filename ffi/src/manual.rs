//! Manual leases: taken, extended and released by the caller,
//! with no background renewal, each with a fence (MANUAL-07).

use std::future::Future;

use leasehold::{give_up, CancellationToken, HoldOptions, ManualLease, Result, Store};
use tokio::runtime::Handle;

use crate::handles::OnRuntime;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};

use crate::call::{block_on, given_up_or, run, CANCELLED};
use crate::cancel::lh_cancel;
use crate::error::lh_error;
use crate::handles;
use crate::input;
use crate::store::lh_store;

/// A manual lease. Safe to use from several threads at once (MANUAL-06).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_manual {
    /// The library's id of the lease; never dereferenced.
    pub id: u64,
}

/// Takes the manual lease `name` for `ttl_ns` if nobody holds it, at once
/// (MANUAL-01): `*held` says whether it did. The ttl lies from 1 s to 1 h.
/// `cancel` (zero: none) stops waiting for the store's answer
/// (`LH_CANCELLED`); a lease that answers after that is released at once.
///
/// # Safety
/// `name` must be NULL or point to `name_len` readable bytes; `out` and
/// `held` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_store_try_acquire(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    ttl_ns: i64,
    cancel: lh_cancel,
    out: *mut lh_manual,
    held: *mut bool,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_manual", out)?;
        input::check_out("held", held)?;
        // SAFETY: passed on from the caller.
        let (runtime, tried) = unsafe { try_acquire(store, name, name_len, ttl_ns, cancel) }?;
        let done = block_on(&runtime, tried)?;
        // SAFETY: passed on from the caller.
        unsafe {
            input::write("held", held, done.held)?;
            if !done.held {
                return Ok(());
            }
            input::write("lh_manual", out, lh_manual { id: done.handle })
        }
    })
}

/// `lh_store_try_acquire` without blocking: the outcome (`held`; when
/// held, `handle`, an `lh_manual`, and `fence`) comes as `lh_outcome`s do.
///
/// # Safety
/// As for `lh_store_try_acquire`'s `name`; `now` NULL or valid for a write;
/// `done` callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_store_try_acquire_async(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    ttl_ns: i64,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe {
        pending::start(
            || try_acquire(store, name, name_len, ttl_ns, cancel),
            done,
            user,
            now,
        )
    }
}

/// The attempt of `lh_store_try_acquire` and its async form, its arguments read.
///
/// # Safety
/// As for `lh_store_try_acquire`'s `name`.
unsafe fn try_acquire(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    ttl_ns: i64,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let name = unsafe { input::string("lease name", name, name_len) }?;
    let ttl = input::duration("ttl", ttl_ns)?;
    let store = handles::get::<OnRuntime<Store>>(store.id)?;
    let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
    let runtime = store.runtime.clone();
    let attempt = async move { store.value.try_acquire(&name, ttl).await };
    // A lease that answers after a give-up is released at once.
    let release = |lease: Option<ManualLease>| async move {
        if let Some(lease) = lease {
            let _ = lease.release().await;
        }
    };
    Ok((runtime.clone(), async move {
        let tried = give_up::unless_given_up(cancel, &runtime, CANCELLED, attempt, release).await?;
        match tried {
            Some(lease) => Ok(behind_handle(lease, runtime)),
            None => Ok(Done::NOTHING),
        }
    }))
}

/// Waits for the manual lease `name` (MANUAL-02): woken by the store's push
/// where it pushes, polling with jittered backoff elsewhere. `has_wait` /
/// `wait_ns` bound the wait (`LH_WAIT_TIMEOUT`); `cancel` (zero: none) gives
/// up (`LH_CANCELLED`). The ttl starts at the grant.
///
/// # Safety
/// `name` must be NULL or point to `name_len` readable bytes; `out` NULL
/// (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_store_acquire(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    ttl_ns: i64,
    has_wait: bool,
    wait_ns: i64,
    cancel: lh_cancel,
    out: *mut lh_manual,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_manual", out)?;
        // SAFETY: passed on from the caller.
        let (runtime, acquired) =
            unsafe { acquire(store, name, name_len, ttl_ns, has_wait, wait_ns, cancel) }?;
        let done = block_on(&runtime, acquired)?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_manual", out, lh_manual { id: done.handle }) }
    })
}

/// `lh_store_acquire` without blocking a thread while it waits: the
/// outcome (`handle`, an `lh_manual`, and `fence`) comes as `lh_outcome`s do.
///
/// # Safety
/// As for `lh_store_acquire`'s `name`; `now` NULL or valid for a write;
/// `done` callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_store_acquire_async(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    ttl_ns: i64,
    has_wait: bool,
    wait_ns: i64,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe {
        pending::start(
            || acquire(store, name, name_len, ttl_ns, has_wait, wait_ns, cancel),
            done,
            user,
            now,
        )
    }
}

/// The wait of `lh_store_acquire` and its async form, its arguments read.
///
/// # Safety
/// As for `lh_store_acquire`'s `name`.
unsafe fn acquire(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    ttl_ns: i64,
    has_wait: bool,
    wait_ns: i64,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let name = unsafe { input::string("lease name", name, name_len) }?;
    let ttl = input::duration("ttl", ttl_ns)?;
    let store = handles::get::<OnRuntime<Store>>(store.id)?;
    let options = HoldOptions {
        wait: has_wait
            .then(|| input::duration("wait", wait_ns))
            .transpose()?,
        cancel: handles::get_optional::<CancellationToken>(cancel.id)?,
    };
    let runtime = store.runtime.clone();
    Ok((runtime, async move {
        let lease = store.value.acquire(&name, ttl, &options).await?;
        Ok(behind_handle(lease, store.runtime))
    }))
}

/// Puts a new manual lease behind a handle: the handle and the lease's fence.
fn behind_handle(lease: ManualLease, runtime: Handle) -> Done {
    let fence = lease.fence();
    let id = handles::insert(OnRuntime {
        value: lease,
        runtime,
    });
    Done::made(id, fence)
}

/// The lease's fence (MANUAL-07).
///
/// # Safety
/// `out` must be NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_manual_fence(lease: lh_manual, out: *mut u64) -> *mut lh_error {
    run(|| {
        input::check_out("fence", out)?;
        let lease = handles::get::<OnRuntime<ManualLease>>(lease.id)?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("fence", out, lease.value.fence()) }
    })
}

/// Sets the lease's expiry to now + `d_ns` (MANUAL-03): `LH_LOST` on a lost
/// or released lease, `LH_INVALID_TTL` outside 1 s to 1 h. `cancel` (zero:
/// none) stops waiting for the answer (`LH_CANCELLED`; the outcome is unknown).
#[no_mangle]
pub extern "C" fn lh_manual_extend(
    lease: lh_manual,
    d_ns: i64,
    cancel: lh_cancel,
) -> *mut lh_error {
    run(|| {
        let d = input::duration("extension", d_ns)?;
        let lease = handles::get::<OnRuntime<ManualLease>>(lease.id)?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let runtime = lease.runtime.clone();
        block_on(
            &runtime,
            given_up_or(async move { lease.value.extend(d).await }, cancel),
        )
    })
}

/// Releases the lease if its id still owns the key (MANUAL-04): the first
/// release of a lost lease fails `LH_LOST`; after a confirmed release or
/// loss, further calls succeed and do nothing. The handle stays valid
/// until `lh_manual_free`. `cancel` as for `lh_manual_extend`.
#[no_mangle]
pub extern "C" fn lh_manual_release(lease: lh_manual, cancel: lh_cancel) -> *mut lh_error {
    run(|| {
        let lease = handles::get::<OnRuntime<ManualLease>>(lease.id)?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let runtime = lease.runtime.clone();
        block_on(
            &runtime,
            given_up_or(async move { lease.value.release().await }, cancel),
        )
    })
}

/// Frees the lease's handle without releasing it (it runs out at its ttl).
/// Freeing twice fails `LH_CLOSED`.
#[no_mangle]
pub extern "C" fn lh_manual_free(lease: lh_manual) -> *mut lh_error {
    run(|| handles::remove::<OnRuntime<ManualLease>>(lease.id).map(drop))
}
