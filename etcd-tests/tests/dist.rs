//! The DIST contracts on one real etcd member: what etcd keeps (fences,
//! the high-water key, records without lease ids), a waiter whose etcd
//! lease ran out, maxHold and a vanished holder, the version check, and
//! etcd's permissions.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{GetOptions, Permission};
use etcd_tests::{Cluster, Etcd};
use leasehold::driver::{Driver, Granted, HoldAnswer, HoldRequest, KeyName, Waiting};
use leasehold::etcd::EtcdDriver;
use leasehold::{ConnectOptions, ErrorKind, LossReason, RequestId, Store};

async fn driver(cluster: &Cluster, prefix: &str) -> Arc<EtcdDriver> {
    Arc::new(
        EtcdDriver::connect(
            &cluster.url(prefix),
            ConnectOptions::default(),
            &tokio::runtime::Handle::current(),
        )
        .await
        .expect("connect to etcd"),
    )
}

fn request(lock: &str, key: &str, ttl: Duration, queue: bool) -> HoldRequest {
    HoldRequest {
        name: KeyName::new(lock, key),
        request_id: RequestId::random(),
        ttl: Some(ttl),
        max_hold: None,
        queue,
        group: None,
    }
}

async fn granted(d: &EtcdDriver, req: HoldRequest) -> Granted {
    match d.hold(req).await.expect("hold") {
        HoldAnswer::Granted(g) => g,
        other => panic!("expected a grant, got {}", describe(&other)),
    }
}

async fn queued(d: &EtcdDriver, req: HoldRequest) -> Waiting {
    match d.hold(req).await.expect("hold") {
        HoldAnswer::Queued { waiting, .. } => waiting,
        other => panic!("expected Queued, got {}", describe(&other)),
    }
}

fn describe(a: &HoldAnswer) -> &'static str {
    match a {
        HoldAnswer::Granted(_) => "Granted",
        HoldAnswer::NotHeld => "NotHeld",
        HoldAnswer::Queued { .. } => "Queued",
    }
}

const LONG: Duration = Duration::from_secs(30);

/// How long a test waits for an event before it counts it as never coming:
/// a hang, not a speed (the machine is shared; what is asserted is the order
/// of events, and how long they took is printed).
const HANG: Duration = Duration::from_secs(30);

// DIST-03: a waiter's fence is the revision of the transaction that promoted
// it, larger than every fence granted on other keys while it waited; every
// grant also writes the high-water key, which nothing deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_03_a_waiters_fence_is_its_promotion_revision() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    let d = driver(&cluster, "dist03").await;
    let first = granted(&d, request("l", "k", LONG, false)).await;
    let mut waiter = queued(&d, request("l", "k", LONG, true)).await;
    let mut others = Vec::new();
    for i in 0..3 {
        let g = granted(&d, request("l", &format!("other-{i}"), LONG, false)).await;
        others.push(g.grant.fence);
        d.release(g.grant.lease_id).await.expect("release");
    }
    d.release(first.grant.lease_id).await.expect("release");
    let next = tokio::time::timeout(Duration::from_secs(5), &mut waiter)
        .await
        .expect("a pushed grant")
        .expect("a grant")
        .expect("granted");
    let max_other = *others.iter().max().expect("three grants");
    assert!(
        next.grant.fence > max_other,
        "the waiter's fence {} is not above the fences granted while it waited ({others:?})",
        next.grant.fence
    );
    let mut admin = cluster.client().await;
    let water = admin
        .get("/dist03/fence", None)
        .await
        .expect("read the high-water key");
    let kv = water.kvs().first().expect("the high-water key exists");
    assert_eq!(
        u64::try_from(kv.mod_revision()).unwrap(),
        next.grant.fence,
        "the promotion wrote the high-water key"
    );
    d.release(next.grant.lease_id).await.expect("release");
    let still = admin.get("/dist03/fence", None).await.expect("read");
    assert_eq!(still.kvs().len(), 1, "a release deleted the high-water key");
    d.close().await;
}

