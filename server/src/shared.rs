//! What every connection of one server shares: the store, the tokens, the
//! limits and the places they bound, the metrics and the shutdown signal.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use leasehold::MemoryDriver;
use tokio::sync::Semaphore;
use tokio_util::codec::LengthDelimitedCodec;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Limits;
use crate::handshakes::Handshakes;
use crate::live::{Live, Served};
use crate::metrics::{Metrics, Refusal};
use crate::tenants::Tenants;
use crate::tokens::Tokens;

/// How often, at most, the log says that connections are being refused for
/// one reason (the metrics count every one).
const REFUSAL_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The state of one running server, shared by its tasks.
pub(crate) struct ServerContext {
    /// The store: the lease table in renewal mode.
    pub driver: Arc<MemoryDriver>,
    /// The accepted tokens, when connections must authenticate.
    pub tokens: Option<Arc<Tokens>>,
    /// The bounds of ERR-02.
    pub limits: Limits,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// The live page's view of the connections and events.
    pub live: Arc<Live>,
    /// The places of connections in their handshake (`--max-handshakes`).
    pub handshakes: Arc<Handshakes>,
    /// The places of connections served (`--max-connections`).
    pub places: Arc<Semaphore>,
    /// The connections of each token (`--max-connections-per-token`).
    pub tenants: Arc<Tenants>,
    /// Cancelled when the server shuts down.
    pub shutdown: CancellationToken,
    /// Every task that must end before the server has shut down.
    pub tracker: TaskTracker,
    /// How many requests of closed connections wait out their grace period.
    pub in_grace: AtomicUsize,
    /// Taken by a grace period's give-up and, while any request is in its
    /// grace period, by every hold: a hold that claims a request again and
    /// the give-up of that request never interleave.
    pub grace: tokio::sync::Mutex<()>,
    next_connection: AtomicU64,
    /// When each reason of refusal was last logged, in ms since `started`.
    refusal_logged: [AtomicU64; Refusal::ALL.len()],
    started: std::time::Instant,
}

impl ServerContext {
    pub fn new(
        driver: Arc<MemoryDriver>,
        tokens: Option<Tokens>,
        limits: Limits,
        metrics: Arc<Metrics>,
    ) -> ServerContext {
        let handshakes = Arc::new(Handshakes::new(
            limits.max_handshakes,
            limits.hello_timeout,
            metrics.handshakes.clone(),
        ));
        let tenants = Arc::new(Tenants::new(
            tokens.as_ref().map_or(0, Tokens::len),
            limits.max_connections_per_token,
        ));
        let live = Arc::new(Live::new(Arc::new(Served {
            driver: driver.clone(),
            metrics: metrics.clone(),
        })));
        ServerContext {
            live,
            driver,
            tokens: tokens.map(Arc::new),
            limits,
            metrics,
            handshakes,
            places: Arc::new(Semaphore::new(limits.max_connections)),
            tenants,
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
            in_grace: AtomicUsize::new(0),
            grace: tokio::sync::Mutex::new(()),
            next_connection: AtomicU64::new(1),
            refusal_logged: Refusal::ALL.map(|_| AtomicU64::new(u64::MAX)),
            started: std::time::Instant::now(),
        }
    }

    /// Counts a refusal for `why`, and says so in the log at most once per
    /// [`REFUSAL_LOG_EVERY`] for each reason (each one at debug level): a
    /// flood of connections does not flood the log.
    pub fn refused(&self, why: Refusal, peer: std::net::SocketAddr) {
        self.metrics.refused(why);
        self.live.refused(why, peer);
        tracing::debug!(%peer, reason = why.as_str(), "connection refused");
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let every = REFUSAL_LOG_EVERY.as_millis() as u64;
        let last = &self.refusal_logged[why.index()];
        let due = last
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                (t == u64::MAX || now.saturating_sub(t) >= every).then_some(now)
            })
            .is_ok();
        if due {
            tracing::warn!(
                %peer,
                reason = why.as_str(),
                "refusing connections (leasehold_refusals_total counts them; said at most every {}s)",
                REFUSAL_LOG_EVERY.as_secs()
            );
        }
    }

    /// A number for the next connection, for logs.
    pub fn connection_id(&self) -> u64 {
        self.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits for a write to the client to finish: at once when the socket
    /// takes it, else at most `WRITE_STALL`, and not past shutdown; `false`
    /// when it failed, stalled or was cut short.
    pub async fn bounded_write(
        &self,
        write: impl std::future::Future<Output = std::io::Result<()>>,
    ) -> bool {
        let mut write = std::pin::pin!(write);
        if let Some(done) = futures::FutureExt::now_or_never(write.as_mut()) {
            return done.is_ok();
        }
        tokio::select! {
            done = tokio::time::timeout(crate::connection::WRITE_STALL, write) => matches!(done, Ok(Ok(()))),
            _ = self.shutdown.cancelled() => false,
        }
    }
}

/// The codec of frames: a 4-byte big-endian length, then at most `max` bytes.
pub(crate) fn codec(max: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .big_endian()
        .max_frame_length(max)
        .new_codec()
}

/// The codec of frames to clients. The server keeps its own frames within
/// the configured limit by construction (bounded `Renew`, truncated `List`),
/// so it never refuses to encode one.
pub(crate) fn outbound_codec() -> LengthDelimitedCodec {
    codec(u32::MAX as usize)
}

/// The server context as its tasks pass it around.
pub(crate) type ServerContextRef = Arc<ServerContext>;
