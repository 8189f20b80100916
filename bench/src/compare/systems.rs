//! One hold cycle (acquire a key, waiting while it is held; release it) on
//! each system compared, and the loopback echo that is the floor.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use etcd_client::{Compare, CompareOp, EventType, PutOptions, Txn, TxnOp, WatchOptions};
use leasehold::remote::ConnectOptions;
use leasehold::{HoldOptions, Holding, Lock, Store};
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::bytes::Bytes;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

/// A client of a lock service: acquires a key (waiting while another
/// holds it) and releases it.
pub trait Locker: Send + 'static {
    /// What a holder keeps until it releases.
    type Held: Send;
    /// Takes `key`, waiting as the system's recipe waits while it is held.
    fn acquire(&mut self, key: &str) -> impl Future<Output = Result<Self::Held>> + Send;
    /// Lets the key go.
    fn release(&mut self, held: Self::Held) -> impl Future<Output = Result<()>> + Send;
}

/// The lock name every Leasehold workload uses.
pub const LEASEHOLD_LOCK: &str = "bench";

/// Leasehold on any store: `lock.begin` then `holding.end`.
pub struct LeaseholdClient {
    lock: Lock,
}

impl Locker for LeaseholdClient {
    type Held = Holding;

    async fn acquire(&mut self, key: &str) -> Result<Holding> {
        Ok(self.lock.begin(key, &HoldOptions::default()).await?)
    }

    async fn release(&mut self, held: Holding) -> Result<()> {
        held.end().await?;
        Ok(())
    }
}

/// Opens `n` clients sharing one `Store` (one connection, multiplexed).
pub async fn leasehold_shared(url: &str, n: usize) -> Result<Vec<LeaseholdClient>> {
    let store = Store::connect(url, ConnectOptions::default()).await?;
    let lock = store.lock(LEASEHOLD_LOCK).open()?;
    Ok((0..n)
        .map(|_| LeaseholdClient { lock: lock.clone() })
        .collect())
}

/// Opens `n` clients, each with a `Store` (a connection) of its own.
pub async fn leasehold_own(url: &str, n: usize) -> Result<Vec<LeaseholdClient>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let store = Store::connect(url, ConnectOptions::default()).await?;
        out.push(LeaseholdClient {
            lock: store.lock(LEASEHOLD_LOCK).open()?,
        });
    }
    Ok(out)
}

/// etcd: lease grant (ttl 10 s), then a transaction that puts the key with
/// that lease if its create revision is 0; release deletes the key and
/// revokes the lease. A held key is waited for by watching it for a delete
/// from the revision the failed transaction saw, then trying again.
pub struct EtcdClient {
    client: etcd_client::Client,
}

/// A key held on etcd, and the lease it is attached to.
pub struct EtcdHeld {
    key: String,
    lease: i64,
}

/// The ttl of etcd's and Redis's lock leases in the hold-cycle workloads (10 s, as Leasehold's default).
pub const LOCK_TTL_SECS: i64 = 10;

impl Locker for EtcdClient {
    type Held = EtcdHeld;

    async fn acquire(&mut self, key: &str) -> Result<EtcdHeld> {
        let c = &mut self.client;
        let lease = c.lease_grant(LOCK_TTL_SECS, None).await?.id();
        loop {
            let txn = Txn::new()
                .when([Compare::create_revision(key, CompareOp::Equal, 0)])
                .and_then([TxnOp::put(
                    key,
                    "held",
                    Some(PutOptions::new().with_lease(lease)),
                )]);
            let resp = c.txn(txn).await?;
            if resp.succeeded() {
                return Ok(EtcdHeld {
                    key: key.to_owned(),
                    lease,
                });
            }
            let seen = resp.header().map_or(0, |h| h.revision());
            let mut watch = c
                .watch(key, Some(WatchOptions::new().with_start_revision(seen + 1)))
                .await?;
            'wait: while let Some(msg) = watch.message().await? {
                if msg.canceled() {
                    break;
                }
                for e in msg.events() {
                    if e.event_type() == EventType::Delete {
                        break 'wait;
                    }
                }
            }
        }
    }

    async fn release(&mut self, held: EtcdHeld) -> Result<()> {
        self.client.delete(held.key, None).await?;
        self.client.lease_revoke(held.lease).await?;
        Ok(())
    }
}

/// Opens `n` etcd clients, each with a connection of its own.
pub async fn etcd_clients(endpoint: &str, n: usize) -> Result<Vec<EtcdClient>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(EtcdClient {
            client: etcd_client::Client::connect([endpoint], None).await?,
        });
    }
    Ok(out)
}

/// Redis's single-instance lock recipe: `SET key token NX PX 10000`, and a
/// Lua compare-and-delete to release. Redis pushes nothing when a key is
/// freed, so a held key is waited for by trying again every 1 ms.
pub struct RedisClient {
    conn: MultiplexedConnection,
    release: redis::Script,
    me: u64,
    seq: u64,
}