// DIST-04: a waiter whose own etcd lease ran out while it waited is never
// told that it holds the key: its waiting fails, and the key goes to the
// next in line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_04_an_expired_waiter_is_never_granted() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    let d = driver(&cluster, "dist04").await;
    let holder = granted(&d, request("l", "k", LONG, false)).await;
    let mut doomed = queued(&d, request("l", "k", LONG, true)).await;
    let mut behind = queued(&d, request("l", "k", LONG, true)).await;
    // The first waiter's etcd lease ends behind its back (as if it had
    // expired while its process was frozen).
    let mut admin = cluster.client().await;
    let line = admin
        .get(
            "/dist04/lines/",
            Some(GetOptions::new().with_prefix().with_sort(
                etcd_client::SortTarget::Create,
                etcd_client::SortOrder::Ascend,
            )),
        )
        .await
        .expect("read the line");
    assert_eq!(line.kvs().len(), 3, "a holder and two waiters");
    admin
        .lease_revoke(line.kvs()[1].lease())
        .await
        .expect("revoke the first waiter's etcd lease");
    d.release(holder.grant.lease_id).await.expect("release");
    let next = tokio::time::timeout(Duration::from_secs(5), &mut behind)
        .await
        .expect("the request behind was granted by push")
        .expect("a grant")
        .expect("granted");
    match tokio::time::timeout(Duration::from_secs(5), &mut doomed).await {
        Ok(Ok(Err(e))) => assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}"),
        Ok(Ok(Ok(g))) => panic!("an expired waiter was granted fence {}", g.grant.fence),
        other => panic!("the expired waiter heard {other:?}"),
    }
    d.release(next.grant.lease_id).await.expect("release");
    d.close().await;
}

// DIST-05: nothing written to etcd reveals a lease id; every record carries
// a random token; a fence used as a lease id renews and releases nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_05_etcd_never_sees_a_lease_id() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    let d = driver(&cluster, "dist05").await;
    let held = granted(&d, request("l", "k", LONG, false)).await;
    let _waiting = queued(&d, request("l", "k", LONG, true)).await;
    let mut admin = cluster.client().await;
    let all = admin
        .get("/dist05/", Some(GetOptions::new().with_prefix()))
        .await
        .expect("read everything");
    let id = held.grant.lease_id.0;
    let forms = [format!("{id:032x}"), format!("{id:x}"), id.to_string()];
    let mut records = 0;
    for kv in all.kvs() {
        for form in &forms {
            assert!(
                !String::from_utf8_lossy(kv.key()).contains(form.as_str())
                    && !String::from_utf8_lossy(kv.value()).contains(form.as_str()),
                "the lease id is in etcd at {:?}",
                String::from_utf8_lossy(kv.key())
            );
        }
        if kv.key().starts_with(b"/dist05/lines/") {
            let value = String::from_utf8_lossy(kv.value());
            assert!(
                value.contains("\"token\":\""),
                "a record without a token: {value}"
            );
            records += 1;
        }
    }
    assert_eq!(records, 2, "the holder's and the waiter's records");
    let fence_as_id = leasehold::LeaseId(u128::from(held.grant.fence));
    let renew = d.renew(fence_as_id, None).await;
    assert!(
        matches!(&renew, Err(e) if e.kind() == ErrorKind::Lost),
        "{renew:?}"
    );
    let release = d.release(fence_as_id).await;
    assert!(
        matches!(&release, Err(e) if e.kind() == ErrorKind::Lost),
        "{release:?}"
    );
    d.renew(held.grant.lease_id, None)
        .await
        .expect("the holder still holds");
    d.close().await;
}

