//! The PG contracts on a real PostgreSQL, each test on stores of a schema
//! of its own: the store through its public API (PG-01), what it leaves in
//! the database (PG-02), the database's clock (PG-03), fences and the
//! high-water check (PG-04), a request id granted once (PG-05), pushed
//! waiting, also when a holder or the listener is gone (PG-06), renewal by
//! group (PG-07), and the schema's versions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::driver::{Driver, Granted, HoldAnswer, HoldRequest, KeyName, Waiting};
use leasehold::postgres::PostgresDriver;
use leasehold::{ConnectOptions, ErrorKind, GroupId, LossReason, RequestId, Store};
use postgres_tests::{fresh_schema, sql, sql_script, url_with};

/// How long a test waits for an event before it counts it as never coming:
/// a hang, not a speed (the machine is shared; the tests assert the order
/// of events, and print how long they took).
const HANG: Duration = Duration::from_secs(30);

async fn driver(schema: &str) -> Arc<PostgresDriver> {
    let url = url_with(schema, "");
    Arc::new(
        PostgresDriver::connect(
            &url,
            ConnectOptions::default(),
            &tokio::runtime::Handle::current(),
        )
        .await
        .expect("connect to PostgreSQL"),
    )
}

fn request(key: &str, ttl: Duration, queue: bool) -> HoldRequest {
    HoldRequest {
        name: KeyName::new("jobs", key),
        request_id: RequestId::random(),
        ttl: Some(ttl),
        max_hold: None,
        queue,
        group: None,
    }
}

async fn granted(d: &PostgresDriver, r: HoldRequest) -> Granted {
    match d.hold(r).await.expect("hold") {
        HoldAnswer::Granted(g) => g,
        other => panic!("expected a grant, got {}", describe(&other)),
    }
}

async fn queued(d: &PostgresDriver, r: HoldRequest) -> Waiting {
    match d.hold(r).await.expect("hold") {
        HoldAnswer::Queued { waiting, .. } => waiting,
        other => panic!("expected a place in line, got {}", describe(&other)),
    }
}

fn describe(a: &HoldAnswer) -> &'static str {
    match a {
        HoldAnswer::Granted(_) => "a grant",
        HoldAnswer::NotHeld => "not held",
        HoldAnswer::Queued { .. } => "a place in line",
    }
}

/// Waits for a pushed grant, at most `within`; answers it and how long it took.
async fn pushed(rx: Waiting, within: Duration) -> (Granted, Duration) {
    let start = Instant::now();
    let got = tokio::time::timeout(within, rx)
        .await
        .unwrap_or_else(|_| panic!("no grant pushed within {within:?}"))
        .expect("the driver dropped the waiter")
        .expect("the wait failed");
    (got, start.elapsed())
}

// PG-01: the store opened from a postgres:// URL through the public API:
// a lock's hold runs the function under a fence, a second store's tryHold
// meanwhile finds the key held, and the listing shows the holder; the
// first store's connections bear its identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_01_a_store_on_postgres_holds_keys() {
    let schema = fresh_schema("pg01");
    let url = url_with(&schema, "");
    let a = Store::connect(&url, ConnectOptions::default().identity(&schema))
        .await
        .unwrap();
    // The client's identity is its connections' application_name.
    let named = sql(&format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{schema}'"
    ))
    .await;
    assert!(
        named[0].get::<_, i64>(0) > 0,
        "no connection named {schema}"
    );
    let b = Store::connect(
        &url.replace("postgres://", "postgresql://"),
        ConnectOptions::default(),
    )
    .await
    .unwrap();
    let lock_a = a
        .lock("summaries")
        .ttl(Duration::from_secs(5))
        .open()
        .unwrap();
    let lock_b = b
        .lock("summaries")
        .ttl(Duration::from_secs(5))
        .open()
        .unwrap();
    let fence = lock_a
        .hold_async("chat-1", |lease| {
            let (b, lock_b) = (b.clone(), lock_b.clone());
            async move {
                let during = lock_b.try_begin("chat-1").await?;
                assert!(during.is_none(), "a second store took a held key");
                let listed = b.holders(Some("summaries")).await?;
                assert_eq!(listed.len(), 1);
                assert_eq!(
                    (listed[0].key.as_str(), listed[0].fence),
                    ("chat-1", lease.fence())
                );
                Ok::<_, leasehold::Error>(lease.fence())
            }
        })
        .await
        .unwrap();
    let after = lock_b
        .hold_async("chat-1", |lease| async move {
            Ok::<_, leasehold::Error>(lease.fence())
        })
        .await
        .unwrap();
    assert!(after > fence, "fence {after} after {fence}");
    a.close().await;
    b.close().await;
}

