//! The server store, reached over a connection: the wire protocol and the
//! driver that speaks it.

mod client;
mod connection;
mod options;
mod outbox;
pub mod protocol;

pub use crate::connect::ConnectOptions;
pub use client::RemoteDriver;
#[cfg(feature = "postgres")]
pub(crate) use connection::client_config;
pub use connection::codec;
#[cfg(feature = "etcd")]
pub(crate) use connection::tls_connector;
pub use options::{Target, DEFAULT_PORT};
