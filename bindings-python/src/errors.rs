//! The core's errors as the package's exceptions (ERR-01): one class per
//! code, each a subclass of `leasehold.LeaseholdError`, defined in Python
//! (`leasehold/errors.py`) and looked up here by name.

use leasehold::{Error, ErrorKind};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

/// The module that defines the exception classes.
const ERRORS_MODULE: &str = "leasehold.errors";

/// The Python class name of a code: the code itself, except `Lost`, which
/// is `LeaseLost`.
pub fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Lost => "LeaseLost",
        other => other.code(),
    }
}

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    MODULE
        .get_or_try_init(py, || py.import(ERRORS_MODULE).map(Bound::unbind))
        .map(|m| m.bind(py))
}

/// The exception of a core error: its class by the error's code, its
/// message, and `reason` for a lost lease (`"expired"`, `"revoked"`, …).
pub fn to_py(py: Python<'_>, err: Error) -> PyErr {
    build(
        py,
        err.kind(),
        err.message(),
        err.loss_reason().map(|r| r.as_str()),
    )
    .unwrap_or_else(|e| e)
}

/// The exception of a failure the binding finds itself.
pub fn error(py: Python<'_>, kind: ErrorKind, message: impl AsRef<str>) -> PyErr {
    build(py, kind, message.as_ref(), None).unwrap_or_else(|e| e)
}

fn build(
    py: Python<'_>,
    kind: ErrorKind,
    message: &str,
    reason: Option<&str>,
) -> Result<PyErr, PyErr> {
    let class = errors_module(py)
        .and_then(|m| m.getattr(class_name(kind)))
        .map_err(|e| {
            PyRuntimeError::new_err(format!(
                "{}: {message} (and the class of the error is missing: {e})",
                kind.code()
            ))
        })?;
    let exc = class.call1((message,))?;
    if let Some(reason) = reason {
        exc.setattr("reason", reason)?;
    }
    Ok(PyErr::from_value(exc))
}

/// Every code, as the core names them (ERR-01), for the package's checks.
#[pyfunction]
pub fn error_codes() -> Vec<&'static str> {
    ErrorKind::ALL.iter().map(|k| k.code()).collect()
}

/// The exception the binding raises for a core error of `code`: the
/// conversion itself, for tests of ERR-01.
#[pyfunction]
pub fn error_for_code(py: Python<'_>, code: &str, message: &str) -> PyResult<Py<PyAny>> {
    let kind = ErrorKind::from_code(code).ok_or_else(|| {
        error(
            py,
            ErrorKind::InvalidArgument,
            format!("{code:?} is no error code"),
        )
    })?;
    let err = match kind {
        ErrorKind::Lost => Error::lost(leasehold::LossReason::Expired),
        kind => Error::new(kind, message),
    };
    Ok(to_py(py, err).into_value(py).into_any())
}