// PG-02: what the store leaves in the database after keys held, waited
// for, renewed and released: logged tables only, and no advisory lock
// taken at any moment of the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_02_no_advisory_locks_and_no_unlogged_tables() {
    let schema = fresh_schema("pg02");
    let d = driver(&schema).await;
    let seen = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (seen, done) = (seen.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let rows = sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").await;
                seen.fetch_add(
                    rows[0].get::<_, i64>(0),
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
        })
    };
    for round in 0..20 {
        let key = format!("k{}", round % 3);
        let first = granted(&d, request(&key, Duration::from_secs(5), true)).await;
        let rx = queued(&d, request(&key, Duration::from_secs(5), true)).await;
        d.renew(first.grant.lease_id, None).await.unwrap();
        d.release(first.grant.lease_id).await.unwrap();
        let (second, _) = pushed(rx, HANG).await;
        d.release(second.grant.lease_id).await.unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.await.unwrap();
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "advisory locks seen"
    );
    let unlogged = sql(&format!(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = '{schema}' AND c.relpersistence <> 'p'"
    ))
    .await;
    let names: Vec<String> = unlogged.iter().map(|r| r.get(0)).collect();
    assert!(names.is_empty(), "relations not logged: {names:?}");
    let tables = sql(&format!(
        "SELECT count(*) FROM pg_tables WHERE schemaname = '{schema}'"
    ))
    .await;
    assert!(tables[0].get::<_, i64>(0) >= 6, "the schema has its tables");
    d.close().await;
}

// PG-03: maxHold is the database's: a holder that keeps renewing loses
// its lease at grant + maxHold, and the waiter is granted then, by the
// database's word, without the holder's client letting go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_03_max_hold_is_enforced_by_the_database() {
    let schema = fresh_schema("pg03");
    let (a, b) = (driver(&schema).await, driver(&schema).await);
    let max_hold = Duration::from_millis(1500);
    let start = Instant::now();
    let held = granted(
        &a,
        HoldRequest {
            max_hold: Some(max_hold),
            ..request("k", Duration::from_secs(10), false)
        },
    )
    .await;
    let rx = queued(&b, request("k", Duration::from_secs(10), true)).await;
    let renewing = {
        let a = a.clone();
        let lease = held.grant.lease_id;
        tokio::spawn(async move {
            loop {
                match a.renew(lease, None).await {
                    Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                    Err(e) => return e,
                }
            }
        })
    };
    let (next, _) = pushed(rx, HANG).await;
    let at = start.elapsed();
    assert!(
        at >= max_hold,
        "granted {at:?} after the holder's grant, before its maxHold"
    );
    assert!(next.grant.fence > held.grant.fence);
    let e = renewing.await.unwrap();
    assert_eq!(e.kind(), ErrorKind::Lost, "{e}");
    assert_eq!(e.loss_reason(), Some(LossReason::Revoked), "{e}");
    a.close().await;
    b.close().await;
}

