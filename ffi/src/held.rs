//! A key held while the caller's code runs: its lease's state, learning of a
//! loss as it happens (a callback or a blocking wait), and ending the hold.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Wake, Waker};
use std::thread::ThreadId;

use leasehold::{CancellationToken, Error, ErrorKind, Holding, Lease, Result};
use tokio::runtime::Handle;

use crate::call::{block_on, guard, not_in_runtime, or_cancelled, run};
use crate::cancel::lh_cancel;
use crate::error::{lh_error, lh_loss_reason};
use crate::handles;
use crate::input;

/// The future a lost lease completes (`Lease::lost_signal`).
type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

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

/// Called once when a held lease is lost, with the `user` value given to
/// `lh_holding_on_lost` and the reason. It runs on a thread of the library's
/// runtime (or, if the lease was lost already, on the registering thread),
/// must return soon, and must make no blocking `lh_` call.
pub type lh_lost_fn = Option<unsafe extern "C" fn(user: u64, reason: lh_loss_reason)>;

/// The object behind an `lh_holding`.
pub(crate) struct HeldLease {
    lease: Lease,
    holding: Mutex<Option<Holding>>,
    /// The runtime of the lock's store, where blocking calls run.
    runtime: Handle,
    /// Fired when the hold ends, so that a blocking wait for loss returns;
    /// made by the first such wait.
    done: Mutex<Option<CancellationToken>>,
    watch: Mutex<Option<Arc<Watch>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl HeldLease {
    pub(crate) fn new(holding: Holding, runtime: Handle) -> HeldLease {
        HeldLease {
            lease: holding.lease().clone(),
            holding: Mutex::new(Some(holding)),
            runtime,
            done: Mutex::new(None),
            watch: Mutex::new(None),
        }
    }

    /// The token fired when the hold ends (fired already if it ended).
    fn done(&self) -> CancellationToken {
        lock(&self.done)
            .get_or_insert_with(|| {
                let token = CancellationToken::new();
                if lock(&self.holding).is_none() {
                    token.cancel();
                }
                token
            })
            .clone()
    }

    pub(crate) fn lease(&self) -> &Lease {
        &self.lease
    }
}

/// A caller's callback waiting for a loss: the core's loss signal, polled
/// with a waker that calls back. No task or thread waits for it.
struct Watch {
    state: Mutex<WatchState>,
    idle: Condvar,
    callback: unsafe extern "C" fn(u64, lh_loss_reason),
    user: u64,
    lease: Lease,
}

struct WatchState {
    /// The loss signal, until it fired or the watch stopped.
    signal: Option<Signal>,
    /// The thread running the callback now, if one is.
    firing: Option<ThreadId>,
}

impl Wake for Watch {
    fn wake(self: Arc<Self>) {
        self.poll();
    }
}

impl Watch {
    /// Polls the loss signal; if the lease is lost, calls the callback once.
    fn poll(self: &Arc<Self>) {
        let mut st = lock(&self.state);
        let Some(signal) = st.signal.as_mut() else {
            return;
        };
        let waker = Waker::from(self.clone());
        if signal
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
        {
            return;
        }
        st.signal = None;
        st.firing = Some(std::thread::current().id());
        drop(st);
        let reason = lh_loss_reason::of(self.lease.loss_reason());
        // SAFETY: the caller gave a callback that takes these arguments and
        // may be called from any thread until `lh_holding_end` returns.
        guard((), || unsafe { (self.callback)(self.user, reason) });
        lock(&self.state).firing = None;
        self.idle.notify_all();
    }

    /// No callback after this returns (except from the calling thread's own callback).
    fn stop(&self) {
        let mut st = lock(&self.state);
        st.signal = None;
        if st.firing.is_none() {
            return;
        }
        let me = std::thread::current().id();
        while st.firing.is_some_and(|t| t != me) {
            st = self.idle.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

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
        let lease = &held.lease;
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
    run(|| {
        let callback = callback
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "the lh_lost_fn is NULL"))?;
        let held = handles::get::<Arc<HeldLease>>(holding.id)?;
        let watch = Arc::new(Watch {
            state: Mutex::new(WatchState {
                signal: Some(Box::pin(held.lease.lost_signal())),
                firing: None,
            }),
            idle: Condvar::new(),
            callback,
            user,
            lease: held.lease.clone(),
        });
        {
            let mut slot = lock(&held.watch);
            if slot.is_some() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "the holding has a loss callback already",
                ));
            }
            *slot = Some(watch.clone());
        }
        watch.poll();
        Ok(())
    })
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
    run(|| {
        input::check_out("lost", lost)?;
        let held = handles::get::<Arc<HeldLease>>(holding.id)?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let signal = held.lease.lost_signal();
        let done = held.done();
        let was_lost = block_on(
            &held.runtime,
            or_cancelled(
                async move {
                    tokio::select! {
                        biased;
                        _ = signal => Ok(true),
                        _ = done.cancelled() => Ok(false),
                    }
                },
                cancel,
            ),
        )?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("lost", lost, was_lost) }
    })
}

/// Ends the hold: releases the lease (the next in line is granted at once,
/// LOCK-11) and frees the handle. Fails `LH_LOST` if the lease was lost at
/// any point while held (LOCK-10). Ending twice fails `LH_CLOSED`.
#[no_mangle]
pub extern "C" fn lh_holding_end(holding: lh_holding) -> *mut lh_error {
    run(|| {
        not_in_runtime()?;
        let held = handles::remove::<Arc<HeldLease>>(holding.id)?;
        end(&held)
    })
}

fn end(held: &HeldLease) -> Result<()> {
    if let Some(watch) = lock(&held.watch).take() {
        watch.stop();
    }
    let holding = lock(&held.holding)
        .take()
        .ok_or_else(|| Error::new(ErrorKind::Closed, "the hold ended already"))?;
    if let Some(done) = lock(&held.done).as_ref() {
        done.cancel();
    }
    block_on(&held.runtime, holding.end())
}
