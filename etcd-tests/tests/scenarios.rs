//! The shared scenarios of `spec-tests/` that move no clock, on etcd: the
//! same files every language's runner loads.

use etcd_tests::{Cluster, Etcd};
use spec_tests::runner;

// DIST-01: every shared scenario that applies to a store on real time
// passes on etcd, each under a key prefix of its own.
#[test]
fn dist_01_the_shared_scenarios_pass_on_etcd() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let cluster = runtime.block_on(Cluster::start(Etcd::Current, 1));
    let mut ran = Vec::new();
    for path in runner::scenario_files().expect("the scenario folder") {
        let scenario = runner::load(&path).unwrap_or_else(|f| panic!("{f}"));
        if !runner::applies_to_server(&scenario) {
            continue;
        }
        let url = cluster.url(&format!("scenario-{}", scenario.id));
        runner::run_on_server(&scenario, &url).unwrap_or_else(|f| panic!("{f}"));
        ran.push(scenario.id);
    }
    println!("ran on etcd: {ran:?}");
    assert!(ran.len() >= 4, "only {ran:?} ran");
}