/// The compare-and-delete release script of the Redis recipe.
pub const RELEASE_SCRIPT: &str =
    "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

/// How long a waiter that polls (Redis, PostgreSQL's `lock_until` recipe)
/// sleeps between two tries.
pub const POLL_RETRY: Duration = Duration::from_millis(1);

impl Locker for RedisClient {
    type Held = (String, String);

    async fn acquire(&mut self, key: &str) -> Result<(String, String)> {
        self.seq += 1;
        let token = format!("{}-{}", self.me, self.seq);
        loop {
            let set: Option<String> = redis::cmd("SET")
                .arg(key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(LOCK_TTL_SECS * 1000)
                .query_async(&mut self.conn)
                .await?;
            if set.is_some() {
                return Ok((key.to_owned(), token));
            }
            tokio::time::sleep(POLL_RETRY).await;
        }
    }

    async fn release(&mut self, (key, token): (String, String)) -> Result<()> {
        let deleted: i64 = self
            .release
            .key(key)
            .arg(token)
            .invoke_async(&mut self.conn)
            .await?;
        if deleted != 1 {
            bail!("the Redis lock was not ours at release");
        }
        Ok(())
    }
}

/// A multiplexed Redis connection with TCP_NODELAY and no response timeout.
pub async fn redis_connection(port: u16) -> Result<MultiplexedConnection> {
    use redis::io::tcp::TcpSettings;
    use redis::IntoConnectionInfo;
    let info = format!("redis://127.0.0.1:{port}/")
        .into_connection_info()?
        .set_tcp_settings(TcpSettings::default().set_nodelay(true));
    let client = redis::Client::open(info)?;
    let config = AsyncConnectionConfig::new().set_response_timeout(None);
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// Opens `n` Redis clients, each with a connection of its own.
pub async fn redis_clients(port: u16, n: usize) -> Result<Vec<RedisClient>> {
    let mut out = Vec::with_capacity(n);
    for me in 0..n as u64 {
        let mut conn = redis_connection(port).await?;
        let release = redis::Script::new(RELEASE_SCRIPT);
        release.load_async(&mut conn).await?;
        out.push(RedisClient {
            conn,
            release,
            me,
            seq: 0,
        });
    }
    Ok(out)
}

/// The size of the floor's ping and pong.
pub const ECHO_BYTES: usize = 16;

/// Starts the floor's echo server on its own thread (a current-thread
/// runtime, like a separate server process): every connection gets back
/// each 16-byte ping it sends. Returns its port.
pub fn start_echo() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("echo".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the echo runtime starts");
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("a tokio listener");
                loop {
                    let Ok((mut sock, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = sock.set_nodelay(true);
                    tokio::spawn(async move {
                        let mut buf = [0u8; ECHO_BYTES];
                        while sock.read_exact(&mut buf).await.is_ok() {
                            if sock.write_all(&buf).await.is_err() {
                                break;
                            }
                        }
                    });
                }
            });
        })
        .context("start the echo thread")?;
    Ok(port)
}

/// A client of the echo server.
pub struct EchoClient {
    sock: TcpStream,
}

impl EchoClient {
    /// Connects, with TCP_NODELAY.
    pub async fn connect(port: u16) -> Result<EchoClient> {
        let sock = TcpStream::connect(("127.0.0.1", port)).await?;
        sock.set_nodelay(true)?;
        Ok(EchoClient { sock })
    }

    /// One round trip: 16 bytes out, the same 16 back.
    pub async fn ping(&mut self) -> Result<()> {
        let out = [7u8; ECHO_BYTES];
        let mut back = [0u8; ECHO_BYTES];
        self.sock.write_all(&out).await?;
        self.sock.read_exact(&mut back).await?;
        Ok(())
    }
}

impl Locker for EchoClient {
    type Held = ();

    /// The floor has no lock: "acquire" is one round trip, release nothing.
    async fn acquire(&mut self, _key: &str) -> Result<()> {
        self.ping().await
    }

    async fn release(&mut self, _held: ()) -> Result<()> {
        Ok(())
    }
}

/// A minimal client of Leasehold's wire protocol, for diagnosis only: one
/// connection, one request at a time, no driver, no holder engine, no
/// renewal. What it measures is the server and the wire; the gap between
/// it and [`LeaseholdClient`] is the cost of the client library.
pub struct WireClient {
    sink: FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>,
    frames: WireFrames,
    next_id: u64,
}

/// Who reads a [`WireClient`]'s frames.
enum WireFrames {
    /// The caller, on its own task.
    Caller(FramedRead<OwnedReadHalf, LengthDelimitedCodec>),
    /// A task of their own, which hands each frame to the caller's task
    /// through a channel, as Leasehold's client library does: the gap
    /// between the two is what that hop costs.
    Task(tokio::sync::mpsc::UnboundedReceiver<Bytes>),
}

