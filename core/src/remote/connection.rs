//! One connection to a server store: TCP or TLS, length-delimited frames,
//! and the hello that opens it.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;
use tokio_util::bytes::Bytes;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use super::options::Target;
use super::protocol::{self, ClientFrame, Role, ServerFrame};
use crate::connect::ConnectOptions;
use crate::error::{Error, ErrorKind, Result};

/// A byte stream a connection runs over.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// A connection's frames.
pub type Frames = Framed<Box<dyn Io>, LengthDelimitedCodec>;

/// What the server said in its welcome.
#[derive(Debug, Clone, Copy)]
pub struct Welcome {
    /// The server's epoch (changes when the store opens again).
    pub epoch: u32,
    /// What this connection may do.
    pub role: Role,
    /// The largest frame the server accepts.
    pub max_frame: usize,
}

/// The codec both sides use: a 4-byte big-endian length, at most `max_frame` bytes.
pub fn codec(max_frame: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(max_frame)
        .new_codec()
}

/// Builds the TLS connector for `leaseholds://`, trusting `ca_pem`.
pub fn tls_connector(options: &ConnectOptions) -> Result<TlsConnector> {
    let pem = options.ca_pem.as_deref().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            "leaseholds:// needs the certificates to trust (ConnectOptions::ca_pem)",
        )
    })?;
    Ok(TlsConnector::from(Arc::new(client_config(pem)?)))
}

/// A TLS client configuration that trusts the certificates of `pem` and
/// no other, and presents none.
pub fn client_config(pem: &[u8]) -> Result<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        let cert =
            cert.map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("bad CA PEM: {e}")))?;
        roots.add(cert).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad CA certificate: {e}"),
            )
        })?;
    }
    if roots.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "no certificate in the CA PEM",
        ));
    }
    Ok(ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth())
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Unavailable, format!("{what}: {e}"))
}

/// Opens a connection and says hello. Fails `Unavailable` when the server
/// cannot be reached, `Unauthenticated` or `Protocol` when it refuses.
///
/// A server that accepted the connection and then broke it, or said
/// goodbye `Unavailable`, before its welcome (a handshake place taken by a
/// newer connection while a flood of silent ones fills them, a server full
/// for a moment: docs/server.md) is tried again, within the connect timeout,
/// after a pause of 10 ms doubling up to 200 ms. A refused connection is
/// not, nor a TLS handshake that failed on what the server presented (a
/// certificate not trusted, another name): trying again would fail alike.
/// A connect that runs out of time says what its last try met.
pub async fn open(
    target: &Target,
    tls: Option<&TlsConnector>,
    options: &ConnectOptions,
) -> Result<(Frames, Welcome)> {
    let deadline = tokio::time::Instant::now() + options.connect_timeout;
    let mut pause = Duration::from_millis(10);
    let mut last: Option<Error> = None;
    loop {
        let mut again = false;
        let tried = tokio::time::timeout_at(deadline, attempt(target, tls, options, &mut again));
        match tried.await {
            Err(_) => {
                return Err(match last {
                    None => unavailable("connect", "timed out"),
                    Some(e) => unavailable("connect", format!("timed out; the last try: {e}")),
                })
            }
            Ok(Err(e))
                if again
                    && e.kind() == ErrorKind::Unavailable
                    && tokio::time::Instant::now() + pause < deadline =>
            {
                last = Some(e);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            Ok(answer) => return answer,
        }
    }
}

/// One try of [`open`]; `again` says whether its failure may be tried
/// again: the server accepted the connection, and a TLS handshake did not
/// fail on what it presented.
async fn attempt(
    target: &Target,
    tls: Option<&TlsConnector>,
    options: &ConnectOptions,
    again: &mut bool,
) -> Result<(Frames, Welcome)> {
    {
        let identity = options.checked_identity()?.to_string();
        let tcp = TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|e| unavailable(&format!("connect to {}:{}", target.host, target.port), e))?;
        *again = true;
        tcp.set_nodelay(true)
            .map_err(|e| unavailable("set TCP_NODELAY", e))?;
        let io: Box<dyn Io> = match tls {
            Some(connector) => {
                let name = ServerName::try_from(target.host.clone()).map_err(|e| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        format!("bad TLS server name: {e}"),
                    )
                })?;
                let stream = connector.connect(name, tcp).await.map_err(|e| {
                    // What the server presented failed (rustls's error),
                    // rather than the connection breaking.
                    if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) {
                        *again = false;
                    }
                    unavailable("TLS handshake", e)
                })?;
                Box::new(stream)
            }
            None => Box::new(tcp),
        };
        let mut frames = Framed::new(io, codec(options.max_frame));
        let hello = ClientFrame::Hello {
            version: protocol::VERSION,
            token: options.token.clone(),
            identity,
        };
        frames
            .send(Bytes::from(protocol::encode(&hello)?))
            .await
            .map_err(|e| unavailable("send hello", e))?;
        let first = frames
            .next()
            .await
            .ok_or_else(|| unavailable("hello", "the server closed the connection"))?
            .map_err(|e| unavailable("read welcome", e))?;
        match protocol::decode::<ServerFrame>(&first)? {
            ServerFrame::Welcome {
                epoch,
                role,
                max_frame,
                ..
            } => Ok((
                frames,
                Welcome {
                    epoch,
                    role,
                    max_frame: usize::try_from(max_frame).unwrap_or(usize::MAX),
                },
            )),
            ServerFrame::Goodbye(e) => Err(Error::from(e)),
            other => Err(Error::new(
                ErrorKind::Protocol,
                format!("expected a welcome, got {other:?}"),
            )),
        }
    }
}
