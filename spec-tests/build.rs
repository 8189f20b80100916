//! Turns every scenario file into a test case of `tests/scenarios.rs`, so
//! that each scenario passes or fails on its own and a filter selects it.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| name.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::new();
    let mut names = std::collections::HashSet::new();
    for file in &files {
        let stem = file.trim_end_matches(".json");
        let mut name: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            name.insert_str(0, "scenario_");
        }
        while !names.insert(name.clone()) {
            name.push('_');
        }
        writeln!(
            out,
            "#[test]\nfn {name}() {{\n    run_case({file:?});\n}}\n"
        )
        .unwrap();
    }
    writeln!(
        out,
        "/// Every scenario file this build saw.\nconst SCENARIO_FILES: &[&str] = &{files:?};"
    )
    .unwrap();
    let target =
        Path::new(&std::env::var("OUT_DIR").expect("set by cargo")).join("scenario_cases.rs");
    std::fs::write(target, out).expect("OUT_DIR is writable");
}