impl WireClient {
    /// Connects to `127.0.0.1:port` and says hello; `reader_task`: a task
    /// of its own reads the frames.
    pub async fn connect(port: u16, reader_task: bool) -> Result<WireClient> {
        use leasehold::remote::protocol::{ClientFrame, VERSION};
        let sock = TcpStream::connect(("127.0.0.1", port)).await?;
        sock.set_nodelay(true)?;
        let codec = leasehold::remote::codec(leasehold::remote::protocol::DEFAULT_MAX_FRAME);
        let (rd, wr) = sock.into_split();
        let mut c = WireClient {
            sink: FramedWrite::new(wr, codec.clone()),
            frames: WireFrames::Caller(FramedRead::new(rd, codec)),
            next_id: 0,
        };
        c.send(&ClientFrame::Hello {
            version: VERSION,
            token: None,
            identity: "bench".into(),
        })
        .await?;
        match c.recv().await? {
            leasehold::remote::protocol::ServerFrame::Welcome { .. } => {}
            other => bail!("expected a welcome, got {other:?}"),
        }
        if reader_task {
            let WireFrames::Caller(mut frames) = c.frames else {
                bail!("the frames were handed over already");
            };
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            tokio::spawn(async move {
                use futures::StreamExt;
                while let Some(Ok(bytes)) = frames.next().await {
                    if tx.send(bytes.freeze()).is_err() {
                        return;
                    }
                }
            });
            c.frames = WireFrames::Task(rx);
        }
        Ok(c)
    }

    async fn send(&mut self, frame: &leasehold::remote::protocol::ClientFrame) -> Result<()> {
        use futures::SinkExt;
        let bytes = leasehold::remote::protocol::encode(frame)?;
        self.sink.send(Bytes::from(bytes)).await?;
        Ok(())
    }

    async fn recv(&mut self) -> Result<leasehold::remote::protocol::ServerFrame> {
        use futures::StreamExt;
        let closed = || anyhow::anyhow!("the server closed the connection");
        let bytes = match &mut self.frames {
            WireFrames::Caller(frames) => frames.next().await.ok_or_else(closed)??.freeze(),
            WireFrames::Task(rx) => rx.recv().await.ok_or_else(closed)?,
        };
        Ok(leasehold::remote::protocol::decode(&bytes)?)
    }

    /// Sends `body` and returns its reply, keeping pushed grants aside.
    async fn call(
        &mut self,
        body: leasehold::remote::protocol::Request,
    ) -> Result<leasehold::remote::protocol::Reply> {
        use leasehold::remote::protocol::{ClientFrame, ServerFrame};
        let id = self.next_id;
        self.next_id += 1;
        self.send(&ClientFrame::Request { id, body }).await?;
        loop {
            match self.recv().await? {
                ServerFrame::Reply { id: got, body } if got == id => {
                    return body.map_err(|e| anyhow::anyhow!("{}: {}", e.code, e.message))
                }
                ServerFrame::Reply { .. } => {}
                other => bail!("unexpected {other:?} while waiting for a reply"),
            }
        }
    }
}

impl Locker for WireClient {
    type Held = u128;

    async fn acquire(&mut self, key: &str) -> Result<u128> {
        use leasehold::remote::protocol::{Reply, Request, ServerFrame};
        let request_id = leasehold::RequestId::random().0;
        let reply = self
            .call(Request::Hold {
                lock: LEASEHOLD_LOCK.into(),
                key: key.into(),
                request_id,
                ttl_ms: LOCK_TTL_SECS as u64 * 1000,
                max_hold_ms: None,
                queue: true,
                group: None,
            })
            .await?;
        match reply {
            Reply::Granted(g) => Ok(g.lease_id),
            Reply::Queued { .. } => loop {
                match self.recv().await? {
                    ServerFrame::Granted(g) if g.request_id == request_id => return Ok(g.lease_id),
                    ServerFrame::Granted(_) => {}
                    other => bail!("unexpected {other:?} while waiting in line"),
                }
            },
            other => bail!("hold answered {other:?}"),
        }
    }

    async fn release(&mut self, lease_id: u128) -> Result<()> {
        use leasehold::remote::protocol::{Reply, Request};
        match self.call(Request::Release { lease_id }).await? {
            Reply::Released => Ok(()),
            other => bail!("release answered {other:?}"),
        }
    }
}

/// Opens `n` minimal wire clients, a connection each (`reader_task`: each
/// with a task of its own reading its frames).
pub async fn wire_clients(port: u16, n: usize, reader_task: bool) -> Result<Vec<WireClient>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(WireClient::connect(port, reader_task).await?);
    }
    Ok(out)
}
