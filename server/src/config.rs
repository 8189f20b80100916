//! The server's settings: command-line flags, their environment variables and
//! an optional TOML file, merged as flags > environment > file > defaults.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use leasehold::remote::protocol::DEFAULT_MAX_FRAME;

/// The address `serve` listens on unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7450";
/// The most connections served at once unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// The most connections in their handshake (TLS, then the hello) at once
/// unless told otherwise: past it, a newcomer takes the oldest one's place.
pub const DEFAULT_MAX_HANDSHAKES: usize = 4096;
/// How long a connection has from its accept to its hello (TLS handshake
/// included) unless told otherwise.
pub const DEFAULT_HELLO_TIMEOUT: Duration = Duration::from_secs(2);
/// The shortest `--hello-timeout` accepted.
pub const MIN_HELLO_TIMEOUT: Duration = Duration::from_millis(100);
/// The longest `--hello-timeout` accepted.
pub const MAX_HELLO_TIMEOUT: Duration = Duration::from_secs(60);
/// The most holds and waits one connection may own unless told otherwise.
pub const DEFAULT_MAX_KEYS_PER_CONNECTION: usize = 10_000;
/// The most requests that may wait in one key's line unless told otherwise.
pub const DEFAULT_MAX_WAITERS_PER_KEY: usize = 10_000;
/// The smallest `--max-frame` accepted: a hello with a long token must fit.
pub const MIN_MAX_FRAME: usize = 1024;
/// The largest `--max-frame` accepted.
pub const MAX_MAX_FRAME: usize = 16 * 1024 * 1024;
/// The log filter unless told otherwise.
pub const DEFAULT_LOG: &str = "info";

/// The options of `leasehold serve`. Every option can also be given by its
/// environment variable or in the `--config` file (same name, without `--`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// A TOML file whose keys mirror these options (`listen = "127.0.0.1:7450"`,
    /// `data-dir = "/var/lib/leasehold"`, ...). Relative paths in it are taken
    /// from the file's own directory.
    #[arg(long, env = "LEASEHOLD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The address to accept connections on (`IP:PORT`; port 0 picks a free one).
    /// [default: 127.0.0.1:7450]
    #[arg(long, env = "LEASEHOLD_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// The directory of the server's state (its epoch file). Required.
    #[arg(long, env = "LEASEHOLD_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// A PEM certificate chain: with `--tls-key`, connections speak TLS.
    #[arg(long, env = "LEASEHOLD_TLS_CERT", value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of `--tls-cert`.
    #[arg(long, env = "LEASEHOLD_TLS_KEY", value_name = "PEM")]
    pub tls_key: Option<PathBuf>,

    /// A tokens file (lines `TOKEN ROLE`, ROLE `read` or `write`): when given,
    /// every connection must present one of its tokens.
    #[arg(long, env = "LEASEHOLD_TOKENS", value_name = "FILE")]
    pub tokens: Option<PathBuf>,

    /// The largest frame accepted from a client, in bytes. [default: 65536]
    #[arg(long, env = "LEASEHOLD_MAX_FRAME", value_name = "BYTES")]
    pub max_frame: Option<usize>,

    /// The most connections served at once (past their hello); more are
    /// refused `Unavailable` after their hello. [default: 1024]
    #[arg(long, env = "LEASEHOLD_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,

    /// The most connections of one token served at once; more are refused
    /// `Unavailable` after their hello. Only with `--tokens`.
    /// [default: half of --max-connections, rounded up]
    #[arg(long, env = "LEASEHOLD_MAX_CONNECTIONS_PER_TOKEN", value_name = "N")]
    pub max_connections_per_token: Option<usize>,

    /// The most connections in their handshake (TLS, then the hello) at once,
    /// apart from `--max-connections`; past it, a new connection takes the
    /// place of the oldest, which is closed. [default: 4096]
    #[arg(long, env = "LEASEHOLD_MAX_HANDSHAKES", value_name = "N")]
    pub max_handshakes: Option<usize>,

    /// How long a connection has from its accept to its hello, TLS handshake
    /// included (`2s`, `500ms`; 100ms to 60s). [default: 2s]
    #[arg(long, env = "LEASEHOLD_HELLO_TIMEOUT", value_name = "DURATION", value_parser = crate::commands::parse_duration)]
    pub hello_timeout: Option<Duration>,

    /// The most holds and waits one connection may own at once; more are
    /// answered `Unavailable`. [default: 10000]
    #[arg(long, env = "LEASEHOLD_MAX_KEYS_PER_CONNECTION", value_name = "N")]
    pub max_keys_per_connection: Option<usize>,

    /// The most requests that may wait in one key's line; more are answered
    /// `Unavailable`. [default: 10000]
    #[arg(long, env = "LEASEHOLD_MAX_WAITERS_PER_KEY", value_name = "N")]
    pub max_waiters_per_key: Option<usize>,

    /// Serve Prometheus metrics at `http://ADDR/metrics`.
    #[arg(long, env = "LEASEHOLD_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,

    /// Serve the live page at `http://ADDR/` (`https://` with `--tls-cert`),
    /// and the metrics at `/metrics` (docs/live.md).
    #[arg(long = "http", env = "LEASEHOLD_HTTP_LISTEN", value_name = "ADDR")]
    pub http_listen: Option<SocketAddr>,

    /// The log filter (tracing-subscriber's `EnvFilter` syntax, e.g.
    /// `info,leasehold_server=debug`); `RUST_LOG` is used when this is unset.
    /// [default: info]
    #[arg(long, env = "LEASEHOLD_LOG", value_name = "FILTER")]
    pub log: Option<String>,
}

