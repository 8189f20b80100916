//! ERR-02 over real sockets: malformed, oversized and untimely frames close
//! only the connection that sent them, with `Protocol`; every limit is
//! bounded, configurable, and answered `Unavailable`. ERR-05: connections
//! that have not said hello have places and a deadline of their own, and
//! one token has a share of the connections (floods of them: `flood.rs`).

mod common;

use common::{code, data_dir, hold, refusals, scrape, Client, ServerProcess};
use leasehold::remote::protocol::{self, ClientFrame, Reply, Request, ServerFrame};

/// A connection that keeps working while another misbehaves.
async fn still_works(bystander: &mut Client<tokio::net::TcpStream>, key: &str) {
    assert_eq!(bystander.request(Request::Ping).await, Ok(Reply::Pong));
    let g = bystander.granted("jobs", key, rand_id()).await;
    bystander.release(g.lease_id).await;
}

fn rand_id() -> u128 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1000);
    u128::from(NEXT.fetch_add(1, Ordering::Relaxed))
}

// ERR-02: garbage bytes (an HTTP request, say) get Goodbye(Protocol) and a
// close; another connection keeps working, and so does the server.
#[tokio::test]
async fn err_02_garbage_bytes_get_a_protocol_goodbye_and_others_keep_working() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let mut bystander = Client::welcomed(server.addr, None).await;
    let held = bystander.granted("jobs", "held", 1).await;

    // Before hello: an HTTP request's first bytes read as a huge length.
    let mut http = Client::connect(server.addr).await;
    http.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(http.goodbye().await.code, "Protocol");

    // After hello: a frame of random bytes that is no frame.
    let mut after = Client::welcomed(server.addr, None).await;
    after.send_payload(&[0xff; 9]).await;
    assert_eq!(after.goodbye().await.code, "Protocol");

    // A request frame with trailing bytes.
    let mut trailing = Client::welcomed(server.addr, None).await;
    let mut payload = protocol::encode(&ClientFrame::Request {
        id: 1,
        body: Request::Ping,
    })
    .unwrap();
    payload.push(0);
    trailing.send_payload(&payload).await;
    assert_eq!(trailing.goodbye().await.code, "Protocol");

    still_works(&mut bystander, "after-garbage").await;
    // The bystander's lease is untouched.
    assert!(matches!(
        bystander.request(Request::Renew { leases: vec![(held.lease_id, 5_000)] }).await,
        Ok(Reply::Renewed(r)) if r[0].is_ok()
    ));
    let metrics = server.metrics.unwrap();
    let text = scrape(metrics).await;
    assert!(text.contains("protocol_errors_total 3"), "{text}");
}

// ERR-02: a frame longer than --max-frame gets Goodbye(Protocol) without the
// server reading (or allocating) its body.
#[tokio::test]
async fn err_02_an_oversized_frame_gets_a_protocol_goodbye() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--max-frame", "1024"]);
    let mut bystander = Client::welcomed(server.addr, None).await;
    let mut big = Client::welcomed(server.addr, None).await;
    let long_key = "k".repeat(2000);
    big.send(&ClientFrame::Request {
        id: 1,
        body: hold("jobs", &long_key, 1, 10_000, false),
    })
    .await;
    let bye = big.goodbye().await;
    assert_eq!(bye.code, "Protocol");
    assert!(bye.message.contains("frame"), "{}", bye.message);

    // Only a length: 4 GiB announced, nothing sent.
    let mut liar = Client::connect(server.addr).await;
    liar.send_raw(&u32::MAX.to_be_bytes()).await;
    assert_eq!(liar.goodbye().await.code, "Protocol");
    still_works(&mut bystander, "after-oversized").await;
}

