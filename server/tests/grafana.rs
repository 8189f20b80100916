//! The Grafana dashboard (docs/grafana/leasehold.json) against a running
//! server: every metric it queries is one the server exports, and every
//! metric the server exports is on it.

mod common;

use std::collections::BTreeSet;

use common::{data_dir, scrape, ServerProcess};

/// The metric names in a PromQL expression: every `leasehold_…` word.
fn names_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("leasehold_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out
}

/// Every `expr` of every panel's targets, with the panel's title.
fn queries(dashboard: &serde_json::Value) -> Vec<(String, String)> {
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut out = Vec::new();
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or("?").to_owned();
        let targets = panel["targets"]
            .as_array()
            .expect("every panel has targets");
        assert!(!targets.is_empty(), "panel {title:?} queries nothing");
        for t in targets {
            let expr = t["expr"].as_str().expect("a target's expr");
            out.push((title.clone(), expr.to_owned()));
        }
    }
    out
}

#[tokio::test]
async fn every_metric_the_dashboard_queries_exists_and_every_metric_is_on_it() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/grafana/leasehold.json"
    );
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).unwrap();
    let dir = data_dir();
    let server = ServerProcess::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let text = scrape(server.metrics.expect("metrics")).await;
    let series: BTreeSet<&str> = text
        .lines()
        .filter(|l| l.starts_with("leasehold_"))
        .map(|l| l.split(['{', ' ']).next().unwrap_or(l))
        .collect();
    let families: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert!(families.len() >= 10, "too few metrics scraped:\n{text}");

    let mut queried = BTreeSet::new();
    for (title, expr) in queries(&dashboard) {
        let names = names_in(&expr);
        assert!(!names.is_empty(), "panel {title:?}: {expr} names no metric");
        for name in names {
            assert!(
                series.contains(name.as_str()),
                "panel {title:?} queries {name}, which the server does not export:\n{text}"
            );
            queried.insert(name);
        }
    }
    for family in &families {
        let on_dashboard = queried
            .iter()
            .any(|q| q == family || q.strip_prefix(family).is_some_and(|s| s.starts_with('_')));
        assert!(on_dashboard, "{family} is on no panel of the dashboard");
    }
}
