//! Locks: opening one with its options, and starting to hold a key of it.

use std::future::Future;
use std::sync::Arc;

use leasehold::{CancellationToken, Error, ErrorKind, HoldOptions, Holding, Lock, Result, Store};
use leasehold_bridge::options::LockOptions;
use tokio::runtime::Handle;

use crate::call::{block_on, given_up_or, run};
use crate::cancel::lh_cancel;
use crate::error::{lh_error, lh_loss_reason};
use crate::handles;
use crate::handles::OnRuntime;
use crate::holding::{lh_holding, lh_lost_fn};
use crate::holdings::{give_all, Holdings};
use crate::input;
use crate::kept::Kept;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};
use crate::store::lh_store;

/// A lock: a named family of keys with its options.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct lh_lock {
    /// The library's id of the lock; never dereferenced.
    pub id: u64,
}

/// A lock's options; an option whose `has_` flag is false takes the
/// default. Durations are nanoseconds; a negative one fails `LH_INVALID_TTL`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct lh_lock_options {
    /// Whether `ttl_ns` is given (else 10 s).
    pub has_ttl: bool,
    /// How long a lease lasts without renewal: 1 s to 1 h (LOCK-13).
    pub ttl_ns: i64,
    /// Whether `max_hold_ns` is given (else none).
    pub has_max_hold: bool,
    /// The store revokes a lease this long after its grant (LOCK-12); at least the ttl.
    pub max_hold_ns: i64,
    /// Whether `wait_ns` is given (else unbounded).
    pub has_wait: bool,
    /// The longest time a hold waits in line (LOCK-18).
    pub wait_ns: i64,
    /// Whether `margin_ns` is given (else a tenth of the ttl).
    pub has_margin: bool,
    /// How long before the store's expiry the holder declares a loss (LOCK-04).
    pub margin_ns: i64,
}

/// The options of one hold call.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct lh_call_options {
    /// Whether `wait_ns` is given (else the lock's own wait).
    pub has_wait: bool,
    /// The longest time this call waits in line, in nanoseconds (LOCK-18).
    pub wait_ns: i64,
}

/// Opens the lock `name` of `store` with `options` (NULL: every default).
/// Nothing is sent to the store; bad options fail at once (`LH_INVALID_TTL`,
/// `LH_EMPTY_NAME`).
///
/// # Safety
/// `name` must be NULL or point to `name_len` readable bytes; `options` NULL
/// or readable; `out` NULL (an error) or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_lock_open(
    store: lh_store,
    name: *const u8,
    name_len: usize,
    options: *const lh_lock_options,
    out: *mut lh_lock,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_lock", out)?;
        // SAFETY: passed on from the caller.
        let name = unsafe { input::string("lock name", name, name_len) }?;
        // SAFETY: passed on from the caller.
        let o = unsafe { input::options(options) };
        let store = handles::get::<OnRuntime<Store>>(store.id)?;
        let options = LockOptions {
            ttl: input::given_duration("ttl", o.has_ttl, o.ttl_ns)?,
            max_hold: input::given_duration("maxHold", o.has_max_hold, o.max_hold_ns)?,
            wait: input::given_duration("wait", o.has_wait, o.wait_ns)?,
            margin: input::given_duration("margin", o.has_margin, o.margin_ns)?,
        };
        let id = handles::insert(Arc::new(OnRuntime {
            value: options.open(&store.value, &name)?,
            runtime: store.runtime,
        }));
        // SAFETY: passed on from the caller.
        unsafe { input::write("lh_lock", out, lh_lock { id }) }
    })
}

/// Frees the lock's handle (holds of it go on until they end).
#[no_mangle]
pub extern "C" fn lh_lock_free(lock: lh_lock) -> *mut lh_error {
    run(|| handles::remove::<Arc<OnRuntime<Lock>>>(lock.id).map(drop))
}

/// Asks for `key` of `lock` and waits in line for it, blocking, then holds
/// it until `lh_holding_end`: renewed in the background where the store
/// needs it (LOCK-06). The wait ends with `LH_WAIT_TIMEOUT` past the call's
/// or the lock's wait, or `LH_CANCELLED` when `cancel` fires (zero: none);
/// either way the request leaves the line (LOCK-18). `fence` (NULL: not
/// wanted) receives the lease's fence. `lh_lock_begin_async` is the same
/// without blocking a thread while in line.
///
/// # Safety
/// `key` must be NULL or point to `key_len` readable bytes; `options` NULL
/// or readable; `out` NULL (an error) or valid for a write; `fence` NULL or
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_lock_begin(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
    out: *mut lh_holding,
    fence: *mut u64,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_holding", out)?;
        // SAFETY: passed on from the caller.
        let (runtime, begin) = unsafe { begin(lock, key, key_len, options, cancel) }?;
        let done = block_on(&runtime, begin)?;
        // SAFETY: passed on from the caller.
        unsafe { give(out, done, fence) }
    })
}

