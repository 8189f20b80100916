//! `leasehold serve` over real sockets: hello, holds, lines, pushes,
//! restarts, shutdown, configuration and metrics.

mod common;

use std::time::Duration;

use common::{code, data_dir, hold, Client, ServeCommand, ServerProcess, WAIT};
use leasehold::fence::epoch_of;
use leasehold::remote::protocol::{
    Reply, Request, Role, ServerFrame, WireGiveUp, DEFAULT_MAX_FRAME, VERSION,
};
use nix::sys::signal::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn hello_is_welcomed_with_version_epoch_role_and_max_frame() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut c = common::Client::connect(server.addr).await;
    match c.hello(None).await {
        ServerFrame::Welcome {
            version,
            epoch,
            role,
            max_frame,
        } => {
            assert_eq!(version, VERSION);
            assert!(epoch >= 1_700_000_000, "epoch {epoch}");
            assert_eq!(role, Role::Write);
            assert_eq!(max_frame as usize, DEFAULT_MAX_FRAME);
        }
        other => panic!("expected a welcome, got {other:?}"),
    }
    assert_eq!(c.request(Request::Ping).await, Ok(Reply::Pong));
}

// LOCK-01, LOCK-11: a held key queues the next holds first come, first
// served; a release pushes the grant to the next in line at once, with a
// larger fence; a hold that does not queue gets NotHeld.
#[tokio::test]
async fn lock_01_lock_11_queued_holds_are_pushed_in_order_with_larger_fences() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let mut b = Client::welcomed(server.addr, None).await;
    let mut c = Client::welcomed(server.addr, None).await;
    let first = a.granted("jobs", "k", 1).await;
    assert_eq!(
        b.hold("jobs", "k", 2, true).await,
        Ok(Reply::Queued { ahead: 0 })
    );
    assert!(matches!(
        c.hold("jobs", "k", 3, true).await,
        Ok(Reply::Queued { .. })
    ));
    assert_eq!(c.hold("jobs", "k", 4, false).await, Ok(Reply::NotHeld));

    a.release(first.lease_id).await;
    let second = match b.push().await {
        ServerFrame::Granted(g) => g,
        other => panic!("expected a pushed grant, got {other:?}"),
    };
    assert_eq!(second.request_id, 2);
    assert!(second.fence > first.fence);
    c.assert_no_push().await;

    b.release(second.lease_id).await;
    let third = match c.push().await {
        ServerFrame::Granted(g) => g,
        other => panic!("expected a pushed grant, got {other:?}"),
    };
    assert_eq!(third.request_id, 3);
    assert!(third.fence > second.fence);
    a.assert_no_push().await;
}

// LOCK-03: a hold repeated with the same request id, on the same or another
// connection, answers the same lease.
#[tokio::test]
async fn lock_03_a_retried_hold_answers_the_same_lease() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let g = a.granted("jobs", "k", 7).await;
    assert_eq!(a.granted("jobs", "k", 7).await.lease_id, g.lease_id);
    let mut b = Client::welcomed(server.addr, None).await;
    let again = b.granted("jobs", "k", 7).await;
    assert_eq!((again.lease_id, again.fence), (g.lease_id, g.fence));
}

