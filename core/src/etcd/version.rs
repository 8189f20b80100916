//! The etcd versions the contracts hold on (DIST-08).

use crate::error::{Error, ErrorKind, Result};

/// Checks the version an etcd member reports: 3.4.32 or later in the 3.4
/// line, 3.5.14 or later in 3.5, any 3.6 or later. Older releases expire
/// leases early under a stuck leader (fixed in 3.4.31 and 3.5.13) and can
/// move revisions back after a compaction crash (etcd #17780, fixed in
/// 3.4.32 and 3.5.14): fences would no longer only grow. `accept_old`
/// opens them anyway.
pub(crate) fn check(version: &str, accept_old: bool) -> Result<()> {
    let parsed = parse(version);
    let ok = match parsed {
        Some((3, 4, patch)) => patch >= 32,
        Some((3, 5, patch)) => patch >= 14,
        Some((3, minor, _)) => minor >= 6,
        Some((major, _, _)) => major > 3,
        None => false,
    };
    if ok || accept_old {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Protocol,
        format!(
            "etcd {version} is too old for Leasehold: releases before 3.4.31 and 3.5.13 expire \
             leases early while a leader is stuck, and before 3.4.32 and 3.5.14 a compaction \
             crash can move revisions back (etcd #17780), so fences could repeat; upgrade to \
             3.4.32, 3.5.14 or 3.6, or accept the risk with the accept_old_etcd connect option"
        ),
    ))
}

fn parse(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// The version etcd serves at `/version` on a client URL (`http://` or
/// `https://` `host:port`), for a user whom etcd does not let read its
/// status (`Status` is for admins when auth is on).
pub(crate) async fn over_http(
    endpoint: &str,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let unreadable = |why: String| {
        Error::new(
            ErrorKind::Unavailable,
            format!("reading etcd's version from {endpoint}/version: {why}"),
        )
    };
    let authority = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest);
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let request =
        format!("GET /version HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    let tcp = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    let mut response = Vec::new();
    match tls {
        Some(tls) => {
            let name = tokio_rustls::rustls::pki_types::ServerName::try_from(host.to_owned())
                .map_err(|e| unreadable(e.to_string()))?;
            let mut stream = tls
                .connect(name, tcp)
                .await
                .map_err(|e| unreadable(e.to_string()))?;
            stream
                .write_all(request.as_bytes())
                .await
                .map_err(|e| unreadable(e.to_string()))?;
            let _ = stream.read_to_end(&mut response).await;
        }
        None => {
            let mut stream = tcp;
            stream
                .write_all(request.as_bytes())
                .await
                .map_err(|e| unreadable(e.to_string()))?;
            stream
                .read_to_end(&mut response)
                .await
                .map_err(|e| unreadable(e.to_string()))?;
        }
    }
    let text = String::from_utf8_lossy(&response);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let start = body
        .find('{')
        .ok_or_else(|| unreadable("no JSON in the answer".into()))?;
    let end = body
        .rfind('}')
        .ok_or_else(|| unreadable("no JSON in the answer".into()))?;
    let json: serde_json::Value =
        serde_json::from_str(&body[start..=end]).map_err(|e| unreadable(e.to_string()))?;
    json.get("etcdserver")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| unreadable("no etcdserver field".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // DIST-08: the releases with the lease and revision fixes are accepted,
    // older ones refused with the bugs named, unless accepted explicitly.
    #[test]
    fn dist_08_old_etcd_is_refused_unless_accepted() {
        for ok in [
            "3.4.32", "3.4.40", "3.5.14", "3.5.21", "3.6.0", "3.6.6", "4.0.0",
        ] {
            assert!(check(ok, false).is_ok(), "{ok}");
        }
        for old in ["3.4.23", "3.4.31", "3.5.13", "3.3.27", "2.3.8", "nonsense"] {
            let e = check(old, false).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Protocol, "{old}");
            assert!(e.message().contains("17780"), "{e}");
            assert!(check(old, true).is_ok(), "{old}");
        }
    }
}