// DIST-06: maxHold is revoked by the holder's own driver, which deletes the
// record at once; and when the holder's process is gone (its driver
// dropped unclosed, nothing renews), the key is let go within one ttl:
// the holder's record lives on an etcd lease of the ttl (rounded up to
// whole seconds), and the next holder is granted only once that record is
// gone. When etcd let the lease run out is etcd's; how long it took is
// printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_06_max_hold_and_a_vanished_holder() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    let d = driver(&cluster, "dist06").await;
    let ttl = Duration::from_secs(2);
    let req = HoldRequest {
        max_hold: Some(Duration::from_secs(2)),
        ..request("l", "k", ttl, false)
    };
    let mut revoked = granted(&d, req).await;
    let mut waiter = queued(&d, request("l", "k", LONG, true)).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        let _ = d.renew(revoked.grant.lease_id, None).await;
    }
    let reason = tokio::time::timeout(HANG, &mut revoked.lost)
        .await
        .expect("the loss was told")
        .expect("a reason");
    assert_eq!(reason, LossReason::Revoked);
    let next = tokio::time::timeout(HANG, &mut waiter)
        .await
        .expect("the waiter was granted after the revocation")
        .expect("a grant")
        .expect("granted");
    d.release(next.grant.lease_id).await.expect("release");

    let gone = driver(&cluster, "dist06").await;
    let held = granted(&gone, request("l", "k", ttl, false)).await;
    let mut admin = cluster.client().await;
    let line = admin
        .get("/dist06/lines/", Some(GetOptions::new().with_prefix()))
        .await
        .expect("read the line");
    assert_eq!(line.kvs().len(), 1, "the holder's record alone");
    let lease = admin
        .lease_time_to_live(line.kvs()[0].lease(), None)
        .await
        .expect("read the holder's etcd lease");
    let secs = i64::try_from(ttl.as_millis().div_ceil(1000)).unwrap();
    assert_eq!(
        lease.granted_ttl(),
        secs,
        "the holder's record lives on an etcd lease of {}s, for a {ttl:?} ttl",
        lease.granted_ttl()
    );
    let mut after = queued(&d, request("l", "k", LONG, true)).await;
    drop(gone);
    let started = std::time::Instant::now();
    let next = tokio::time::timeout(HANG, &mut after)
        .await
        .expect("the vanished holder's key was let go")
        .expect("a grant")
        .expect("granted");
    println!(
        "DIST-06: a vanished holder's key let go {:?} after it vanished (ttl {ttl:?})",
        started.elapsed()
    );
    assert!(next.grant.fence > held.grant.fence);
    let revision = i64::try_from(next.grant.fence).expect("a revision");
    assert_eq!(
        cluster.line_len_at("dist06", "l", "k", revision).await,
        1,
        "the next holder was granted while the vanished holder's record was still there"
    );
    d.close().await;
}

// DIST-07: slot leases on etcd: each change is one compare-and-set of one
// slot record, stamped by the client's clock; a release's floor reaches the
// next holder on another client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_07_slots_pass_floors_between_clients() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    let a = Store::connect(&cluster.url("dist07"), ConnectOptions::default())
        .await
        .expect("connect");
    let b = Store::connect(&cluster.url("dist07"), ConnectOptions::default())
        .await
        .expect("connect");
    let slots_a = a.slots("ids").limit(1).open().expect("open");
    let slots_b = b.slots("ids").limit(1).open().expect("open");
    let owner_a = leasehold::slots::Owner::new("a").unwrap();
    let owner_b = leasehold::slots::Owner::new("b").unwrap();
    let lease = slots_a
        .acquire(&owner_a, None)
        .await
        .unwrap()
        .lease()
        .expect("a slot");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(lease.expires_at() >= now, "stamped by this client's clock");
    assert!(
        slots_b
            .acquire(&owner_b, None)
            .await
            .unwrap()
            .lease()
            .is_none(),
        "exhausted"
    );
    let issued = lease.ceiling() - 1;
    assert!(slots_a.release(&lease, issued).await.unwrap());
    let next = slots_b
        .acquire(&owner_b, None)
        .await
        .unwrap()
        .lease()
        .expect("the freed slot");
    assert_eq!(
        next.floor(),
        issued,
        "the next holder starts above what was issued"
    );
    assert!(next.fence() > lease.fence());
    let mut admin = cluster.client().await;
    let records = admin
        .get("/dist07/slots/", Some(GetOptions::new().with_prefix()))
        .await
        .unwrap();
    assert_eq!(records.kvs().len(), 2, "one spec key and one slot record");
    a.close().await;
    b.close().await;
}