// PG-04: fences grow across keys and stores; and a database whose fence
// sequence is behind a fence it gave (as after an asynchronous failover
// or a restore) is refused at connect, also once the rows that carried
// those fences are forgotten (the high-water row keeps the largest).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_04_fences_grow_and_a_behind_sequence_is_refused() {
    let schema = fresh_schema("pg04");
    let (a, b) = (driver(&schema).await, driver(&schema).await);
    let mut last = 0;
    for i in 0..20 {
        let d = if i % 2 == 0 { &a } else { &b };
        let g = granted(
            d,
            request(&format!("k{}", i % 5), Duration::from_secs(5), false),
        )
        .await;
        assert!(g.grant.fence > last, "fence {} after {last}", g.grant.fence);
        last = g.grant.fence;
        d.release(g.grant.lease_id).await.unwrap();
    }
    a.close().await;
    b.close().await;
    sql(&format!(
        "UPDATE {schema}.requests SET ended_at = ended_at - interval '1 day'"
    ))
    .await;
    sql(&format!("SELECT {schema}.forget('1 hour')")).await;
    let left = sql(&format!("SELECT count(*) FROM {schema}.requests")).await;
    assert_eq!(
        left[0].get::<_, i64>(0),
        0,
        "the old requests are forgotten"
    );
    sql(&format!("SELECT setval('{schema}.fence', 3)")).await;
    let refused = PostgresDriver::connect(
        &url_with(&schema, ""),
        ConnectOptions::default(),
        &tokio::runtime::Handle::current(),
    )
    .await
    .err()
    .expect("a behind sequence is refused");
    assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");
    assert!(
        refused.message().contains(&format!("behind fence {last}")),
        "{refused}"
    );
}

// PG-05: a request id grants once: the same request sent again through
// another store (another connection, as after a lost answer) gets the
// same grant, and a second request does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_05_a_request_id_grants_once() {
    let schema = fresh_schema("pg05");
    let (a, b) = (driver(&schema).await, driver(&schema).await);
    let r = request("k", Duration::from_secs(5), true);
    let first = granted(&a, r.clone()).await;
    let again = granted(&b, r.clone()).await;
    assert_eq!(again.grant.fence, first.grant.fence);
    let other = b
        .hold(request("k", Duration::from_secs(5), false))
        .await
        .unwrap();
    assert!(
        matches!(other, HoldAnswer::NotHeld),
        "got {}",
        describe(&other)
    );
    a.release(first.grant.lease_id).await.unwrap();
    let c = driver(&schema).await;
    let after = c.hold(r).await.expect_err("a released request is over");
    assert_eq!(after.kind(), ErrorKind::Lost, "{after}");
    for d in [a, b, c] {
        d.close().await;
    }
}

// PG-06: waiting is pushed: a release grants the next in line at once
// (well before the waiter would look again by itself); a holder whose
// store is gone is followed at its lease's expiry; and a waiter whose
// notification was lost with the listener's connection is still granted.
//
// A waiter looks again by itself at its holder's expiry, here 30 s after
// the holder's grant: a grant that comes before half of that was pushed
// (or, once the listener is cut, read again after the reconnect), with
// 15 s left for a loaded machine. The times are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_06_waiting_is_pushed() {
    let schema = fresh_schema("pg06");
    let (a, b) = (driver(&schema).await, driver(&schema).await);
    let long = Duration::from_secs(30);

    let held = granted(&a, request("released", long, false)).await;
    let rx = queued(&b, request("released", long, true)).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.release(held.grant.lease_id).await.unwrap();
    let (_, took) = pushed(rx, HANG).await;
    println!("PG-06: a released key reached its waiter after {took:?}");
    assert!(
        took < long / 2,
        "a released key reached its waiter after {took:?}: not pushed"
    );

    let gone = driver(&schema).await;
    let ttl = Duration::from_secs(1);
    let vanished = granted(&gone, request("vanished", ttl, false)).await;
    drop(gone);
    let rx = queued(&b, request("vanished", long, true)).await;
    // Nothing else would ever grant it: HANG catches a waiter that does
    // not look again at the vanished holder's expiry.
    let (next, took) = pushed(rx, HANG).await;
    assert!(next.grant.fence > vanished.grant.fence);
    println!("PG-06: granted {took:?} after a 1 s lease's holder vanished");

    let held = granted(&a, request("unheard", long, false)).await;
    let rx = queued(&b, request("unheard", long, true)).await;
    let killed = sql(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE query = 'LISTEN \"{schema}\"'"
    ))
    .await;
    assert!(!killed.is_empty(), "no listening connection found");
    a.release(held.grant.lease_id).await.unwrap();
    let (_, took) = pushed(rx, HANG).await;
    println!("PG-06: granted {took:?} after the listener was cut");
    assert!(
        took < long / 2,
        "granted {took:?} after the listener was cut: not read again after the reconnect"
    );
    a.close().await;
    b.close().await;
}

