//! The scenario loader of spec-tests: `Scenario::from_json`, the parse and
//! the checks every language's runner relies on, fed arbitrary text.
//!
//! Asserts: nothing panics; a scenario that loads keeps the checks
//! `from_json` makes (an id, contract IDs, steps); written back as JSON it
//! loads again as the same scenario, and writing that gives the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spec_tests::scenario::{is_contract_id, Scenario};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = Scenario::from_json(text) else {
        return;
    };
    assert!(!scenario.id.is_empty(), "a scenario without an id loaded");
    assert!(
        !scenario.contracts.is_empty() && scenario.contracts.iter().all(|c| is_contract_id(c)),
        "a scenario without valid contract IDs loaded: {:?}",
        scenario.contracts
    );
    assert!(
        !scenario.steps.is_empty(),
        "a scenario without steps loaded"
    );
    for step in &scenario.steps {
        assert!(!step.name().is_empty());
    }
    let written = serde_json::to_string(&scenario).expect("a loaded scenario writes as JSON");
    let again = Scenario::from_json(&written)
        .unwrap_or_else(|e| panic!("a written scenario does not load: {e}\n{written}"));
    assert_eq!(again, scenario, "the scenario changed through JSON");
    assert_eq!(
        serde_json::to_string(&again).expect("a loaded scenario writes as JSON"),
        written,
        "writing is not stable"
    );
});
