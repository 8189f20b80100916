//! The core's own client (`Store::connect`, the RemoteDriver) against the
//! real `leasehold` binary.

mod common;

use std::time::Duration;

use common::{data_dir, ServerProcess, WAIT};
use leasehold::remote::ConnectOptions;
use leasehold::{Error, ErrorKind, Store};

// LOCK-01, LOCK-11: through the core's client, a hold on a held key waits in
// line and is granted, with a larger fence, once the holder's function returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_01_lock_11_the_core_client_waits_and_is_handed_the_key() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let url = format!("leasehold://{}", server.addr);
    let a = Store::connect(&url, ConnectOptions::default())
        .await
        .unwrap();
    let b = Store::connect(&url, ConnectOptions::default())
        .await
        .unwrap();
    let lock_a = a.lock("jobs").ttl(Duration::from_secs(5)).open().unwrap();
    let lock_b = b.lock("jobs").ttl(Duration::from_secs(5)).open().unwrap();

    let holding = lock_a.begin("k", &Default::default()).await.unwrap();
    let first = holding.lease().fence();
    let waiter = tokio::spawn(async move {
        lock_b
            .hold_async("k", |lease| async move { Ok::<_, Error>(lease.fence()) })
            .await
    });
    // The key stays held while the waiter waits.
    let holders = a.holders(Some("jobs")).await.unwrap();
    assert_eq!(holders.len(), 1);
    assert_eq!(holders[0].fence, first);
    holding.finish(Ok::<_, Error>(())).await.unwrap();
    let second = tokio::time::timeout(WAIT, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(second > first, "{second} <= {first}");
}

// LOCK-14: the core's client with a read-only token may list but not hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_14_the_core_client_with_a_read_token_gets_permission_denied() {
    let dir = data_dir();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "r read\nw write\n").unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &["--tokens", tokens.to_str().unwrap()],
    );
    let url = format!("leasehold://{}", server.addr);
    let reader = Store::connect(&url, ConnectOptions::default().token("r"))
        .await
        .unwrap();
    let lock = reader.lock("jobs").open().unwrap();
    let err = lock
        .try_hold_async("k", |_| async { Ok::<_, Error>(()) })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    assert!(reader.holders(None).await.unwrap().is_empty());
    let refused = Store::connect(&url, ConnectOptions::default()).await;
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::Unauthenticated);
}
