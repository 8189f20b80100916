//! `leasehold._native`: the private native module of the Python package
//! `leasehold`. It translates only: Python arguments into the core's types
//! (the options through `leasehold_bridge::options`), core futures into
//! asyncio awaitables (polled on the event loop's thread by Python's own
//! driver, `loop_driver`, with the bridge's first poll, cancel policies and
//! panic capture), core errors into the package's exceptions. Waiting,
//! renewal, deadlines, loss and release are the core's.

mod convert;
mod errors;
mod hold;
mod holder;
mod holding;
mod idgen;
mod kept;
mod lease;
mod lock;
mod loop_driver;
mod manual;
mod runtime;
mod slot_holding;
mod slots;
mod store;
mod testing;

use pyo3::prelude::*;

/// The module `leasehold._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::PyStore>()?;
    m.add_class::<lock::PyLock>()?;
    m.add_class::<hold::PyHold>()?;
    m.add_class::<holding::PyHolding>()?;
    m.add_class::<holder::PyHolderInfo>()?;
    m.add_class::<lease::PyLease>()?;
    m.add_class::<manual::PyManualLease>()?;
    m.add_class::<slots::PyOwner>()?;
    m.add_class::<slots::PySlotLease>()?;
    m.add_class::<slots::PySlots>()?;
    m.add_class::<slot_holding::PySlotHolding>()?;
    m.add_class::<slot_holding::PyHeldSlot>()?;
    m.add_class::<idgen::PyIdLayout>()?;
    m.add_class::<idgen::PyIdParts>()?;
    m.add_class::<idgen::PyIdGenerator>()?;
    idgen::count_forks(m)?;
    m.add_class::<testing::PyVirtualClock>()?;
    m.add_class::<loop_driver::LoopDriver>()?;
    m.add_class::<loop_driver::Ready>()?;
    m.add_function(wrap_pyfunction!(store::memory, m)?)?;
    m.add_function(wrap_pyfunction!(store::connect, m)?)?;
    m.add_function(wrap_pyfunction!(store::connect_blocking, m)?)?;
    m.add_function(wrap_pyfunction!(testing::memory_with, m)?)?;
    m.add_function(wrap_pyfunction!(testing::parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_codes, m)?)?;
    m.add("SLOT_DEFAULT_LIMIT", leasehold::slots::DEFAULT_LIMIT)?;
    m.add_function(wrap_pyfunction!(errors::error_for_code, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
