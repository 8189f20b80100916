//! The server store, reached over a connection: the wire protocol and the
//! driver that speaks it.

pub mod protocol;
