//! What the client-side tests of the server store share: the real server
//! process and a fault-injecting proxy. Each test file uses a part of it.
#![allow(dead_code)]

pub mod proxy;
pub mod server;

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

/// A fresh temporary directory.
pub fn data_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp dir")
}