/// `lh_lock_begin` without blocking: it returns at once, and the hold's
/// outcome (`handle`: an `lh_holding`; `fence`) comes as `lh_outcome`s do
/// (`now`, else `done`; see `lh_outcome`). `cancel` ends the wait with
/// `LH_CANCELLED`, and the request leaves the line (LOCK-18).
///
/// # Safety
/// As for `lh_lock_begin`; `now` NULL or valid for a write; `done` callable
/// from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_lock_begin_async(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe {
        pending::start(
            || begin(lock, key, key_len, options, cancel),
            done,
            user,
            now,
        )
    }
}

/// `lh_lock_begin_async` that also registers `lost(lost_user, reason)` as
/// the holding's loss callback before handing it out, as
/// `lh_holding_on_lost` would (LOCK-09): one call where a caller that
/// watches every hold made two. The callback may come before the outcome
/// does (a lease lost at once), from the thread that registers it or one of
/// the library's runtime; never after the hold's end returned. A NULL
/// `lost` fails `LH_INVALID_ARGUMENT` and nothing is asked for.
///
/// # Safety
/// As for `lh_lock_begin_async`; `lost` callable from any thread with
/// `lost_user` until the hold's end returned.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn lh_lock_begin_watched_async(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
    lost: lh_lost_fn,
    lost_user: u64,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    let prepare = || {
        let lost =
            lost.ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "the lh_lost_fn is NULL"))?;
        // SAFETY: passed on from the caller.
        unsafe { begin_watching(lock, key, key_len, options, cancel, Some((lost, lost_user))) }
    };
    // SAFETY: passed on from the caller.
    unsafe { pending::start(prepare, done, user, now) }
}

/// The hold of `lh_lock_begin` and `lh_lock_begin_async`, its arguments read.
///
/// # Safety
/// As for `lh_lock_begin`'s `key` and `options`.
unsafe fn begin(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    unsafe { begin_watching(lock, key, key_len, options, cancel, None) }
}

/// A loss callback and its user value.
type LostCallback = (unsafe extern "C" fn(u64, lh_loss_reason), u64);

/// `begin`, and the loss callback `watch` (if any) registered on the
/// holding before its handle is handed out.
///
/// # Safety
/// As for `lh_lock_begin`'s `key` and `options`.
unsafe fn begin_watching(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
    watch: Option<LostCallback>,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let key = unsafe { input::string("key", key, key_len) }?;
    let lock = handles::get::<Arc<OnRuntime<Lock>>>(lock.id)?;
    // SAFETY: passed on from the caller.
    let hold = unsafe { hold_options(options, cancel) }?;
    Ok((lock.runtime.clone(), async move {
        let holding = lock.value.begin(&key, &hold).await?;
        let Some((callback, user)) = watch else {
            return Ok(behind_handle(holding, lock.runtime.clone()));
        };
        let kept = Kept::new(holding, lock.runtime.clone());
        kept.on_lost(callback, user)?;
        let fence = kept.view().fence();
        Ok(Done::made(handles::insert(Arc::new(kept)), fence))
    }))
}

/// The core's options of one hold call: its wait bound and cancel token.
///
/// # Safety
/// `options` must be NULL or readable.
unsafe fn hold_options(options: *const lh_call_options, cancel: lh_cancel) -> Result<HoldOptions> {
    // SAFETY: passed on from the caller.
    let o = unsafe { input::options(options) };
    Ok(HoldOptions {
        wait: input::given_duration("wait", o.has_wait, o.wait_ns)?,
        cancel: handles::get_optional::<CancellationToken>(cancel.id)?,
    })
}

