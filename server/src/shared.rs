//! What every connection of one server shares: the store, the tokens, the
//! limits, the metrics and the shutdown signal.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use leasehold::MemoryDriver;
use tokio_util::codec::LengthDelimitedCodec;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Limits;
use crate::metrics::Metrics;
use crate::tokens::Tokens;

/// The state of one running server, shared by its tasks.
pub(crate) struct ServerContext {
    /// The store: the lease table in renewal mode.
    pub driver: Arc<MemoryDriver>,
    /// The accepted tokens, when connections must authenticate.
    pub tokens: Option<Tokens>,
    /// The bounds of ERR-02.
    pub limits: Limits,
    /// The metrics.
    pub metrics: Arc<Metrics>,
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
}

impl ServerContext {
    pub fn new(
        driver: Arc<MemoryDriver>,
        tokens: Option<Tokens>,
        limits: Limits,
        metrics: Arc<Metrics>,
    ) -> ServerContext {
        ServerContext {
            driver,
            tokens,
            limits,
            metrics,
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
            in_grace: AtomicUsize::new(0),
            grace: tokio::sync::Mutex::new(()),
            next_connection: AtomicU64::new(1),
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

    /// The codec of frames from clients: a 4-byte big-endian length, at most `max_frame` bytes.
    pub fn inbound_codec(&self) -> LengthDelimitedCodec {
        codec(self.limits.max_frame)
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
