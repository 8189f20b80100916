//! The shared scenarios of `spec-tests/` that move no clock, on PostgreSQL:
//! the same files every language's runner loads.

use postgres_tests::{fresh_schema, url_with};
use spec_tests::runner;

// PG-01: every shared scenario that applies to a store on real time
// passes on PostgreSQL, each on a schema of its own.
#[test]
fn pg_01_the_shared_scenarios_pass_on_postgres() {
    let mut ran = Vec::new();
    for path in runner::scenario_files().expect("the scenario folder") {
        let scenario = runner::load(&path).unwrap_or_else(|f| panic!("{f}"));
        if !runner::applies_to_server(&scenario) {
            continue;
        }
        // A schema name holds at most 63 characters, 17 of them fresh_schema's.
        let mut prefix = format!("scenario_{}", scenario.id.to_lowercase().replace('-', "_"));
        prefix.truncate(40);
        let url = url_with(&fresh_schema(&prefix), "");
        runner::run_on_server(&scenario, &url).unwrap_or_else(|f| panic!("{f}"));
        ran.push(scenario.id);
    }
    println!("ran on PostgreSQL: {ran:?}");
    assert!(ran.len() >= 4, "only {ran:?} ran");
}