// LOCK-03, LOCK-07: a waiter that reconnects and asks again with the same
// request id keeps its place, and the grant is pushed to its new connection.
#[tokio::test]
async fn lock_03_a_reconnected_waiter_gets_its_grant_on_the_new_connection() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut holder = Client::welcomed(server.addr, None).await;
    let lease = holder.granted("jobs", "k", 1).await;

    // Claimed while the old connection is still open...
    let mut old = Client::welcomed(server.addr, None).await;
    assert!(matches!(
        old.hold("jobs", "k", 2, true).await,
        Ok(Reply::Queued { .. })
    ));
    let mut new = Client::welcomed(server.addr, None).await;
    assert!(matches!(
        new.hold("jobs", "k", 2, true).await,
        Ok(Reply::Queued { .. })
    ));
    // ...and behind it, another waiter whose old connection closed first.
    let mut gone = Client::welcomed(server.addr, None).await;
    assert!(matches!(
        gone.hold("jobs", "k", 3, true).await,
        Ok(Reply::Queued { .. })
    ));
    drop(gone);
    let mut back = Client::welcomed(server.addr, None).await;
    assert!(matches!(
        back.hold("jobs", "k", 3, true).await,
        Ok(Reply::Queued { .. })
    ));

    holder.release(lease.lease_id).await;
    let g2 = match new.push().await {
        ServerFrame::Granted(g) => g,
        other => panic!("expected a grant, got {other:?}"),
    };
    assert_eq!(g2.request_id, 2);
    old.assert_no_push().await;
    new.release(g2.lease_id).await;
    match back.push().await {
        ServerFrame::Granted(g) => assert_eq!(g.request_id, 3),
        other => panic!("expected a grant, got {other:?}"),
    }
}

// LOCK-07: a lease outlives its connection and is renewed and released by
// its id from a new one.
#[tokio::test]
async fn lock_07_a_lease_is_renewed_and_released_from_a_new_connection() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let lease = {
        let mut a = Client::welcomed(server.addr, None).await;
        a.granted("jobs", "k", 1).await
    };
    let mut b = Client::welcomed(server.addr, None).await;
    match b
        .request(Request::Renew {
            leases: vec![(lease.lease_id, 5_000)],
        })
        .await
    {
        Ok(Reply::Renewed(answers)) => {
            assert_eq!(answers.len(), 1);
            assert_eq!(answers[0].as_ref().unwrap().fence, lease.fence);
        }
        other => panic!("expected Renewed, got {other:?}"),
    }
    b.release(lease.lease_id).await;
    b.granted("jobs", "k", 2).await;
}

// LOCK-08: renewing or releasing an unknown lease id fails Lost and changes
// nothing; a fence is not a lease id.
#[tokio::test]
async fn lock_08_unknown_lease_ids_are_lost() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let lease = a.granted("jobs", "k", 1).await;
    let renewed = a
        .request(Request::Renew {
            leases: vec![(u128::from(lease.fence), 5_000), (lease.lease_id, 5_000)],
        })
        .await;
    match renewed {
        Ok(Reply::Renewed(answers)) => {
            let lost = answers[0].as_ref().unwrap_err();
            assert_eq!(
                (lost.code.as_str(), lost.reason.as_deref()),
                ("Lost", Some("unknown"))
            );
            assert!(answers[1].is_ok());
        }
        other => panic!("expected Renewed, got {other:?}"),
    }
    let released = a
        .request(Request::Release {
            lease_id: u128::from(lease.fence),
        })
        .await;
    assert_eq!(code(&released), "Lost");
    assert_eq!(a.hold("jobs", "k", 2, false).await, Ok(Reply::NotHeld));
}

// LOCK-13: ttl and maxHold outside their ranges fail InvalidTtl; an empty key
// fails EmptyName; the empty lock name (manual leases) is allowed.
#[tokio::test]
async fn lock_13_bad_ttls_and_names_are_refused() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    assert_eq!(
        code(&a.request(hold("l", "k", 1, 999, false)).await),
        "InvalidTtl"
    );
    assert_eq!(
        code(&a.request(hold("l", "k", 1, 3_600_001, false)).await),
        "InvalidTtl"
    );
    let short_max_hold = Request::Hold {
        lock: "l".into(),
        key: "k".into(),
        request_id: 1,
        ttl_ms: 10_000,
        max_hold_ms: Some(9_999),
        queue: false,
        group: None,
    };
    assert_eq!(code(&a.request(short_max_hold).await), "InvalidTtl");
    assert_eq!(code(&a.hold("l", "", 1, false).await), "EmptyName");
    let long = "x".repeat(1025);
    assert_eq!(code(&a.hold("l", &long, 1, false).await), "InvalidArgument");
    let bad_renew = a
        .request(Request::Renew {
            leases: vec![(1, 0)],
        })
        .await;
    match bad_renew {
        Ok(Reply::Renewed(answers)) => {
            assert_eq!(answers[0].as_ref().unwrap_err().code, "InvalidTtl")
        }
        other => panic!("expected Renewed, got {other:?}"),
    }
    a.granted("", "manual-lease", 2).await;
}

