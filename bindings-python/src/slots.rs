//! Slot leases: `Owner`, `SlotLease`, and `Slots`, a namespace
//! opened on a store with its three verbs and `begin`, a slot held with
//! background renewal. Which slot an acquire takes, what a renewal or a
//! release changes, when a call times out and when a held slot is lost are
//! the core's.

use leasehold::slots::{Owner, SlotLease, Slots};
use leasehold::ErrorKind;
use leasehold_bridge::Cancel;
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::convert;
use crate::errors;
use crate::loop_driver;
use crate::slot_holding::PySlotHolding;

/// Who leases a slot: a stable key and the instance id of one process.
#[pyclass(module = "leasehold._native", name = "Owner", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyOwner {
    owner: Owner,
}

#[pymethods]
impl PyOwner {
    /// An owner with key `key` and instance id `instance`; without one, a
    /// fresh random instance id (a new process of the same key).
    #[new]
    #[pyo3(signature = (key, instance=None))]
    fn new(
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        instance: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyOwner> {
        let key = convert::name(key, "owner key")?;
        let owner = match instance.filter(|i| !i.is_none()) {
            Some(instance) => {
                Owner::with_instance(&key, &convert::name(instance, "owner instance")?)
            }
            None => Owner::new(&key),
        };
        owner
            .map(|owner| PyOwner { owner })
            .map_err(|e| errors::to_py(py, e))
    }

    /// The stable key.
    #[getter]
    fn key(&self) -> &str {
        self.owner.key()
    }

    /// This process's instance id.
    #[getter]
    fn instance(&self) -> &str {
        self.owner.instance()
    }

    fn __repr__(&self) -> String {
        format!(
            "Owner(key={:?}, instance={:?})",
            self.owner.key(),
            self.owner.instance()
        )
    }
}

/// A lease on one slot, as last returned by the store. Times are
/// milliseconds since the Unix epoch on the store's clock.
#[pyclass(module = "leasehold._native", name = "SlotLease", frozen, eq)]
#[derive(PartialEq, Eq)]
pub struct PySlotLease {
    lease: SlotLease,
}

impl PySlotLease {
    pub fn new(lease: SlotLease) -> PySlotLease {
        PySlotLease { lease }
    }
}

#[pymethods]
impl PySlotLease {
    /// The namespace.
    #[getter]
    fn namespace(&self) -> &str {
        self.lease.namespace()
    }

    /// The owner.
    #[getter]
    fn owner(&self) -> PyOwner {
        PyOwner {
            owner: self.lease.owner().clone(),
        }
    }

    /// The slot, in `[0, limit)`.
    #[getter]
    fn slot(&self) -> u32 {
        self.lease.slot()
    }

    /// The node number for IDs: the slot plus the namespace's offset.
    #[getter]
    fn node(&self) -> u32 {
        self.lease.node()
    }

    /// The fence: larger than every fence the store gave before (SLOT-08).
    #[getter]
    fn fence(&self) -> u64 {
        self.lease.fence()
    }

    /// Issue only timestamps above this one (SLOT-05, SLOT-06).
    #[getter]
    fn floor(&self) -> u64 {
        self.lease.floor()
    }

    /// When the lease expires unless renewed.
    #[getter]
    fn expires_at(&self) -> u64 {
        self.lease.expires_at()
    }

    /// Issue no timestamp past this one: the next holder's floor may be it.
    #[getter]
    fn ceiling(&self) -> u64 {
        self.lease.ceiling()
    }

