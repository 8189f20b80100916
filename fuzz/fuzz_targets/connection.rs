//! The server's request handling on a connection: arbitrary frame
//! sequences fed, over an in-memory duplex stream, to the real connection
//! handler (`leasehold_server::Connections`) in front of a real store (the
//! lease table in renewal mode, as `leasehold serve` runs it), one fresh
//! store per input.
//!
//! The input's first byte chooses the server: bit 0 the input is the raw
//! bytes of one connection (else frames, below); bit 1 the server has a
//! tokens file (`writer write`, `reader read`); bit 2 `--max-frame 1024`
//! (else 64 KiB); bit 3 tiny limits (2 keys per connection, 2 waiters per
//! key); bit 4 the connections are open at the same time (else one after
//! the other). Framed, the rest is records `[u16 LE length][payload]`, each
//! sent as one frame; the length `0xffff` starts the next connection to the
//! same store.
//!
//! Asserts, on what the server writes to each connection: nothing panics;
//! it is whole frames that decode as `ServerFrame`s; the first is `Welcome`
//! (the version, the token's role, the frame limit) exactly when the first
//! frame from the client is a hello the server must accept, else the
//! server says at most one `Goodbye` (`Protocol` or `Unauthenticated`);
//! nothing follows a goodbye; every request read after the hello, up to the
//! first frame that is not one, gets one reply, in order, with its id; every
//! error is an ERR-01 code other than `Internal`, and every loss reason one
//! the clients know.
#![no_main]

use std::sync::Arc;

use bytes::BytesMut;
use leasehold::remote::protocol::{self, ClientFrame, Role, ServerFrame, WireError, VERSION};
use leasehold::{ErrorKind, LossReason, MemoryDriver, MemoryOptions};
use leasehold_server::{Connections, Limits, Tokens, MAX_HELLO};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::Decoder;

/// The record length that ends a connection and opens the next.
const NEXT_CONNECTION: usize = 0xffff;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    RUNTIME.with(|runtime| runtime.block_on(session(flags, rest)));
});

thread_local! {
    /// One runtime for every input (building one per input would be most
    /// of the work); what an input leaves on it (a grace period's task)
    /// ends when its `Connections` is dropped.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
}

/// The server a session talks to.
struct Setup {
    tokens: bool,
    limits: Limits,
}

async fn session(flags: u8, rest: &[u8]) {
    let mut limits = Limits::default();
    if flags & 4 != 0 {
        limits.max_frame = 1024;
    }
    if flags & 8 != 0 {
        limits.max_keys_per_connection = 2;
        limits.max_waiters_per_key = 2;
    }
    let setup = Setup {
        tokens: flags & 2 != 0,
        limits,
    };
    let options = MemoryOptions::default()
        .renewal(true)
        .waiters_per_key(setup.limits.max_waiters_per_key);
    let driver = Arc::new(MemoryDriver::new(
        options,
        &tokio::runtime::Handle::current(),
    ));
    let tokens = setup
        .tokens
        .then(|| Tokens::parse("writer write\nreader read\n").expect("tokens"));
    let connections = Connections::new(driver, tokens, setup.limits);
    let wires = if flags & 1 != 0 {
        vec![rest.to_vec()]
    } else {
        framed(rest)
    };
    let outs = if flags & 16 != 0 {
        futures::future::join_all(wires.iter().map(|w| exchange(&connections, w))).await
    } else {
        let mut outs = Vec::new();
        for wire in &wires {
            outs.push(exchange(&connections, wire).await);
        }
        outs
    };
    for (wire, out) in wires.iter().zip(&outs) {
        check(&setup, wire, out);
    }
}

/// The bytes of each connection a framed input describes.
fn framed(mut rest: &[u8]) -> Vec<Vec<u8>> {
    let mut wires = vec![Vec::new()];
    while rest.len() >= 2 {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        rest = &rest[2..];
        if len == NEXT_CONNECTION {
            wires.push(Vec::new());
            continue;
        }
        let (payload, tail) = rest.split_at(len.min(rest.len()));
        rest = tail;
        let wire = wires.last_mut().expect("a connection");
        wire.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        wire.extend_from_slice(payload);
    }
    wires
}