// PG-07: renewal by group: one call renews every lease of a group without
// writing their rows, keeps them past their ttl, and a group left to run
// out is not renewed again, its leases with it. The renewals come every
// ttl/4; a loaded machine that let a whole ttl pass between two of them
// (measured) proves nothing, and the test says so rather than fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_07_a_group_renews_with_one_statement() {
    let schema = fresh_schema("pg07");
    let d = driver(&schema).await;
    let ttl = Duration::from_secs(2);
    let group = GroupId::random();
    let mut leases = Vec::new();
    for i in 0..100 {
        let r = HoldRequest {
            group: Some(group),
            ..request(&format!("k{i}"), ttl, false)
        };
        leases.push(granted(&d, r).await);
    }
    let rows_before = sql(&format!(
        "SELECT xmin::text FROM {schema}.requests ORDER BY request"
    ))
    .await;
    let versions = |rows: &[tokio_postgres::Row]| {
        rows.iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
    };
    let mut last = Instant::now();
    for _ in 0..6 {
        tokio::time::sleep(ttl / 4).await;
        let sent = Instant::now();
        if let Err(e) = d.renew_group(group, ttl).await {
            // The group runs out a ttl after the database took its last
            // renewal, which it took after `last` (that renewal's send):
            // this one came too late only if its answer came a ttl or more
            // after that send.
            let gap = sent.elapsed() + (sent - last);
            assert!(
                gap >= ttl,
                "the group was not renewed {gap:?} after its last renewal: {e}"
            );
            println!("PG-07: {gap:?} between two renewals of a {ttl:?} group: nothing to check");
            d.close().await;
            return;
        }
        last = sent;
    }
    let rows_after = sql(&format!(
        "SELECT xmin::text FROM {schema}.requests ORDER BY request"
    ))
    .await;
    assert_eq!(
        versions(&rows_before),
        versions(&rows_after),
        "a group renewal wrote lease rows"
    );
    assert_eq!(
        d.holders(Some("jobs")).await.unwrap().len(),
        100,
        "held past the ttl by the group"
    );
    tokio::time::sleep(ttl + Duration::from_millis(300)).await;
    let e = d.renew_group(group, ttl).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Lost, "{e}");
    assert!(
        d.holders(Some("jobs")).await.unwrap().is_empty(),
        "an expired group's leases are held"
    );
    for g in leases.into_iter().take(3) {
        let reason = tokio::time::timeout(HANG, g.lost)
            .await
            .expect("the loss is pushed");
        assert_eq!(reason.ok(), Some(LossReason::Expired));
    }
    d.close().await;
}