// LOCK-18: a waiting request that gives up leaves the line: the next release
// pushes nothing to it.
#[tokio::test]
async fn lock_18_give_up_leaves_the_line() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let mut b = Client::welcomed(server.addr, None).await;
    let lease = a.granted("jobs", "k", 1).await;
    assert!(matches!(
        b.hold("jobs", "k", 2, true).await,
        Ok(Reply::Queued { .. })
    ));
    assert_eq!(
        b.request(Request::GiveUp { request_id: 2 }).await,
        Ok(Reply::GaveUp(WireGiveUp::LeftLine))
    );
    assert_eq!(
        b.request(Request::GiveUp { request_id: 2 }).await,
        Ok(Reply::GaveUp(WireGiveUp::Unknown))
    );
    a.release(lease.lease_id).await;
    b.assert_no_push().await;
    b.granted("jobs", "k", 3).await;
}

#[tokio::test]
async fn list_shows_the_holders_without_their_lease_ids() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let g1 = a.granted("jobs", "a", 1).await;
    let g2 = a.granted("jobs", "b", 2).await;
    a.granted("other", "c", 3).await;
    match a
        .request(Request::List {
            lock: Some("jobs".into()),
        })
        .await
    {
        Ok(Reply::Holders(h)) => {
            let keys: Vec<_> = h.iter().map(|h| (h.key.as_str(), h.fence)).collect();
            assert_eq!(keys, [("a", g1.fence), ("b", g2.fence)]);
            assert!(h
                .iter()
                .all(|h| h.expires_in_ms.is_some_and(|ms| ms <= 10_000)));
        }
        other => panic!("expected Holders, got {other:?}"),
    }
    match a.request(Request::List { lock: None }).await {
        Ok(Reply::Holders(h)) => assert_eq!(h.len(), 3),
        other => panic!("expected Holders, got {other:?}"),
    }
}

// LOCK-12: maxHold revokes the lease whatever its renewals, and the loss is
// pushed to its holder (ttl and maxHold are at their 1 s minimum).
#[tokio::test]
async fn lock_12_max_hold_revocation_is_pushed_as_lost() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let granted = a
        .request(Request::Hold {
            lock: "jobs".into(),
            key: "k".into(),
            request_id: 1,
            ttl_ms: 1_000,
            max_hold_ms: Some(1_000),
            queue: false,
            group: None,
        })
        .await;
    let lease = match granted {
        Ok(Reply::Granted(g)) => g,
        other => panic!("expected a grant, got {other:?}"),
    };
    assert!(lease.revoke_in_ms.is_some_and(|ms| ms <= 1_000));
    // Renewed for longer: the lease would run out a second after maxHold.
    assert!(matches!(
        a.request(Request::Renew {
            leases: vec![(lease.lease_id, 2_000)]
        })
        .await,
        Ok(Reply::Renewed(r)) if r[0].is_ok()
    ));
    match a.push().await {
        ServerFrame::Lost { lease_id, reason } => {
            assert_eq!((lease_id, reason.as_str()), (lease.lease_id, "revoked"));
        }
        other => panic!("expected a loss, got {other:?}"),
    }
}