// DIST-08: Debian's etcd 3.4.23 predates the lease and revision fixes: it is
// refused, naming the bugs, unless the option accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_08_an_old_etcd_is_refused() {
    let cluster = Cluster::start(Etcd::Debian34, 1).await;
    let refused = Store::connect(&cluster.url("dist08"), ConnectOptions::default()).await;
    let e = refused.expect_err("etcd 3.4.23 was accepted");
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(
        e.message().contains("3.4.23") && e.message().contains("17780"),
        "{e}"
    );
    let store = Store::connect(
        &cluster.url("dist08"),
        ConnectOptions::default().accept_old_etcd(true),
    )
    .await
    .expect("accepted when asked");
    store.close().await;
}

// LOCK-14 on etcd: a user that may only read the prefix gets
// PermissionDenied on hold, with nothing granted or queued; a wrong
// password is refused Unauthenticated at connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_14_etcd_permissions() {
    let cluster = Cluster::start(Etcd::Current, 1).await;
    let mut admin = cluster.client().await;
    admin.user_add("root", "rootpw", None).await.expect("root");
    admin.role_add("root").await.expect("role root");
    admin
        .user_grant_role("root", "root")
        .await
        .expect("grant root");
    admin
        .user_add("reader", "readpw", None)
        .await
        .expect("reader");
    admin.role_add("read-leasehold").await.expect("role");
    admin
        .role_grant_permission("read-leasehold", Permission::read("/rbac/").with_prefix())
        .await
        .expect("permission");
    admin
        .user_grant_role("reader", "read-leasehold")
        .await
        .expect("grant");
    admin.auth_enable().await.expect("enable auth");
    let url = cluster.url("rbac");
    let wrong = Store::connect(&url, ConnectOptions::default().user("reader", "nope")).await;
    assert_eq!(
        wrong.expect_err("a wrong password was accepted").kind(),
        ErrorKind::Unauthenticated
    );
    let reader = Store::connect(&url, ConnectOptions::default().user("reader", "readpw"))
        .await
        .expect("the reader connects");
    let lock = reader.lock("l").ttl(Duration::from_secs(5)).open().unwrap();
    let denied = lock.try_begin("k").await;
    assert_eq!(
        denied.err().map(|e| e.kind()),
        Some(ErrorKind::PermissionDenied)
    );
    let writer = Store::connect(
        &format!("etcd://root:rootpw@{}/rbac", cluster.members[0].endpoint()),
        ConnectOptions::default(),
    )
    .await
    .expect("root connects with the URL's credentials");
    let lock = writer.lock("l").ttl(Duration::from_secs(5)).open().unwrap();
    let held = lock
        .try_begin("k")
        .await
        .expect("root may hold")
        .expect("free");
    held.end().await.expect("released");
    reader.close().await;
    writer.close().await;
}

// DIST-01: etcds:// with the CA to trust and a client certificate (etcd's
// --client-cert-auth); without the certificate the cluster refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dist_01_etcds_with_a_client_certificate() {
    let tls = etcd_tests::Tls::generate();
    let cluster = Cluster::start_tls(Etcd::Current, 1, tls.clone()).await;
    let url = cluster.url("tls");
    assert!(url.starts_with("etcds://"), "{url}");
    let options = ConnectOptions::default()
        .ca_pem(tls.ca_pem.clone())
        .client_cert(tls.client_cert_pem.clone(), tls.client_key_pem.clone());
    let store = Store::connect(&url, options)
        .await
        .expect("connect over TLS");
    let lock = store.lock("l").ttl(Duration::from_secs(5)).open().unwrap();
    let held = lock.try_begin("k").await.unwrap().expect("free");
    assert!(held.lease().fence() > 0);
    held.end().await.unwrap();
    store.close().await;
    let without = ConnectOptions::default().ca_pem(tls.ca_pem.clone());
    let refused = Store::connect(&url, without.clone()).await;
    assert!(refused.is_err(), "connected without a client certificate");
    let half = ConnectOptions {
        client_cert_pem: Some(tls.client_cert_pem.clone().into_bytes()),
        ..without
    };
    let e = Store::connect(&url, half)
        .await
        .expect_err("a certificate without its key");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}
