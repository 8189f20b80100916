//! etcd's failures as ERR-01 codes.

use tonic::Code;

use crate::error::{Error, ErrorKind};
use crate::loss::LossReason;

/// What the advice for a full etcd database says.
const NO_SPACE: &str = "etcd's database is full (mvcc: database space exceeded): \
    compact old revisions, defragment the members and disarm the NOSPACE alarm (docs/etcd.md)";

/// One etcd failure as an ERR-01 error; `doing` says what was being done.
pub(crate) fn of(doing: &str, e: etcd_client::Error) -> Error {
    match e {
        etcd_client::Error::GRpcStatus(status) => of_status(doing, &status),
        etcd_client::Error::TransportError(t) => Error::new(
            ErrorKind::Unavailable,
            format!("{doing}: etcd could not be reached: {t}"),
        ),
        e if lease_gone(&e) => Error::lost(LossReason::Expired),
        etcd_client::Error::InvalidArgs(m) => {
            Error::new(ErrorKind::InvalidArgument, format!("{doing}: {m}"))
        }
        other => Error::new(ErrorKind::Unavailable, format!("{doing}: {other}")),
    }
}

/// Whether etcd answered that a lease is gone (expired or revoked).
pub(crate) fn lease_gone(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::LeaseKeepAliveError(m) => m.contains("not found"),
        etcd_client::Error::GRpcStatus(s) => {
            s.code() == Code::NotFound && s.message().contains("lease not found")
        }
        _ => false,
    }
}

fn of_status(doing: &str, status: &tonic::Status) -> Error {
    let message = status.message();
    let kind = match status.code() {
        Code::PermissionDenied => ErrorKind::PermissionDenied,
        Code::Unauthenticated => ErrorKind::Unauthenticated,
        Code::InvalidArgument | Code::FailedPrecondition
            if message.contains("authentication failed")
                || message.contains("invalid auth token")
                || message.contains("user name is empty")
                || message.contains("user name not found") =>
        {
            ErrorKind::Unauthenticated
        }
        Code::ResourceExhausted if message.contains("space exceeded") => {
            return Error::new(ErrorKind::Unavailable, format!("{doing}: {NO_SPACE}"));
        }
        Code::NotFound if message.contains("lease not found") => {
            return Error::lost(LossReason::Expired);
        }
        Code::DeadlineExceeded => ErrorKind::Timeout,
        Code::InvalidArgument | Code::OutOfRange | Code::Unimplemented => ErrorKind::Protocol,
        _ => ErrorKind::Unavailable,
    };
    Error::new(kind, format!("{doing}: etcd answered: {message}"))
}

/// A call that took longer than the driver's bound.
pub(crate) fn timed_out(doing: &str) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("{doing}: etcd did not answer in time"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // ERR-01: etcd's failures map to stable codes; a full database says how to recover.
    #[test]
    fn err_01_etcd_failures_have_codes() {
        let cases = [
            (
                Code::PermissionDenied,
                "etcdserver: permission denied",
                ErrorKind::PermissionDenied,
            ),
            (
                Code::InvalidArgument,
                "etcdserver: authentication failed, invalid user ID or password",
                ErrorKind::Unauthenticated,
            ),
            (
                Code::ResourceExhausted,
                "etcdserver: mvcc: database space exceeded",
                ErrorKind::Unavailable,
            ),
            (
                Code::NotFound,
                "etcdserver: requested lease not found",
                ErrorKind::Lost,
            ),
            (
                Code::Unavailable,
                "etcdserver: no leader",
                ErrorKind::Unavailable,
            ),
            (
                Code::DeadlineExceeded,
                "context deadline exceeded",
                ErrorKind::Timeout,
            ),
        ];
        for (code, message, kind) in cases {
            let e = of(
                "hold",
                etcd_client::Error::GRpcStatus(tonic::Status::new(code, message)),
            );
            assert_eq!(e.kind(), kind, "{message}");
        }
        let full = of(
            "hold",
            etcd_client::Error::GRpcStatus(tonic::Status::new(
                Code::ResourceExhausted,
                "etcdserver: mvcc: database space exceeded",
            )),
        );
        assert!(full.message().contains("compact"), "{full}");
    }
}
