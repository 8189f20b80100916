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
        let dir = data_dir();
        let server = server::ServerProcess::start(dir.path(), &[]);
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

/// A fresh temporary directory.
pub fn data_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp dir")
}
