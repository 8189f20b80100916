//! The ID generator on slot leases (IDGEN): `IdLayout`, `IdParts`, and
//! `IdGenerator`, opened by `Store.ids`. What an ID holds, when one can be
//! issued, when a call fails `NotReady` or `Overflow` and what a close hands
//! on are the core's (`leasehold::idgen`).
//!
//! `next_nowait` is the fast path: one call, no allocation beyond the
//! returned `int`. A generator made before `os.fork()` refuses every call in
//! the child, and the child's drop of it leaves the parent's slot alone: the
//! process counts its forks (`os.register_at_fork`) rather than asking for
//! its pid on every call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use leasehold::idgen::{IdGenerator, IdLayout, IdParts, DEFAULT_EPOCH_MS};
use leasehold::ErrorKind;
use leasehold_bridge::Cancel;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tokio::runtime::Handle;

use crate::convert;
use crate::errors;
use crate::loop_driver;
use crate::slots::PySlotLease;

/// The most IDs one `take` or `take_nowait` asks for.
pub const MAX_TAKE: usize = 1 << 20;

/// How many times this process's line of ancestors forked since the module
/// was loaded: a child's count differs from its parent's at the fork.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Counts this process's forks from now on: `os.register_at_fork` bumps the
/// count in every child.
pub fn count_forks(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let bump = pyo3::types::PyCFunction::new_closure(
        py,
        Some(c"count_fork"),
        Some(c"Counts a fork of the process (leasehold's ID generators)."),
        |_: &Bound<'_, pyo3::types::PyTuple>, _: Option<&Bound<'_, PyDict>>| {
            FORKS.fetch_add(1, Ordering::Relaxed);
        },
    )?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("after_in_child", bump)?;
    py.import("os")?
        .call_method("register_at_fork", (), Some(&kwargs))?;
    Ok(())
}

/// This process's fork count, for a generator made now.
pub fn forks() -> u64 {
    FORKS.load(Ordering::Relaxed)
}

/// How an ID's 63 bits are split: `time_bits` of ticks of `tick_ms` since
/// `epoch_ms`, `node_bits` of node, `sequence_bits` of sequence.
#[pyclass(module = "leasehold._native", name = "IdLayout", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyIdLayout {
    layout: IdLayout,
}

impl PyIdLayout {
    /// The core's layout of `value`, which must be an `IdLayout`.
    pub fn of(value: &Bound<'_, PyAny>) -> PyResult<IdLayout> {
        value
            .cast::<PyIdLayout>()
            .map(|l| l.get().layout)
            .map_err(|_| {
                errors::error(
                    value.py(),
                    ErrorKind::InvalidArgument,
                    format!(
                        "the layout must be a leasehold.IdLayout, not {}",
                        convert::type_name(value)
                    ),
                )
            })
    }
}

