//! `Lock`: a named family of keys with its options; `begin` holds a key,
//! `begin_many` many keys at once.

use std::time::{Duration, Instant};

use leasehold::{CancellationToken, HoldOptions, Lock};
use leasehold_bridge::Cancel;
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::convert;
use crate::holder::PyHolderInfo;
use crate::holding::PyHolding;
use crate::loop_driver;
use crate::runtime;

/// A lock of a store, its options checked. The package's `Lock` wraps it.
#[pyclass(module = "leasehold._native", name = "Lock", frozen)]
pub struct PyLock {
    lock: Lock,
    /// The runtime its calls run on, for a test store (else polled on the event loop).
    runtime: Option<Handle>,
}

impl PyLock {
    pub fn new(lock: Lock, runtime: Option<Handle>) -> PyLock {
        PyLock { lock, runtime }
    }

    /// Waits in line for every key of `keys` at once (`Lock::begin_many`,
    /// LOCK-22; at most `wait`, else the lock's) and holds them all: an
    /// awaitable of a list of `Holding`s in the order of `keys`. All or
    /// none: a key that cannot be had fails the call and every lease taken
    /// is released. Cancelling the awaiting task leaves every line.
    pub(crate) fn begin_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        wait: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keys = convert::names(keys, "keys")?;
        let options = hold_options(wait)?;
        let cancel = Cancel::Token(options.cancel.clone().unwrap_or_default());
        let lock = self.lock.clone();
        let runtime = self.runtime.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), cancel, async move {
            let holdings = lock.begin_many(&keys, &options).await?;
            Ok(holdings
                .into_iter()
                .map(|h| PyHolding::new(h, runtime.clone()))
                .collect::<Vec<_>>())
        })
    }

    /// Holds `key` if it is free, without waiting (LOCK-17): an awaitable
    /// of a `Holding`, or of `None` when the key is held.
    pub(crate) fn try_begin<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = convert::name(key, "key")?;
        let lock = self.lock.clone();
        let runtime = self.runtime.clone();
        // RunOn: given up, the attempt runs on, and a late grant is
        // dropped, which releases it (LOCK-11, LOCK-18).
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            lock.try_begin(&key)
                .await
                .map(|h| h.map(|h| PyHolding::new(h, runtime)))
        })
    }

    /// [`PyLock::begin`] for code without an event loop: waits without the
    /// GIL; Ctrl-C leaves the line.
    pub(crate) fn begin_blocking(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyHolding> {
        let key = convert::name(key, "key")?;
        let options = hold_options(wait)?;
        runtime::wait_core(py, self.lock.begin(&key, &options))
            .map(|h| PyHolding::new(h, self.runtime.clone()))
    }

    /// [`PyLock::begin_many`] for code without an event loop: waits without
    /// the GIL; Ctrl-C leaves every line.
    pub(crate) fn begin_many_blocking(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<PyHolding>> {
        let keys = convert::names(keys, "keys")?;
        let options = hold_options(wait)?;
        let holdings = runtime::wait_core(py, self.lock.begin_many(&keys, &options))?;
        Ok(holdings
            .into_iter()
            .map(|h| PyHolding::new(h, self.runtime.clone()))
            .collect())
    }

    /// [`PyLock::try_begin`] for code without an event loop.
    pub(crate) fn try_begin_blocking(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyHolding>> {
        let key = convert::name(key, "key")?;
        runtime::wait_core(py, self.lock.try_begin(&key))
            .map(|h| h.map(|h| PyHolding::new(h, self.runtime.clone())))
    }
}

fn hold_options(wait: Option<&Bound<'_, PyAny>>) -> PyResult<HoldOptions> {
    Ok(HoldOptions {
        wait: convert::optional_duration(wait, "wait")?,
        cancel: Some(CancellationToken::new()),
    })
}

#[pymethods]
impl PyLock {
    /// The lock's name.
    #[getter]
    fn name(&self) -> &str {
        self.lock.name()
    }

    /// The ttl of its leases, in seconds.
    #[getter]
    fn ttl(&self) -> f64 {
        convert::seconds(self.lock.ttl())
    }

    /// Its max_hold in seconds, if set.
    #[getter]
    fn max_hold(&self) -> Option<f64> {
        self.lock.max_hold().map(convert::seconds)
    }

    /// Its bound on waiting in line in seconds, if set.
    #[getter]
    fn wait(&self) -> Option<f64> {
        self.lock.wait().map(convert::seconds)
    }

    /// The holder's margin before the store's expiry, in seconds.
    #[getter]
    fn margin(&self) -> f64 {
        convert::seconds(self.lock.margin())
    }

    /// Waits in line for `key` (at most `wait`, else the lock's) and holds
    /// it: an awaitable of a `Holding`. Cancelling the awaiting task leaves
    /// the line (LOCK-18).
    #[pyo3(signature = (key, wait=None))]
    pub(crate) fn begin<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        wait: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = convert::name(key, "key")?;
        let options = hold_options(wait)?;
        let cancel = Cancel::Token(options.cancel.clone().unwrap_or_default());
        let lock = self.lock.clone();
        let runtime = self.runtime.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), cancel, async move {
            lock.begin(&key, &options)
                .await
                .map(|h| PyHolding::new(h, runtime))
        })
    }

    /// Who holds `key` now, from a linearizable read of the store
    /// (WHO-02): an awaitable of a `HolderInfo`, or of `None` when nobody
    /// does. A connection admitted only to read may ask.
    fn holder<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = convert::name(key, "key")?;
        let lock = self.lock.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            Ok(lock.holder(&key).await?.map(PyHolderInfo::from))
        })
    }

    /// Benchmark hook: `cycles` holds of `key` begun and ended in Rust,
    /// with no Python in the loop; the seconds they took.
    fn rust_hold_cycles(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        cycles: u32,
    ) -> PyResult<f64> {
        let key = convert::name(key, "key")?;
        let lock = self.lock.clone();
        let took = runtime::wait_core(py, async move {
            let start = Instant::now();
            for _ in 0..cycles {
                lock.begin(&key, &HoldOptions::default())
                    .await?
                    .end()
                    .await?;
            }
            Ok::<Duration, leasehold::Error>(start.elapsed())
        })?;
        Ok(took.as_secs_f64())
    }

    fn __repr__(&self) -> String {
        format!(
            "Lock(name={:?}, ttl={:?})",
            self.lock.name(),
            self.lock.ttl()
        )
    }
}
