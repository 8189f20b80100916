//! A connection's hello and its admission: its first frame read within its
//! handshake's place and deadline ([`Handshake`]), its token checked, then a
//! place under `--max-connections-per-token` and `--max-connections`. A
//! connection refused at any of these steps gets its goodbye and is closed
//! at once: it never lingers, so it holds no place a speaking client needs.

use std::net::SocketAddr;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use leasehold::remote::protocol::{self, ClientFrame, Role, ServerFrame, WireError, VERSION};
use leasehold::{ErrorKind, Identity};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, WriteHalf};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::codec::{FramedRead, LengthDelimitedCodecError};

use crate::connection::{self, Frames};
use crate::handshakes::{Cut, Handshake};
use crate::metrics::Refusal;
use crate::shared::{codec, ServerContextRef};
use crate::tenants::Tenancy;

/// The largest hello read (or `--max-frame` when smaller): room for a
/// token of 4,000 bytes, and what a connection in its handshake may make
/// the server allocate for its first frame.
pub const MAX_HELLO: usize = 4096;
/// The read buffer of a connection in its handshake; a hello with a short
/// token fits.
const HELLO_BUFFER: usize = 256;
/// The read buffer of a connection once admitted.
const READ_BUFFER: usize = 8 * 1024;
/// How long the goodbye of a refused connection may take to write; it is
/// the first thing the server writes on it, so the socket takes it at once.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);
/// At most this much that the client already sent is read and discarded
/// before a refused connection is closed (so that it closes, rather than
/// resets, and the client reads the goodbye).
const DRAIN_BYTES: usize = 64 * 1024;

/// A connection admitted past its hello: its role and its places, given
/// back when it ends.
pub(crate) struct Admitted {
    /// What its token admits it to.
    pub role: Role,
    /// Who the client is (WHO-01, `ConnectOptions::identity`).
    pub identity: Identity,
    _place: OwnedSemaphorePermit,
    _tenancy: Option<Tenancy>,
}

/// Why a connection was not admitted: its goodbye, if it can be told, and
/// the reason the metrics count, if it is a refusal.
struct Refused {
    goodbye: Option<WireError>,
    why: Option<Refusal>,
}

impl Refused {
    fn new(kind: ErrorKind, message: impl Into<String>, why: Refusal) -> Refused {
        Refused {
            goodbye: Some(connection::wire(kind, message)),
            why: Some(why),
        }
    }

    fn bad_hello(message: impl Into<String>) -> Refused {
        Refused::new(ErrorKind::Protocol, message, Refusal::BadHello)
    }

    /// The connection ended (the client closed it, or it broke): no word.
    fn silent() -> Refused {
        Refused {
            goodbye: None,
            why: None,
        }
    }
}

/// The goodbye of a connection whose handshake was cut short.
fn cut_short(shared: &ServerContextRef, cut: Cut) -> WireError {
    match cut {
        Cut::Shutdown => connection::wire(ErrorKind::Unavailable, "shutting down"),
        Cut::Evicted => connection::wire(
            ErrorKind::Unavailable,
            format!(
                "too many connections have not said hello (--max-handshakes {}); this one was the oldest",
                shared.limits.max_handshakes
            ),
        ),
        Cut::TimedOut => connection::wire(
            ErrorKind::Protocol,
            format!(
                "no Hello within {} (--hello-timeout)",
                leasehold::duration::show(shared.limits.hello_timeout)
            ),
        ),
    }
}

/// Reads the hello of a connection over `io` (past its TLS handshake, if
/// any) within `handshake`, admits it, and serves it until it ends; or
/// refuses it.
pub(crate) async fn serve<S>(
    shared: ServerContextRef,
    io: S,
    peer: SocketAddr,
    mut handshake: Handshake,
) where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (rd, wr) = tokio::io::split(io);
    let max_hello = shared.limits.max_frame.min(MAX_HELLO);
    let mut frames = FramedRead::with_capacity(rd, codec(max_hello), HELLO_BUFFER);
    let hello = match handshake
        .within(hello(&shared, &mut frames), &shared.shutdown)
        .await
    {
        Ok(hello) => hello,
        Err(cut) => Err(Refused {
            goodbye: Some(cut_short(&shared, cut)),
            why: cut.refusal(),
        }),
    };
    // Past its hello, it holds no handshake place.
    drop(handshake);
    match hello.and_then(|said| admit(&shared, said)) {
        Ok(admitted) => {
            frames
                .decoder_mut()
                .set_max_frame_length(shared.limits.max_frame);
            frames.read_buffer_mut().reserve(READ_BUFFER);
            connection::serve(shared, frames, wr, peer, admitted).await;
        }
        Err(refused) => refuse(&shared, frames, wr, refused, peer).await,
    }
}