#[pymethods]
impl PyIdLayout {
    /// 41 bits of milliseconds from 2026-01-01, 10 of node, 12 of sequence.
    #[classattr]
    #[allow(
        non_snake_case,
        reason = "a constant of the class, as Python names one"
    )]
    fn DEFAULT() -> PyIdLayout {
        PyIdLayout {
            layout: IdLayout::DEFAULT,
        }
    }

    /// The default epoch (2026-01-01T00:00:00Z) in ms since the Unix epoch.
    #[classattr]
    const DEFAULT_EPOCH_MS: u64 = DEFAULT_EPOCH_MS;

    /// IDs below 2**53: 41 bits of milliseconds, 6 of node, 6 of sequence.
    #[staticmethod]
    fn js_safe() -> PyIdLayout {
        PyIdLayout {
            layout: IdLayout::js_safe(),
        }
    }

    /// 31 bits of seconds, 10 of node, 22 of sequence.
    #[staticmethod]
    fn seconds() -> PyIdLayout {
        PyIdLayout {
            layout: IdLayout::seconds(),
        }
    }

    /// A layout of these splits, ticks of `tick_ms` from `epoch_ms`; the
    /// core's check of it fails `InvalidArgument`.
    #[staticmethod]
    #[pyo3(signature = (time_bits, node_bits, sequence_bits, *, tick_ms=None, epoch_ms=None))]
    fn custom(
        time_bits: &Bound<'_, PyAny>,
        node_bits: &Bound<'_, PyAny>,
        sequence_bits: &Bound<'_, PyAny>,
        tick_ms: Option<&Bound<'_, PyAny>>,
        epoch_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyIdLayout> {
        let mut layout = IdLayout::custom(
            convert::unsigned(time_bits, "time_bits")?,
            convert::unsigned(node_bits, "node_bits")?,
            convert::unsigned(sequence_bits, "sequence_bits")?,
        );
        if let Some(tick_ms) = tick_ms.filter(|t| !t.is_none()) {
            layout = layout.with_tick_ms(convert::unsigned(tick_ms, "tick_ms")?);
        }
        if let Some(epoch_ms) = epoch_ms.filter(|e| !e.is_none()) {
            layout = layout.with_epoch(convert::unsigned(epoch_ms, "epoch_ms")?);
        }
        layout
            .check()
            .map_err(|e| errors::to_py(time_bits.py(), e))?;
        Ok(PyIdLayout { layout })
    }

    /// Bits of timestamp (ticks since the epoch).
    #[getter]
    fn time_bits(&self) -> u8 {
        self.layout.time_bits
    }

    /// Bits of node number.
    #[getter]
    fn node_bits(&self) -> u8 {
        self.layout.node_bits
    }

    /// Bits of sequence within one tick.
    #[getter]
    fn sequence_bits(&self) -> u8 {
        self.layout.sequence_bits
    }

    /// The length of one tick in milliseconds.
    #[getter]
    fn tick_ms(&self) -> u32 {
        self.layout.tick_ms
    }

    /// The time of tick 0, in milliseconds since the Unix epoch.
    #[getter]
    fn epoch_ms(&self) -> u64 {
        self.layout.epoch_ms
    }

    /// Takes the ID `id` apart.
    fn parts(&self, id: &Bound<'_, PyAny>) -> PyResult<PyIdParts> {
        Ok(PyIdParts {
            parts: self.layout.parts(convert::unsigned(id, "ID")?),
        })
    }

    /// A short description: `"41/10/12 ms"`.
    fn describe(&self) -> String {
        self.layout.describe()
    }

    fn __repr__(&self) -> String {
        let l = &self.layout;
        format!(
            "IdLayout(time_bits={}, node_bits={}, sequence_bits={}, tick_ms={}, epoch_ms={})",
            l.time_bits, l.node_bits, l.sequence_bits, l.tick_ms, l.epoch_ms
        )
    }
}

/// An ID taken apart by `IdLayout.parts`.
#[pyclass(module = "leasehold._native", name = "IdParts", frozen, eq)]
#[derive(PartialEq, Eq)]
pub struct PyIdParts {
    parts: IdParts,
}

#[pymethods]
impl PyIdParts {
    /// Ticks since the layout's epoch.
    #[getter]
    fn tick(&self) -> u64 {
        self.parts.tick
    }

    /// The tick's start in milliseconds since the Unix epoch.
    #[getter]
    fn timestamp_ms(&self) -> u64 {
        self.parts.timestamp_ms
    }

    /// The node number.
    #[getter]
    fn node(&self) -> u32 {
        self.parts.node
    }

    /// The sequence within the tick.
    #[getter]
    fn sequence(&self) -> u64 {
        self.parts.sequence
    }

    fn __repr__(&self) -> String {
        let p = &self.parts;
        format!(
            "IdParts(tick={}, timestamp_ms={}, node={}, sequence={})",
            p.tick, p.timestamp_ms, p.node, p.sequence
        )
    }
}

/// An ID generator holding one slot lease of a namespace. The package's
/// `IdGenerator` wraps it.
#[pyclass(module = "leasehold._native", name = "IdGenerator", frozen)]
pub struct PyIdGenerator {
    /// The core's generator; `None` only while this is dropped.
    ids: Option<IdGenerator>,
    /// The process's fork count when it was made.
    forks: u64,
    /// The runtime its calls run on, for a test store.
    runtime: Option<Handle>,
}

impl PyIdGenerator {
    pub fn new(ids: IdGenerator, forks: u64, runtime: Option<Handle>) -> PyIdGenerator {
        PyIdGenerator {
            ids: Some(ids),
            forks,
            runtime,
        }
    }

    /// The core's generator; `Closed` in a child process after a fork.
    fn ids(&self, py: Python<'_>) -> PyResult<&IdGenerator> {
        match &self.ids {
            Some(ids) if forks() == self.forks => Ok(ids),
            _ => Err(errors::error(
                py,
                ErrorKind::Closed,
                "this ID generator was made before fork(); open a new store and generator in \
                 the child process",
            )),
        }
    }
}