/// The `--config` file: the same settings as the flags, in kebab case.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    /// `listen`.
    pub listen: Option<SocketAddr>,
    /// `data-dir`.
    pub data_dir: Option<PathBuf>,
    /// `tls-cert`.
    pub tls_cert: Option<PathBuf>,
    /// `tls-key`.
    pub tls_key: Option<PathBuf>,
    /// `tokens`.
    pub tokens: Option<PathBuf>,
    /// `max-frame`.
    pub max_frame: Option<usize>,
    /// `max-connections`.
    pub max_connections: Option<usize>,
    /// `max-connections-per-token`.
    pub max_connections_per_token: Option<usize>,
    /// `max-handshakes`.
    pub max_handshakes: Option<usize>,
    /// `hello-timeout`, a duration string (`"2s"`).
    pub hello_timeout: Option<String>,
    /// `max-keys-per-connection`.
    pub max_keys_per_connection: Option<usize>,
    /// `max-waiters-per-key`.
    pub max_waiters_per_key: Option<usize>,
    /// `metrics-listen`.
    pub metrics_listen: Option<SocketAddr>,
    /// `http` (`--http`).
    pub http: Option<SocketAddr>,
    /// `log`.
    pub log: Option<String>,
}

impl FileConfig {
    /// Reads and parses a config file; relative paths in it become relative
    /// to the file's directory.
    pub fn load(path: &Path) -> Result<FileConfig> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        let mut file = FileConfig::parse(&text)
            .with_context(|| format!("bad config file {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [
            &mut file.data_dir,
            &mut file.tls_cert,
            &mut file.tls_key,
            &mut file.tokens,
        ]
        .into_iter()
        .flatten()
        {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        Ok(file)
    }

    /// Parses the text of a config file.
    pub fn parse(text: &str) -> Result<FileConfig> {
        Ok(toml::from_str(text)?)
    }
}

/// The certificate and key of a TLS listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The PEM certificate chain.
    pub cert: PathBuf,
    /// The PEM private key.
    pub key: PathBuf,
}

/// The bounds that keep one client from taking the server (ERR-02).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest frame accepted from a client, in bytes.
    pub max_frame: usize,
    /// The most connections served at once (past their hello).
    pub max_connections: usize,
    /// The most connections of one token served at once.
    pub max_connections_per_token: usize,
    /// The most connections in their handshake at once.
    pub max_handshakes: usize,
    /// How long a connection has from its accept to its hello.
    pub hello_timeout: Duration,
    /// The most holds and waits one connection may own at once.
    pub max_keys_per_connection: usize,
    /// The most requests that may wait in one key's line.
    pub max_waiters_per_key: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_frame: DEFAULT_MAX_FRAME,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_token: DEFAULT_MAX_CONNECTIONS.div_ceil(2),
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
            hello_timeout: DEFAULT_HELLO_TIMEOUT,
            max_keys_per_connection: DEFAULT_MAX_KEYS_PER_CONNECTION,
            max_waiters_per_key: DEFAULT_MAX_WAITERS_PER_KEY,
        }
    }
}

/// Everything a server needs to start, every setting resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The address to accept connections on.
    pub listen: SocketAddr,
    /// The directory of the server's state.
    pub data_dir: PathBuf,
    /// TLS, when configured.
    pub tls: Option<TlsFiles>,
    /// The tokens file, when connections must authenticate.
    pub tokens: Option<PathBuf>,
    /// The bounds of ERR-02.
    pub limits: Limits,
    /// Where to serve `/metrics`, if anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// Where to serve the live page (and `/metrics`), if anywhere.
    pub http_listen: Option<SocketAddr>,
    /// The log filter.
    pub log: String,
}