// PG-01: the schema: made once by stores opening a fresh database at the
// same moment, found ready by the next, and refused when newer than this
// build knows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_01_the_schema_is_made_once_and_a_newer_one_refused() {
    let schema = fresh_schema("schema");
    let opened = futures::future::join_all((0..4).map(|_| driver(&schema))).await;
    for d in &opened {
        d.close().await;
    }
    let again = driver(&schema).await;
    again.close().await;
    let version = sql(&format!("SELECT version FROM {schema}.version")).await;
    assert_eq!(version.len(), 1);
    sql(&format!("UPDATE {schema}.version SET version = 99")).await;
    let refused = PostgresDriver::connect(
        &url_with(&schema, ""),
        ConnectOptions::default(),
        &tokio::runtime::Handle::current(),
    )
    .await
    .err()
    .expect("a newer schema is refused");
    assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");
    assert!(refused.message().contains("version 99"), "{refused}");
}

// PG-01: a schema that version 1 of the store made, with a lease held in
// it, is migrated to the latest version when a store opens it: the lease
// is still held (WHO-02: with no identity, as version 1 recorded none) and
// the next fence is larger than the one it gave. A store of version 2
// still running beside it goes on working: its calls, one argument short
// of version 3's, still hold and list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_01_a_version_1_schema_is_migrated_and_keeps_its_leases() {
    let schema = fresh_schema("migrate");
    let q = format!("\"{schema}\"");
    let v1 = include_str!("../../core/src/postgres/schema_v1.sql")
        .replace("@schema@", &q)
        .replace("@channel@", &format!("'{schema}'"));
    sql_script(&format!(
        "CREATE SCHEMA {q};
         CREATE TABLE {q}.version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL);
         {v1};
         INSERT INTO {q}.version VALUES (true, 1)"
    ))
    .await;
    let old = sql(&format!(
        "SELECT fence FROM {q}.hold('\\x01'::bytea, 'jobs', 'old', 60000, NULL, NULL, true)"
    ))
    .await;
    let old_fence: i64 = old[0].get(0);
    let d = driver(&schema).await;
    let version = sql(&format!("SELECT version FROM {q}.version")).await;
    assert_eq!(version[0].get::<_, i32>(0), 3, "migrated to version 3");
    let busy = d
        .hold(request("old", Duration::from_secs(5), false))
        .await
        .unwrap();
    assert!(
        matches!(busy, HoldAnswer::NotHeld),
        "the lease version 1 gave is gone: {}",
        describe(&busy)
    );
    let kept = d
        .holder(&KeyName::new("jobs", "old"))
        .await
        .unwrap()
        .expect("the old lease is held");
    assert_eq!((kept.fence, kept.identity.as_str()), (old_fence as u64, ""));
    let new = granted(&d, request("new", Duration::from_secs(5), false)).await;
    assert!(
        new.grant.fence > old_fence as u64,
        "fence {} after {old_fence}",
        new.grant.fence
    );
    let by_v2 = sql(&format!(
        "SELECT answer, fence FROM {q}.hold('\\x02'::bytea, 'jobs', 'v2', 60000, NULL, NULL, true)"
    ))
    .await;
    assert_eq!(by_v2[0].get::<_, String>(0), "granted");
    let listed = sql(&format!("SELECT key, identity FROM {q}.holders('jobs')")).await;
    let v2 = listed
        .iter()
        .find(|r| r.get::<_, String>(0) == "v2")
        .expect("version 2's lease is listed");
    assert_eq!(v2.get::<_, Option<String>>(1), None);
    d.close().await;
}

