//! Test hooks (`leasehold.testing`): an embedded store on a virtual clock
//! that only the test moves, as the shared scenarios run.

use std::time::Duration;

use leasehold::clock::VirtualClock;
use leasehold::{MemoryOptions, Store};
use pyo3::prelude::*;

use crate::convert;
use crate::store::PyStore;

/// How long `advance` pauses after each step, for the runtime's threads to
/// run what the step woke before the clock moves on.
const STEP_PAUSE: Duration = Duration::from_millis(5);

/// A clock that stands still until `advance` moves it.
#[pyclass(module = "leasehold._native", name = "VirtualClock", frozen)]
pub struct PyVirtualClock {
    clock: VirtualClock,
}

#[pymethods]
impl PyVirtualClock {
    #[new]
    fn new() -> PyVirtualClock {
        PyVirtualClock {
            clock: VirtualClock::new(),
        }
    }

    /// Seconds since the clock's origin.
    #[getter]
    fn now(&self) -> f64 {
        convert::seconds(self.clock.now().since_origin())
    }

    /// Moves the clock by `by`, one sleeper's deadline at a time, so that
    /// timers fire in order. Blocks (without the GIL) while it moves.
    fn advance(&self, py: Python<'_>, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let by = convert::duration(by, "advance")?;
        let clock = self.clock.clone();
        py.detach(|| clock.advance_blocking(by, STEP_PAUSE));
        Ok(())
    }
}

/// An embedded store on `clock`; `renewal`: its leases run out unless
/// renewed (as on the server store); `push`: grants are pushed to waiters
/// (off: waiting polls).
#[pyfunction]
#[pyo3(signature = (clock, renewal=false, push=true))]
pub fn memory_with(clock: &PyVirtualClock, renewal: bool, push: bool) -> PyStore {
    let options = MemoryOptions::default()
        .clock(clock.clock.clone().into())
        .renewal(renewal)
        .push(push);
    PyStore::new(Store::memory_with(options), "memory")
}

/// A duration parsed as the package parses one, in seconds: to compare
/// with `Lease.remaining` exactly.
#[pyfunction]
pub fn parse_duration(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    convert::duration(value, "duration").map(convert::seconds)
}
