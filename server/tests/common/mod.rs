//! Helpers of the server's tests that speak the wire protocol: the real
//! `leasehold` binary as a child process (the chaos harness's
//! [`ServerProcess`], as in `support/`), and a small client speaking the
//! protocol over a real socket.

#![allow(dead_code, unused_imports)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use leasehold::remote::protocol::{
    self, ClientFrame, Reply, Request, ServerFrame, WireError, WireGrant, VERSION,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

pub use leasehold_chaos::process::{ServeCommand, ServerProcess};

/// How long any single expected event may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// A connection speaking the wire protocol.
pub struct Client<S> {
    pub frames: Framed<S, LengthDelimitedCodec>,
    next_id: u64,
    pushed: VecDeque<ServerFrame>,
}

fn client_codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(16 << 20)
        .new_codec()
}

impl Client<TcpStream> {
    /// A TCP connection, no hello yet.
    pub async fn connect(addr: SocketAddr) -> Client<TcpStream> {
        let tcp = TcpStream::connect(addr).await.expect("connect");
        tcp.set_nodelay(true).unwrap();
        Client::over(tcp)
    }

    /// A connection to `addr` that said hello (with `token`) and was welcomed.
    pub async fn welcomed(addr: SocketAddr, token: Option<&str>) -> Client<TcpStream> {
        let mut c = Client::connect(addr).await;
        match c.hello(token).await {
            ServerFrame::Welcome { .. } => c,
            other => panic!("expected a welcome, got {other:?}"),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    /// Frames over an open stream.
    pub fn over(io: S) -> Client<S> {
        Client {
            frames: Framed::new(io, client_codec()),
            next_id: 1,
            pushed: VecDeque::new(),
        }
    }

    /// Sends one frame.
    pub async fn send(&mut self, frame: &ClientFrame) {
        self.send_payload(&protocol::encode(frame).unwrap()).await;
    }

    /// Sends one frame with this payload.
    pub async fn send_payload(&mut self, payload: &[u8]) {
        self.frames
            .send(bytes::Bytes::copy_from_slice(payload))
            .await
            .expect("send");
    }

    /// Writes bytes on the socket as they are, no length prefix.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let io = self.frames.get_mut();
        io.write_all(bytes).await.expect("write");
        io.flush().await.expect("flush");
    }

    /// Says hello and answers the server's first frame.
    pub async fn hello(&mut self, token: Option<&str>) -> ServerFrame {
        self.send(&ClientFrame::Hello {
            version: VERSION,
            token: token.map(str::to_owned),
            identity: "test".into(),
        })
        .await;
        self.recv().await.expect("an answer to hello")
    }

    /// The next frame, `None` when the server closed the connection (or reset it).
    pub async fn recv(&mut self) -> Option<ServerFrame> {
        let next = tokio::time::timeout(WAIT, self.frames.next())
            .await
            .expect("a frame in time");
        match next {
            None | Some(Err(_)) => None,
            Some(Ok(bytes)) => Some(protocol::decode(&bytes).expect("the server's frame decodes")),
        }
    }

    /// Sends a request and waits for its reply; pushes that come first are kept.
    pub async fn request(&mut self, body: Request) -> Result<Reply, WireError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&ClientFrame::Request { id, body }).await;
        loop {
            match self
                .recv()
                .await
                .expect("a reply before the connection closed")
            {
                ServerFrame::Reply { id: got, body } if got == id => return body,
                ServerFrame::Reply { id: got, .. } => panic!("reply {got} while waiting for {id}"),
                push @ (ServerFrame::Granted(_)
                | ServerFrame::Failed { .. }
                | ServerFrame::Lost { .. }) => self.pushed.push_back(push),
                other => panic!("unexpected {other:?} while waiting for reply {id}"),
            }
        }
    }

    /// The next pushed frame (grant, failure or loss).
    pub async fn push(&mut self) -> ServerFrame {
        if let Some(p) = self.pushed.pop_front() {
            return p;
        }
        match self
            .recv()
            .await
            .expect("a push before the connection closed")
        {
            push @ (ServerFrame::Granted(_)
            | ServerFrame::Failed { .. }
            | ServerFrame::Lost { .. }) => push,
            other => panic!("expected a push, got {other:?}"),
        }
    }

    /// Asserts that nothing was pushed: a ping's pong comes with no push before it.
    pub async fn assert_no_push(&mut self) {
        assert_eq!(self.request(Request::Ping).await, Ok(Reply::Pong));
        assert!(
            self.pushed.is_empty(),
            "unexpected pushes: {:?}",
            self.pushed
        );
    }

    /// The next frame must be a goodbye, and then the connection must close.
    pub async fn goodbye(&mut self) -> WireError {
        let error = match self.recv().await {
            Some(ServerFrame::Goodbye(e)) => e,
            other => panic!("expected a goodbye, got {other:?}"),
        };
        assert!(
            self.recv().await.is_none(),
            "the connection closes after goodbye"
        );
        error
    }

    /// `Hold` with a ttl of 10 s.
    pub async fn hold(
        &mut self,
        lock: &str,
        key: &str,
        request_id: u128,
        queue: bool,
    ) -> Result<Reply, WireError> {
        self.request(hold(lock, key, request_id, 10_000, queue))
            .await
    }

    /// `Hold` that must be granted at once.
    pub async fn granted(&mut self, lock: &str, key: &str, request_id: u128) -> WireGrant {
        match self.hold(lock, key, request_id, false).await {
            Ok(Reply::Granted(g)) => g,
            other => panic!("expected a grant, got {other:?}"),
        }
    }

    /// `Release`, which must succeed.
    pub async fn release(&mut self, lease_id: u128) {
        assert_eq!(
            self.request(Request::Release { lease_id }).await,
            Ok(Reply::Released)
        );
    }
}

/// A `Hold` request.
pub fn hold(lock: &str, key: &str, request_id: u128, ttl_ms: u64, queue: bool) -> Request {
    Request::Hold {
        lock: lock.into(),
        key: key.into(),
        request_id,
        ttl_ms,
        max_hold_ms: None,
        queue,
        group: None,
    }
}

/// The code of an error answer.
pub fn code(answer: &Result<Reply, WireError>) -> &str {
    match answer {
        Err(e) => &e.code,
        Ok(r) => panic!("expected an error, got {r:?}"),
    }
}

/// A fresh data directory.
pub fn data_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp dir")
}

/// The server's `/metrics` page at `addr`, headers and all.
pub async fn scrape(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).await.unwrap();
    out
}

/// The value of the counter `leasehold_refusals_total{reason=REASON}`.
pub fn refusals(text: &str, reason: &str) -> u64 {
    let series = format!("leasehold_refusals_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
        .trim()
        .parse()
        .unwrap()
}