// PG-01: TLS. A server that speaks TLS with a certificate for 127.0.0.1:
// a store given its CA connects with sslmode=require and its connections are
// encrypted; a CA that did not sign the server's certificate is refused
// (Unavailable, naming the certificate); sslmode=require without the
// certificates to trust fails InvalidArgument before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_01_tls_verifies_the_servers_certificate() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let authority = || {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("a key")).expect("a CA")
    };
    let (ca, stranger) = (authority(), authority());
    let key = KeyPair::generate().expect("a key");
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .expect("server params")
        .signed_by(&key, &ca)
        .expect("a server certificate");
    let server = tokio::task::spawn_blocking(move || {
        postgres_tests::server::PgServer::start_tls(&cert.pem(), &key.serialize_pem())
    })
    .await
    .unwrap();
    let url = format!("{}?sslmode=require&schema=tls", server.url());
    let trusting = ConnectOptions::default()
        .ca_pem(ca.pem())
        .identity("tls-test");
    let store = Store::connect(&url, trusting)
        .await
        .expect("connect over TLS");
    let fence = store
        .lock("l")
        .ttl(Duration::from_secs(5))
        .open()
        .unwrap()
        .hold_async("k", |lease| async move {
            Ok::<_, leasehold::Error>(lease.fence())
        })
        .await
        .unwrap();
    assert!(fence > 0);
    let encrypted = server.psql(
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid)
         WHERE ssl AND application_name = 'tls-test'",
    );
    let plain = server.psql(
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid)
         WHERE NOT ssl AND application_name = 'tls-test'",
    );
    assert!(
        encrypted.trim().parse::<u32>().unwrap() >= 2,
        "encrypted connections: {encrypted}"
    );
    assert_eq!(plain.trim(), "0", "connections in plain text");
    store.close().await;

    let refused = Store::connect(&url, ConnectOptions::default().ca_pem(stranger.pem()))
        .await
        .expect_err("a certificate from another CA is refused");
    assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");
    assert!(
        refused.message().to_lowercase().contains("certificate"),
        "{refused}"
    );
    let unverifiable = Store::connect(&url, ConnectOptions::default())
        .await
        .expect_err("sslmode=require without a CA is refused");
    assert_eq!(
        unverifiable.kind(),
        ErrorKind::InvalidArgument,
        "{unverifiable}"
    );
}

// LOCK-22, PG-07: begin_many on PostgreSQL, where taking thousands of keys
// takes longer than their ttl: the leases taken first are renewed (by their
// group) while the rest are asked, so every lease is still held at the end,
// each with its own fence. A control lease of the same ttl, in a group of
// its own on the same store, tells a machine too loaded to renew within the
// 1 s ttl (the control lost too: nothing to conclude) from a begin_many that
// did not renew what it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_22_begin_many_longer_than_the_ttl_keeps_every_lease() {
    let schema = fresh_schema("lock22");
    let url = url_with(&schema, "");
    let store = Store::connect(&url, ConnectOptions::default())
        .await
        .unwrap();
    let ttl = Duration::from_secs(1);
    let lock = store.lock("shards").ttl(ttl).open().unwrap();
    let control = store.lock("control").ttl(ttl).open().unwrap();
    let control = control
        .begin("k", &Default::default())
        .await
        .expect("the control");
    let keys: Vec<String> = (0..6_000).map(|i| format!("shard-{i}")).collect();
    let started = Instant::now();
    let held = match lock.begin_many(&keys, &Default::default()).await {
        Ok(held) => held,
        Err(e) if control.lease().lost() => {
            eprintln!("LOCK-22: the control was lost too ({e}): the machine could not renew within the ttl");
            return;
        }
        Err(e) => panic!("begin_many failed while the control was kept: {e}"),
    };
    let took = started.elapsed();
    assert_eq!(held.len(), keys.len());
    let fences: std::collections::HashSet<u64> = held.iter().map(|h| h.lease().fence()).collect();
    assert_eq!(fences.len(), keys.len());
    let kept = held.iter().all(|h| !h.lease().lost());
    tokio::time::sleep(ttl * 2).await;
    let kept = kept && held.iter().all(|h| !h.lease().lost());
    eprintln!("6,000 keys taken on PostgreSQL in {took:?} (ttl {ttl:?})");
    if !kept && control.lease().lost() {
        eprintln!("LOCK-22: the control was lost too: the machine could not renew within the ttl");
        return;
    }
    assert!(
        kept,
        "a lease was lost while the control was kept (took {took:?})"
    );
    leasehold::Holding::end_all(held).await.unwrap();
    control.end().await.unwrap();
}
