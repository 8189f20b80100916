//! Test hooks (`leasehold.testing`): an embedded store on a virtual clock
//! that only the test moves, as the shared scenarios run.
//!
//! A virtual clock brings its own current-thread runtime, on a thread of its
//! own, and the stores opened on it run there, their calls included: as in
//! the Rust runner, `advance` moves the clock one timer at a time and lets
//! every task it woke run before it moves on, so every run is the same run.
//! (Production stores run on the core's process runtime.)

use std::sync::Mutex;

use leasehold::clock::{Clock, VirtualClock};
use leasehold::{ErrorKind, MemoryOptions, Store};
use pyo3::prelude::*;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::convert;
use crate::errors;
use crate::store::PyStore;

/// A clock that stands still until `advance` moves it, with the runtime
/// its stores run on.
#[pyclass(module = "leasehold._native", name = "VirtualClock", frozen)]
pub struct PyVirtualClock {
    clock: VirtualClock,
    runtime: Handle,
    /// Dropped with the clock: stops its runtime's thread.
    _stop: Mutex<oneshot::Sender<()>>,
}

#[pymethods]
impl PyVirtualClock {
    #[new]
    fn new(py: Python<'_>) -> PyResult<PyVirtualClock> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| errors::error(py, ErrorKind::Internal, format!("no test runtime: {e}")))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("leasehold-test-clock".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                })
            })
            .map_err(|e| errors::error(py, ErrorKind::Internal, format!("no test thread: {e}")))?;
        Ok(PyVirtualClock {
            clock: VirtualClock::new(),
            runtime: handle,
            _stop: Mutex::new(stop),
        })
    }

    /// Seconds since the clock's origin.
    #[getter]
    fn now(&self) -> f64 {
        convert::seconds(self.clock.now().since_origin())
    }

    /// The time of day on the clock in milliseconds since the Unix epoch,
    /// as slot leases stamp it: the clock's origin is
    /// `VIRTUAL_UNIX_ORIGIN_MS` of the core.
    #[getter]
    fn unix_millis(&self) -> u64 {
        Clock::from(self.clock.clone()).unix_millis()
    }

    /// Moves the clock by `by`, one timer's deadline at a time, letting the
    /// tasks each step woke run before the next (on the clock's runtime).
    /// Blocks, without the GIL, while it moves.
    fn advance(&self, py: Python<'_>, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let by = convert::duration(by, "advance")?;
        let clock = self.clock.clone();
        let (done, moved) = std::sync::mpsc::channel();
        self.runtime.spawn(async move {
            clock.advance(by).await;
            let _ = done.send(());
        });
        py.detach(move || moved.recv())
            .map_err(|_| errors::error(py, ErrorKind::Internal, "the clock's runtime stopped"))
    }
}

/// An embedded store on `clock`, running on the clock's runtime; `renewal`:
/// its leases run out unless renewed (as on the server store); `push`:
/// grants are pushed to waiters (off: waiting polls).
#[pyfunction]
#[pyo3(signature = (clock, renewal=false, push=true))]
pub fn memory_with(clock: &PyVirtualClock, renewal: bool, push: bool) -> PyStore {
    let options = MemoryOptions::default()
        .clock(clock.clock.clone().into())
        .renewal(renewal)
        .push(push);
    let store = {
        let _context = clock.runtime.enter();
        Store::memory_with(options)
    };
    PyStore::on_runtime(store, clock.runtime.clone())
}

/// A duration parsed as the package parses one, in seconds: to compare
/// with `Lease.remaining` exactly.
#[pyfunction]
pub fn parse_duration(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    convert::duration(value, "duration").map(convert::seconds)
}