/// Asks for every key of `keys` of `lock` at once and waits in line for
/// them, blocking, then holds them all, each a lease of its own (its own
/// fence, renewal, deadline and loss) until it ends (LOCK-22): on the
/// server store hundreds of keys go in one frame. The keys are packed:
/// `count` keys one after another in the `keys_len` bytes at `keys`, the
/// length of each in `key_lens`. `out[i]` receives the holding of key `i`
/// and `fences[i]` (NULL: not wanted) its fence. All or none: when one key
/// cannot be had (`LH_WAIT_TIMEOUT` past the call's or the lock's wait,
/// `LH_CANCELLED` when `cancel` fires, a store failure), the call fails,
/// every lease it took is released and every place it took in a line is
/// left (LOCK-18), and nothing is written. A key named twice fails
/// `LH_INVALID_ARGUMENT`, an empty one `LH_EMPTY_NAME`; no keys hold
/// nothing. `lh_lock_begin_many_async` is the same without blocking a
/// thread while in line; `lh_holding_end_all` ends them all at once.
///
/// # Safety
/// `keys` must be NULL or point to `keys_len` readable bytes; `key_lens`
/// NULL or point to `count` readable lengths; `options` NULL or readable;
/// `out` NULL (an error unless `count` is 0) or valid for `count` writes;
/// `fences` NULL or valid for `count` writes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn lh_lock_begin_many(
    lock: lh_lock,
    keys: *const u8,
    keys_len: usize,
    key_lens: *const usize,
    count: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
    out: *mut lh_holding,
    fences: *mut u64,
) -> *mut lh_error {
    run(|| {
        if count > 0 {
            input::check_out("lh_holding", out)?;
        }
        // SAFETY: passed on from the caller.
        let (runtime, begin) =
            unsafe { begin_many(lock, keys, keys_len, key_lens, count, options, cancel) }?;
        let held = block_on(&runtime, begin)?;
        // SAFETY: passed on from the caller; the core answers one holding per key.
        unsafe { give_all(held, &runtime, out, fences) };
        Ok(())
    })
}

/// `lh_lock_begin_many` without blocking: it returns at once, and its
/// outcome comes as `lh_outcome`s do (`now`, else `done`; see
/// `lh_outcome`): `handle` is an `lh_holdings`, from which the caller copies
/// the holdings and their fences with `lh_holdings_take` (the library never
/// writes into the caller's memory later). `cancel` ends the wait with
/// `LH_CANCELLED`: every lease taken is released and every line left.
///
/// # Safety
/// As for `lh_lock_begin_many`'s `keys`, `key_lens` and `options`; `now`
/// NULL or valid for a write; `done` callable from any thread with `user`
/// until called.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn lh_lock_begin_many_async(
    lock: lh_lock,
    keys: *const u8,
    keys_len: usize,
    key_lens: *const usize,
    count: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    let prepare = || {
        // SAFETY: passed on from the caller.
        let (runtime, begin) =
            unsafe { begin_many(lock, keys, keys_len, key_lens, count, options, cancel) }?;
        let on = runtime.clone();
        Ok((runtime, async move {
            let batch = Holdings::new(begin.await?, on);
            Ok(Done::made(handles::insert(Arc::new(batch)), 0))
        }))
    };
    // SAFETY: passed on from the caller.
    unsafe { pending::start(prepare, done, user, now) }
}

/// The holds of `lh_lock_begin_many` and its async form, their arguments read.
///
/// # Safety
/// As for `lh_lock_begin_many`'s `keys`, `key_lens` and `options`.
unsafe fn begin_many(
    lock: lh_lock,
    keys: *const u8,
    keys_len: usize,
    key_lens: *const usize,
    count: usize,
    options: *const lh_call_options,
    cancel: lh_cancel,
) -> Result<(
    Handle,
    impl Future<Output = Result<Vec<Holding>>> + Send + 'static,
)> {
    // SAFETY: passed on from the caller.
    let keys = unsafe { input::packed_strings("keys", keys, keys_len, key_lens, count) }?;
    let lock = handles::get::<Arc<OnRuntime<Lock>>>(lock.id)?;
    // SAFETY: passed on from the caller.
    let hold = unsafe { hold_options(options, cancel) }?;
    Ok((lock.runtime.clone(), async move {
        lock.value.begin_many(&keys, &hold).await
    }))
}

/// Holds `key` of `lock` if it is free now, never waiting in line
/// (LOCK-17): `*held` says whether it was; when it was not, nothing else is
/// written. `cancel` (zero: none) stops waiting for the store's answer
/// (`LH_CANCELLED`), as while the server store reconnects; a grant that
/// answers after that is released at once.
///
/// # Safety
/// `key` must be NULL or point to `key_len` readable bytes; `out` and
/// `held` NULL (an error) or valid for a write; `fence` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lh_lock_try_begin(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    cancel: lh_cancel,
    out: *mut lh_holding,
    held: *mut bool,
    fence: *mut u64,
) -> *mut lh_error {
    run(|| {
        input::check_out("lh_holding", out)?;
        input::check_out("held", held)?;
        // SAFETY: passed on from the caller.
        let (runtime, try_begin) = unsafe { try_begin(lock, key, key_len, cancel) }?;
        let done = block_on(&runtime, try_begin)?;
        // SAFETY: passed on from the caller.
        unsafe {
            input::write("held", held, done.held)?;
            if !done.held {
                return Ok(());
            }
            give(out, done, fence)
        }
    })
}