impl ServerConfig {
    /// The defaults, keeping state in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            listen: DEFAULT_LISTEN.parse().expect("the default address parses"),
            data_dir: data_dir.into(),
            tls: None,
            tokens: None,
            limits: Limits::default(),
            metrics_listen: None,
            http_listen: None,
            log: DEFAULT_LOG.to_owned(),
        }
    }

    /// Checks the settings against their ranges.
    pub fn validate(&self) -> Result<()> {
        let l = &self.limits;
        if !(MIN_MAX_FRAME..=MAX_MAX_FRAME).contains(&l.max_frame) {
            bail!(
                "max-frame must lie from {MIN_MAX_FRAME} to {MAX_MAX_FRAME} bytes, got {}",
                l.max_frame
            );
        }
        for (name, n) in [
            ("max-connections", l.max_connections),
            ("max-connections-per-token", l.max_connections_per_token),
            ("max-handshakes", l.max_handshakes),
            ("max-keys-per-connection", l.max_keys_per_connection),
            ("max-waiters-per-key", l.max_waiters_per_key),
        ] {
            if n == 0 {
                bail!("{name} must be at least 1");
            }
        }
        // The table's semaphore-based connection limit cannot go beyond this.
        if l.max_connections > tokio::sync::Semaphore::MAX_PERMITS {
            bail!("max-connections is too large");
        }
        if !(MIN_HELLO_TIMEOUT..=MAX_HELLO_TIMEOUT).contains(&l.hello_timeout) {
            bail!(
                "hello-timeout must lie from 100ms to 60s, got {}",
                leasehold::duration::show(l.hello_timeout)
            );
        }
        Ok(())
    }
}

impl ServeArgs {
    /// Merges the flags (and environment, which clap has already folded in)
    /// over the config file over the defaults.
    pub fn resolve(self) -> Result<ServerConfig> {
        let file = match &self.config {
            Some(path) => FileConfig::load(path)?,
            None => FileConfig::default(),
        };
        self.resolve_with(file, std::env::var("RUST_LOG").ok())
    }

