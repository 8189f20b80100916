//! Renewal groups over real sockets: one `RenewGroup` keeps every lease of
//! its group, the server expires them together, and a new connection that
//! names the group hears its losses.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::{data_dir, Client, ServerProcess};
use leasehold::remote::protocol::{Reply, Request, ServerFrame, WireError, WireGrant};

const GROUP: u128 = 0x5eed_0000_0000_0000_0000_0000_0000_0001;

fn hold_in_group(key: &str, request_id: u128, ttl_ms: u64) -> Request {
    Request::Hold {
        lock: "jobs".into(),
        key: key.into(),
        request_id,
        ttl_ms,
        max_hold_ms: None,
        queue: false,
        group: Some(GROUP),
    }
}

async fn granted(client: &mut common::Client<tokio::net::TcpStream>, req: Request) -> WireGrant {
    match client.request(req).await {
        Ok(Reply::Granted(g)) => g,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// Whether a group renewal that did not renew was answered a whole `ttl`
/// after `since` (the send of the grant or renewal before it): a loaded
/// machine's pause, measured, after which the group may rightly have
/// expired, so the renewal proves nothing and the test says so. A renewal
/// refused sooner is for the test to fail.
fn came_too_late(
    contract: &str,
    renewed: &Result<Reply, WireError>,
    since: Instant,
    ttl: Duration,
) -> bool {
    let late = *renewed != Ok(Reply::GroupRenewed) && since.elapsed() >= ttl;
    if late {
        println!(
            "{contract}: {:?} from the send before to the renewal's answer, of a {ttl:?} ttl: \
             nothing to check",
            since.elapsed()
        );
    }
    late
}

fn renew_group(ttl_ms: u64) -> Request {
    Request::RenewGroup {
        group_id: GROUP,
        ttl_ms,
    }
}

/// The lease ids of the next `n` pushes, each of which must be `Lost` with `reason`.
async fn lost(
    client: &mut common::Client<tokio::net::TcpStream>,
    n: usize,
    reason: &str,
) -> HashSet<u128> {
    let mut ids = HashSet::new();
    for _ in 0..n {
        match client.push().await {
            ServerFrame::Lost {
                lease_id,
                reason: got,
            } => {
                assert_eq!(got, reason);
                ids.insert(lease_id);
            }
            other => panic!("expected Lost, got {other:?}"),
        }
    }
    ids
}

// LOCK-06, LOCK-05: one RenewGroup keeps every lease of the group past its
// ttl; without it they expire together, each pushed as lost, and the
// expired group cannot be renewed back. The renewals come every 300 ms; a
// loaded machine that let a whole ttl pass between one's send and the next
// one's answer (measured) proves nothing, and the test says so rather than
// fail.
#[tokio::test]
async fn lock_06_one_renew_group_keeps_every_lease_and_they_expire_together() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let mut leases = HashSet::new();
    for i in 0..3u128 {
        leases.insert(
            granted(&mut a, hold_in_group(&format!("k{i}"), i + 1, 1_000))
                .await
                .lease_id,
        );
    }
    let ttl = Duration::from_secs(1);
    let mut last = Instant::now();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sent = Instant::now();
        let renewed = a.request(renew_group(1_000)).await;
        if came_too_late("LOCK-06", &renewed, last, ttl) {
            return;
        }
        assert_eq!(renewed, Ok(Reply::GroupRenewed));
        last = sent;
    }
    let mut b = Client::welcomed(server.addr, None).await;
    for i in 0..3 {
        assert_eq!(
            b.hold("jobs", &format!("k{i}"), 100 + i, false).await,
            Ok(Reply::NotHeld),
            "k{i} is still held after 2.4 s of a 1 s ttl"
        );
    }
    assert_eq!(lost(&mut a, 3, "expired").await, leases);
    let again = a.request(renew_group(1_000)).await;
    assert_eq!(common::code(&again), "Lost");
    for i in 0..3 {
        b.granted("jobs", &format!("k{i}"), 200 + i).await;
    }
}

// LOCK-07: a client back on a new connection renews its group there; the
// server then pushes the group's losses to that connection. A loaded machine
// that took a whole ttl from the last grant's send to the renewal's answer
// (measured) proves nothing, and the test says so rather than fail.
#[tokio::test]
async fn lock_07_a_group_renewed_from_a_new_connection_hears_its_losses() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut leases = HashSet::new();
    let mut asked = Instant::now();
    {
        let mut a = Client::welcomed(server.addr, None).await;
        for i in 0..2u128 {
            asked = Instant::now();
            leases.insert(
                granted(&mut a, hold_in_group(&format!("k{i}"), i + 1, 1_000))
                    .await
                    .lease_id,
            );
        }
    }
    let mut b = Client::welcomed(server.addr, None).await;
    let renewed = b.request(renew_group(1_000)).await;
    if came_too_late("LOCK-07", &renewed, asked, Duration::from_secs(1)) {
        return;
    }
    assert_eq!(renewed, Ok(Reply::GroupRenewed));
    assert_eq!(lost(&mut b, 2, "expired").await, leases);
}

// LOCK-08: a lease released from a connection that does not hold it (with
// its id) is pushed as lost to the one that does, since no failed renewal
// of its group would tell it.
#[tokio::test]
async fn lock_08_a_lease_released_elsewhere_is_lost_to_its_holder() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let mut a = Client::welcomed(server.addr, None).await;
    let lease = granted(&mut a, hold_in_group("k", 1, 10_000)).await;
    let kept = granted(&mut a, hold_in_group("other", 2, 10_000)).await;
    let mut b = Client::welcomed(server.addr, None).await;
    b.release(lease.lease_id).await;
    assert_eq!(
        lost(&mut a, 1, "unknown").await,
        HashSet::from([lease.lease_id])
    );
    assert_eq!(
        a.request(renew_group(10_000)).await,
        Ok(Reply::GroupRenewed)
    );
    a.release(kept.lease_id).await;
    a.assert_no_push().await;
}