/// `n` as `take` and `take_nowait` ask for it.
fn count(n: &Bound<'_, PyAny>) -> PyResult<usize> {
    let asked: u64 = convert::unsigned(n, "number of IDs")?;
    usize::try_from(asked)
        .ok()
        .filter(|&k| k <= MAX_TAKE)
        .ok_or_else(|| {
            errors::error(
                n.py(),
                ErrorKind::InvalidArgument,
                format!("at most {MAX_TAKE} IDs are taken at once, not {asked}"),
            )
        })
}

#[pymethods]
impl PyIdGenerator {
    /// The next ID, without waiting: `NotReady` when none can be issued yet
    /// (retryable), `Overflow` when the layout's time range is used up,
    /// `LeaseLost` once the slot was lost or the generator closed (IDGEN-04).
    fn next_nowait(&self, py: Python<'_>) -> PyResult<u64> {
        self.ids(py)?.next().map_err(|e| errors::to_py(py, e))
    }

    /// An awaitable of the next ID, waiting while none can be issued yet.
    /// Cancelling the awaiting task drops the wait: nothing was issued.
    fn next_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let ids = self.ids(py)?.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::Drop, async move {
            ids.next_async().await
        })
    }

    /// As many IDs as can be issued now, up to `n`: at least one for `n > 0`,
    /// else it fails as `next_nowait`.
    fn take_nowait<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let ids = self.ids(py)?;
        let mut out = vec![0; count(n)?];
        let got = ids.next_into(&mut out).map_err(|e| errors::to_py(py, e))?;
        out.truncate(got);
        PyList::new(py, out)
    }

    /// An awaitable of `n` IDs, waiting while they cannot be issued yet.
    /// Cancelling the awaiting task drops the call, and the IDs it had.
    fn take<'py>(&self, py: Python<'py>, n: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let ids = self.ids(py)?.clone();
        let n = count(n)?;
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::Drop, async move {
            ids.take(n).await
        })
    }

    /// Seals the generator and releases its slot with the largest tick
    /// issued as the next floor: an awaitable that fails `LeaseLost` if the
    /// slot was lost meanwhile; a second close does nothing. The close runs
    /// on its own: cancelling the awaiting task does not stop it.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let ids = self.ids(py)?.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            ids.close().await
        })
    }

    /// The node number every ID carries.
    #[getter]
    fn node(&self, py: Python<'_>) -> PyResult<u32> {
        Ok(self.ids(py)?.node())
    }

    /// The layout.
    #[getter]
    fn layout(&self, py: Python<'_>) -> PyResult<PyIdLayout> {
        Ok(PyIdLayout {
            layout: self.ids(py)?.layout(),
        })
    }

    /// The slot lease as last renewed.
    #[getter]
    fn lease(&self, py: Python<'_>) -> PyResult<PySlotLease> {
        Ok(PySlotLease::new(self.ids(py)?.lease()))
    }

    /// The start of the largest tick issued (ms since the Unix epoch; 0: none).
    #[getter]
    fn last_issued(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.ids(py)?.last_issued())
    }

    /// Whether the slot was lost; once true, nothing more is issued.
    #[getter]
    fn lost(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.ids(py)?.lost())
    }

    /// Benchmark hook: seconds taken by `cycles` calls of the core's
    /// `next()` in Rust, with no Python in the loop, and how many of them
    /// answered `NotReady`.
    fn rust_next_cycles(&self, py: Python<'_>, cycles: u32) -> PyResult<(f64, u32)> {
        let ids = self.ids(py)?;
        let mut not_ready = 0;
        let start = Instant::now();
        for _ in 0..cycles {
            match ids.next() {
                Ok(id) => {
                    std::hint::black_box(id);
                }
                Err(e) if e.kind() == ErrorKind::NotReady => not_ready += 1,
                Err(e) => return Err(errors::to_py(py, e)),
            }
        }
        Ok((start.elapsed().as_secs_f64(), not_ready))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self.ids(py) {
            Ok(ids) => format!(
                "IdGenerator(namespace={:?}, node={}, layout={:?}, lost={})",
                ids.lease().namespace(),
                ids.node(),
                ids.layout().describe(),
                ids.lost()
            ),
            Err(_) => "IdGenerator(made before fork())".to_owned(),
        }
    }
}

impl Drop for PyIdGenerator {
    fn drop(&mut self) {
        if forks() != self.forks {
            // The parent's generator: the child neither seals nor releases its slot.
            std::mem::forget(self.ids.take());
        }
    }
}