// LOCK-02, LOCK-15, ERR-04: a server that opens again on the same data
// directory takes a larger epoch, holds no lease from before (a renewal
// fails Lost, so no holder believes it still holds), and grants fences
// larger than every fence before the restart.
#[tokio::test]
async fn lock_02_lock_15_a_restart_takes_a_larger_epoch_and_grants_larger_fences() {
    let dir = data_dir();
    let mut first = ServerProcess::start(dir.path(), &[]);
    let (epoch1, lease) = {
        let mut a = common::Client::connect(first.addr).await;
        let epoch = match a.hello(None).await {
            ServerFrame::Welcome { epoch, .. } => epoch,
            other => panic!("expected a welcome, got {other:?}"),
        };
        (epoch, a.granted("jobs", "k", 1).await)
    };
    assert_eq!(epoch_of(lease.fence), epoch1);
    assert!(first.stop().success());
    let on_disk: u32 = std::fs::read_to_string(dir.path().join("epoch"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(on_disk, epoch1);

    let second = ServerProcess::start(dir.path(), &[]);
    let mut b = common::Client::connect(second.addr).await;
    let epoch2 = match b.hello(None).await {
        ServerFrame::Welcome { epoch, .. } => epoch,
        other => panic!("expected a welcome, got {other:?}"),
    };
    assert!(epoch2 > epoch1, "{epoch2} <= {epoch1}");
    match b
        .request(Request::Renew {
            leases: vec![(lease.lease_id, 5_000)],
        })
        .await
    {
        Ok(Reply::Renewed(answers)) => assert_eq!(answers[0].as_ref().unwrap_err().code, "Lost"),
        other => panic!("expected Renewed, got {other:?}"),
    }
    let after = b.granted("jobs", "k", 2).await;
    assert!(after.fence > lease.fence);
    assert_eq!(epoch_of(after.fence), epoch2);
}

// Shutdown: SIGTERM (and SIGINT) say goodbye, `Unavailable`, to every
// connection, and the process exits 0.
#[tokio::test]
async fn sigterm_and_sigint_say_goodbye_and_exit_0() {
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let dir = data_dir();
        let mut server = ServerProcess::start(dir.path(), &[]);
        // Accepted before `a` (the accept loop takes connections in order),
        // but still in its hello phase when the signal comes.
        let mut silent = common::Client::connect(server.addr).await;
        let mut a = Client::welcomed(server.addr, None).await;
        a.granted("jobs", "k", 1).await;
        server.send(signal);
        for c in [&mut a, &mut silent] {
            let bye = c.goodbye().await;
            assert_eq!(
                (bye.code.as_str(), bye.message.as_str()),
                ("Unavailable", "shutting down")
            );
        }
        let status = server.wait();
        assert_eq!(status.code(), Some(0), "{signal:?}");
    }
}

#[tokio::test]
async fn a_second_server_on_the_same_data_dir_is_refused() {
    let dir = data_dir();
    let _first = ServerProcess::start(dir.path(), &[]);
    let out = ServeCommand::new(dir.path(), &[])
        .run_to_exit(WAIT)
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use"));
}

#[tokio::test]
async fn a_bad_command_line_exits_2() {
    let dir = data_dir();
    for args in [
        &["--max-frame", "ten"][..],
        &["--tls-cert", "only-a-cert.pem"],
        &["--max-frame", "1"],
    ] {
        let out = ServeCommand::new(dir.path(), args)
            .run_to_exit(WAIT)
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    let mut no_dir = tokio::process::Command::new(env!("CARGO_BIN_EXE_leasehold"));
    no_dir.arg("serve").env_remove("LEASEHOLD_DATA_DIR");
    let out = no_dir.output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// Settings come from flags over environment over the config file over defaults.
#[tokio::test]
async fn the_config_file_and_the_environment_are_read() {
    let dir = data_dir();
    let config = dir.path().join("leasehold.toml");
    std::fs::write(
        &config,
        "listen = '127.0.0.1:1'\nmax-frame = 2048\nmax-connections = 1\n",
    )
    .unwrap();
    let state = dir.path().join("state");
    let server = ServeCommand::new(&state, &["--config", config.to_str().unwrap()])
        .env("LEASEHOLD_MAX_FRAME", "4096")
        .start()
        .unwrap();
    // --listen 127.0.0.1:0 (a flag) won over the file's port 1.
    assert_ne!(server.addr.port(), 1);
    let mut a = common::Client::connect(server.addr).await;
    match a.hello(None).await {
        ServerFrame::Welcome { max_frame, .. } => assert_eq!(max_frame, 4096),
        other => panic!("expected a welcome, got {other:?}"),
    }
    // max-connections = 1 came from the file: b is refused after its hello.
    let mut b = common::Client::connect(server.addr).await;
    match b.hello(None).await {
        ServerFrame::Goodbye(e) => assert_eq!(e.code, "Unavailable"),
        other => panic!("expected a goodbye, got {other:?}"),
    }
    assert!(state.join("epoch").exists());
}

#[tokio::test]
async fn metrics_are_served_in_the_prometheus_text_format() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let metrics = server.metrics.expect("the metrics address is printed");
    let mut a = Client::welcomed(server.addr, None).await;
    let lease = a.granted("jobs", "k", 1).await;
    assert!(matches!(
        a.request(Request::Renew {
            leases: vec![(lease.lease_id, 5_000)]
        })
        .await,
        Ok(Reply::Renewed(_))
    ));
    let mut b = Client::welcomed(server.addr, None).await;
    assert!(matches!(
        b.hold("jobs", "k", 2, true).await,
        Ok(Reply::Queued { .. })
    ));
    let text = scrape(metrics, "/metrics").await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    for line in [
        "\nleasehold_leases_held 1",
        "\nleasehold_waiters 1",
        "\nleasehold_connections 2",
        "\nleasehold_grants_total 1",
        "\nleasehold_renewals_total 1",
        "\nleasehold_releases_total 0",
        "\nleasehold_protocol_errors_total 0",
        "\nleasehold_request_duration_seconds_count{op=\"hold\"} 2",
        "\nleasehold_request_duration_seconds_bucket{",
    ] {
        assert!(text.contains(line), "{line:?} missing from\n{text}");
    }
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    for line in body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(
            line.starts_with("leasehold_"),
            "a metric without the prefix: {line}"
        );
    }
    assert!(scrape(metrics, "/nope").await.starts_with("HTTP/1.1 404"));
}

async fn scrape(addr: std::net::SocketAddr, path: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut out = String::new();
    tokio::time::timeout(WAIT, tcp.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    out
}

#[tokio::test]
async fn the_server_runs_in_process_too() {
    let dir = data_dir();
    let mut config = leasehold_server::ServerConfig::new(dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    let server = leasehold_server::Server::start(config.clone())
        .await
        .unwrap();
    let mut a = common::Client::connect(server.local_addr()).await;
    match a.hello(None).await {
        ServerFrame::Welcome { epoch, .. } => assert_eq!(epoch, server.epoch()),
        other => panic!("expected a welcome, got {other:?}"),
    }
    a.granted("jobs", "k", 1).await;
    assert_eq!(server.store().held(), 1);
    let epoch = server.epoch();
    server.shutdown().await;
    assert_eq!(a.goodbye().await.code, "Unavailable");
    // The data directory is free again, and the next epoch is larger.
    let again = leasehold_server::Server::start(config).await.unwrap();
    assert!(again.epoch() > epoch);
    tokio::time::timeout(Duration::from_secs(10), again.shutdown())
        .await
        .unwrap();
}

// LOCK-03: a waiter granted while its connection was gone keeps the lease:
// asking again with the same request id from a new connection answers it.
#[tokio::test]
async fn lock_03_a_grant_made_while_the_waiter_was_away_is_kept_for_it() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut holder = Client::welcomed(server.addr, None).await;
    let first = holder.granted("jobs", "k", 1).await;
    {
        let mut waiter = Client::welcomed(server.addr, None).await;
        assert!(matches!(
            waiter.hold("jobs", "k", 2, true).await,
            Ok(Reply::Queued { .. })
        ));
    }
    holder.release(first.lease_id).await;
    let mut back = Client::welcomed(server.addr, None).await;
    let again = match back.hold("jobs", "k", 2, true).await {
        Ok(Reply::Granted(g)) => g,
        other => panic!("expected the kept grant, got {other:?}"),
    };
    assert!(again.fence > first.fence);
    assert_eq!(holder.hold("jobs", "k", 3, false).await, Ok(Reply::NotHeld));
    back.release(again.lease_id).await;
}

// A waiting request whose connection closed, and that no new connection
// claims, leaves the line once its ttl (here 1 s, the least) has passed.
#[tokio::test]
async fn an_unclaimed_waiting_request_is_given_up_after_its_ttl() {
    let dir = data_dir();
    let mut config = leasehold_server::ServerConfig::new(dir.path());
    config.listen = "127.0.0.1:0".parse().unwrap();
    let server = leasehold_server::Server::start(config).await.unwrap();
    let mut holder = common::Client::connect(server.local_addr()).await;
    holder.hello(None).await;
    let lease = holder.granted("jobs", "k", 1).await;
    let closed_at = std::time::Instant::now();
    {
        let mut waiter = common::Client::connect(server.local_addr()).await;
        waiter.hello(None).await;
        assert!(matches!(
            waiter.request(hold("jobs", "k", 2, 1_000, true)).await,
            Ok(Reply::Queued { .. })
        ));
    }
    assert_eq!(server.store().waiting(), 1);
    let deadline = std::time::Instant::now() + WAIT;
    while server.store().waiting() > 0 {
        assert!(std::time::Instant::now() < deadline, "still waiting");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(closed_at.elapsed() >= Duration::from_millis(900));
    holder.release(lease.lease_id).await;
    holder.granted("jobs", "k", 3).await;
    server.shutdown().await;
}

// ERR-04, LOCK-07, LOCK-16: a holder whose connection drops keeps the key
// until its ttl runs out at the store (never two unexpired leases of one
// key); only then is the next in line granted, and the old holder's renewal
// from a new connection fails Lost (ttl at its 1 s minimum).
#[tokio::test]
async fn err_04_a_dropped_holder_keeps_the_key_until_its_ttl_and_then_learns_it_lost() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut waiter = Client::welcomed(server.addr, None).await;
    let (lease, asked_at) = {
        let mut holder = Client::welcomed(server.addr, None).await;
        // Before the request is sent: the store's grant is later still.
        let asked_at = std::time::Instant::now();
        let lease = match holder.request(hold("jobs", "k", 1, 1_000, false)).await {
            Ok(Reply::Granted(g)) => g,
            other => panic!("expected a grant, got {other:?}"),
        };
        assert!(matches!(
            waiter.hold("jobs", "k", 2, true).await,
            Ok(Reply::Queued { .. })
        ));
        (lease, asked_at)
    };
    let next = match waiter.push().await {
        ServerFrame::Granted(g) => g,
        other => panic!("expected a grant, got {other:?}"),
    };
    assert!(
        asked_at.elapsed() >= Duration::from_millis(990),
        "{:?}",
        asked_at.elapsed()
    );
    assert!(next.fence > lease.fence);
    let mut back = Client::welcomed(server.addr, None).await;
    match back
        .request(Request::Renew {
            leases: vec![(lease.lease_id, 1_000)],
        })
        .await
    {
        Ok(Reply::Renewed(answers)) => assert_eq!(answers[0].as_ref().unwrap_err().code, "Lost"),
        other => panic!("expected Renewed, got {other:?}"),
    }
}

// Logs that do not go to a terminal carry no ANSI colour codes.
#[tokio::test]
async fn logs_to_a_file_have_no_colour_codes() {
    let dir = data_dir();
    let log = dir.path().join("server.log");
    let mut server = ServeCommand::new(&dir.path().join("data"), &[])
        .env("LEASEHOLD_LOG", "info")
        .stderr_to(&log)
        .start()
        .unwrap();
    server.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("shutting down"), "no log lines: {text:?}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file: {text:?}"
    );
}