// ERR-02: a request before the hello, a second hello, a hello of another
// protocol version (a newer or an older one) and a hello with a bad client
// name each get Goodbye(Protocol).
#[tokio::test]
async fn err_02_untimely_frames_get_a_protocol_goodbye() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut bystander = Client::welcomed(server.addr, None).await;

    let mut early = Client::connect(server.addr).await;
    early
        .send(&ClientFrame::Request {
            id: 1,
            body: hold("jobs", "k", 1, 10_000, false),
        })
        .await;
    assert_eq!(early.goodbye().await.code, "Protocol");

    let mut twice = Client::welcomed(server.addr, None).await;
    assert_eq!(
        twice.hello(None).await,
        ServerFrame::Goodbye(leasehold::remote::protocol::WireError {
            code: "Protocol".into(),
            message: "Hello may only be the first frame".into(),
            reason: None,
        })
    );

    let mut future = Client::connect(server.addr).await;
    future
        .send(&ClientFrame::Hello {
            version: protocol::VERSION + 1,
            token: None,
            identity: "test".into(),
        })
        .await;
    assert_eq!(future.goodbye().await.code, "Protocol");

    let mut empty = Client::connect(server.addr).await;
    empty.send_payload(&[]).await;
    assert_eq!(empty.goodbye().await.code, "Protocol");

    // A version-3 hello (no name) does not decode as this version's, but
    // its goodbye still names the version.
    let mut older = Client::connect(server.addr).await;
    older.send_payload(&[0, 3, 0]).await;
    let bye = older.goodbye().await;
    assert_eq!(bye.code, "Protocol");
    assert!(
        bye.message
            .contains("protocol version 3 is not spoken here"),
        "{bye:?}"
    );

    let mut misnamed = Client::connect(server.addr).await;
    misnamed
        .send(&ClientFrame::Hello {
            version: protocol::VERSION,
            token: None,
            identity: "two\nlines".into(),
        })
        .await;
    let bye = misnamed.goodbye().await;
    assert_eq!(
        (bye.code.as_str(), bye.message.as_str()),
        ("Protocol", "the identity holds a control character")
    );

    // Nothing the early request asked for was granted.
    still_works(&mut bystander, "k").await;
}

// ERR-02: connections past --max-connections get Goodbye(Unavailable); a
// place frees when a connection closes.
#[tokio::test]
async fn err_02_connections_past_the_limit_are_refused_unavailable() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--max-connections", "2"]);
    let mut a = Client::welcomed(server.addr, None).await;
    let b = Client::welcomed(server.addr, None).await;
    let mut extra = Client::connect(server.addr).await;
    let bye = match extra.hello(None).await {
        ServerFrame::Goodbye(e) => e,
        other => panic!("expected a goodbye, got {other:?}"),
    };
    assert_eq!(bye.code, "Unavailable");
    assert_eq!(a.request(Request::Ping).await, Ok(Reply::Pong));
    drop(b);
    // The freed place is taken by the next connection (once the server saw the close).
    let mut tries = 0;
    loop {
        let mut c = Client::connect(server.addr).await;
        match c.hello(None).await {
            ServerFrame::Welcome { .. } => break,
            ServerFrame::Goodbye(e) if e.code == "Unavailable" && tries < 500 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            other => panic!("expected a welcome, got {other:?}"),
        }
    }
}

// ERR-02: one connection may own at most --max-keys-per-connection holds and
// waits; past that, Unavailable, and nothing is granted or queued. A retry of
// a request it owns is still answered.
#[tokio::test]
async fn err_02_keys_per_connection_are_bounded() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--max-keys-per-connection", "2"]);
    let mut other = Client::welcomed(server.addr, None).await;
    let busy = other.granted("jobs", "busy", 1).await;
    let mut a = Client::welcomed(server.addr, None).await;
    let g = a.granted("jobs", "a", 2).await;
    assert!(matches!(
        a.hold("jobs", "busy", 3, true).await,
        Ok(Reply::Queued { .. })
    ));
    assert_eq!(code(&a.hold("jobs", "c", 4, false).await), "Unavailable");
    assert_eq!(a.granted("jobs", "a", 2).await.lease_id, g.lease_id);
    assert!(matches!(
        a.hold("jobs", "busy", 3, true).await,
        Ok(Reply::Queued { .. })
    ));
    // Key "c" was not granted to the refused request.
    other.granted("jobs", "c", 5).await;
    // A release makes room.
    a.release(g.lease_id).await;
    a.granted("jobs", "d", 6).await;
    other.release(busy.lease_id).await;
    assert!(matches!(a.push().await, ServerFrame::Granted(g) if g.request_id == 3));
}

