//! A decision beside a CPU hog says the host was busy. In a test binary of
//! its own: the hog would slow the other decisions' runs in `tests/decide.rs`,
//! which cargo runs beside each other.

mod common;

use serde_json::Value;

/// `kvlab decide --quick` on a small load with short runs; its JSON, after
/// checking its output says the host was busy.
fn decide(args: &[&str]) -> Value {
    let mut all = common::SMALL_DECISION.to_vec();
    all.extend(args);
    let (d, stdout) = common::decide_quick(&all);
    assert!(
        stdout.contains("NOTE: the host was busy during"),
        "{stdout}"
    );
    d
}

/// A CPU hog beside a decision: each step it took CPU in is said busy, in
/// the output and in the JSON. The hog is this test's own child, killed by
/// its pid.
#[test]
fn a_decision_beside_a_cpu_hog_says_the_host_was_busy() {
    let mut hog = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let d = decide(&["--rps", "500", "--p99-ms", "50"]);
    let _ = hog.kill();
    let _ = hog.wait();
    let busy = d["host_busy"].as_array().expect("busy steps");
    assert!(!busy.is_empty(), "{d}");
    assert!(
        busy.iter()
            .all(|b| b.as_str().unwrap().contains("other processes used")),
        "{busy:?}"
    );
}
