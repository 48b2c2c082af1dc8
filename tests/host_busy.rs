//! A decision beside a CPU hog says the host was busy. In a test binary of
//! its own: the hog would slow the other decisions' runs in `tests/decide.rs`,
//! which cargo runs beside each other (and there, those decisions are the
//! other processes that make every step busy).

mod common;

/// A CPU hog beside a decision: the step it took CPU in is said busy, in the
/// output and in the step's saved JSON (which a decision's `host_busy`
/// gathers). The decision is stopped once its first step is saved: one step
/// shows it. The hog is this test's own child, killed by its pid.
#[test]
fn a_decision_beside_a_cpu_hog_says_the_host_was_busy() {
    let mut hog = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = common::QUICK_DECIDE.to_vec();
    args.extend(common::SMALL_DECISION);
    args.extend(["--rps", "500", "--p99-ms", "50", "--out", out]);
    let (said, code, err) = common::interrupted_when(&args, |line| {
        line.starts_with("kvlab decide: the cache alone")
    });
    let _ = hog.kill();
    let _ = hog.wait();
    assert_eq!(code, Some(130), "{said}{err}");
    assert!(
        said.contains("NOTE: the host was busy during the database alone: other processes used"),
        "{said}"
    );
    let step: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("steps/01-database.json")).unwrap(),
    )
    .unwrap();
    let busy = step["host_busy"].as_str().expect("the step's host note");
    assert!(busy.contains("other processes used"), "{busy}");
}