// ERR-02: one key's line holds at most --max-waiters-per-key requests.
#[tokio::test]
async fn err_02_waiters_per_key_are_bounded() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--max-waiters-per-key", "2"]);
    let mut a = Client::welcomed(server.addr, None).await;
    a.granted("jobs", "k", 1).await;
    assert!(matches!(
        a.hold("jobs", "k", 2, true).await,
        Ok(Reply::Queued { .. })
    ));
    assert!(matches!(
        a.hold("jobs", "k", 3, true).await,
        Ok(Reply::Queued { .. })
    ));
    assert_eq!(code(&a.hold("jobs", "k", 4, true).await), "Unavailable");
    // Other keys are not affected.
    a.granted("jobs", "other", 5).await;
}

// ERR-02: a Renew naming more leases than its answer could carry in one frame
// is refused before anything is renewed.
#[tokio::test]
async fn err_02_a_renew_of_too_many_leases_is_refused() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--max-frame", "4096"]);
    let mut a = Client::welcomed(server.addr, None).await;
    let most = (4096 - 32) / leasehold_server::RENEW_ENTRY_BYTES;
    let ok = a
        .request(Request::Renew {
            leases: (0..most as u128).map(|i| (i, 5_000)).collect(),
        })
        .await;
    assert!(matches!(ok, Ok(Reply::Renewed(r)) if r.len() == most));
    let too_many = a
        .request(Request::Renew {
            leases: (0..most as u128 + 1).map(|i| (i, 5_000)).collect(),
        })
        .await;
    assert_eq!(code(&too_many), "InvalidArgument");
}

// ERR-02: a List answer never exceeds one frame: it stops at what fits.
#[tokio::test]
async fn err_02_a_list_answer_fits_one_frame() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--max-frame", "1024"]);
    let mut a = Client::welcomed(server.addr, None).await;
    let key = "k".repeat(200);
    for i in 0..10u128 {
        a.granted("jobs", &format!("{key}{i}"), i + 1).await;
    }
    let id = 99;
    a.send(&ClientFrame::Request {
        id,
        body: Request::List { lock: None },
    })
    .await;
    let frame = tokio::time::timeout(common::WAIT, futures::StreamExt::next(&mut a.frames))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(frame.len() <= 1024, "{} bytes", frame.len());
    match protocol::decode::<ServerFrame>(&frame).unwrap() {
        ServerFrame::Reply {
            body: Ok(Reply::Holders(h)),
            ..
        } => assert!(!h.is_empty() && h.len() < 10, "{} holders", h.len()),
        other => panic!("expected Holders, got {other:?}"),
    }
}

// ERR-05: when every --max-handshakes place is taken, a new connection takes
// the place of the oldest that has not said hello, which gets
// Goodbye(Unavailable); the others keep theirs and may still say hello.
#[tokio::test]
async fn err_05_a_new_connection_evicts_the_oldest_that_has_not_said_hello() {
    let dir = data_dir();
    let server = ServerProcess::start(
        dir.path(),
        &["--max-handshakes", "2", "--metrics-listen", "127.0.0.1:0"],
    );
    let mut served = Client::welcomed(server.addr, None).await;
    let mut oldest = Client::connect(server.addr).await;
    let mut second = Client::connect(server.addr).await;
    // Accepted in order: `oldest` was the oldest when `newest` came.
    assert_eq!(served.request(Request::Ping).await, Ok(Reply::Pong));
    let mut newest = Client::connect(server.addr).await;
    let bye = oldest.goodbye().await;
    assert_eq!(bye.code, "Unavailable");
    assert!(bye.message.contains("--max-handshakes"), "{}", bye.message);
    for c in [&mut second, &mut newest] {
        assert!(matches!(c.hello(None).await, ServerFrame::Welcome { .. }));
    }
    // A served connection holds no handshake place.
    still_works(&mut served, "after-eviction").await;
    let text = scrape(server.metrics.unwrap()).await;
    assert_eq!(refusals(&text, "evicted"), 1, "{text}");
    assert!(text.contains("\nleasehold_handshakes 0"), "{text}");
    assert!(text.contains("\nleasehold_connections 3"), "{text}");
}

