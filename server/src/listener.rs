//! The accept loop: TCP, optionally TLS. Every accepted connection takes a
//! handshake place (`handshakes.rs`), evicting the oldest when they are all
//! taken, and has `--hello-timeout` for its TLS handshake and its hello
//! together; `--max-connections` bounds those past their hello (`hello.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::handshakes::Handshake;
use crate::hello;
use crate::metrics::Refusal;
use crate::shared::ServerContextRef;

/// How many connections the kernel may hold for the accept loop (capped by
/// `net.core.somaxconn`, 4096 on Linux since 5.4). The standard library's
/// 128 overflows under a flood that reopens hundreds of connections at
/// once, and then the kernel drops SYNs: a client's is sent again only
/// after a second.
const BACKLOG: u32 = 4096;

/// Listens on `addr`, with a backlog of [`BACKLOG`].
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As the standard library's listeners do: a restarted server binds at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Accepts connections until the server shuts down.
pub(crate) async fn accept_loop(
    shared: ServerContextRef,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
) {
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
        let handshake = shared.handshakes.enter();
        shared
            .tracker
            .spawn(admit(shared.clone(), stream, peer, tls.clone(), handshake));
    }
    tracing::info!("stopped accepting connections");
}

/// Serves an accepted connection, after its TLS handshake if any.
async fn admit(
    shared: ServerContextRef,
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    mut handshake: Handshake,
) {
    let Some(acceptor) = tls else {
        return hello::serve(shared, stream, peer, handshake).await;
    };
    match handshake
        .within(acceptor.accept(stream), &shared.shutdown)
        .await
    {
        Ok(Ok(stream)) => hello::serve(shared, stream, peer, handshake).await,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            shared.refused(Refusal::TlsHandshake, peer);
        }
        Err(cut) => {
            if let Some(why) = cut.refusal() {
                shared.refused(why, peer);
            }
        }
    }
}
