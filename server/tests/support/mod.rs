//! What the client-side tests of the server store share: the real server
//! process and the fault-injecting proxy (both the chaos harness's,
//! `leasehold_chaos`), and a real etcd member. Each test file uses a part of it.
#![allow(dead_code, unused_imports)]

pub mod etcd;
pub mod server;

pub use leasehold_chaos::proxy;

use std::time::Duration;

use leasehold::remote::ConnectOptions;
use leasehold::Store;

/// A second.
pub const S: fn(u64) -> Duration = Duration::from_secs;

/// A client store connected to `url`.
pub async fn connect(url: &str) -> Store {
    Store::connect(url, ConnectOptions::default())
        .await
        .expect("connect to the server store")
}

/// A server process with a fresh data dir and a fault proxy in front of it.
pub struct Rig {
    /// The proxy clients connect through.
    pub proxy: proxy::Proxy,
    /// The server.
    pub server: server::ServerProcess,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// Starts a server and a proxy to it.
    pub async fn start() -> Rig {
        Rig::start_with(&[]).await
    }

    /// Starts a server with `extra` arguments and a proxy to it.
    pub async fn start_with(extra: &[&str]) -> Rig {
        let dir = data_dir();
        let server = server::ServerProcess::start(dir.path(), extra);
        let proxy = proxy::Proxy::start(server.addr).await;
        Rig {
            proxy,
            server,
            _dir: dir,
        }
    }

    /// A client connected through the proxy.
    pub async fn via_proxy(&self) -> Store {
        connect(&self.proxy.url()).await
    }

    /// A client connected to the server directly.
    pub async fn direct(&self) -> Store {
        connect(&self.server.url()).await
    }
}

/// The requests waiting in lines now, as the server's metrics say (it must
/// have been started with `--metrics-listen`).
pub async fn waiters(server: &server::ServerProcess) -> u64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server
        .metrics
        .expect("a server started with --metrics-listen");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("leasehold_waiters "))
        .unwrap_or_else(|| panic!("leasehold_waiters missing from\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

/// Waits until `n` requests wait in lines on `server` (see [`waiters`]), or
/// panics after 30 s: tests that need waiters in a given order wait for
/// each one this way before the next asks, where a pause could be too
/// short on a loaded machine.
pub async fn wait_for_waiters(server: &server::ServerProcess, n: u64) {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = waiters(server).await;
        if now >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "{now} waiters after 30 s, not {n}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A fresh temporary directory.
pub fn data_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp dir")
}
