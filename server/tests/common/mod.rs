//! Helpers of the server's tests: the real `leasehold` binary as a child
//! process, and a small client speaking the wire protocol over a real socket.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use leasehold::remote::protocol::{
    self, ClientFrame, Reply, Request, ServerFrame, WireError, WireGrant, VERSION,
};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::net::TcpStream;
use tokio::process::{Child, ChildStdout, Command};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// How long any single expected event may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// The `leasehold` binary, running `serve`.
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
    pub metrics: Option<SocketAddr>,
    _stdout: Lines<BufReader<ChildStdout>>,
}

/// `leasehold serve --listen 127.0.0.1:0 --data-dir DIR ARGS...`, not yet started.
pub fn serve_command(data_dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leasehold"));
    cmd.arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(data_dir)
        .args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("LEASEHOLD_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("LEASEHOLD_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    cmd
}

impl ServerProcess {
    /// Starts the binary on `data_dir` with extra `args`, and waits for its
    /// `listening on` line.
    pub async fn start(data_dir: &Path, args: &[&str]) -> ServerProcess {
        ServerProcess::spawn(serve_command(data_dir, args)).await
    }

    /// Starts a prepared command and waits for its `listening on` line.
    pub async fn spawn(mut cmd: Command) -> ServerProcess {
        let mut child = cmd.spawn().expect("the leasehold binary starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let mut metrics = None;
        let addr = tokio::time::timeout(WAIT, async {
            loop {
                let line = lines
                    .next_line()
                    .await
                    .expect("stdout reads")
                    .expect("the server printed `listening on` before exiting");
                if let Some(a) = line.strip_prefix("metrics on ") {
                    metrics = Some(a.parse().expect("a metrics address"));
                }
                if let Some(a) = line.strip_prefix("listening on ") {
                    return a.parse::<SocketAddr>().expect("a socket address");
                }
            }
        })
        .await
        .expect("the server starts in time");
        ServerProcess {
            child,
            addr,
            metrics,
            _stdout: lines,
        }
    }

    /// Sends `signal` (`TERM`, `INT`, ...) to the server.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().expect("the server runs");
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// Waits for the server to exit.
    pub async fn wait(&mut self) -> ExitStatus {
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the server exits in time")
            .expect("wait works")
    }

    /// SIGTERM, then waits for the exit.
    pub async fn stop(&mut self) -> ExitStatus {
        self.signal("TERM");
        self.wait().await
    }

    /// A connection that said hello (with `token`) and was welcomed.
    pub async fn client(&self, token: Option<&str>) -> Client<TcpStream> {
        let mut c = Client::connect(self.addr).await;
        match c.hello(token).await {
            ServerFrame::Welcome { .. } => c,
            other => panic!("expected a welcome, got {other:?}"),
        }
    }
}

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
