//! Where a PostgreSQL store lives: a libpq URL,
//! `postgres://[user[:password]@]h1[:port][,h2[:port]]/DATABASE[?…]`
//! (or `postgresql://`), with libpq's parameters (`target_session_attrs`,
//! `sslmode`, `connect_timeout`, `application_name`, …) and Leasehold's own:
//! `schema` (default `leasehold`), `attempt-timeout`, `pool-size` and
//! `listen-host` (where the listening connection goes instead of the URL's
//! hosts: past a pooler in transaction mode, straight to PostgreSQL; PG-02).

use std::str::FromStr;
use std::time::Duration;

use crate::connect::is_postgres_url;
use crate::error::{Error, ErrorKind, Result};

/// The schema the store keeps its tables in when the URL names none.
pub const DEFAULT_SCHEMA: &str = "leasehold";

/// How many connections a store's calls share when the URL says nothing.
pub const DEFAULT_POOL_SIZE: usize = 8;

/// A parsed `postgres://` or `postgresql://` URL.
///
/// ```
/// use std::time::Duration;
/// use leasehold::postgres::PostgresTarget;
/// let t = PostgresTarget::parse(
///     "postgres://app@db1,db2:5433/jobs?target_session_attrs=read-write&schema=team_a&attempt-timeout=1s",
/// )?;
/// assert_eq!(t.schema, "team_a");
/// assert_eq!(t.attempt_timeout, Some(Duration::from_secs(1)));
/// assert_eq!(t.config.get_hosts().len(), 2);
/// # Ok::<(), leasehold::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PostgresTarget {
    /// The connection parameters, as libpq reads the URL without Leasehold's own.
    pub config: tokio_postgres::Config,
    /// The schema of the store's tables (`?schema=`): a lower-case SQL identifier.
    pub schema: String,
    /// The bound of one try of a call (`?attempt-timeout=`), if the URL
    /// gives one: it wins over `ConnectOptions::attempt_timeout`.
    pub attempt_timeout: Option<Duration>,
    /// How many connections the store's calls share (`?pool-size=`).
    pub pool_size: usize,
    /// The connection parameters of the one connection that LISTENs, when
    /// `?listen-host=h1[:port][,h2[:port]]` names other hosts than the
    /// URL's: the same user, database and parameters, those hosts.
    pub listen: Option<tokio_postgres::Config>,
}

impl PostgresTarget {
    /// Parses a PostgreSQL store URL; anything else fails `InvalidArgument`.
    pub fn parse(text: &str) -> Result<PostgresTarget> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad PostgreSQL URL {:?}: {why}", redact(text)),
            )
        };
        if !is_postgres_url(text) {
            return Err(bad("the scheme is neither postgres:// nor postgresql://"));
        }
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let mut schema = DEFAULT_SCHEMA.to_owned();
        let mut attempt_timeout = None;
        let mut pool_size = DEFAULT_POOL_SIZE;
        let mut listen_hosts = None;
        let mut libpq = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("schema", value)) => {
                    if !is_identifier(value) {
                        return Err(bad(
                            "schema must be a lower-case SQL identifier: a-z, 0-9 and _, \
                             not starting with a digit, at most 63 characters",
                        ));
                    }
                    schema = value.to_owned();
                }
                Some(("attempt-timeout", value)) => {
                    let timeout = crate::duration::parse(value)
                        .map_err(|_| bad("attempt-timeout is not a duration such as 500ms"))?;
                    attempt_timeout = Some(
                        crate::connect::check_attempt_timeout(timeout)
                            .map_err(|e| bad(e.message()))?,
                    );
                }
                Some(("pool-size", value)) => {
                    pool_size = value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=256).contains(n))
                        .ok_or_else(|| bad("pool-size must be a whole number from 1 to 256"))?;
                }
                Some(("listen-host", value)) => {
                    if value.is_empty()
                        || value
                            .split(',')
                            .any(|h| h.is_empty() || h.contains(['/', '@', '?']))
                    {
                        return Err(bad(
                            "listen-host must be host[:port], or several joined by commas",
                        ));
                    }
                    listen_hosts = Some(value);
                }
                _ => libpq.push(pair),
            }
        }
        let rest = if libpq.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", libpq.join("&"))
        };
        let config = tokio_postgres::Config::from_str(&rest).map_err(|e| bad(&e.to_string()))?;
        if config.get_hosts().is_empty() {
            return Err(bad("no host"));
        }
        let listen = match listen_hosts {
            Some(hosts) => Some(
                tokio_postgres::Config::from_str(&with_hosts(&rest, hosts))
                    .map_err(|e| bad(&format!("listen-host: {e}")))?,
            ),
            None => None,
        };
        Ok(PostgresTarget {
            config,
            schema,
            attempt_timeout,
            pool_size,
            listen,
        })
    }
}

