//! `Kept`: the one wrapper of anything the core holds for a Python block (a
//! key's `Holding`, a slot's `SlotHolding`): the holding itself until `end`
//! takes it, what the block sees of it, and the watch for its loss, stopped
//! when the holding ends or is dropped.

use std::sync::Mutex;

use leasehold::{ErrorKind, Held, HeldView};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::bridge::{self, Cancel, Watch};
use crate::errors;
use crate::runtime;

pub struct Kept<H: Held> {
    view: H::View,
    holding: Mutex<Option<H>>,
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
            watch: Mutex::new(None),
            runtime,
        }
    }

    /// What the held block sees.
    pub fn view(&self) -> &H::View {
        &self.view
    }

    /// Calls `callback(True)` on the running event loop's thread once, when
    /// the holding is lost, unless it ends first. A later call replaces the
    /// watch of an earlier one.
    pub fn watch_loss(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        let lost = self.view.lost_signal();
        let watch = bridge::watch(
            py,
            async move {
                lost.await;
                true
            },
            callback,
        )?;
        let previous = self
            .watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(watch);
        if let Some(previous) = previous {
            previous.stop();
        }
        Ok(())
    }

    /// Ends the holding: an awaitable that fails `LeaseLost` if it was lost
    /// while held, `Closed` if it ended already. The release runs on its
    /// own: cancelling the awaiting task does not stop it.
    pub fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let holding = self.take(py)?;
        bridge::awaitable(py, self.runtime.as_ref(), Cancel::Shield, holding.end())
    }

    /// [`Kept::end`] for code without an event loop: waits without the GIL.
    pub fn end_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let holding = self.take(py)?;
        runtime::wait_shielded(py, holding.end())?.map_err(|e| errors::to_py(py, e))
    }

    /// Stops the watch and takes the holding, to end it; `Closed` once it
    /// was taken already.
    fn take(&self, py: Python<'_>) -> PyResult<H> {
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
