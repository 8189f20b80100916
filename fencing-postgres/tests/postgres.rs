//! The fenced writes against the real PostgreSQL `make postgres` starts
//! (its URL in LEASEHOLD_POSTGRES_URL, or in $CARGO_TARGET_DIR/postgres/url).

use std::time::Duration;

use leasehold::Store;
use leasehold_postgres::{Error, FencedTable};
use tokio_postgres::{Client, NoTls};

/// The URL of `make postgres`'s cluster; fails the test when there is none.
fn url() -> String {
    if let Ok(url) = std::env::var("LEASEHOLD_POSTGRES_URL") {
        if !url.is_empty() {
            return url;
        }
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_owned());
    let file = format!("{target}/postgres/url");
    std::fs::read_to_string(&file)
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|e| {
            panic!(
                "no PostgreSQL URL in LEASEHOLD_POSTGRES_URL or {file} ({e}): run `make postgres`"
            )
        })
}

/// A connection, and a fresh table of its own named `name` (key, fence, text).
async fn table(name: &str) -> (Client, FencedTable) {
    let (client, connection) = tokio_postgres::connect(&url(), NoTls)
        .await
        .expect("connect to make postgres's cluster");
    tokio::spawn(connection);
    let name = format!("rust_{name}");
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {name};
             CREATE TABLE {name} (key text PRIMARY KEY, fence numeric(20) NOT NULL, text text NOT NULL)"
        ))
        .await
        .unwrap();
    (client, FencedTable::new(&name))
}

/// The row of `key` in table `name`: its fence (as text) and text.
async fn row(client: &Client, name: &str, key: &str) -> Option<(String, String)> {
    client
        .query_opt(
            &format!("SELECT fence::text, text FROM rust_{name} WHERE key = $1"),
            &[&key],
        )
        .await
        .unwrap()
        .map(|r| (r.get(0), r.get(1)))
}

#[tokio::test]
async fn a_larger_fence_lands_and_a_smaller_or_equal_one_is_refused() {
    let (client, t) = table("order").await;
    t.write(&client, "k", 5, &[("text", &"five")])
        .await
        .unwrap();
    t.write(&client, "k", 7, &[("text", &"seven")])
        .await
        .unwrap();
    for stale in [7, 6, 1] {
        let e = t
            .write(&client, "k", stale, &[("text", &"stale")])
            .await
            .unwrap_err();
        assert!(e.is_refused(), "{e}");
        let e = t
            .update(&client, "k", stale, &[("text", &"stale")])
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Refused { fence, .. } if fence == stale),
            "{e}"
        );
    }
    assert_eq!(
        row(&client, "order", "k").await,
        Some(("7".into(), "seven".into()))
    );
    t.update(&client, "k", 8, &[("text", &"eight")])
        .await
        .unwrap();
    assert_eq!(
        row(&client, "order", "k").await,
        Some(("8".into(), "eight".into()))
    );
}

#[tokio::test]
async fn update_refuses_a_missing_row_and_write_creates_it() {
    let (client, t) = table("missing").await;
    let e = t
        .update(&client, "k", 1, &[("text", &"x")])
        .await
        .unwrap_err();
    assert!(e.is_refused(), "{e}");
    assert_eq!(row(&client, "missing", "k").await, None);
    t.write(&client, "k", 1, &[("text", &"x")]).await.unwrap();
    assert_eq!(
        row(&client, "missing", "k").await,
        Some(("1".into(), "x".into()))
    );
}

// Fences above i64::MAX (server fences from 2038 on) compare as the unsigned numbers they are.
#[tokio::test]
async fn fences_above_i64_max_keep_their_order() {
    let (client, t) = table("wide").await;
    let big = u64::MAX - 1;
    t.write(&client, "k", i64::MAX as u64, &[("text", &"i64 max")])
        .await
        .unwrap();
    t.write(&client, "k", big, &[("text", &"wide")])
        .await
        .unwrap();
    let e = t
        .write(&client, "k", i64::MAX as u64 + 1, &[("text", &"stale")])
        .await
        .unwrap_err();
    assert!(e.is_refused(), "{e}");
    assert_eq!(
        row(&client, "wide", "k").await,
        Some((big.to_string(), "wide".into()))
    );
}

// The fence check and the data write in one transaction: a refused write rolls back with it.
#[tokio::test]
async fn a_refused_write_inside_a_transaction_changes_nothing() {
    let (mut client, t) = table("txn").await;
    t.write(&client, "k", 10, &[("text", &"ten")])
        .await
        .unwrap();
    let tx = client.transaction().await.unwrap();
    let e = t
        .update(&tx, "k", 9, &[("text", &"nine")])
        .await
        .unwrap_err();
    assert!(e.is_refused());
    tx.rollback().await.unwrap();
    assert_eq!(
        row(&client, "txn", "k").await,
        Some(("10".into(), "ten".into()))
    );
}

// The paused holder: A holds the key with a 1 s ttl, stops (no renewal) past
// its lease, B then holds it and writes with its larger fence; A's late write
// is refused and the table keeps B's.
#[tokio::test]
async fn a_holder_paused_past_its_lease_is_refused() {
    let (client, t) = table("paused").await;
    let store = Store::memory();
    let ttl = Duration::from_secs(1);
    let a = store
        .try_acquire("chat-1", ttl)
        .await
        .unwrap()
        .expect("free");
    t.write(&client, "chat-1", a.fence(), &[("text", &"a, on time")])
        .await
        .unwrap();

    tokio::time::sleep(Duration::from_millis(1500)).await; // A is paused past its ttl
    let b = store
        .try_acquire("chat-1", ttl)
        .await
        .unwrap()
        .expect("A's lease ran out");
    assert!(b.fence() > a.fence());
    t.write(&client, "chat-1", b.fence(), &[("text", &"b")])
        .await
        .unwrap();

    let late = t
        .write(&client, "chat-1", a.fence(), &[("text", &"a, late")])
        .await
        .unwrap_err();
    assert!(
        matches!(late, Error::Refused { fence, .. } if fence == a.fence()),
        "{late}"
    );
    assert!(a.extend(ttl).await.is_err(), "A's lease is lost");
    assert_eq!(
        row(&client, "paused", "chat-1").await,
        Some((b.fence().to_string(), "b".into()))
    );
    b.release().await.unwrap();
}