/// `url` (`scheme://[userinfo@]hosts[/…]`) with `hosts` in place of its own.
fn with_hosts(url: &str, hosts: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, _)) => format!("{scheme}://{userinfo}@{hosts}{tail}"),
        None => format!("{scheme}://{hosts}{tail}"),
    }
}

/// A schema name the store accepts: what PostgreSQL keeps as written
/// without quotes, so that `psql` finds it by the same name.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && name.len() <= 63
}

/// The URL with its password replaced, for error messages.
fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let masked = if userinfo.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{masked}@{hosts}{tail}")
        }
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // PG-01: libpq's URL, several hosts and its parameters, with
    // Leasehold's own taken out before libpq reads it.
    #[test]
    fn pg_01_urls_parse() {
        let t = PostgresTarget::parse(
            "postgresql://u:p%40ss@h1:5433,h2/db?target_session_attrs=read-write&pool-size=3",
        )
        .unwrap();
        assert_eq!(t.schema, DEFAULT_SCHEMA);
        assert_eq!(t.pool_size, 3);
        assert_eq!(t.config.get_user(), Some("u"));
        assert_eq!(t.config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(t.config.get_dbname(), Some("db"));
        assert_eq!(t.config.get_ports(), [5433, 5432]);
        assert_eq!(
            t.config.get_target_session_attrs(),
            tokio_postgres::config::TargetSessionAttrs::ReadWrite
        );
        assert!(t.listen.is_none());
        assert!(is_postgres_url("postgres://h/db"));
        assert!(!is_postgres_url("etcd://h/db"));
    }

    // PG-02: behind a pooler, the listening connection goes to the hosts
    // listen-host names, with everything else of the URL.
    #[test]
    fn pg_02_listen_host_replaces_the_hosts() {
        let t = PostgresTarget::parse(
            "postgres://u:pw@pooler:6432/db?listen-host=db1:5432,db2&sslmode=disable&schema=s",
        )
        .unwrap();
        let listen = t.listen.expect("a listening config");
        assert_eq!(t.config.get_ports(), [6432]);
        assert_eq!(listen.get_ports(), [5432, 5432]);
        assert_eq!(listen.get_hosts().len(), 2);
        assert_eq!(listen.get_user(), Some("u"));
        assert_eq!(listen.get_password(), Some(&b"pw"[..]));
        assert_eq!(listen.get_dbname(), Some("db"));
        assert_eq!(
            listen.get_ssl_mode(),
            tokio_postgres::config::SslMode::Disable
        );
        assert_eq!(t.schema, "s");
    }

    // ERR-01: a bad URL fails InvalidArgument, naming what is wrong and
    // never the password.
    #[test]
    fn err_01_bad_urls_fail_clearly() {
        for (url, says) in [
            ("postgres://u:secret@h/db?schema=Team", "schema"),
            ("postgres://u:secret@h/db?schema=1a", "schema"),
            (
                "postgres://u:secret@h/db?attempt-timeout=soon",
                "attempt-timeout",
            ),
            (
                "postgres://u:secret@h/db?attempt-timeout=1ms",
                "attempt-timeout",
            ),
            ("postgres://u:secret@h/db?pool-size=0", "pool-size"),
            ("postgres://u:secret@h/db?listen-host=", "listen-host"),
            ("postgres://u:secret@h/db?listen-host=a,,b", "listen-host"),
            ("postgres://u:secret@h/db?listen-host=x@y", "listen-host"),
            (
                "postgres://u:secret@h/db?no_such_option=1",
                "no_such_option",
            ),
            ("mysql://u:secret@h/db", "scheme"),
        ] {
            let e = PostgresTarget::parse(url).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{url}");
            assert!(e.message().contains(says), "{url}: {}", e.message());
            assert!(!e.message().contains("secret"), "{url}: {}", e.message());
        }
    }
}