    fn __repr__(&self) -> String {
        let l = &self.lease;
        format!(
            "SlotLease(namespace={:?}, owner={:?}, slot={}, node={}, fence={}, floor={}, \
             expires_at={}, ceiling={})",
            l.namespace(),
            l.owner().key(),
            l.slot(),
            l.node(),
            l.fence(),
            l.floor(),
            l.expires_at(),
            l.ceiling()
        )
    }
}

fn owner_of(value: &Bound<'_, PyAny>) -> PyResult<Owner> {
    value
        .cast::<PyOwner>()
        .map(|o| o.get().owner.clone())
        .map_err(|_| wrong_type(value, "owner", "leasehold.Owner"))
}

fn lease_of(value: &Bound<'_, PyAny>) -> PyResult<SlotLease> {
    value
        .cast::<PySlotLease>()
        .map(|l| l.get().lease.clone())
        .map_err(|_| wrong_type(value, "lease", "leasehold.SlotLease"))
}

fn preferred_slot(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u32>> {
    value
        .filter(|p| !p.is_none())
        .map(|p| convert::unsigned::<u32>(p, "preferred slot"))
        .transpose()
}

fn wrong_type(value: &Bound<'_, PyAny>, what: &str, expected: &str) -> PyErr {
    errors::error(
        value.py(),
        ErrorKind::InvalidArgument,
        format!(
            "the {what} must be a {expected}, not {}",
            convert::type_name(value)
        ),
    )
}

/// A slot namespace opened on a store. The package's `Slots` wraps it.
#[pyclass(module = "leasehold._native", name = "Slots", frozen)]
pub struct PySlots {
    slots: Slots,
    /// The runtime its calls run on, for a test store (else polled on the event loop).
    runtime: Option<Handle>,
}

impl PySlots {
    pub fn new(slots: Slots, runtime: Option<Handle>) -> PySlots {
        PySlots { slots, runtime }
    }
}

#[pymethods]
impl PySlots {
    /// The namespace's name.
    #[getter]
    fn name(&self) -> &str {
        self.slots.name()
    }

    /// The slots are `[0, limit)`.
    #[getter]
    fn limit(&self) -> u32 {
        self.slots.spec().limit
    }

    /// How far a lease's ceiling lies beyond its expiry, in seconds.
    #[getter]
    fn tolerance(&self) -> f64 {
        convert::seconds(self.slots.spec().tolerance)
    }

    /// What a node number adds to the slot.
    #[getter]
    fn offset(&self) -> u32 {
        self.slots.spec().offset
    }

    /// The ttl of this handle's leases, in seconds.
    #[getter]
    fn ttl(&self) -> f64 {
        convert::seconds(self.slots.ttl())
    }

    /// How long before a held slot's expiry its holder declares it lost, in seconds.
    #[getter]
    fn margin(&self) -> f64 {
        convert::seconds(self.slots.margin())
    }

    /// Acquires a slot for `owner` (SLOT-01): an awaitable of a `SlotLease`,
    /// or of `None` when every slot is held. Cancelling the awaiting task
    /// drops the call: a slot the store gave meanwhile stays the owner's
    /// until it expires, and the owner's next acquire gets it back.
    #[pyo3(signature = (owner, preferred=None))]
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        preferred: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let owner = owner_of(owner)?;
        let preferred = preferred_slot(preferred)?;
        let slots = self.slots.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            slots
                .acquire(&owner, preferred)
                .await
                .map(|r| r.lease().map(|lease| PySlotLease { lease }))
        })
    }

    /// Acquires a slot for `owner` as `acquire` does and holds it, renewed
    /// in the background: an awaitable of a `SlotHolding`, or of `None` when
    /// every slot is held (SLOT-01). Cancelling the awaiting task drops the
    /// call, as for `acquire`.
    #[pyo3(signature = (owner, preferred=None))]
    pub(crate) fn begin<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        preferred: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let owner = owner_of(owner)?;
        let preferred = preferred_slot(preferred)?;
        let slots = self.slots.clone();
        let runtime = self.runtime.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            slots
                .begin(&owner, preferred)
                .await
                .map(|h| h.map(|h| PySlotHolding::new(h, runtime)))
        })
    }

    /// Renews `lease` for the handle's ttl (SLOT-04): an awaitable of the
    /// renewed `SlotLease`, or of `None` when the slot's owner or fence no
    /// longer match.
    fn renew<'py>(
        &self,
        py: Python<'py>,
        lease: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lease = lease_of(lease)?;
        let slots = self.slots.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            slots
                .renew(&lease)
                .await
                .map(|r| r.map(|lease| PySlotLease { lease }))
        })
    }

    /// Releases `lease`, having issued timestamps up to `last_issued` (ms,
    /// SLOT-05): an awaitable of whether it released. The release runs on
    /// its own: cancelling the awaiting task does not stop it.
    fn release<'py>(
        &self,
        py: Python<'py>,
        lease: &Bound<'py, PyAny>,
        last_issued: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lease = lease_of(lease)?;
        let last_issued = convert::unsigned::<u64>(last_issued, "last_issued")?;
        let slots = self.slots.clone();
        loop_driver::awaitable(py, self.runtime.as_ref(), Cancel::RunOn, async move {
            slots.release(&lease, last_issued).await
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Slots(name={:?}, limit={})",
            self.slots.name(),
            self.slots.spec().limit
        )
    }
}