    /// [`ServeArgs::resolve`] with the file already read and `RUST_LOG` given.
    pub fn resolve_with(self, file: FileConfig, rust_log: Option<String>) -> Result<ServerConfig> {
        let data_dir = self
            .data_dir
            .or(file.data_dir)
            .context("no data directory: give --data-dir DIR (or LEASEHOLD_DATA_DIR, or data-dir in the config file)")?;
        let mut config = ServerConfig::new(data_dir);
        if let Some(listen) = self.listen.or(file.listen) {
            config.listen = listen;
        }
        config.tls = match (
            self.tls_cert.or(file.tls_cert),
            self.tls_key.or(file.tls_key),
        ) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            (Some(_), None) => bail!("--tls-cert needs --tls-key"),
            (None, Some(_)) => bail!("--tls-key needs --tls-cert"),
        };
        config.tokens = self.tokens.or(file.tokens);
        let d = Limits::default();
        let max_connections = self
            .max_connections
            .or(file.max_connections)
            .unwrap_or(d.max_connections);
        let hello_timeout = match self.hello_timeout {
            Some(t) => t,
            None => match &file.hello_timeout {
                Some(text) => crate::commands::parse_duration(text)
                    .context("bad hello-timeout in the config file")?,
                None => d.hello_timeout,
            },
        };
        config.limits = Limits {
            max_frame: self.max_frame.or(file.max_frame).unwrap_or(d.max_frame),
            max_connections,
            max_connections_per_token: self
                .max_connections_per_token
                .or(file.max_connections_per_token)
                .unwrap_or(max_connections.div_ceil(2)),
            max_handshakes: self
                .max_handshakes
                .or(file.max_handshakes)
                .unwrap_or(d.max_handshakes),
            hello_timeout,
            max_keys_per_connection: self
                .max_keys_per_connection
                .or(file.max_keys_per_connection)
                .unwrap_or(d.max_keys_per_connection),
            max_waiters_per_key: self
                .max_waiters_per_key
                .or(file.max_waiters_per_key)
                .unwrap_or(d.max_waiters_per_key),
        };
        config.metrics_listen = self.metrics_listen.or(file.metrics_listen);
        config.http_listen = self.http_listen.or(file.http);
        config.log = self
            .log
            .or(file.log)
            .or(rust_log)
            .unwrap_or_else(|| DEFAULT_LOG.to_owned());
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let file = FileConfig::parse(
            r#"
            listen = "127.0.0.1:9000"
            data-dir = "/from/file"
            max-frame = 4096
            max-connections = 7
            http = "127.0.0.1:9451"
            "#,
        )
        .unwrap();
        let args = ServeArgs {
            listen: Some("127.0.0.1:9001".parse().unwrap()),
            max_frame: Some(2048),
            ..ServeArgs::default()
        };
        let c = args.resolve_with(file, None).unwrap();
        assert_eq!(c.listen, "127.0.0.1:9001".parse().unwrap());
        assert_eq!(c.data_dir, PathBuf::from("/from/file"));
        assert_eq!(c.limits.max_frame, 2048);
        assert_eq!(c.limits.max_connections, 7);
        assert_eq!(c.http_listen, Some("127.0.0.1:9451".parse().unwrap()));
        assert_eq!(c.limits.max_waiters_per_key, DEFAULT_MAX_WAITERS_PER_KEY);
        assert_eq!(c.log, "info");
        // Half of max-connections unless told otherwise.
        assert_eq!(c.limits.max_connections_per_token, 4);
        assert_eq!(c.limits.max_handshakes, DEFAULT_MAX_HANDSHAKES);
        assert_eq!(c.limits.hello_timeout, DEFAULT_HELLO_TIMEOUT);
    }

    #[test]
    fn the_handshake_limits_come_from_flags_or_the_file() {
        let file = FileConfig::parse(
            r#"
            data-dir = "/from/file"
            hello-timeout = "500ms"
            max-handshakes = 300
            max-connections-per-token = 9
            "#,
        )
        .unwrap();
        let c = ServeArgs::default()
            .resolve_with(file.clone(), None)
            .unwrap();
        assert_eq!(c.limits.hello_timeout, Duration::from_millis(500));
        assert_eq!(c.limits.max_handshakes, 300);
        assert_eq!(c.limits.max_connections_per_token, 9);
        let args = ServeArgs {
            hello_timeout: Some(Duration::from_secs(3)),
            max_handshakes: Some(10),
            max_connections_per_token: Some(2),
            ..ServeArgs::default()
        };
        let c = args.resolve_with(file, None).unwrap();
        assert_eq!(c.limits.hello_timeout, Duration::from_secs(3));
        assert_eq!(c.limits.max_handshakes, 10);
        assert_eq!(c.limits.max_connections_per_token, 2);
        for bad in [
            "data-dir = 'd'\nhello-timeout = 'soon'",
            "data-dir = 'd'\nhello-timeout = '10ms'",
            "data-dir = 'd'\nhello-timeout = '2m'",
            "data-dir = 'd'\nmax-handshakes = 0",
            "data-dir = 'd'\nmax-connections-per-token = 0",
        ] {
            let file = FileConfig::parse(bad).unwrap();
            assert!(
                ServeArgs::default().resolve_with(file, None).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(FileConfig::parse("listen = 'nowhere'").is_err());
        assert!(FileConfig::parse("unknown-key = 1").is_err());
        let no_dir = ServeArgs::default().resolve_with(FileConfig::default(), None);
        assert!(no_dir.unwrap_err().to_string().contains("data directory"));
        let half_tls = ServeArgs {
            data_dir: Some("d".into()),
            tls_cert: Some("c.pem".into()),
            ..ServeArgs::default()
        };
        assert!(half_tls.resolve_with(FileConfig::default(), None).is_err());
        let tiny = ServeArgs {
            data_dir: Some("d".into()),
            max_frame: Some(10),
            ..ServeArgs::default()
        };
        assert!(tiny.resolve_with(FileConfig::default(), None).is_err());
    }

    #[test]
    fn rust_log_is_the_last_resort_for_the_log_filter() {
        let args = ServeArgs {
            data_dir: Some("d".into()),
            ..ServeArgs::default()
        };
        let c = args
            .resolve_with(FileConfig::default(), Some("debug".into()))
            .unwrap();
        assert_eq!(c.log, "debug");
    }

    #[test]
    fn relative_paths_in_the_file_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leasehold.toml");
        std::fs::write(&path, "data-dir = 'state'\ntokens = '/abs/tokens'\n").unwrap();
        let file = FileConfig::load(&path).unwrap();
        assert_eq!(file.data_dir, Some(dir.path().join("state")));
        assert_eq!(file.tokens, Some(PathBuf::from("/abs/tokens")));
    }
}
