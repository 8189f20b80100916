//! Python arguments as the core takes them. Anything of the wrong form
//! raises a `leasehold` exception rather than a crash (ERR-03): a name that
//! is not a `str`, or a number that is not a non-negative `int` in range,
//! fails `InvalidArgument`; anything given as a duration that is not one
//! fails `InvalidTtl`.

use std::time::Duration;

use leasehold::ErrorKind;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString, PyType};

use crate::errors;

/// A name or key: a `str` (its range is the core's to check).
pub fn name(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let py = value.py();
    let text = value.cast::<PyString>().map_err(|_| {
        errors::error(
            py,
            ErrorKind::InvalidArgument,
            format!("the {what} must be a str, not {}", type_name(value)),
        )
    })?;
    text.to_str().map(str::to_owned).map_err(|_| {
        errors::error(
            py,
            ErrorKind::InvalidArgument,
            format!("the {what} is not valid UTF-8 (it has lone surrogates)"),
        )
    })
}

/// Keys: an iterable of `str` (a list, a tuple, a generator), each as
/// [`name`] takes it; a `str` or `bytes` itself is not one.
pub fn names(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    let py = value.py();
    let not_keys = || {
        errors::error(
            py,
            ErrorKind::InvalidArgument,
            format!(
                "the {what} must be an iterable of str (a list, a tuple), not {}",
                type_name(value)
            ),
        )
    };
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
        return Err(not_keys());
    }
    let items = value.try_iter().map_err(|_| not_keys())?;
    let mut names = Vec::with_capacity(value.len().unwrap_or(0));
    for item in items {
        names.push(name(&item?, "key")?);
    }
    Ok(names)
}

/// Bytes: a `bytes` object.
pub fn bytes(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    value
        .cast::<PyBytes>()
        .map(|b| b.as_bytes().to_vec())
        .map_err(|_| {
            errors::error(
                value.py(),
                ErrorKind::InvalidArgument,
                format!("{what} must be bytes, not {}", type_name(value)),
            )
        })
}

/// A non-negative whole number that fits `T` (a `u32`, a `u64`): an `int`,
/// not a `bool` (its range beyond that is the core's to check).
pub fn unsigned<T: TryFrom<u64>>(value: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let bad = || {
        errors::error(
            value.py(),
            ErrorKind::InvalidArgument,
            format!(
                "the {what} must be an int from 0 to 2**{} - 1, not {}",
                std::mem::size_of::<T>() * 8,
                shown(value)
            ),
        )
    };
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        return Err(bad());
    }
    let whole: u64 = value.extract().map_err(|_| bad())?;
    T::try_from(whole).map_err(|_| bad())
}

/// A value as an error message shows it: an `int` itself, anything else its type.
fn shown(value: &Bound<'_, PyAny>) -> String {
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        value.to_string()
    } else {
        format!("a {}", type_name(value))
    }
}

/// The name of a value's type, for error messages.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an unknown type".into())
}

fn timedelta_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    TIMEDELTA.import(py, "datetime", "timedelta")
}

/// A duration: seconds as an `int` or `float`, a `datetime.timedelta`, or a
/// string the core parses (`"30s"`, `"1m30s"`, `"250ms"`). Negative, NaN,
/// infinite, unparsable or wrongly typed values fail `InvalidTtl`.
pub fn duration(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    let py = value.py();
    let bad = |why: String| errors::error(py, ErrorKind::InvalidTtl, format!("{what}: {why}"));
    if value.is_instance_of::<PyBool>() {
        return Err(bad("a duration, not a bool".into()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        let text = text.to_str().map_err(|_| bad("not valid UTF-8".into()))?;
        return leasehold::duration::parse(text).map_err(|e| errors::to_py(py, e));
    }
    if value.is_instance_of::<PyInt>() {
        let secs: u64 = value
            .extract()
            .map_err(|_| bad(format!("{value} seconds is not a duration")))?;
        return Ok(Duration::from_secs(secs));
    }
    if value.is_instance_of::<PyFloat>() {
        let secs: f64 = value.extract()?;
        return Duration::try_from_secs_f64(secs)
            .map_err(|_| bad(format!("{secs} seconds is not a duration")));
    }
    if value.is_instance(timedelta_type(py)?)? {
        let days: i64 = value.getattr("days")?.extract()?;
        let seconds: u64 = value.getattr("seconds")?.extract()?;
        let micros: u32 = value.getattr("microseconds")?.extract()?;
        let days = u64::try_from(days).map_err(|_| bad("a negative timedelta".into()))?;
        return Ok(Duration::new(days * 86_400 + seconds, micros * 1_000));
    }
    Err(bad(format!(
        "a duration is seconds (int or float), a timedelta or a string like \"30s\", not {}",
        type_name(value)
    )))
}

/// An optional duration: absent or `None` is not given.
pub fn optional_duration(
    value: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<Duration>> {
    match value {
        Some(v) if !v.is_none() => duration(v, what).map(Some),
        _ => Ok(None),
    }
}

/// A duration as Python sees one: seconds, as a float.
pub fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}
