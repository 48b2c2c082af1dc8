//! A decision run as a user runs it: quick, on a small load, resumed where a
//! step did not hold on this host, and that outcome said where it still
//! does not.

use super::{kvlab, succeeds};

/// `kvlab decide --quick` with 1-second runs and 16 connections.
pub const QUICK_DECIDE: [&str; 6] = [
    "decide",
    "--quick",
    "--duration",
    "1",
    "--connections",
    "16",
];

/// Runs `kvlab decide --quick` with 1-second runs, 16 connections and
/// `args` into a temporary directory (resumed where a step did not hold on
/// this host): its decision.json and its stdout; `None` where a step still
/// did not hold (exit 5, said): the outcome on a host too busy to measure,
/// whose caller then asserts no answer.
pub fn decide_quick(args: &[&str]) -> Option<(serde_json::Value, String)> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_string();
    let mut all = QUICK_DECIDE.to_vec();
    all.extend(args);
    let o = kvlab().args(&all).args(["--out", &out]).output().unwrap();
    let stdout = if o.status.code() == Some(5) {
        said_not_measured(&String::from_utf8_lossy(&o.stderr));
        resumed(&all, &out)?.pop().unwrap()
    } else {
        succeeds(&o);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let text = std::fs::read_to_string(dir.path().join("decision.json")).unwrap();
    assert!(dir.path().join("report.html").exists());
    assert!(stdout.contains("DECISION: "), "{stdout}");
    Some((serde_json::from_str(&text).unwrap(), stdout))
}

/// A decision's stderr on exit 5: it says which step could not be measured
/// and how to measure it again. Noted on the test's stderr.
pub fn said_not_measured(err: &str) {
    assert!(
        err.contains("could not be measured") && err.contains("--resume"),
        "{err}"
    );
    eprintln!("not measured on this host (exit 5): {}", err.trim());
}

/// `kvlab` with `flags` and `--resume out`, again (twice at most) while a
/// step does not hold (exit 5, said), as a user would: each resume's
/// stdout, the last one's decision in `out`; `None` where the last did not
/// hold either.
pub fn resumed(flags: &[&str], out: &str) -> Option<Vec<String>> {
    let mut said = Vec::new();
    for _ in 0..3 {
        let o = kvlab()
            .args(flags)
            .args(["--resume", out])
            .output()
            .unwrap();
        said.push(String::from_utf8_lossy(&o.stdout).into_owned());
        if o.status.code() != Some(5) {
            succeeds(&o);
            return Some(said);
        }
        said_not_measured(&String::from_utf8_lossy(&o.stderr));
    }
    None
}

/// A small load for a decision's tests: 20,000 keys of 1 KiB, 1:19, zipf.
pub const SMALL_DECISION: [&str; 8] = [
    "--keys",
    "20000",
    "--value-size",
    "1024",
    "--ratio",
    "1:19",
    "--key-distribution",
    "zipf",
];
