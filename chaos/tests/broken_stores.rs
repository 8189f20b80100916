//! The checker's tests against the real server store broken on purpose
//! (`--broken`, a driver wrapper of the harness between the holder engine
//! and the server's driver): each breakage is caught by its rule, and the
//! same run unbroken passes. They start `leasehold serve` from beside the
//! harness's binary (`cargo build -p leasehold-server`) or `$LEASEHOLD_BIN`.

use std::process::Command;

/// Runs the harness for a few seconds without faults; its exit status and report.
fn run(extra: &[&str]) -> (bool, String) {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_leasehold-chaos"))
        .args([
            "run",
            "--seconds",
            "4",
            "--seed",
            "7",
            "--no-faults",
            "--long-every",
            "5",
        ])
        .arg("--out")
        .arg(out.path())
        .args(extra)
        .output()
        .expect("run leasehold-chaos");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains("violations: "),
        "the harness did not report (is target/*/leasehold built?):\n{stdout}\n{stderr}"
    );
    (output.status.success(), stdout)
}

#[test]
fn the_unbroken_store_passes() {
    let (ok, report) = run(&[]);
    assert!(ok, "{report}");
    assert!(report.contains("violations: 0"), "{report}");
}

// LOCK-01: a store that grants a held key again.
#[test]
fn a_store_that_grants_twice_is_caught() {
    let (ok, report) = run(&["--broken", "grant-twice"]);
    assert!(!ok, "{report}");
    assert!(
        report.contains("two holders at once (LOCK-01): "),
        "{report}"
    );
}

// LOCK-02: a store whose fences shrink.
#[test]
fn a_store_whose_fence_does_not_grow_is_caught() {
    let (ok, report) = run(&["--broken", "stale-fence"]);
    assert!(!ok, "{report}");
    assert!(
        report.contains("fence did not grow in grant order (LOCK-02): "),
        "{report}"
    );
}

// LOCK-04, LOCK-05: a driver that keeps its holders past their deadline.
#[test]
fn a_store_that_keeps_a_holder_past_its_deadline_is_caught() {
    let (ok, report) = run(&["--broken", "keep-past-deadline"]);
    assert!(!ok, "{report}");
    assert!(
        report.contains("two holders at once (LOCK-01): "),
        "{report}"
    );
    assert!(
        report.contains("renewal succeeded after the store let go (LOCK-05): "),
        "{report}"
    );
}
