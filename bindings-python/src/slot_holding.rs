//! `SlotHolding`: a slot held for a block of Python code, from `Slots.begin`
//! to `end`, renewed in the background by the core; and `HeldSlot`, the slot
//! as the block sees it.

use leasehold::slots::{HeldSlot, SlotHolding};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::convert;
use crate::kept::Kept;
use crate::slots::PySlotLease;

/// A held slot, as the block running under it sees it: its lease as last
/// renewed, whether it was lost, and the largest timestamp issued under it.
#[pyclass(module = "leasehold._native", name = "HeldSlot", frozen)]
pub struct PyHeldSlot {
    held: HeldSlot,
}

#[pymethods]
impl PyHeldSlot {
    /// The lease as last renewed.
    #[getter]
    fn lease(&self) -> PySlotLease {
        PySlotLease::new(self.held.lease())
    }

    /// The slot, in `[0, limit)`.
    #[getter]
    fn slot(&self) -> u32 {
        self.held.slot()
    }

    /// The node number for IDs: the slot plus the namespace's offset.
    #[getter]
    fn node(&self) -> u32 {
        self.held.node()
    }

    /// The fence (SLOT-08); renewals keep it.
    #[getter]
    fn fence(&self) -> u64 {
        self.held.fence()
    }

    /// Issue only timestamps above this one (SLOT-05, SLOT-06).
    #[getter]
    fn floor(&self) -> u64 {
        self.held.floor()
    }

    /// Issue no timestamp past this one; renewals move it on.
    #[getter]
    fn ceiling(&self) -> u64 {
        self.held.ceiling()
    }

    /// Records that timestamps up to `ms` were issued: the release hands the
    /// largest one recorded to the slot's next holder (SLOT-05).
    fn issued(&self, ms: &Bound<'_, PyAny>) -> PyResult<()> {
        self.held
            .issued(convert::unsigned::<u64>(ms, "issued timestamp")?)
            .map_err(|e| crate::errors::to_py(ms.py(), e))
    }

    /// The largest timestamp recorded by `issued` (0: none).
    #[getter]
    fn last_issued(&self) -> u64 {
        self.held.last_issued()
    }

    /// Whether the slot was lost. Once true, it stays true.
    #[getter]
    fn lost(&self) -> bool {
        self.held.lost()
    }

    /// Why it was lost (`"expired"`: no renewal confirmed by the holder's
    /// deadline; `"unknown"`: a renewal answered nothing), or `None`.
    #[getter]
    fn loss_reason(&self) -> Option<&'static str> {
        self.held.loss_reason().map(|r| r.as_str())
    }

    /// Seconds left before the holder's deadline, zero once lost.
    #[getter]
    fn remaining(&self) -> f64 {
        convert::seconds(self.held.remaining())
    }

    fn __repr__(&self) -> String {
        format!(
            "HeldSlot(slot={}, node={}, fence={}, lost={})",
            self.held.slot(),
            self.held.node(),
            self.held.fence(),
            self.held.lost()
        )
    }
}

/// A held slot. `end` releases it with the largest timestamp issued (and
/// fails `Lost` if the slot was lost while held); dropped without `end`, it
/// is released in the background.
#[pyclass(module = "leasehold._native", name = "SlotHolding", frozen)]
pub struct PySlotHolding {
    kept: Kept<SlotHolding>,
}

impl PySlotHolding {
    pub fn new(holding: SlotHolding, runtime: Option<Handle>) -> PySlotHolding {
        PySlotHolding {
            kept: Kept::new(holding, runtime),
        }
    }

    /// Whether the slot was lost.
    pub(crate) fn lost(&self) -> bool {
        self.kept.view().lost()
    }

    /// The held slot, for the block.
    pub(crate) fn held(&self) -> PyHeldSlot {
        PyHeldSlot {
            held: self.kept.view().clone(),
        }
    }
}

#[pymethods]
impl PySlotHolding {
    /// Calls `callback(True)` on the running event loop's thread once, if
    /// the slot is lost before the holding ends; a second watch of the
    /// holding fails `InvalidArgument` (LOCK-09). `event_loop`, the running
    /// loop when the caller has it (its task's), spares its lookup.
    #[pyo3(signature = (callback, event_loop = None))]
    pub(crate) fn watch_loss(
        &self,
        py: Python<'_>,
        callback: Py<PyAny>,
        event_loop: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.kept.watch_loss(py, callback, event_loop)
    }

    /// Stops renewing and releases the slot with the largest timestamp
    /// issued; the awaitable fails `LeaseLost` if the slot was lost while
    /// held, `Closed` if the hold ended already. The release runs on its
    /// own: cancelling the awaiting task does not stop it.
    pub(crate) fn end<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.kept.end(py)
    }
}
