//! How to connect to a store reached over a network: the server store
//! (`leasehold://`, `leaseholds://`) or etcd (`etcd://`, `etcds://`).

use std::time::Duration;

use crate::identity::Identity;

/// Whether `url` names a store on etcd (`etcd://` or `etcds://`) rather
/// than the server store.
pub fn is_etcd_url(url: &str) -> bool {
    url.starts_with("etcd://") || url.starts_with("etcds://")
}

/// Whether `url` names a store on PostgreSQL (`postgres://` or `postgresql://`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The kind of store `url` names, as the bindings and the live page call
/// it: `etcd`, `postgres`, or `server` (our server store).
pub fn store_kind(url: &str) -> &'static str {
    if is_etcd_url(url) {
        "etcd"
    } else if is_postgres_url(url) {
        "postgres"
    } else {
        "server"
    }
}

/// The bound of one try of an etcd call at one member, when neither the
/// options nor the URL give one: half etcd's default election timeout, so
/// that a try stuck while a new leader is elected is left soon after the
/// election.
pub(crate) const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(500);

/// The shortest and the longest bound of one try of an etcd call.
#[cfg(any(feature = "etcd", feature = "postgres"))]
pub(crate) const ATTEMPT_TIMEOUT_RANGE: (Duration, Duration) =
    (Duration::from_millis(50), Duration::from_secs(60));

/// Checks a try's bound against [`ATTEMPT_TIMEOUT_RANGE`]; `InvalidArgument` outside it.
#[cfg(any(feature = "etcd", feature = "postgres"))]
pub(crate) fn check_attempt_timeout(timeout: Duration) -> crate::Result<Duration> {
    let (low, high) = ATTEMPT_TIMEOUT_RANGE;
    if timeout < low || timeout > high {
        return Err(crate::Error::new(
            crate::ErrorKind::InvalidArgument,
            format!(
                "attempt-timeout must lie from 50ms to 60s, got {}",
                crate::duration::show(timeout)
            ),
        ));
    }
    Ok(timeout)
}

/// How to connect to a store over a network. Options a store does not use
/// are ignored by it (a token by etcd, a user by the server store).
///
/// ```
/// use leasehold::remote::ConnectOptions;
/// let options = ConnectOptions::default().token("s3cret");
/// assert_eq!(options.token.as_deref(), Some("s3cret"));
/// ```
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The token the server's tokens file gives a role (LOCK-14).
    pub token: Option<String>,
    /// PEM certificates to trust for TLS (the server's or the etcd cluster's CA).
    pub ca_pem: Option<Vec<u8>>,
    /// The etcd user (also given as `etcd://user:password@host/`).
    pub user: Option<String>,
    /// The etcd user's password.
    pub password: Option<String>,
    /// A PEM client certificate for TLS client authentication (etcd's `--client-cert-auth`).
    pub client_cert_pem: Option<Vec<u8>>,
    /// The PEM private key of `client_cert_pem`.
    pub client_key_pem: Option<Vec<u8>>,
    /// Opens an etcd older than the releases that fixed the lease and
    /// revision bugs the contracts depend on (DIST-08); off by default.
    pub accept_old_etcd: bool,
    /// How long one connection attempt may take; on etcd, also the bound
    /// of every call the driver makes, all its tries together.
    pub connect_timeout: Duration,
    /// On etcd, how long one try of a call at one member may take before
    /// the call goes on to another member (default 500 ms, half etcd's
    /// default election timeout; the URL's `attempt-timeout` wins over it).
    /// Keep it near half the cluster's election timeout and under a sixth
    /// of the shortest ttl (docs/etcd.md).
    pub attempt_timeout: Duration,
    /// The largest frame this client sends or accepts (server store).
    pub max_frame: usize,
    /// Who this handle is (WHO-01): every store records it with every
    /// lease taken through the handle, and shows it wherever it shows a
    /// holder (`Lock::holder`, `leasehold ls`, the live page; on
    /// PostgreSQL also the connections' `application_name` unless the URL
    /// gives one). At most [`IDENTITY_MAX`](crate::IDENTITY_MAX) bytes, no
    /// control characters; `None` or empty: `hostname:pid`.
    pub identity: Option<String>,
}

impl Default for ConnectOptions {
    fn default() -> ConnectOptions {
        ConnectOptions {
            token: None,
            ca_pem: None,
            user: None,
            password: None,
            client_cert_pem: None,
            client_key_pem: None,
            accept_old_etcd: false,
            connect_timeout: Duration::from_secs(5),
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            max_frame: crate::remote::protocol::DEFAULT_MAX_FRAME,
            identity: None,
        }
    }
}

impl ConnectOptions {
    /// With this token.
    pub fn token(mut self, token: impl Into<String>) -> ConnectOptions {
        self.token = Some(token.into());
        self
    }

    /// Trusting these PEM certificates for TLS.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> ConnectOptions {
        self.ca_pem = Some(pem.into());
        self
    }

    /// As this etcd user.
    pub fn user(mut self, user: impl Into<String>, password: impl Into<String>) -> ConnectOptions {
        self.user = Some(user.into());
        self.password = Some(password.into());
        self
    }

    /// Presenting this PEM client certificate and key over TLS.
    pub fn client_cert(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> ConnectOptions {
        self.client_cert_pem = Some(cert_pem.into());
        self.client_key_pem = Some(key_pem.into());
        self
    }

    /// With this bound on one try of an etcd call at one member.
    pub fn attempt_timeout(mut self, timeout: Duration) -> ConnectOptions {
        self.attempt_timeout = timeout;
        self
    }

    /// Known as `identity` wherever the store shows a holder (WHO-01).
    pub fn identity(mut self, identity: impl Into<String>) -> ConnectOptions {
        self.identity = Some(identity.into());
        self
    }

    /// The identity these options give, checked, or this process's
    /// (`hostname:pid`) when they give none: `InvalidArgument` for one
    /// [`Identity::new`] refuses.
    pub fn checked_identity(&self) -> crate::Result<Identity> {
        Identity::given_or_default(self.identity.as_deref())
    }

    /// Accepting an etcd older than DIST-08's minimum versions.
    pub fn accept_old_etcd(mut self, accept: bool) -> ConnectOptions {
        self.accept_old_etcd = accept;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, Store};

    // WHO-01
    #[tokio::test]
    async fn who_01_a_bad_identity_fails_before_connecting() {
        for bad in ["two\nlines".to_owned(), "x".repeat(257), "é".repeat(129)] {
            let options = ConnectOptions::default().identity(bad);
            let refused = Store::connect("leasehold://127.0.0.1:1", options).await;
            assert_eq!(
                refused.err().map(|e| e.kind()),
                Some(ErrorKind::InvalidArgument)
            );
        }
    }
}