/// `lh_lock_try_begin` without blocking: the outcome (`held`; when held,
/// `handle`, an `lh_holding`, and `fence`) comes as `lh_outcome`s do.
///
/// # Safety
/// As for `lh_lock_try_begin`'s `key`; `now` NULL or valid for a write;
/// `done` callable from any thread with `user` until called.
#[no_mangle]
pub unsafe extern "C" fn lh_lock_try_begin_async(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    cancel: lh_cancel,
    done: lh_done_fn,
    user: u64,
    now: *mut lh_outcome,
) -> bool {
    // SAFETY: passed on from the caller.
    unsafe { pending::start(|| try_begin(lock, key, key_len, cancel), done, user, now) }
}

/// The attempt of `lh_lock_try_begin` and its async form, its arguments read.
///
/// # Safety
/// As for `lh_lock_try_begin`'s `key`.
unsafe fn try_begin(
    lock: lh_lock,
    key: *const u8,
    key_len: usize,
    cancel: lh_cancel,
) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
    // SAFETY: passed on from the caller.
    let key = unsafe { input::string("key", key, key_len) }?;
    let lock = handles::get::<Arc<OnRuntime<Lock>>>(lock.id)?;
    let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
    let runtime = lock.runtime.clone();
    let attempt = async move { lock.value.try_begin(&key).await };
    Ok((runtime.clone(), async move {
        match given_up_or(attempt, cancel).await? {
            Some(holding) => Ok(behind_handle(holding, runtime)),
            None => Ok(Done::NOTHING),
        }
    }))
}

/// Puts a new holding behind a handle: the handle and the lease's fence.
pub(crate) fn behind_handle(holding: Holding, runtime: Handle) -> Done {
    let kept = Kept::new(holding, runtime);
    let fence = kept.view().fence();
    Done::made(handles::insert(Arc::new(kept)), fence)
}

/// Writes a new holding and, if wanted, its fence.
///
/// # Safety
/// `out` valid for a write; `fence` NULL or valid for a write.
unsafe fn give(out: *mut lh_holding, done: Done, fence: *mut u64) -> Result<()> {
    if !fence.is_null() {
        // SAFETY: non-NULL, and the caller promises it is valid for a write.
        unsafe { fence.write(done.fence) };
    }
    // SAFETY: passed on from the caller.
    unsafe { input::write("lh_holding", out, lh_holding { id: done.handle }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{lh_store, lh_store_free, lh_store_memory};

    unsafe extern "C" fn ignore_loss(_: u64, _: lh_loss_reason) {}

    // The future of a hold, which `pending::start` boxes to poll once,
    // fits glibc's per-thread cache of small blocks (tcache: up to 1,032
    // bytes), as the other blocks of a hold do. It was 1,168 bytes; Go's
    // embedded cycle counted as many instructions after as before
    // (docs/benchmarks.md), so the bound keeps the box from growing, not
    // a measured speed-up.
    #[test]
    fn a_holds_boxed_future_fits_the_small_block_cache() {
        let mut store = lh_store::default();
        // SAFETY: a valid out pointer.
        assert!(unsafe { lh_store_memory(&mut store) }.is_null());
        let mut lock = lh_lock::default();
        // SAFETY: a valid name and out pointer, no options.
        let opened = unsafe { lh_lock_open(store, b"l".as_ptr(), 1, std::ptr::null(), &mut lock) };
        assert!(opened.is_null());
        let watches: [Option<LostCallback>; 2] = [Some((ignore_loss, 1)), None];
        for watch in watches {
            // SAFETY: a valid key, no options.
            let (_, hold) = unsafe {
                begin_watching(
                    lock,
                    b"k".as_ptr(),
                    1,
                    std::ptr::null(),
                    lh_cancel::default(),
                    watch,
                )
            }
            .unwrap();
            let size = std::mem::size_of_val(&hold);
            assert!(size <= 1_032, "{size} bytes");
        }
        assert!(lh_lock_free(lock).is_null());
        assert!(lh_store_free(store).is_null());
    }
}
