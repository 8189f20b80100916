//! Where an etcd store lives:
//! `etcd://[user:password@]h1:2379,h2:2379/PREFIX[?attempt-timeout=1s]`.

use std::time::Duration;

use percent_encoding::percent_decode_str;

use crate::error::{Error, ErrorKind, Result};

/// The port of an etcd member when the URL gives none.
pub const DEFAULT_PORT: u16 = 2379;

/// The key prefix when the URL gives no path.
pub const DEFAULT_PREFIX: &str = "/leasehold/";

/// A parsed `etcd://` or `etcds://` URL.
///
/// ```
/// use std::time::Duration;
/// use leasehold::etcd::EtcdTarget;
/// let t = EtcdTarget::parse("etcd://10.0.0.1,10.0.0.2:2380/team-a?attempt-timeout=500ms")?;
/// assert_eq!(t.endpoints, ["http://10.0.0.1:2379", "http://10.0.0.2:2380"]);
/// assert_eq!(t.prefix, "/team-a/");
/// assert_eq!(t.attempt_timeout, Some(Duration::from_millis(500)));
/// # Ok::<(), leasehold::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdTarget {
    /// The members to reach, as `http://host:port` or `https://host:port`.
    pub endpoints: Vec<String>,
    /// Every key the store writes starts with this; it begins and ends with `/`.
    pub prefix: String,
    /// Whether to speak TLS (`etcds://`).
    pub tls: bool,
    /// The user and password the URL names, if any.
    pub user: Option<(String, String)>,
    /// The bound of one try of a call at one member (`?attempt-timeout=`),
    /// if the URL gives one: it wins over `ConnectOptions::attempt_timeout`.
    pub attempt_timeout: Option<Duration>,
}

impl EtcdTarget {
    /// Parses an etcd store URL; anything else fails `InvalidArgument`.
    pub fn parse(text: &str) -> Result<EtcdTarget> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad etcd URL {:?}: {why}", redact(text)),
            )
        };
        let (tls, rest) = if let Some(rest) = text.strip_prefix("etcds://") {
            (true, rest)
        } else if let Some(rest) = text.strip_prefix("etcd://") {
            (false, rest)
        } else {
            return Err(bad("the scheme is neither etcd:// nor etcds://"));
        };
        if rest.contains('#') {
            return Err(bad("an etcd URL has no fragment"));
        }
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut attempt_timeout = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("attempt-timeout", value)) => {
                    let timeout = crate::duration::parse(value)
                        .map_err(|_| bad("attempt-timeout is not a duration such as 500ms"))?;
                    attempt_timeout = Some(
                        crate::connect::check_attempt_timeout(timeout)
                            .map_err(|e| bad(e.message()))?,
                    );
                }
                _ => return Err(bad("the only query parameter is attempt-timeout")),
            }
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (user, hosts) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => {
                let (name, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let decode = |s: &str| {
                    percent_decode_str(s)
                        .decode_utf8()
                        .map(|c| c.into_owned())
                        .map_err(|_| bad("the user or password is not UTF-8"))
                };
                let name = decode(name)?;
                if name.is_empty() {
                    return Err(bad("an empty user name"));
                }
                (Some((name, decode(password)?)), hosts)
            }
            None => (None, authority),
        };
        let scheme = if tls { "https" } else { "http" };
        let mut endpoints = Vec::new();
        for host in hosts.split(',') {
            let (name, port) = split_port(host).ok_or_else(|| bad("a member has no host"))?;
            let port = match port {
                None => DEFAULT_PORT,
                Some(p) => p
                    .parse::<u16>()
                    .map_err(|_| bad("a port is not a number"))?,
            };
            endpoints.push(format!("{scheme}://{name}:{port}"));
        }
        let path = path.trim_matches('/');
        let prefix = if path.is_empty() {
            DEFAULT_PREFIX.to_owned()
        } else {
            let decoded = percent_decode_str(path)
                .decode_utf8()
                .map_err(|_| bad("the prefix is not UTF-8"))?;
            format!("/{decoded}/")
        };
        Ok(EtcdTarget {
            endpoints,
            prefix,
            tls,
            user,
            attempt_timeout,
        })
    }
}

/// `host[:port]` or `[v6]:port`, with the brackets kept for the endpoint URL.
fn split_port(host: &str) -> Option<(&str, Option<&str>)> {
    if host.is_empty() {
        return None;
    }
    if host.starts_with('[') {
        let end = host.find(']')?;
        let (name, rest) = host.split_at(end + 1);
        return match rest.strip_prefix(':') {
            Some(port) => Some((name, Some(port))),
            None if rest.is_empty() => Some((name, None)),
            None => None,
        };
    }
    match host.rsplit_once(':') {
        Some(("", _)) => None,
        Some((name, port)) => Some((name, Some(port))),
        None => Some((host, None)),
    }
}

/// The URL with its password hidden, for messages.
fn redact(text: &str) -> String {
    match (text.find("://"), text.rfind('@')) {
        (Some(s), Some(at)) if at > s => match text[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &text[..s + 3], &text[at..]),
            None => text.to_owned(),
        },
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // DIST-01: the URL forms, with members, ports, credentials and prefixes.
    #[test]
    fn dist_01_parses_etcd_urls() {
        let t = EtcdTarget::parse("etcd://h1:2379,h2:2380,h3/").unwrap();
        assert_eq!(
            t.endpoints,
            ["http://h1:2379", "http://h2:2380", "http://h3:2379"]
        );
        assert_eq!(t.prefix, DEFAULT_PREFIX);
        assert!(!t.tls && t.user.is_none());
        let t = EtcdTarget::parse("etcds://al%40ice:p%3Ass@[::1]:2379/a/b").unwrap();
        assert_eq!(t.endpoints, ["https://[::1]:2379"]);
        assert_eq!(t.prefix, "/a/b/");
        assert_eq!(t.user, Some(("al@ice".into(), "p:ss".into())));
        assert!(t.tls);
        assert_eq!(
            EtcdTarget::parse("etcd://h").unwrap().prefix,
            DEFAULT_PREFIX
        );
        for bad in [
            "etcd://",
            "etcd://h1,,h2",
            "etcd://h:port",
            "etcd://h?x=1",
            "etcd://h/p?attempt-timeout=soon",
            "etcd://h/p?attempt-timeout=10ms",
            "etcd://h/p#f",
            "leasehold://h",
            "etcd://:pw@h",
            "etcd://[::1",
        ] {
            let e = EtcdTarget::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        }
        let t = EtcdTarget::parse("etcd://h/p?attempt-timeout=250ms").unwrap();
        assert_eq!(t.attempt_timeout, Some(Duration::from_millis(250)));
        assert_eq!(t.prefix, "/p/");
        assert_eq!(
            EtcdTarget::parse("etcd://h/p").unwrap().attempt_timeout,
            None
        );
        let e = EtcdTarget::parse("etcd://u:secret@h:x").unwrap_err();
        assert!(!e.message().contains("secret"), "{e}");
    }
}
