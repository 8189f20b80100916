//! Where and how to reach a server store.

use url::Url;

use crate::error::{Error, ErrorKind, Result};

/// The port a server store listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 7450;

/// A parsed `leasehold://host:port` or `leaseholds://host:port` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host name or address.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether to speak TLS.
    pub tls: bool,
}

impl Target {
    /// Parses a store URL; anything else fails `InvalidArgument`.
    pub fn parse(text: &str) -> Result<Target> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad store URL {text:?}: {why}"),
            )
        };
        let url = Url::parse(text).map_err(|e| bad(&e.to_string()))?;
        let tls = match url.scheme() {
            "leasehold" => false,
            "leaseholds" => true,
            other => return Err(bad(&format!("unknown scheme {other:?}"))),
        };
        let host = url
            .host_str()
            .ok_or_else(|| bad("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if !(url.path().is_empty() || url.path() == "/") || url.query().is_some() {
            return Err(bad("a store URL has no path or query"));
        }
        Ok(Target {
            host,
            port: url.port().unwrap_or(DEFAULT_PORT),
            tls,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_store_urls() {
        let t = Target::parse("leasehold://127.0.0.1:7451").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.tls), ("127.0.0.1", 7451, false));
        let t = Target::parse("leaseholds://localhost").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.tls),
            ("localhost", DEFAULT_PORT, true)
        );
        for bad in [
            "http://x",
            "leasehold://",
            "nonsense",
            "leasehold://h:1/path",
        ] {
            assert_eq!(
                Target::parse(bad).unwrap_err().kind(),
                ErrorKind::InvalidArgument,
                "{bad}"
            );
        }
    }
}
