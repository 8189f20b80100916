//! `HolderInfo`: who holds a key, as `Lock.holder` answers it (WHO-02).

use leasehold::driver::HolderInfo;
use pyo3::prelude::*;

use crate::convert;

/// Who holds a key (WHO-02): the identity of the store handle that took
/// the lease (WHO-01), its fence, how long it has been held and how long
/// the store keeps it unless renewed (seconds; `None`: not by time), and
/// how many wait in the key's line.
#[pyclass(module = "leasehold._native", name = "HolderInfo", frozen, get_all)]
pub struct PyHolderInfo {
    identity: String,
    fence: u64,
    held_for: f64,
    expires_in: Option<f64>,
    waiting: usize,
}

impl From<HolderInfo> for PyHolderInfo {
    fn from(h: HolderInfo) -> PyHolderInfo {
        PyHolderInfo {
            identity: h.identity,
            fence: h.fence,
            held_for: convert::seconds(h.held_for),
            expires_in: h.expires_in.map(convert::seconds),
            waiting: h.waiting,
        }
    }
}

#[pymethods]
impl PyHolderInfo {
    fn __repr__(&self) -> String {
        format!(
            "HolderInfo(identity={:?}, fence={}, held_for={:.3}, expires_in={}, waiting={})",
            self.identity,
            self.fence,
            self.held_for,
            self.expires_in
                .map_or_else(|| "None".to_owned(), |e| format!("{e:.3}")),
            self.waiting
        )
    }
}