/// What a good hello said: the role it admits to, its token's number and
/// the client's identity.
struct Said {
    role: Role,
    token: Option<usize>,
    identity: Identity,
}

/// Reads the hello.
async fn hello<S: AsyncRead>(
    shared: &ServerContextRef,
    frames: &mut Frames<S>,
) -> Result<Said, Refused> {
    let first = match frames.next().await {
        None => return Err(Refused::silent()),
        Some(Err(e)) => {
            let oversized = e
                .get_ref()
                .is_some_and(|inner| inner.is::<LengthDelimitedCodecError>());
            return Err(if oversized {
                Refused::bad_hello(format!("hello frame too large: {e}"))
            } else {
                Refused::silent()
            });
        }
        Some(Ok(bytes)) => bytes,
    };
    let other_version = |version: u16| {
        Refused::bad_hello(format!(
            "protocol version {version} is not spoken here; this server speaks {VERSION}"
        ))
    };
    let (token, identity) = match protocol::decode::<ClientFrame>(&first) {
        Err(e) => {
            return Err(match protocol::hello_version(&first) {
                Some(version) if version != VERSION => other_version(version),
                _ => Refused::bad_hello(e.message()),
            })
        }
        Ok(ClientFrame::Request { .. }) => {
            return Err(Refused::bad_hello("the first frame must be Hello"))
        }
        Ok(ClientFrame::Hello { version, .. }) if version != VERSION => {
            return Err(other_version(version))
        }
        Ok(ClientFrame::Hello {
            token, identity, ..
        }) => (token, identity),
    };
    let identity = Identity::new(&identity).map_err(|e| Refused::bad_hello(e.message()))?;
    let Some(tokens) = &shared.tokens else {
        return Ok(Said {
            role: Role::Write,
            token: None,
            identity,
        });
    };
    match token.as_deref().map(|t| tokens.find(t)) {
        Some(Some((role, number))) => Ok(Said {
            role,
            token: Some(number),
            identity,
        }),
        Some(None) => Err(Refused::new(
            ErrorKind::Unauthenticated,
            "the token is not one this server accepts",
            Refusal::BadToken,
        )),
        None => Err(Refused::new(
            ErrorKind::Unauthenticated,
            "this server needs a token",
            Refusal::BadToken,
        )),
    }
}

/// Takes the places of a connection that said hello: its token's, then the
/// server's.
fn admit(shared: &ServerContextRef, said: Said) -> Result<Admitted, Refused> {
    let tenancy = match said.token {
        None => None,
        Some(number) => Some(shared.tenants.enter(number).ok_or_else(|| {
            Refused::new(
                ErrorKind::Unavailable,
                format!(
                    "this token already has {} connections (--max-connections-per-token)",
                    shared.tenants.limit()
                ),
                Refusal::PerToken,
            )
        })?),
    };
    let place = shared.places.clone().try_acquire_owned().map_err(|_| {
        Refused::new(
            ErrorKind::Unavailable,
            format!(
                "the server serves at most {} connections (--max-connections)",
                shared.limits.max_connections
            ),
            Refusal::MaxConnections,
        )
    })?;
    Ok(Admitted {
        role: said.role,
        identity: said.identity,
        _place: place,
        _tenancy: tenancy,
    })
}

/// Counts the refusal, writes the goodbye, and closes the connection at
/// once, after reading what the client had already sent.
async fn refuse<S>(
    shared: &ServerContextRef,
    frames: Frames<S>,
    mut wr: WriteHalf<S>,
    refused: Refused,
    peer: SocketAddr,
) where
    S: AsyncRead + AsyncWrite,
{
    if let Some(why) = refused.why {
        shared.refused(why, peer);
    }
    let Some(error) = refused.goodbye else {
        return;
    };
    if error.code == ErrorKind::Protocol.code() {
        shared.metrics.protocol_errors.inc();
    }
    tracing::debug!(%peer, code = %error.code, message = %error.message, "refusing connection");
    let Ok(payload) = protocol::encode(&ServerFrame::Goodbye(error)) else {
        return;
    };
    let mut frame = Vec::with_capacity(4 + payload.len());
    frame.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    frame.extend_from_slice(&payload);
    let written = tokio::time::timeout(REFUSAL_WRITE, async {
        wr.write_all(&frame).await?;
        wr.shutdown().await
    })
    .await;
    if matches!(written, Ok(Ok(()))) {
        drain_ready(frames.into_inner());
    }
}

/// Reads and discards what the client already sent, without waiting for
/// more: closing a socket with unread input would reset it, and the client
/// could lose the goodbye.
fn drain_ready<R: AsyncRead + Unpin>(mut rd: R) {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    while total < DRAIN_BYTES {
        match rd.read(&mut buf).now_or_never() {
            Some(Ok(n)) if n > 0 => total += n,
            _ => break,
        }
    }
}
