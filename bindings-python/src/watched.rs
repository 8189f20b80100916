//! `Watched`: what a holding of the core (a key's `Holding`, a slot's
//! `SlotHolding`) keeps for the Python block running under it: the holding
//! itself until `end` takes it, and the watch for its loss, stopped when the
//! holding ends or is dropped.

use std::future::Future;
use std::sync::Mutex;

use leasehold::ErrorKind;
use pyo3::prelude::*;

use crate::bridge::{self, Watch};
use crate::errors;

pub struct Watched<H> {
    holding: Mutex<Option<H>>,
    /// The watch for a loss, stopped when the holding ends.
    watch: Mutex<Option<Watch>>,
}

impl<H> Watched<H> {
    pub fn new(holding: H) -> Watched<H> {
        Watched {
            holding: Mutex::new(Some(holding)),
            watch: Mutex::new(None),
        }
    }

    /// Calls `callback(True)` on the running event loop's thread once, when
    /// `lost` completes, unless the holding ends first. A later call
    /// replaces the watch of an earlier one.
    pub fn watch_loss<F>(&self, py: Python<'_>, lost: F, callback: Py<PyAny>) -> PyResult<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
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

    /// Stops the watch and takes the holding, to end it; `InvalidArgument`
    /// once it was taken already.
    pub fn take(&self, py: Python<'_>) -> PyResult<H> {
        self.stop_watching();
        self.holding
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                errors::error(py, ErrorKind::InvalidArgument, "the hold has ended already")
            })
    }

    fn stop_watching(&self) {
        let watch = self.watch.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(watch) = watch {
            watch.stop();
        }
    }
}

impl<H> Drop for Watched<H> {
    fn drop(&mut self) {
        self.stop_watching();
    }
}
