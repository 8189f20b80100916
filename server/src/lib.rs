//! The Leasehold server store: the lease table of the embedded store, in
//! renewal mode, behind TCP (or TLS) connections speaking
//! [`leasehold::remote::protocol`].
//!
//! `leasehold serve` runs it (see `docs/server.md`); [`Server::start`]
//! runs one in-process, as tests do:
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use leasehold_server::{Server, ServerConfig};
//! let mut config = ServerConfig::new("/var/lib/leasehold");
//! config.listen = "127.0.0.1:0".parse()?;
//! let server = Server::start(config).await?;
//! println!("listening on {} in epoch {}", server.local_addr(), server.epoch());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

pub mod commands;
pub mod config;
mod connection;
pub mod epochs;
mod handshakes;
mod hello;
mod http;
mod listener;
mod live;
pub mod metrics;
mod open_files;
mod shared;
pub mod slot_journal;
mod tenants;
pub mod tls;
pub mod tokens;

use futures::future::{BoxFuture, FutureExt};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use leasehold::{MemoryDriver, MemoryOptions};
use tokio::net::TcpListener;

pub use config::{Limits, ServeArgs, ServerConfig, TlsFiles};
pub use connection::RENEW_ENTRY_BYTES;
pub use epochs::{DataDir, FileEpochs};
pub use hello::MAX_HELLO;
pub use tokens::Tokens;

use shared::ServerContext;
use slot_journal::FileSlotJournal;

/// How long shutting down waits for connections to say goodbye and close.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The server's handling of client connections without its listener: each
/// [`Connections::serve`] runs, over any byte stream and in-process, the
/// handler an accepted TCP connection gets (the fuzz target `connection`,
/// `docs/fuzzing.md`, drives it over an in-memory duplex stream).
/// Dropping it says goodbye (`Unavailable`) to the connections still served.
pub struct Connections {
    shared: Arc<ServerContext>,
}

impl Connections {
    /// Connections to `driver` (a store in renewal mode, as the server's),
    /// authenticated with `tokens` when given, within `limits`.
    pub fn new(driver: Arc<MemoryDriver>, tokens: Option<Tokens>, limits: Limits) -> Connections {
        let metrics = Arc::new(metrics::Metrics::new());
        Connections {
            shared: Arc::new(ServerContext::new(driver, tokens, limits, metrics)),
        }
    }

    /// Serves one connection over `io` until it ends, as an accepted TCP
    /// connection is served: a handshake place (the oldest evicted past
    /// `max_handshakes`), its hello within `hello_timeout`, then a place
    /// under `max_connections_per_token` and `max_connections`, or a
    /// goodbye (`Unavailable`).
    pub async fn serve<S>(&self, io: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        let peer = SocketAddr::from(([0, 0, 0, 0], 0));
        let handshake = self.shared.handshakes.enter();
        hello::serve(self.shared.clone(), io, peer, handshake).await;
    }
}

impl Drop for Connections {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

/// A running server. Dropping it without [`Server::shutdown`] stops it too,
/// without waiting.
pub struct Server {
    shared: Arc<ServerContext>,
    local_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    http_addr: Option<SocketAddr>,
    epoch: u32,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("metrics_addr", &self.metrics_addr)
            .field("http_addr", &self.http_addr)
            .field("epoch", &self.epoch)
            .finish()
    }
}

