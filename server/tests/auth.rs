//! Tokens and roles (LOCK-14), and TLS, over real sockets.

mod common;

use std::sync::Arc;

use common::{code, data_dir, Client, ServerProcess};
use leasehold::remote::protocol::{Reply, Request, Role, ServerFrame};
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

const TOKENS: &str = "# who may do what\nwriter-token write\nreader-token read # dashboards\n";

fn with_tokens(dir: &tempfile::TempDir) -> ServerProcess {
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, TOKENS).unwrap();
    let data = dir.path().join("data");
    ServerProcess::start(&data, &["--tokens", tokens.to_str().unwrap()])
}

// LOCK-14: without a token, or with one the server does not know, the
// connection is refused Unauthenticated at connect and closed.
#[tokio::test]
async fn lock_14_a_missing_or_unknown_token_is_unauthenticated() {
    let dir = data_dir();
    let server = with_tokens(&dir);
    for token in [None, Some("guess"), Some("")] {
        let mut c = Client::connect(server.addr).await;
        let bye = match c.hello(token).await {
            ServerFrame::Goodbye(e) => e,
            other => panic!("expected a goodbye for {token:?}, got {other:?}"),
        };
        assert_eq!(bye.code, "Unauthenticated", "{token:?}");
        assert!(c.recv().await.is_none(), "closed after the goodbye");
    }
    match Client::connect(server.addr)
        .await
        .hello(Some("writer-token"))
        .await
    {
        ServerFrame::Welcome { role, .. } => assert_eq!(role, Role::Write),
        other => panic!("expected a welcome, got {other:?}"),
    }
}

// LOCK-14: a connection admitted only to read may list and ping, but its
// holds fail PermissionDenied and nothing is granted or queued. WHO-02: it
// may list holders and ask who holds a key.
#[tokio::test]
async fn lock_14_a_read_only_connection_may_not_hold_and_nothing_is_queued() {
    let dir = data_dir();
    let server = with_tokens(&dir);
    let mut reader = Client::connect(server.addr).await;
    match reader.hello(Some("reader-token")).await {
        ServerFrame::Welcome { role, .. } => assert_eq!(role, Role::Read),
        other => panic!("expected a welcome, got {other:?}"),
    }
    let mut writer = Client::welcomed(server.addr, Some("writer-token")).await;

    // A free key: not granted to the reader.
    assert_eq!(
        code(&reader.hold("jobs", "free", 1, false).await),
        "PermissionDenied"
    );
    assert_eq!(
        code(&reader.hold("jobs", "free", 2, true).await),
        "PermissionDenied"
    );
    let free = writer.granted("jobs", "free", 3).await;

    // A held key: the reader is not queued behind the holder.
    let held = writer.granted("jobs", "held", 4).await;
    assert_eq!(
        code(&reader.hold("jobs", "held", 5, true).await),
        "PermissionDenied"
    );
    writer.release(held.lease_id).await;
    writer.granted("jobs", "held", 6).await;
    reader.assert_no_push().await;

    // The other writes are refused too; listing is allowed.
    for body in [
        Request::Renew {
            leases: vec![(free.lease_id, 5_000)],
        },
        Request::Release {
            lease_id: free.lease_id,
        },
        Request::GiveUp { request_id: 2 },
    ] {
        assert_eq!(code(&reader.request(body).await), "PermissionDenied");
    }
    match reader
        .request(Request::List {
            lock: Some("jobs".into()),
        })
        .await
    {
        Ok(Reply::Holders(h)) => assert_eq!(h.len(), 2),
        other => panic!("expected Holders, got {other:?}"),
    }
    // WHO-02: so is asking who holds one key; the answer names the writer.
    match reader
        .request(Request::Holder {
            lock: "jobs".into(),
            key: "free".into(),
        })
        .await
    {
        Ok(Reply::Holder(Some(h))) => {
            assert_eq!((h.fence, h.identity.as_str()), (free.fence, "test"))
        }
        other => panic!("expected the holder, got {other:?}"),
    }
    writer.release(free.lease_id).await;
}

// TLS: with --tls-cert and --tls-key, connections speak TLS (rustls).
#[tokio::test]
async fn tls_connections_are_served() {
    let dir = data_dir();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let server = ServerProcess::start(
        &dir.path().join("data"),
        &[
            "--tls-cert",
            cert_path.to_str().unwrap(),
            "--tls-key",
            key_path.to_str().unwrap(),
        ],
    );

    let mut roots = RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let mut c = Client::over(tls);
    assert!(matches!(c.hello(None).await, ServerFrame::Welcome { .. }));
    let g = c.granted("jobs", "k", 1).await;
    c.release(g.lease_id).await;

    // A client that speaks plain TCP to the TLS port gets nowhere, and the
    // server carries on.
    let mut plain = Client::connect(server.addr).await;
    plain
        .send(&leasehold::remote::protocol::ClientFrame::Hello {
            version: leasehold::remote::protocol::VERSION,
            token: None,
            identity: "test".into(),
        })
        .await;
    assert!(plain.recv().await.is_none());
    assert_eq!(c.request(Request::Ping).await, Ok(Reply::Pong));
}
