//! The one error type of the project and its stable codes (ERR-01).

use std::fmt;

use crate::loss::LossReason;

/// The stable code of a failure, shared by every language (ERR-01).
///
/// The names are the codes: Python raises the exception of the same name,
/// JS sets `err.code` to the upper snake case form ([`ErrorKind::js_code`]),
/// Go returns an error that `errors.Is` the sentinel `Err` + name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The lease is gone: it ran out, was revoked, released or the store restarted.
    Lost,
    /// A ttl, maxHold, margin or extension outside its range.
    InvalidTtl,
    /// An empty lock name, key or lease name.
    EmptyName,
    /// The connection may read but not hold (LOCK-14).
    PermissionDenied,
    /// The connection has no valid credentials (LOCK-14).
    Unauthenticated,
    /// A hold spent its `wait` in line (LOCK-18).
    WaitTimeout,
    /// The caller gave up (cancellation token, task cancel, abort signal).
    Cancelled,
    /// The store cannot be reached; the call may be retried.
    Unavailable,
    /// A store operation took too long; the outcome is unknown (SLOT-07).
    Timeout,
    /// A slot namespace was opened with other parameters than its first use.
    NamespaceMismatch,
    /// A malformed, oversized or hostile frame or request (ERR-02).
    Protocol,
    /// A bug in Leasehold: please report it.
    Internal,
    /// An argument that is not of the form the call takes: a null pointer,
    /// invalid UTF-8, a name over the length limit, a wrong type.
    InvalidArgument,
    /// The store (or the object) was closed before the call.
    Closed,
    /// Nothing can be issued yet (an ID generator's clock behind its floor,
    /// a tick's sequence used up); retryable.
    NotReady,
    /// A range is used up for good (an ID layout's time bits).
    Overflow,
}

impl ErrorKind {
    /// Every code, in the order of the table in `docs/errors.md`.
    pub const ALL: [ErrorKind; 16] = [
        ErrorKind::Lost,
        ErrorKind::InvalidTtl,
        ErrorKind::EmptyName,
        ErrorKind::PermissionDenied,
        ErrorKind::Unauthenticated,
        ErrorKind::WaitTimeout,
        ErrorKind::Cancelled,
        ErrorKind::Unavailable,
        ErrorKind::Timeout,
        ErrorKind::NamespaceMismatch,
        ErrorKind::Protocol,
        ErrorKind::Internal,
        ErrorKind::InvalidArgument,
        ErrorKind::Closed,
        ErrorKind::NotReady,
        ErrorKind::Overflow,
    ];

    /// The code as written in the contracts: `Lost`, `InvalidTtl`, …
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Lost => "Lost",
            ErrorKind::InvalidTtl => "InvalidTtl",
            ErrorKind::EmptyName => "EmptyName",
            ErrorKind::PermissionDenied => "PermissionDenied",
            ErrorKind::Unauthenticated => "Unauthenticated",
            ErrorKind::WaitTimeout => "WaitTimeout",
            ErrorKind::Cancelled => "Cancelled",
            ErrorKind::Unavailable => "Unavailable",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::NamespaceMismatch => "NamespaceMismatch",
            ErrorKind::Protocol => "Protocol",
            ErrorKind::Internal => "Internal",
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::Closed => "Closed",
            ErrorKind::NotReady => "NotReady",
            ErrorKind::Overflow => "Overflow",
        }
    }

    /// The code as JS writes it in `err.code`: `LOST`, `INVALID_TTL`, …
    pub fn js_code(self) -> String {
        let mut out = String::new();
        for (i, c) in self.code().chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_uppercase());
        }
        out
    }

    /// The kind of a code written either way (`InvalidTtl` or `INVALID_TTL`).
    pub fn from_code(code: &str) -> Option<ErrorKind> {
        ErrorKind::ALL
            .into_iter()
            .find(|k| k.code() == code || k.js_code() == code)
    }

    /// Whether the failure is a timeout of the store (SLOT-07), as opposed to an outcome.
    pub fn is_timeout(self) -> bool {
        matches!(self, ErrorKind::Timeout)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A failure of any Leasehold call: a stable [`ErrorKind`], a message for
/// people, and optionally the error that caused it (for [`crate::Lock::hold`],
/// the held function's own error when the lease was lost while it ran).
///
/// ```
/// use leasehold::{Error, ErrorKind};
/// let err = Error::new(ErrorKind::Lost, "the summary was late");
/// assert_eq!(err.kind(), ErrorKind::Lost);
/// assert_eq!(err.to_string(), "Lost: the summary was late");
/// ```
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    reason: Option<LossReason>,
    source: Option<Source>,
}

impl Error {
    /// An error of `kind` with a message for people.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            reason: None,
            source: None,
        }
    }

    /// A `Lost` error for a lease lost for `reason`.
    pub fn lost(reason: LossReason) -> Error {
        Error {
            reason: Some(reason),
            ..Error::new(ErrorKind::Lost, reason.describe())
        }
    }

    /// Why the lease was lost, for a `Lost` error that knows.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.reason
    }

    /// The same error, with `source` as its cause.
    pub fn with_source(mut self, source: impl Into<Source>) -> Error {
        self.source = Some(source.into());
        self
    }

    /// The stable code.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the code.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The cause, if any: for a hold that lost its lease, the function's own error.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }

    /// Whether this is a store timeout (SLOT-07).
    pub fn is_timeout(&self) -> bool {
        self.kind.is_timeout()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// The result of every fallible Leasehold call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    // ERR-01: every code round-trips through both spellings and none is reused.
    #[test]
    fn err_01_codes_are_stable_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            assert!(seen.insert(kind.code()), "code {kind} reused");
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
            assert_eq!(ErrorKind::from_code(&kind.js_code()), Some(kind));
        }
        assert_eq!(ErrorKind::InvalidTtl.js_code(), "INVALID_TTL");
        assert_eq!(ErrorKind::Lost.js_code(), "LOST");
        assert_eq!(ErrorKind::from_code("Nope"), None);
    }

    #[test]
    fn err_01_source_is_reachable() {
        let inner = Error::new(ErrorKind::Unavailable, "down");
        let err = Error::new(ErrorKind::Lost, "late").with_source(inner);
        let source = std::error::Error::source(&err).expect("source");
        assert_eq!(source.to_string(), "Unavailable: down");
        assert!(err.cause().is_some());
    }
}