impl Server {
    /// Opens the store and starts accepting connections, on the current
    /// tokio runtime. The data directory is locked and the new epoch is on
    /// disk (fsynced) before the listener is even bound (LOCK-02, LOCK-15).
    ///
    /// Boxed, so that the server is compiled here, once, not in every
    /// binary that starts one (docs/architecture.md, "Where the code is
    /// compiled").
    pub fn start(config: ServerConfig) -> BoxFuture<'static, Result<Server>> {
        Server::open(config).boxed()
    }

    async fn open(config: ServerConfig) -> Result<Server> {
        config.validate()?;
        let tokens = config.tokens.as_deref().map(Tokens::load).transpose()?;
        let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
        let dir = DataDir::open(&config.data_dir)?;
        let (journal, recovered) = FileSlotJournal::open(dir.path()).with_context(|| {
            format!(
                "cannot read the slot journal in {}",
                config.data_dir.display()
            )
        })?;
        let options = MemoryOptions::default()
            .renewal(true)
            .waiters_per_key(config.limits.max_waiters_per_key);
        let driver = MemoryDriver::with_epochs(
            options,
            Box::new(FileEpochs::new(dir)),
            &tokio::runtime::Handle::current(),
        )
        .context("cannot open the store")?;
        driver.restore_slots(recovered, Box::new(journal));
        let driver = Arc::new(driver);
        let epoch = driver.epoch();
        let listener = listener::bind(config.listen)
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let local_addr = listener.local_addr()?;
        let metrics_listener = bind_http(config.metrics_listen, "metrics").await?;
        let http_listener = bind_http(config.http_listen, "the live page").await?;
        let metrics_addr = metrics_listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()?;
        let http_addr = http_listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()?;
        let metrics = Arc::new(metrics::Metrics::new());
        let shared = Arc::new(ServerContext::new(
            driver.clone(),
            tokens,
            config.limits,
            metrics.clone(),
        ));
        shared
            .tracker
            .spawn(listener::accept_loop(shared.clone(), listener, tls.clone()));
        if let Some(l) = metrics_listener {
            let routes = http::Routes::metrics(&shared);
            shared.tracker.spawn(http::serve(l, None, routes));
        }
        if let Some(l) = http_listener {
            let live = shared.live.clone();
            shared
                .tracker
                .spawn(live.clone().run(shared.shutdown.clone()));
            let routes = http::Routes::page(&shared, live);
            shared.tracker.spawn(http::serve(l, tls.clone(), routes));
        }
        tracing::info!(
            %local_addr,
            epoch,
            tls = tls.is_some(),
            tokens = shared.tokens.as_deref().map_or(0, Tokens::len),
            metrics = ?metrics_addr,
            http = ?http_addr,
            data_dir = %config.data_dir.display(),
            "listening"
        );
        Ok(Server {
            shared,
            local_addr,
            metrics_addr,
            http_addr,
            epoch,
        })
    }

    /// The address connections are accepted on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The address `/metrics` is served on, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The address the live page is served on, if any.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    /// The epoch the store took when it opened (LOCK-15).
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The store behind the connections, for inspection.
    pub fn store(&self) -> &MemoryDriver {
        &self.shared.driver
    }

    /// Stops accepting, says goodbye (`Unavailable`, "shutting down") to every
    /// connection and waits, at most [`SHUTDOWN_GRACE`], for them to close.
    pub async fn shutdown(self) {
        self.shared.shutdown.cancel();
        self.shared.tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.shared.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("some connections did not close in time");
        }
        tracing::info!("shut down");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

/// Runs a server until SIGTERM or SIGINT, then shuts it down gracefully.
///
/// Prints `metrics on ADDR` (when metrics are served), `http on ADDR`
/// (when the live page is) and then `listening on ADDR` on stdout, one line each, once connections are accepted.
pub async fn serve(config: ServerConfig) -> Result<()> {
    // Before anything is announced, so that a signal sent at once is handled.
    let mut signals = Signals::new()?;
    open_files::raise(&config.limits);
    let server = Server::start(config).await?;
    let mut stdout = std::io::stdout().lock();
    if let Some(addr) = server.metrics_addr() {
        writeln!(stdout, "metrics on {addr}")?;
    }
    if let Some(addr) = server.http_addr() {
        writeln!(stdout, "http on {addr}")?;
    }
    writeln!(stdout, "listening on {}", server.local_addr())?;
    stdout.flush()?;
    drop(stdout);
    let signal = signals.recv().await;
    tracing::info!(signal, "shutting down");
    server.shutdown().await;
    Ok(())
}

/// Binds the listener of an HTTP address, if one is given.
async fn bind_http(addr: Option<SocketAddr>, what: &str) -> Result<Option<TcpListener>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot serve {what} on {addr}"))?;
    Ok(Some(listener))
}

/// Sets up logging to stderr with `filter` (tracing-subscriber's `EnvFilter`
/// syntax), coloured only when stderr is a terminal.
pub fn init_logging(filter: &str) -> Result<()> {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .with_context(|| format!("bad log filter {filter:?}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))
}

/// The signals that stop the server.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn new() -> Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                term: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
                int: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Waits for the first signal and names it.
    pub(crate) async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "ctrl-c"
        }
    }
}
