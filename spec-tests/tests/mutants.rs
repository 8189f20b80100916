//! Every scenario can fail: each expectation of each scenario file is
//! changed, one at a time, into another valid expectation, and the runner
//! must then fail that scenario at exactly that step. An expectation that
//! a mutant leaves passing would assert nothing.

use serde_json::{json, Value};
use spec_tests::runner;
use spec_tests::scenario::Scenario;

/// The other expectations a step could have had, each a valid step.
fn mutants(step: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let kind = step["step"].as_str().unwrap_or_default();
    let with = |field: &str, value: Value| {
        let mut s = step.clone();
        s[field] = value;
        s
    };
    let without = |field: &str| {
        let mut s = step.clone();
        s.as_object_mut().unwrap().remove(field);
        s
    };
    let swap_expect_for_error = |code: &str| {
        let mut s = step.clone();
        let o = s.as_object_mut().unwrap();
        o.remove("expect");
        o.insert("expect_error".into(), json!(code));
        s
    };
    let has = |field: &str| step.get(field).is_some();
    match kind {
        "hold" | "acquire" | "try_hold" | "try_acquire" => {
            let other = match (kind, step["expect"].as_str()) {
                ("hold" | "acquire", Some("granted")) => Some("waiting"),
                ("hold" | "acquire", Some("waiting")) => Some("granted"),
                (_, Some("granted")) => Some("not_held"),
                (_, Some("not_held")) => Some("granted"),
                _ => None,
            };
            if let Some(other) = other {
                out.push(with("expect", json!(other)));
                out.push(swap_expect_for_error("Internal"));
            }
            if has("expect_error") {
                out.push(with("expect_error", json!("Internal")));
            }
        }
        "open_lock" | "extend" | "release" | "end" => {
            if has("expect_error") {
                out.push(with("expect_error", json!("Internal")));
                let mut ok = without("expect_error");
                ok.as_object_mut().unwrap().remove("expect_cause");
                out.push(ok);
            } else {
                out.push(swap_expect_for_error("Internal"));
            }
            if kind == "end" {
                let other = match step["expect"].as_str().unwrap_or("ok") {
                    "ok" => "function_error",
                    _ => "ok",
                };
                if !has("expect_error") {
                    out.push(with("expect", json!(other)));
                }
                if has("expect_cause") {
                    out.push(with("expect_cause", json!("not the function's error")));
                }
            }
        }
        "expect_granted" => out.push(with("step", json!("expect_waiting"))),
        "expect_waiting" => out.push(with("step", json!("expect_granted"))),
        "expect_failed" => out.push(with("error", json!("Internal"))),
        "expect_lost" => {
            let other = if step["reason"] == "expired" {
                "revoked"
            } else {
                "expired"
            };
            out.push(with("reason", json!(other)));
            let mut s = without("reason");
            s["step"] = json!("expect_not_lost");
            out.push(s);
        }
        "expect_not_lost" => {
            let mut s = with("step", json!("expect_lost"));
            s["reason"] = json!("expired");
            out.push(s);
        }
        "expect_remaining" => {
            let r = step["remaining"].as_str().unwrap_or_default();
            if r == "none" {
                out.push(with("remaining", json!("1s")));
            } else {
                out.push(with("remaining", json!("none")));
                out.push(with("remaining", json!(format!("{r} 1ms"))));
            }
        }
        "expect_fence_greater" => {
            let mut s = step.clone();
            s["holder"] = step["than"].clone();
            s["than"] = step["holder"].clone();
            out.push(s);
        }
        _ => {}
    }
    out
}

#[test]
fn every_expectation_of_every_scenario_can_fail() {
    let mut mutants_run = 0;
    let mut survivors = Vec::new();
    for path in runner::scenario_files().unwrap() {
        let original: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let steps = original["steps"].as_array().unwrap();
        let mut asserting_steps = 0;
        for (i, step) in steps.iter().enumerate() {
            let list = mutants(step);
            if !list.is_empty() {
                asserting_steps += 1;
            }
            for mutant in list {
                let mut scenario = original.clone();
                scenario["steps"][i] = mutant.clone();
                let parsed = Scenario::from_json(&scenario.to_string())
                    .unwrap_or_else(|e| panic!("a mutant does not load: {mutant}: {e}"));
                mutants_run += 1;
                match runner::run(&parsed) {
                    Err(f) if f.step == Some(i) => {}
                    Err(f) => survivors.push(format!(
                        "{}: step {i} mutated to {mutant} failed elsewhere: {f}",
                        path.display()
                    )),
                    Ok(()) => survivors.push(format!(
                        "{}: step {i} mutated to {mutant} still passes",
                        path.display()
                    )),
                }
            }
        }
        assert!(
            asserting_steps >= 3,
            "{}: only {asserting_steps} steps assert anything",
            path.display()
        );
    }
    assert!(mutants_run > 100, "only {mutants_run} mutants");
    assert!(
        survivors.is_empty(),
        "{} survivors:\n{}",
        survivors.len(),
        survivors.join("\n")
    );
}
