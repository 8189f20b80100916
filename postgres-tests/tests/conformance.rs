//! The driver conformance suite on a real PostgreSQL (PG-01), each check
//! on a store of its own schema; and the same behind a pooler (PG-02).

use std::sync::Arc;

use leasehold::postgres::PostgresDriver;
use leasehold::ConnectOptions;
use postgres_tests::pooler::PgBouncer;
use postgres_tests::{drop_schemas, fresh_schema, url_with};
use spec_tests::conformance::{self, Harness, Time};

/// Runs the suite with one driver per check, each on a fresh schema named
/// from `prefix`, connected at the URL `url_of` makes of that schema.
async fn passes_the_suite(prefix: &str, url_of: impl Fn(&str) -> String + Send + Sync) {
    drop_schemas(prefix).await;
    let report = conformance::run(|| {
        let url = url_of(&fresh_schema(prefix));
        async move {
            let driver = PostgresDriver::connect(
                &url,
                ConnectOptions::default().identity(conformance::IDENTITY),
                &tokio::runtime::Handle::current(),
            )
            .await
            .expect("connect to PostgreSQL");
            Harness {
                driver: Arc::new(driver),
                time: Time::Real,
            }
        }
    })
    .await;
    println!("{report}");
    report.assert_ok();
    assert_eq!(report.skipped_names(), ["no_ttl_never_expires"], "{report}");
    drop_schemas(prefix).await;
}

// PG-01, LOCK-01, LOCK-02, LOCK-03, LOCK-05, LOCK-08, LOCK-11, LOCK-12, LOCK-18:
// the conformance suite on PostgreSQL, one driver and schema per check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_01_postgres_passes_the_conformance_suite() {
    passes_the_suite("conformance", |schema| url_with(schema, "")).await;
}

// PG-02: behind PgBouncer in transaction mode (two server connections for
// every client of every check, so that consecutive calls of one store run
// on different sessions), with the listening connection going straight to
// PostgreSQL by `listen-host`, the conformance suite passes as it does direct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_02_the_suite_passes_behind_a_pooler_in_transaction_mode() {
    let direct: tokio_postgres::Config = postgres_tests::url().parse().expect("the test URL");
    let port = direct.get_ports()[0];
    let pooler = PgBouncer::start(port, 2);
    let base = pooler.url();
    passes_the_suite("pooled", |schema| {
        format!("{base}?schema={schema}&listen-host=127.0.0.1:{port}")
    })
    .await;
}
