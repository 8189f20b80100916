//! Slot leases through the core's client against the real `leasehold`
//! process: restarts (the journal in the data dir), a frozen server
//! (timeouts), and roles.

mod support;

use std::time::Duration;

use leasehold::remote::ConnectOptions;
use leasehold::slots::{AcquireResult, Owner, Slots};
use leasehold::{ErrorKind, Store};
use support::server::{freeze, thaw, ServerProcess};
use support::{connect, data_dir, S};

/// The namespace of these tests, its calls bounded by `timeout`. A call
/// expected to answer keeps the default bound (5 s): a shorter one would be
/// a speed the test asks of a loaded machine; a call to a frozen server,
/// which must time out, gets a short one.
fn slots_within(store: &Store, limit: u32, timeout: Duration) -> Slots {
    store
        .slots("order-ids")
        .limit(limit)
        .ttl(S(30))
        .tolerance(S(2))
        .offset(512)
        .timeout(timeout)
        .open()
        .unwrap()
}

fn slots(store: &Store, limit: u32) -> Slots {
    slots_within(store, limit, leasehold::slots::DEFAULT_TIMEOUT)
}

fn owner(key: &str) -> Owner {
    Owner::new(key).unwrap()
}

// SLOT-02, SLOT-06, SLOT-08: after kill -9 and a restart on the same data
// dir, the namespace keeps its parameters; a new holder's floor lies above
// every ceiling the last run gave, and its fence above every fence; the old
// holder's lease renews to nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_02_slot_06_slot_08_a_restart_keeps_namespaces_floors_and_fences() {
    let dir = data_dir();
    let mut server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let before = slots(&store, 8)
        .acquire(&owner("svc"), None)
        .await
        .unwrap()
        .lease()
        .unwrap();
    assert_eq!((before.slot(), before.node()), (0, 512));
    server.kill9();
    server.restart();

    let after = connect(&server.url()).await;
    let mismatch = slots(&after, 16).acquire(&owner("other"), None).await;
    assert_eq!(
        mismatch.unwrap_err().kind(),
        ErrorKind::NamespaceMismatch,
        "the restarted server forgot the namespace's limit"
    );
    let next = slots(&after, 8)
        .acquire(&owner("other"), None)
        .await
        .unwrap()
        .lease()
        .unwrap();
    assert_eq!(next.slot(), 0, "the restarted server forgot nothing else");
    assert!(
        next.floor() >= before.ceiling(),
        "floor {} below the last run's ceiling {}",
        next.floor(),
        before.ceiling()
    );
    assert!(next.fence() > before.fence());
    assert_eq!(slots(&after, 8).renew(&before).await.unwrap(), None);
}

// SLOT-07: a server that does not answer (SIGSTOP) fails the call with
// Timeout, recognisable as such; once it runs again, the same owner's
// acquire answers, and gets the one slot its timed-out acquire may have taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_07_a_frozen_server_times_out() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let ids = slots(&store, 8);
    let me = owner("svc");
    freeze(server.pid());
    let frozen = slots_within(&store, 8, Duration::from_millis(400))
        .acquire(&me, None)
        .await;
    thaw(server.pid());
    let err = frozen.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.kind().is_timeout());
    let lease = ids.acquire(&me, None).await.unwrap().lease().unwrap();
    let again = ids.acquire(&me, None).await.unwrap().lease().unwrap();
    assert_eq!((again.slot(), again.fence()), (lease.slot(), lease.fence()));
    // Outcomes are not timeouts.
    let mismatch = slots(&store, 4)
        .acquire(&owner("x"), None)
        .await
        .unwrap_err();
    assert!(!mismatch.kind().is_timeout());
}

// SLOT-01: Exhausted through the server is an answer, not an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_01_exhausted_through_the_server() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let ids = slots(&store, 2);
    for key in ["a", "b"] {
        assert!(matches!(
            ids.acquire(&owner(key), None).await.unwrap(),
            AcquireResult::Leased(_)
        ));
    }
    assert_eq!(
        ids.acquire(&owner("c"), None).await.unwrap(),
        AcquireResult::Exhausted
    );
}

// LOCK-14: a read-only token may not take slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_14_a_read_token_takes_no_slot() {
    let dir = data_dir();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "r read\n").unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--tokens", tokens.to_str().unwrap()],
    );
    let reader = Store::connect(&server.url(), ConnectOptions::default().token("r"))
        .await
        .unwrap();
    let err = slots(&reader, 2)
        .acquire(&owner("a"), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
}

// LOCK-04 for slots: a held slot whose renewals get no answer (the server is
// frozen) is lost at its holder's deadline, before the store's expiry, and
// the holding ends `Lost`. How long after the freeze is printed: `lost()`
// counts a deadline that has come as a loss whenever the loss's timer runs,
// so a late timer on a loaded machine changes nothing the holder sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_slot_on_a_frozen_server_is_lost_at_the_deadline() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let store = connect(&server.url()).await;
    let ids = store.slots("held").ttl(S(2)).open().unwrap();
    let holding = ids.begin(&owner("svc"), None).await.unwrap().unwrap();
    let held = holding.held().clone();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!held.lost(), "renewals kept it: {:?}", held.loss_reason());
    freeze(server.pid());
    let started = std::time::Instant::now();
    let lost = tokio::time::timeout(S(30), held.lost_signal()).await;
    thaw(server.pid());
    lost.expect("the held slot was lost (30 s: a hang)");
    println!(
        "LOCK-04: the slot was lost {:?} after the freeze (ttl 2 s)",
        started.elapsed()
    );
    assert_eq!(held.loss_reason(), Some(leasehold::LossReason::Expired));
    assert_eq!(holding.end().await.unwrap_err().kind(), ErrorKind::Lost);
}