/// Serves one connection that sends `wire` then closes its side, and
/// answers everything the server wrote to it.
async fn exchange(connections: &Connections, wire: &[u8]) -> Vec<u8> {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (mut rd, mut wr) = tokio::io::split(client);
    let send = async {
        // The server may close first (a goodbye): the rest is not read.
        if wr.write_all(wire).await.is_ok() {
            let _ = wr.shutdown().await;
        }
        drop(wr);
    };
    let receive = async {
        let mut out = Vec::new();
        rd.read_to_end(&mut out)
            .await
            .expect("reading the server's frames");
        out
    };
    let ((), (), out) = tokio::join!(connections.serve(server), send, receive);
    out
}

/// The frames `bytes` cut into with a limit of `max`, and whether bytes were left over.
fn frames(bytes: &[u8], max: usize) -> (Vec<BytesMut>, bool) {
    let mut codec = leasehold::remote::codec(max);
    let mut buf = BytesMut::from(bytes);
    let mut frames = Vec::new();
    loop {
        match codec.decode(&mut buf) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => return (frames, !buf.is_empty()),
            Err(_) => return (frames, true),
        }
    }
}

/// The role the first frame admits the connection to, if it is a hello the
/// server accepts (of at most `MAX_HELLO` bytes, whatever `--max-frame`).
fn admitted(setup: &Setup, first: Option<&BytesMut>) -> Option<Role> {
    let first = first?;
    if first.len() > MAX_HELLO {
        return None;
    }
    let Ok(ClientFrame::Hello {
        version,
        token,
        identity,
    }) = protocol::decode(first)
    else {
        return None;
    };
    if version != VERSION || leasehold::Identity::new(&identity).is_err() {
        return None;
    }
    if !setup.tokens {
        return Some(Role::Write);
    }
    match token.as_deref() {
        Some("writer") => Some(Role::Write),
        Some("reader") => Some(Role::Read),
        _ => None,
    }
}

fn check_error(e: &WireError) {
    let kind = ErrorKind::from_code(&e.code).unwrap_or_else(|| panic!("unknown code {e:?}"));
    assert_ne!(kind, ErrorKind::Internal, "{e:?}");
    assert_eq!(
        kind.code(),
        e.code,
        "not the code as ERR-01 writes it: {e:?}"
    );
    if let Some(reason) = &e.reason {
        assert!(LossReason::parse(reason).is_some(), "{e:?}");
    }
}

fn check(setup: &Setup, wire: &[u8], out: &[u8]) {
    let (sent, _) = frames(wire, setup.limits.max_frame);
    let (got, left) = frames(out, u32::MAX as usize);
    assert!(!left, "the server wrote a partial frame");
    let got: Vec<ServerFrame> = got
        .iter()
        .map(|f| protocol::decode(f).expect("the server's frame decodes"))
        .collect();
    for frame in &got {
        match frame {
            ServerFrame::Goodbye(e) | ServerFrame::Failed { error: e, .. } => check_error(e),
            ServerFrame::Reply { body: Err(e), .. } => check_error(e),
            ServerFrame::Reply {
                body: Ok(protocol::Reply::Renewed(answers)),
                ..
            } => answers
                .iter()
                .filter_map(|a| a.as_ref().err())
                .for_each(check_error),
            ServerFrame::Lost { reason, .. } => {
                assert!(LossReason::parse(reason).is_some(), "{frame:?}")
            }
            _ => {}
        }
    }
    if let Some(i) = got
        .iter()
        .position(|f| matches!(f, ServerFrame::Goodbye(_)))
    {
        assert_eq!(i, got.len() - 1, "frames after a goodbye: {got:?}");
    }
    let Some(role) = admitted(setup, sent.first()) else {
        match got.as_slice() {
            [] => {}
            [ServerFrame::Goodbye(e)] => assert!(
                e.code == ErrorKind::Protocol.code() || e.code == ErrorKind::Unauthenticated.code(),
                "{e:?}"
            ),
            other => panic!("a connection without a good hello got {other:?}"),
        }
        return;
    };
    let Some(ServerFrame::Welcome {
        version,
        role: welcomed,
        max_frame,
        ..
    }) = got.first()
    else {
        panic!("a good hello got {got:?}");
    };
    assert_eq!(
        (*version, *welcomed, *max_frame as usize),
        (VERSION, role, setup.limits.max_frame)
    );
    let asked: Vec<u64> = sent[1..]
        .iter()
        .map(|f| protocol::decode::<ClientFrame>(f))
        .map_while(|f| match f {
            Ok(ClientFrame::Request { id, .. }) => Some(id),
            _ => None,
        })
        .collect();
    let answered: Vec<u64> = got
        .iter()
        .filter_map(|f| match f {
            ServerFrame::Reply { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(answered, asked, "replies not one per request, in order");
}
