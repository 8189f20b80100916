//! `Kept`: the one wrapper of anything the core holds for a Python block (a
//! key's `Holding`, a slot's `SlotHolding`): the holding itself until `end`
//! takes it, what the block sees of it, and the one watch for its loss
//! (the bridge's `LossWatch`: a second fails `InvalidArgument`, LOCK-09),
//! stopped when the holding ends or is dropped.

use std::sync::Mutex;

use leasehold::{ErrorKind, Held, HeldView};
use leasehold_bridge::{Cancel, LossWatch};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::errors;
use crate::loop_driver::{self, Watch};
use crate::runtime;

/// A holding of the core for a Python block, and the watch for its loss.
pub struct Kept<H: Held> {
    view: H::View,
    holding: Mutex<Option<H>>,
    /// The claim on the loss callback: one per holding.
    loss: LossWatch,
    /// The watch for a loss, stopped when the holding ends.
    watch: Mutex<Option<Watch>>,
    /// The runtime its calls run on, for a test store.
    runtime: Option<Handle>,
}

impl<H: Held> Kept<H> {
    /// Keeps `holding`, whose calls run on `runtime` (`None`: the process's).
    pub fn new(holding: H, runtime: Option<Handle>) -> Kept<H> {
        Kept {
            view: holding.view().clone(),
            holding: Mutex::new(Some(holding)),
            loss: LossWatch::new(),
            watch: Mutex::new(None),
            runtime,
        }
    }

    /// What the held block sees.
    pub fn view(&self) -> &H::View {
        &self.view
    }

    /// Calls `callback(True)` on the running event loop's thread once, when
    /// the holding is lost, unless it ends first. A holding is watched once:
    /// a second call fails `InvalidArgument` (LOCK-09), and the first
    /// callback stays.
    pub fn watch_loss(
        &self,
        py: Python<'_>,
        callback: Py<PyAny>,
        event_loop: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.loss.claim().map_err(|e| errors::to_py(py, e))?;
        let lost = self.view.lost_signal();
        let watch = loop_driver::watch(
            py,
            event_loop,
            async move {
                lost.await;
                true
            },
            callback,
        )?;
        *self.watch.lock().unwrap_or_else(|p| p.into_inner()) = Some(watch);
        Ok(())
    }

    /// Ends the holding: an awaitable that fails `LeaseLost` if it was lost
    /// while held, `Closed` if it ended already. The release runs on its
    /// own: cancelling the awaiting task does not stop it.
    pub fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let holding = self.take(py)?;
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, holding.end())
    }

    /// [`Kept::end`] for code without an event loop: waits without the GIL.
    pub fn end_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let holding = self.take(py)?;
        runtime::wait_run_on(py, holding.end())
    }

    /// The runtime its calls run on (`None`: the process's).
    pub fn runtime(&self) -> Option<&Handle> {
        self.runtime.as_ref()
    }

    /// Stops the watch and takes the holding, to end it; `Closed` once it
    /// was taken already.
    pub fn take(&self, py: Python<'_>) -> PyResult<H> {
        self.stop_watching();
        self.holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| errors::error(py, ErrorKind::Closed, "the hold ended already"))
    }

    fn stop_watching(&self) {
        let watch = self.watch.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(watch) = watch {
            watch.stop();
        }
    }
}

impl<H: Held> Drop for Kept<H> {
    fn drop(&mut self) {
        self.stop_watching();
    }
}
