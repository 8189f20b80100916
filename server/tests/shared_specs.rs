//! The shared specs of `spec-tests/` on the server store: the driver
//! conformance suite through the core's network driver, and every shared
//! scenario that applies to a store on real time.

mod support;

use std::sync::Arc;

use leasehold::remote::{ConnectOptions, RemoteDriver};
use spec_tests::conformance::{self, Harness, Time};
use spec_tests::runner;
use support::data_dir;
use support::server::ServerProcess;

// LOCK-01, LOCK-02, LOCK-03, LOCK-05, LOCK-08, LOCK-11, LOCK-12, LOCK-18: the conformance suite
// against the server store, one connection per check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_store_passes_the_conformance_suite() {
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &[]);
    let url = server.url();
    let report = conformance::run(|| {
        let url = url.clone();
        async move {
            let driver = RemoteDriver::connect(
                &url,
                ConnectOptions::default().identity(conformance::IDENTITY),
                &tokio::runtime::Handle::current(),
            )
            .await
            .expect("connect to the server store");
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
}

#[test]
fn the_shared_scenarios_pass_on_the_server_store() {
    let mut ran = Vec::new();
    for path in runner::scenario_files().expect("the scenario folder") {
        let scenario = runner::load(&path).unwrap_or_else(|f| panic!("{f}"));
        if !runner::applies_to_server(&scenario) {
            continue;
        }
        let dir = data_dir();
        let server = ServerProcess::start(dir.path(), &[]);
        runner::run_on_server(&scenario, &server.url()).unwrap_or_else(|f| panic!("{f}"));
        ran.push(scenario.id);
    }
    println!("ran on the server store: {ran:?}");
    assert!(ran.len() >= 4, "only {ran:?} ran");
}
