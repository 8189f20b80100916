//! `Kept`: the one wrapper of anything the core holds for the caller (a
//! key's `Holding`, a slot's `SlotHolding`) behind a handle: what the caller
//! learns of a loss (a callback as it happens, or a blocking wait, and never
//! a callback once the hold ended), and the ending, as the exports of both
//! kinds of hold do it. The loss itself is the core's; this module only
//! tells it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Wake, Waker};
use std::thread::ThreadId;

use leasehold::{CancellationToken, Error, ErrorKind, Held, HeldView, Result};
use leasehold_bridge::WATCHED_ALREADY;
use tokio::runtime::Handle;

use crate::call::{block_on, guard, not_in_runtime, or_cancelled};
use crate::cancel::lh_cancel;
use crate::error::lh_loss_reason;
use crate::handles::{self, Kind};
use crate::holding::lh_lost_fn;
use crate::input;
use crate::pending::{self, lh_done_fn, lh_outcome, Done};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The future a loss completes.
type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The object behind a hold's handle: what the held work sees, and the
/// core's holding until the hold ends.
pub(crate) struct Kept<H: Held> {
    view: H::View,
    holding: Mutex<Option<H>>,
    /// The runtime of the store, where blocking calls run.
    runtime: Handle,
    /// Fired when the hold ends, so that a blocking wait for loss returns;
    /// made by the first such wait.
    done: Mutex<Option<CancellationToken>>,
    watch: Mutex<Option<Arc<Watch<H::View>>>>,
}

impl<H: Held> Kept<H> {
    /// Keeps `holding`, whose store's work runs on `runtime`.
    pub(crate) fn new(holding: H, runtime: Handle) -> Kept<H> {
        Kept {
            view: holding.view().clone(),
            holding: Mutex::new(Some(holding)),
            runtime,
            done: Mutex::new(None),
            watch: Mutex::new(None),
        }
    }

    /// What the held work sees.
    pub(crate) fn view(&self) -> &H::View {
        &self.view
    }

    /// The runtime of the store.
    pub(crate) fn runtime(&self) -> &Handle {
        &self.runtime
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

    /// Calls `callback(user, reason)` once on a loss, at once if lost
    /// already; one callback per hold (a second fails `InvalidArgument`).
    pub(crate) fn on_lost(
        &self,
        callback: unsafe extern "C" fn(u64, lh_loss_reason),
        user: u64,
    ) -> Result<()> {
        let watch = Arc::new(Watch {
            state: Mutex::new(WatchState {
                signal: Some(Box::pin(self.view.lost_signal())),
                firing: None,
            }),
            idle: Condvar::new(),
            callback,
            user,
            view: self.view.clone(),
        });
        {
            let mut slot = lock(&self.watch);
            if slot.is_some() {
                return Err(Error::new(ErrorKind::InvalidArgument, WATCHED_ALREADY));
            }
            *slot = Some(watch.clone());
        }
        watch.poll();
        Ok(())
    }

    /// Blocks until lost (true) or until the hold ends (false); `cancel`
    /// gives up with `Cancelled`.
    pub(crate) fn wait_lost(&self, cancel: Option<CancellationToken>) -> Result<bool> {
        let signal = self.view.lost_signal();
        let done = self.done();
        block_on(
            &self.runtime,
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
        )
    }

    /// Ends the watching: no callback after this returns, blocking waits
    /// return; answers the core's holding to end (`Closed` if ended already).
    pub(crate) fn take(&self) -> Result<H> {
        if let Some(watch) = lock(&self.watch).take() {
            watch.stop();
        }
        let holding = lock(&self.holding)
            .take()
            .ok_or_else(|| Error::new(ErrorKind::Closed, "the hold ended already"))?;
        if let Some(done) = lock(&self.done).as_ref() {
            done.cancel();
        }
        Ok(holding)
    }
}

/// What the exports of a hold's handle (`lh_holding_*` for a key,
/// `lh_slot_holding_*` for a slot) do alike, given the handle's id.
impl<H: Held> Kept<H>
where
    Arc<Kept<H>>: Kind,
{
    /// `lh_*_on_lost`: a NULL callback fails `InvalidArgument`; else
    /// [`Kept::on_lost`] of the hold behind `id`.
    pub(crate) fn on_lost_of(id: u64, callback: lh_lost_fn, user: u64) -> Result<()> {
        let callback = callback
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "the lh_lost_fn is NULL"))?;
        handles::get::<Arc<Self>>(id)?.on_lost(callback, user)
    }

    /// `lh_*_wait_lost`: [`Kept::wait_lost`] of the hold behind `id`, its
    /// answer written to `*lost`.
    ///
    /// # Safety
    /// `lost` must be NULL (an error) or valid for a write.
    pub(crate) unsafe fn wait_lost_of(id: u64, cancel: lh_cancel, lost: *mut bool) -> Result<()> {
        input::check_out("lost", lost)?;
        let kept = handles::get::<Arc<Self>>(id)?;
        let cancel = handles::get_optional::<CancellationToken>(cancel.id)?;
        let was_lost = kept.wait_lost(cancel)?;
        // SAFETY: passed on from the caller.
        unsafe { input::write("lost", lost, was_lost) }
    }

    /// `lh_*_end`: frees the handle `id`, ends the watching and then the
    /// core's holding (`Closed` if it ended already).
    pub(crate) fn end_of(id: u64) -> Result<()> {
        not_in_runtime()?;
        let (runtime, ended) = Self::ending(id)?;
        block_on(&runtime, ended).map(drop)
    }

    /// `lh_*_end_async`: [`Kept::end_of`] without blocking (`crate::pending`).
    ///
    /// # Safety
    /// As for [`pending::start`].
    pub(crate) unsafe fn end_async_of(
        id: u64,
        done: lh_done_fn,
        user: u64,
        now: *mut lh_outcome,
    ) -> bool {
        // SAFETY: passed on from the caller.
        unsafe { pending::start(|| Self::ending(id), done, user, now) }
    }

    /// The end of the hold behind `id`: its handle freed and its watching
    /// ended now, the core's holding ended by the future.
    #[allow(clippy::type_complexity)]
    fn ending(id: u64) -> Result<(Handle, impl Future<Output = Result<Done>> + Send + 'static)> {
        let kept = handles::remove::<Arc<Self>>(id)?;
        let holding = kept.take()?;
        Ok((kept.runtime().clone(), async move {
            holding.end().await.map(|()| Done::OK)
        }))
    }
}

/// A caller's callback waiting for a loss: the core's loss signal, polled
/// with a waker that calls back. No task or thread waits for it.
struct Watch<V> {
    state: Mutex<WatchState>,
    idle: Condvar,
    callback: unsafe extern "C" fn(u64, lh_loss_reason),
    user: u64,
    view: V,
}

struct WatchState {
    /// The loss signal, until it fired or the watch stopped.
    signal: Option<Signal>,
    /// The thread running the callback now, if one is.
    firing: Option<ThreadId>,
}

impl<V: HeldView> Wake for Watch<V> {
    fn wake(self: Arc<Self>) {
        self.poll();
    }
}

impl<V: HeldView> Watch<V> {
    /// Polls the loss signal; if lost, calls the callback once.
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
        let reason = lh_loss_reason::of(self.view.loss_reason());
        // SAFETY: the caller gave a callback that takes these arguments and
        // may be called from any thread until the hold's end returns.
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