// ERR-05: --hello-timeout bounds the whole hello from the accept, not each
// byte: a connection that sends nothing, and one that sends its hello one
// byte at a time, too slowly, both get Goodbye(Protocol); with TLS a
// connection that never finishes its handshake is closed within it too.
#[tokio::test]
async fn err_05_the_hello_timeout_bounds_the_whole_hello() {
    let dir = data_dir();
    let server = common::ServeCommand::new(dir.path(), &["--metrics-listen", "127.0.0.1:0"])
        .env("LEASEHOLD_HELLO_TIMEOUT", "400ms")
        .start()
        .unwrap();
    let mut silent = Client::connect(server.addr).await;
    let mut slow = Client::connect(server.addr).await;
    let hello = protocol::encode(&ClientFrame::Hello {
        version: protocol::VERSION,
        token: Some("t".repeat(40)),
        identity: "test".into(),
    })
    .unwrap();
    let mut framed = (hello.len() as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(&hello);
    let started = std::time::Instant::now();
    // One byte every 100 ms: each comes well within 400 ms of the last.
    let mut sent = 0;
    for byte in &framed {
        let io = slow.frames.get_mut();
        if tokio::io::AsyncWriteExt::write_all(io, &[*byte])
            .await
            .is_err()
        {
            break;
        }
        sent += 1;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if started.elapsed() > std::time::Duration::from_secs(2) {
            break;
        }
    }
    assert!(sent < framed.len(), "the whole hello went out");
    for c in [&mut silent, &mut slow] {
        let bye = c.goodbye().await;
        assert_eq!(bye.code, "Protocol");
        assert!(bye.message.contains("--hello-timeout"), "{}", bye.message);
    }
    let text = scrape(server.metrics.unwrap()).await;
    assert_eq!(refusals(&text, "hello_timeout"), 2, "{text}");
}

// ERR-05: a hello with a bad token gets Goodbye(Unauthenticated) and is
// closed at once, even though its client keeps its end open: it takes no
// place, neither of --max-connections nor of --max-handshakes.
#[tokio::test]
async fn err_05_a_bad_token_is_closed_at_once_and_holds_no_place() {
    let dir = data_dir();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "good write\n").unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--max-connections",
            "1",
            "--max-handshakes",
            "2",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let mut refused = Vec::new();
    for token in [None, Some("guess"), Some("guess2"), Some("")] {
        let mut c = Client::connect(server.addr).await;
        match c.hello(token).await {
            ServerFrame::Goodbye(e) => assert_eq!(e.code, "Unauthenticated"),
            other => panic!("expected a goodbye, got {other:?}"),
        }
        refused.push(c);
    }
    // At once: the one place is free, and nothing was evicted for a
    // refusal that lingers.
    let mut good = Client::welcomed(server.addr, Some("good")).await;
    still_works(&mut good, "after-bad-tokens").await;
    for c in &mut refused {
        // Closed by the server while the client still holds its end.
        assert!(c.recv().await.is_none());
    }
    let text = scrape(server.metrics.unwrap()).await;
    assert_eq!(refusals(&text, "bad_token"), 4, "{text}");
    assert_eq!(refusals(&text, "evicted"), 0, "{text}");
    drop(refused);
}

