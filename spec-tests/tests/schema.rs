//! The scenario format's JSON Schema (`spec-tests/schema.json`, draft 2020-12)
//! against the scenario files and against the Rust format types: both must
//! accept every scenario file, and both must refuse unknown steps and fields.

use jsonschema::{Draft, JSONSchema};
use leasehold::ErrorKind;
use serde_json::{json, Value};
use spec_tests::scenario::{Scenario, Step};

fn schema_value() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema.json");
    let text = std::fs::read_to_string(path).expect("schema.json reads");
    serde_json::from_str(&text).expect("schema.json is JSON")
}

fn schema() -> JSONSchema {
    let value = schema_value();
    assert_eq!(
        value["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "the schema is draft 2020-12"
    );
    JSONSchema::options()
        .with_draft(Draft::Draft202012)
        .compile(&value)
        .expect("schema.json is a valid draft 2020-12 schema")
}

fn schema_errors(schema: &JSONSchema, instance: &Value) -> Vec<String> {
    match schema.validate(instance) {
        Ok(()) => Vec::new(),
        Err(errors) => errors
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect(),
    }
}

#[test]
fn every_scenario_file_matches_the_schema_and_the_format() {
    let schema = schema();
    let files = spec_tests::runner::scenario_files().expect("the scenario folder reads");
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
        let errors = schema_errors(&schema, &value);
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
        spec_tests::runner::load(&path).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The step names in the schema, in its order.
fn schema_step_names() -> Vec<String> {
    let value = schema_value();
    value["$defs"]["step"]["oneOf"]
        .as_array()
        .expect("$defs.step is a oneOf")
        .iter()
        .map(|r| {
            let name = r["$ref"]
                .as_str()
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .expect("a local $ref");
            value["$defs"][name]["properties"]["step"]["const"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} has no step const"))
                .to_owned()
        })
        .collect()
}

#[test]
fn the_schema_and_the_format_have_the_same_steps() {
    assert_eq!(schema_step_names(), Step::NAMES);
}

#[test]
fn the_schema_knows_every_error_code_and_no_other() {
    let value = schema_value();
    let codes: Vec<&str> = value["$defs"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
    assert_eq!(codes, kinds);
}

fn scenario_with(step: Value) -> Value {
    json!({
        "id": "x", "contracts": ["LOCK-01"], "title": "t",
        "store": {"renewal": false, "push": true},
        "steps": [{"step": "open_lock", "lock": "l"}, step]
    })
}

/// Both the schema and the Rust format refuse `instance`.
fn both_refuse(schema: &JSONSchema, instance: &Value, why: &str) {
    assert!(
        !schema.is_valid(instance),
        "the schema accepts {why}: {instance}"
    );
    assert!(
        Scenario::from_json(&instance.to_string()).is_err(),
        "the format accepts {why}: {instance}"
    );
}

#[test]
fn unknown_steps_fields_and_values_are_refused_not_skipped() {
    let schema = schema();
    let good = scenario_with(
        json!({"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "granted"}),
    );
    assert!(schema.is_valid(&good));
    Scenario::from_json(&good.to_string()).unwrap();

    let cases = [
        (json!({"step": "sleep", "by": "1s"}), "an unknown step"),
        (json!({"by": "1s"}), "a step without a name"),
        (
            json!({"step": "advance", "by": "1s", "jitter": true}),
            "an unknown field",
        ),
        (
            json!({"step": "close", "now": true}),
            "an unknown field on a step without fields",
        ),
        (
            json!({"step": "hold", "holder": "a", "lock": "l", "key": "k"}),
            "a hold without an expectation",
        ),
        (
            json!({"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "granted", "expect_error": "Lost"}),
            "two expectations",
        ),
        (
            json!({"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect": "maybe"}),
            "an unknown expectation",
        ),
        (
            json!({"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect_error": "LOST"}),
            "an error code not written as ErrorKind::code()",
        ),
        (
            json!({"step": "hold", "holder": "a", "lock": "l", "key": "k", "expect_error": "Nope"}),
            "an unknown error code",
        ),
        (
            json!({"step": "expect_lost", "holder": "a", "reason": "stolen"}),
            "an unknown loss reason",
        ),
        (
            json!({"step": "expect_lost", "holder": "a"}),
            "a missing field",
        ),
        (
            json!({"step": "end", "holder": "a", "by": "explode"}),
            "an unknown way to end",
        ),
        (
            json!({"step": "end", "holder": "a", "expect_cause": "boom"}),
            "a cause without an error",
        ),
        (
            json!({"step": "end", "holder": "a", "message": "boom"}),
            "a message for a function that returns",
        ),
        (
            json!({"step": "extend", "holder": "a", "by": "1s", "tasks": 0}),
            "zero tasks",
        ),
        (
            json!({"step": "advance", "by": 5}),
            "a duration that is not a string",
        ),
    ];
    for (step, why) in cases {
        both_refuse(&schema, &scenario_with(step), why);
    }

    let mut top = good.clone();
    top["seed"] = json!(1);
    both_refuse(&schema, &top, "an unknown top-level field");
    let mut store = good.clone();
    store["store"]["clock"] = json!("real");
    both_refuse(&schema, &store, "an unknown store field");
    let mut contract = good.clone();
    contract["contracts"] = json!(["LOCK-1"]);
    both_refuse(&schema, &contract, "a malformed contract ID");
    let mut none = good;
    none["contracts"] = json!([]);
    both_refuse(&schema, &none, "no contract");
}
