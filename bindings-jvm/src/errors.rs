//! Core errors as the one error of the library: the ERR-01 code as the
//! contracts write it (`Lost`, `InvalidTtl`, …), the message, and the loss
//! reason of a `Lost` error that knows it. The Kotlin layer turns it into
//! `LeaseholdException` and its subclass of the code.

use std::fmt;

use leasehold::{Error, ErrorKind};

/// A failure of a Leasehold call.
#[derive(Debug, uniffi::Error)]
pub enum NativeError {
    /// A failure with its ERR-01 code.
    Failure {
        /// The ERR-01 code as the contracts write it: `Lost`, `InvalidTtl`, …
        code: String,
        /// What went wrong, in words.
        detail: String,
        /// Why the lease was lost (`expired`, `revoked`, …), for a `Lost` error that knows.
        loss_reason: Option<String>,
    },
}

impl fmt::Display for NativeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let NativeError::Failure { code, detail, .. } = self;
        write!(f, "{code}: {detail}")
    }
}

impl std::error::Error for NativeError {}

impl From<Error> for NativeError {
    fn from(e: Error) -> NativeError {
        NativeError::Failure {
            code: e.kind().code().to_owned(),
            detail: e.message().to_owned(),
            loss_reason: e.loss_reason().map(|r| r.as_str().to_owned()),
        }
    }
}

/// Every ERR-01 code as the contracts write it, in the order of `docs/errors.md`.
#[uniffi::export]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| k.code().to_owned()).collect()
}