// ERR-05: with tokens, one token may have at most --max-connections-per-token
// connections (default: half of --max-connections): the others get
// Goodbye(Unavailable) after their hello, and another token still gets in.
#[tokio::test]
async fn err_05_one_token_cannot_take_every_connection() {
    let dir = data_dir();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "tenant-a write\ntenant-b read\ntenant-c write\n").unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--max-connections",
            "8",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let mut a = Vec::new();
    let mut over = 0;
    for _ in 0..8 {
        let mut c = Client::connect(server.addr).await;
        match c.hello(Some("tenant-a")).await {
            ServerFrame::Welcome { .. } => a.push(c),
            ServerFrame::Goodbye(e) => {
                assert_eq!(e.code, "Unavailable");
                assert!(
                    e.message.contains("--max-connections-per-token"),
                    "{}",
                    e.message
                );
                over += 1;
            }
            other => panic!("expected a welcome or a goodbye, got {other:?}"),
        }
    }
    assert_eq!((a.len(), over), (4, 4));
    let mut b = Vec::new();
    for _ in 0..4 {
        b.push(Client::welcomed(server.addr, Some("tenant-b")).await);
    }
    // The server is full now: the next is refused --max-connections.
    let mut extra = Client::connect(server.addr).await;
    match extra.hello(Some("tenant-c")).await {
        ServerFrame::Goodbye(e) => {
            assert!(e.message.contains("--max-connections)"), "{}", e.message)
        }
        other => panic!("expected a goodbye, got {other:?}"),
    }
    // A place given back is tenant A's again.
    drop(a.pop());
    let mut again = 0;
    loop {
        let mut c = Client::connect(server.addr).await;
        match c.hello(Some("tenant-a")).await {
            ServerFrame::Welcome { .. } => break,
            ServerFrame::Goodbye(_) if again < 500 => {
                again += 1;
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            other => panic!("expected a welcome, got {other:?}"),
        }
    }
    let text = scrape(server.metrics.unwrap()).await;
    assert_eq!(refusals(&text, "per_token"), 4 + again, "{text}");
    assert_eq!(refusals(&text, "max_connections"), 1, "{text}");
}

fn hold_many(keys: &[(&str, u128)], queue: bool) -> Request {
    Request::HoldMany {
        lock: "jobs".into(),
        keys: keys.iter().map(|(k, id)| ((*k).to_owned(), *id)).collect(),
        ttl_ms: 10_000,
        max_hold_ms: None,
        queue,
        group: None,
    }
}

// ERR-02, LOCK-22, LOCK-03: a HoldMany is checked whole (a bad key or more
// keys than a frame may name fails it, granting nothing); past
// --max-keys-per-connection its keys are refused one by one (Unavailable)
// while the others are answered; a retried request id gets the same lease.
#[tokio::test]
async fn err_02_hold_many_is_checked_and_bounded() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--max-keys-per-connection", "3"]);
    let mut other = Client::welcomed(server.addr, None).await;
    let busy = other.granted("jobs", "busy", 1).await;
    let mut a = Client::welcomed(server.addr, None).await;
    let bad = a.request(hold_many(&[("a", 10), ("", 11)], false)).await;
    assert_eq!(code(&bad), "EmptyName");
    let too_many: Vec<(String, u128)> = (0..600).map(|i| (format!("k{i}"), 100 + i)).collect();
    let refs: Vec<(&str, u128)> = too_many.iter().map(|(k, i)| (k.as_str(), *i)).collect();
    assert_eq!(
        code(&a.request(hold_many(&refs, false)).await),
        "InvalidArgument"
    );
    let answers = match a
        .request(hold_many(
            &[("a", 10), ("busy", 12), ("b", 13), ("c", 14)],
            true,
        ))
        .await
    {
        Ok(Reply::HeldMany(answers)) => answers,
        other => panic!("expected HeldMany, got {other:?}"),
    };
    let Ok(Reply::Granted(first)) = &answers[0] else {
        panic!("{answers:?}")
    };
    assert!(
        matches!(answers[1], Ok(Reply::Queued { ahead: 0 })),
        "{answers:?}"
    );
    assert!(matches!(answers[2], Ok(Reply::Granted(_))), "{answers:?}");
    assert_eq!(code(&answers[3].clone()), "Unavailable");
    // Key "c" was not granted to the refused request.
    other.granted("jobs", "c", 15).await;
    let again = match a.request(hold_many(&[("a", 10)], true)).await {
        Ok(Reply::HeldMany(answers)) => answers,
        other => panic!("expected HeldMany, got {other:?}"),
    };
    assert!(
        matches!(&again[0], Ok(Reply::Granted(g)) if g.lease_id == first.lease_id),
        "{again:?}"
    );
    other.release(busy.lease_id).await;
    assert!(matches!(a.push().await, ServerFrame::Granted(g) if g.request_id == 12));
}
