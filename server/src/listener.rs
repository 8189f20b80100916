//! The accept loop: TCP, optionally TLS, bounded by `--max-connections`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use leasehold::remote::protocol::WireError;
use leasehold::ErrorKind;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::connection;
use crate::shared::ServerContextRef;

/// How long a TLS handshake may take.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the handshake of a connection that is refused may take.
const REFUSAL_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// How many refusals (with their goodbye) may be in flight at once; past
/// that, connections over the limit are closed without a word.
const MAX_REFUSALS: usize = 64;

/// Accepts connections until the server shuts down.
pub(crate) async fn accept_loop(
    shared: ServerContextRef,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
) {
    let slots = Arc::new(Semaphore::new(shared.limits.max_connections));
    let refusals = Arc::new(Semaphore::new(MAX_REFUSALS));
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            _ = shared.shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, mostly: let some close.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                shared
                    .tracker
                    .spawn(admit(shared.clone(), stream, peer, tls.clone(), permit));
            }
            Err(_) => {
                tracing::warn!(%peer, limit = shared.limits.max_connections, "refusing a connection: --max-connections reached");
                let Ok(permit) = refusals.clone().try_acquire_owned() else {
                    continue;
                };
                let error = WireError {
                    code: ErrorKind::Unavailable.code().to_owned(),
                    message: format!(
                        "the server serves at most {} connections (--max-connections)",
                        shared.limits.max_connections
                    ),
                    reason: None,
                };
                let tls = tls.clone();
                shared.tracker.spawn(async move {
                    refuse(stream, tls, error).await;
                    drop(permit);
                });
            }
        }
    }
    tracing::info!("stopped accepting connections");
}

/// Serves an admitted connection, after its TLS handshake if any.
async fn admit(
    shared: ServerContextRef,
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    permit: OwnedSemaphorePermit,
) {
    let Some(acceptor) = tls else {
        return connection::serve(shared, stream, peer, permit).await;
    };
    let handshake = tokio::select! {
        done = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => done,
        _ = shared.shutdown.cancelled() => return,
    };
    match handshake {
        Ok(Ok(stream)) => connection::serve(shared, stream, peer, permit).await,
        Ok(Err(e)) => tracing::info!(%peer, error = %e, "TLS handshake failed"),
        Err(_) => tracing::info!(%peer, "TLS handshake timed out"),
    }
}

async fn refuse(stream: TcpStream, tls: Option<TlsAcceptor>, error: WireError) {
    match tls {
        None => connection::refuse(stream, error).await,
        Some(acceptor) => {
            if let Ok(Ok(stream)) =
                tokio::time::timeout(REFUSAL_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
            {
                connection::refuse(stream, error).await;
            }
        }
    }
}
