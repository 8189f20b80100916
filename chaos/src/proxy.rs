//! A TCP proxy between a client and the server store that a test or the
//! chaos harness controls: it can cut every connection, delay traffic,
//! refuse new connections, black-hole the link (deliver nothing either way
//! while the connections stay open), and drop the next server frame that
//! matches a choice, then cut. The server's tests use it too.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasehold::remote::protocol::{self, ServerFrame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

type Matcher = Box<dyn Fn(&ServerFrame) -> bool + Send>;

#[derive(Default)]
struct Faults {
    delay: Duration,
    refuse: bool,
    blackhole: bool,
    drop_next: Option<Matcher>,
    dropped: usize,
}

/// A proxy listening on a loopback port, forwarding to the server.
pub struct Proxy {
    addr: SocketAddr,
    faults: Arc<Mutex<Faults>>,
    cuts: watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts a proxy to the server store at `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        Proxy::start_with(upstream, true).await
    }

    /// Starts a proxy to `upstream` that does not read the server's frames
    /// (an etcd member's gRPC): every fault but [`Proxy::drop_next`].
    pub async fn start_raw(upstream: SocketAddr) -> Proxy {
        Proxy::start_with(upstream, false).await
    }

    async fn start_with(upstream: SocketAddr, frames: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().unwrap();
        let faults = Arc::new(Mutex::new(Faults::default()));
        let (cuts, _) = watch::channel(0u64);
        let (f, c) = (faults.clone(), cuts.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if f.lock().unwrap().refuse {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                tokio::spawn(pipe(client, server, f.clone(), c.subscribe(), frames));
            }
        });
        Proxy {
            addr,
            faults,
            cuts,
            task,
        }
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("leasehold://{}", self.addr)
    }

    /// The loopback address clients connect to (for a URL of another scheme).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every connection open now.
    pub fn cut(&self) {
        self.cuts.send_modify(|n| *n += 1);
    }

    /// Delays every chunk forwarded from now on by `d`, both ways.
    pub fn delay(&self, d: Duration) {
        self.faults.lock().unwrap().delay = d;
    }

    /// Refuses (accepts and closes at once) new connections while `on`.
    pub fn refuse(&self, on: bool) {
        self.faults.lock().unwrap().refuse = on;
    }

    /// Black-holes the link while `on`: every byte either way is read and
    /// thrown away, and the connections stay open, as on a link that
    /// silently loses every packet. Turning it off cuts every connection,
    /// whose streams lost bytes in the middle of frames.
    pub fn blackhole(&self, on: bool) {
        self.faults.lock().unwrap().blackhole = on;
        if !on {
            self.cut();
        }
    }

    /// Drops the next frame from the server that `matches`, then cuts the
    /// connection it was on: the answer is lost with its connection.
    pub fn drop_next(&self, matches: impl Fn(&ServerFrame) -> bool + Send + 'static) {
        self.faults.lock().unwrap().drop_next = Some(Box::new(matches));
    }

    /// How many frames were dropped so far.
    pub fn dropped(&self) -> usize {
        self.faults.lock().unwrap().dropped
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}

/// Copies what `from` reads to `to`, delayed and black-holed as `faults` say.
async fn copy(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, faults: Arc<Mutex<Faults>>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let (delay, blackhole) = {
            let f = faults.lock().unwrap();
            (f.delay, f.blackhole)
        };
        if blackhole {
            continue;
        }
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

async fn pipe(
    client: TcpStream,
    server: TcpStream,
    faults: Arc<Mutex<Faults>>,
    mut cuts: watch::Receiver<u64>,
    frames: bool,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let upstream = copy(cr, sw, faults.clone());
    if !frames {
        tokio::select! {
            _ = upstream => {}
            _ = copy(sr, cw, faults) => {}
            _ = cuts.changed() => {}
        }
        return;
    }
    let (mut sr, mut cw) = (sr, cw);
    let downstream = async move {
        loop {
            let mut len = [0u8; 4];
            if sr.read_exact(&mut len).await.is_err() {
                return;
            }
            let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
            if sr.read_exact(&mut payload).await.is_err() {
                return;
            }
            let (delay, drop_it, blackhole) = {
                let mut f = faults.lock().unwrap();
                let matched = match (&f.drop_next, protocol::decode::<ServerFrame>(&payload)) {
                    (Some(m), Ok(frame)) => m(&frame),
                    _ => false,
                };
                if matched {
                    f.drop_next = None;
                    f.dropped += 1;
                }
                (f.delay, matched, f.blackhole)
            };
            if drop_it {
                return;
            }
            if blackhole {
                continue;
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if cw.write_all(&len).await.is_err() || cw.write_all(&payload).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        _ = upstream => {}
        _ = downstream => {}
        _ = cuts.changed() => {}
    }
}
