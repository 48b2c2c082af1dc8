//! `kvlab decide --check` against real managed servers (PostgreSQL, Redis):
//! a small quick decision saved by kvlab 0.1 (tests/fixtures/decision-0.1),
//! checked on this host by a run of what it sized; its check.json holds each figure predicted and measured, the
//! difference, the tolerance and a verdict the exit status follows. A
//! directory with no decision is refused in one line naming `--check`.

use crate::common;

use serde_json::Value;

fn json_at(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The decision's cache-aside row.
fn aside_row(d: &Value) -> &Value {
    d["architectures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "cache-aside")
        .unwrap()
}

/// A copy, in a new temporary directory, of the decision saved by kvlab 0.1
/// (tests/fixtures/decision-0.1); the directory and the copy's path.
pub fn fixture_copy() -> (tempfile::TempDir, std::path::PathBuf) {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decision-0.1");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("d");
    std::fs::create_dir_all(copy.join("steps")).unwrap();
    for entry in ["decision.json", "manifest.json"] {
        std::fs::copy(fixture.join(entry), copy.join(entry)).unwrap();
    }
    for step in std::fs::read_dir(fixture.join("steps")).unwrap() {
        let step = step.unwrap();
        std::fs::copy(step.path(), copy.join("steps").join(step.file_name())).unwrap();
    }
    (dir, copy)
}

/// The decision saved by kvlab 0.1 (a small quick one, below) checked on
/// this host: what it sized run, each figure held against its prediction.
#[test]
fn a_saved_decision_is_checked_by_a_run_of_what_it_sized() {
    let (_dir, out) = fixture_copy();
    let out_s = out.to_str().unwrap();
    let d = json_at(&out.join("decision.json"));
    let o = common::kvlab()
        .args(["decide", "--check", out_s])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    println!("{stdout}{stderr}");
    // On a host other work kept busy, the check's run cannot hold its rate:
    // said, and no check is written (the outcome where it could not measure).
    if !out.join("check.json").exists() && stderr.contains("not a valid measurement: not sustained")
    {
        eprintln!("not checked on this host: {}", stderr.trim());
        return;
    }
    let c = json_at(&out.join("check.json"));
    // The stated 20,000 keys fit: checked at them, at the copy's rate, with
    // the cache the decision chose.
    let checked = &c["checked"];
    assert_eq!(checked["keys"], 20_000, "{checked}");
    assert_eq!(checked["keys_why"], "the stated keys", "{checked}");
    assert_eq!(checked["rate_rps"], d["scaled"]["rate"], "{checked}");
    let row = aside_row(&d);
    if let Some(b) = checked["cache_memory_bytes"].as_u64() {
        assert_eq!(row["cache_memory_bytes"].as_u64(), Some(b), "{row}");
        assert_eq!(checked["cache_start"], "settle", "{checked}");
    }
    assert_eq!(c["decision"], d["decision"]["answer"]);
    assert_eq!(c["p99_goal_ms"], d["load"]["p99_ms"]);
    // Each figure predicted and measured, its difference and tolerance.
    let figures = c["figures"].as_array().unwrap();
    let names: Vec<&str> = figures
        .iter()
        .map(|f| f["figure"].as_str().unwrap())
        .collect();
    assert_eq!(names[..2], ["hit-ratio", "database-reads"], "{names:?}");
    assert_eq!(names.last(), Some(&"p99"), "{names:?}");
    assert!(
        names.iter().filter(|n| **n == "cpu-per-request").count() == 2,
        "{names:?}"
    );
    for f in figures {
        for k in [
            "predicted",
            "measured",
            "difference",
            "tolerance",
            "outcome",
        ] {
            assert!(f.get(k).is_some(), "{k} in {f}");
        }
    }
    let (hit, p99) = (&figures[0], &figures[names.len() - 1]);
    // At the stated keys the prediction is the decision's own hit ratio.
    let predicted = hit["predicted"].as_f64().unwrap();
    assert!(
        (predicted - row["hit_ratio"].as_f64().unwrap()).abs() < 1e-9,
        "{hit} {row}"
    );
    assert_eq!(hit["tolerance"]["within"], 0.03, "{hit}");
    // The same cache at the same keys and rate, settled: near the decision's.
    let measured = hit["measured"].as_f64().unwrap();
    assert!((measured - predicted).abs() < 0.2, "{hit}");
    assert_eq!(p99["tolerance"]["limit"], d["load"]["p99_ms"], "{p99}");
    // The verdict follows the figures, and the exit status the verdict,
    // each figure past its tolerance said in a line.
    let past = figures.iter().filter(|f| f["outcome"] == "past").count();
    let verdict = c["verdict"].as_str().unwrap();
    assert_eq!(verdict, if past > 0 { "fail" } else { "pass" }, "{c}");
    assert_eq!(o.status.success(), verdict == "pass", "{stdout}{stderr}");
    assert_eq!(stdout.matches("\nPAST: ").count(), past, "{stdout}");
    assert!(stdout.contains(&format!("CHECK: {verdict}")), "{stdout}");
    if verdict == "fail" {
        assert_eq!(o.status.code(), Some(3), "{stderr}");
        let last = stderr.trim_end().lines().last().unwrap_or_default();
        assert!(last.starts_with("Error: --check: fail"), "{stderr}");
    }
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("Check (kvlab decide --check)"), "{page}");
}

#[test]
fn a_check_of_a_directory_with_no_decision_says_check_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (what, fix) = (
        format!("--check: {d} holds no decision (no decision.json)"),
        format!("run kvlab decide with --out {d} first"),
    );
    let err = common::fails_saying(&["decide", "--check", d], &[&what, &fix]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // What the saved decision fixes is not asked again beside it.
    let err = common::fails_saying(
        &["decide", "--check", d, "--keys", "5"],
        &["--check", "--keys"],
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `kvlab decide --from dir --keep-saving pct`.
fn keep_saving(dir: &std::path::Path, pct: &str) -> std::process::Output {
    let dir = dir.to_str().unwrap();
    let args = ["decide", "--from", dir, "--keep-saving", pct];
    common::kvlab().args(args).output().unwrap()
}

/// A decision's last extrapolation.
fn last_said(d: &Value) -> &str {
    let all = d["extrapolations"].as_array().unwrap();
    all.last().and_then(Value::as_str).unwrap()
}

/// A decision saved before the roles, architectures, sources and flip
/// variables were typed (kvlab 0.1 at commit 875001d: `kvlab decide --quick
/// --duration 1 --connections 16 --keys 20000 --value-size 1024 --ratio 1:19
/// --key-distribution zipf --rps 2000 --p99-ms 20 --target-cores 2`) decides
/// again with `--from` to the same answer and figures, field for field.
#[test]
fn a_decision_saved_by_an_earlier_kvlab_decides_again_the_same() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decision-0.1");
    let (_dir, copy) = fixture_copy();
    let o = common::kvlab()
        .args(["decide", "--from", copy.to_str().unwrap()])
        .output()
        .unwrap();
    common::succeeds(&o);
    let before = json_at(&fixture.join("decision.json"));
    let mut again = json_at(&copy.join("decision.json"));
    // What it assumed is written now (kvlab's, as it was then), and said as
    // the last extrapolation; every other field, answer and figure alike,
    // is the same.
    let assumed = again
        .as_object_mut()
        .unwrap()
        .remove("assumptions")
        .unwrap();
    assert_eq!(assumed["policy"]["keep_saving"], 0.1);
    assert_eq!(
        assumed["method"]["curve_shares"],
        serde_json::json!([0.05, 0.15, 0.4])
    );
    let said = last_said(&again).to_string();
    assert!(
        said.starts_with("Assumed (decision.json's assumptions)"),
        "{said}"
    );
    again["extrapolations"].as_array_mut().unwrap().pop();
    // Its deployment is written now (own machines, as it was priced then),
    // and the answer's reason says the saving in money beside its share.
    let load = again["load"].as_object_mut().unwrap();
    assert_eq!(load.remove("deployment").unwrap()["deploy"], "own");
    let because = again["decision"]["because"].take();
    let was = before["decision"]["because"].as_str().unwrap();
    assert_eq!(
        because.as_str().unwrap(),
        was.replace(
            "at 200% of the cost:",
            "at 200% of the cost (costing 701 USD a month more):"
        ) + " (the rule asks 10% of the cost)"
    );
    // The copy's bytes per key are written now: its 1 KiB values and what
    // a key takes beside them (kvlab's 120 B).
    let scaled = again["scaled"].as_object_mut().unwrap();
    assert_eq!(scaled.remove("bytes_per_key").unwrap(), 1024 + 120);
    let mut before = before;
    before["decision"]["because"].take();
    assert_eq!(before, again);
    // The policy changed: a cache must save half the cost to be kept.
    let o = keep_saving(&copy, "50");
    common::succeeds(&o);
    let stricter = json_at(&copy.join("decision.json"));
    assert_eq!(stricter["assumptions"]["policy"]["keep_saving"], 0.5);
    assert_eq!(stricter["architectures"], before["architectures"]);
    let last = last_said(&stricter);
    assert!(last.contains("saves 50% of the cost"), "{last}");
    let o = keep_saving(&copy, "120");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--keep-saving") && err.lines().count() == 1,
        "{err}"
    );
    // Asked again with a tighter goal: every saved run judged anew, the
    // database's capacity within it no higher than within the looser one.
    // The cache alone's runs all miss 10 ms where kvlab itself could not
    // keep up (its lowest rate, 24,985 req/s, sent late): no answer is made
    // from them, said, the decision written, exit 5.
    let o = common::kvlab()
        .args(["decide", "--from", copy.to_str().unwrap(), "--p99-ms", "10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(5), "{err}");
    assert!(
        err.contains("not-measured: kvlab could not measure what the answer rests on")
            && err.contains("the cache alone: no rate within the goal"),
        "{err}"
    );
    let tighter = json_at(&copy.join("decision.json"));
    assert_eq!(tighter["decision"]["answer"], "not-measured");
    assert!(tighter["flips"].as_array().unwrap().is_empty());
    assert_eq!(tighter["load"]["p99_ms"], 10.0);
    let capacity = |d: &Value| {
        d["architectures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "database")
            .and_then(|r| r["capacity_rps"].as_f64())
    };
    let (loose, tight) = (capacity(&before).unwrap(), capacity(&tighter));
    assert!(tight.is_none_or(|t| t <= loose), "{tight:?} > {loose}");
}

/// `kvlab decide --from` the saved decision with `args` beside; its
/// decision.json.
fn from_with(copy: &std::path::Path, args: &[&str]) -> Value {
    let o = common::kvlab()
        .args(["decide", "--from", copy.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    common::succeeds(&o);
    json_at(&copy.join("decision.json"))
}

/// Each row's (name, machines, monthly cost).
fn bills(d: &Value) -> Vec<(Value, Value, Value)> {
    d["architectures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].clone(),
                r["machines"].clone(),
                r["monthly_cost"].clone(),
            )
        })
        .collect()
}

/// The saved decision priced on a catalog's shapes (each bill recomputable
/// from its fields), then back on own machines of 16 cores and 64 GiB at
/// the example prices: the answer and figures it was saved with.
#[test]
fn a_saved_decision_is_priced_on_shapes_and_again_on_own_machines() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decision-0.1");
    let before = json_at(&fixture.join("decision.json"));
    let (_dir, copy) = fixture_copy();
    let d = from_with(&copy, &["--deploy", "aws-managed"]);
    assert_eq!(d["load"]["deployment"]["deploy"], "aws-managed");
    assert_eq!(d["load"]["deployment"]["catalog"]["name"], "aws-us-east-1");
    assert_eq!(d["load"]["currency"], "USD");
    for row in d["architectures"].as_array().unwrap() {
        let servers = row["servers"].as_array().unwrap();
        let mut sum = 0.0;
        for s in servers {
            let p = &s["placed"];
            let each = p["count"].as_f64().unwrap() * p["hour"].as_f64().unwrap() * 730.0;
            let whole = each + p["storage_month"].as_f64().unwrap();
            assert!((whole - p["monthly"].as_f64().unwrap()).abs() < 1e-6, "{p}");
            assert!(
                p["shape"].as_str().unwrap().starts_with("db.")
                    || p["shape"].as_str().unwrap().starts_with("cache."),
                "{p}"
            );
            sum += whole;
        }
        assert!(
            (sum - row["monthly_cost"].as_f64().unwrap()).abs() < 1e-6,
            "{row}"
        );
    }
    // 0.18 cores and 25 MiB of postgres: db.t4g.micro (2 vCPU at 10%, 0.2
    // sustained) 0.016 × 730 + 20 GB × 0.115 = 13.98.
    let db = &d["architectures"][0];
    assert_eq!(db["servers"][0]["placed"]["shape"], "db.t4g.micro");
    assert!((db["monthly_cost"].as_f64().unwrap() - 13.98).abs() < 0.005);
    let rows: Vec<&str> = d["architectures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(rows.contains(&"cache-aside-loss-sized"), "{rows:?}");
    // On virtual machines and on the other providers' catalogs too.
    for deploy in ["aws-vms", "gcp-managed", "gcp-vms", "azure-vms"] {
        let d = from_with(&copy, &["--deploy", deploy]);
        assert_eq!(d["load"]["deployment"]["deploy"], deploy);
        assert!(
            d["architectures"][0]["monthly_cost"].as_f64().unwrap() > 0.0,
            "{deploy}"
        );
    }
    // Back on own machines: the answer and every row's machines and cost as
    // saved.
    let own = from_with(
        &copy,
        &[
            "--deploy",
            "own",
            "--machine-cores",
            "16",
            "--machine-gib",
            "64",
        ],
    );
    assert_eq!(own["decision"]["answer"], before["decision"]["answer"]);
    assert_eq!(bills(&own), bills(&before));
    assert_eq!(own["load"]["example_prices"], true);
}

/// Deployment flags that cannot be priced are refused in one line naming
/// the flag and the fix; `kvlab prices` lists every catalog with its date.
#[test]
fn deployments_refuse_what_they_cannot_price_and_prices_lists_the_catalogs() {
    let (_dir, copy) = fixture_copy();
    let c = copy.to_str().unwrap();
    common::fails_saying(
        &["decide", "--from", c, "--deploy", "nowhere"],
        &["--deploy", "aws-managed"],
    );
    common::fails_saying(
        &[
            "decide",
            "--from",
            c,
            "--deploy",
            "aws-vms",
            "--machine-cores",
            "4",
        ],
        &["--deploy", "--machine-cores", "give --deploy own"],
    );
    common::fails_saying(
        &[
            "decide", "--from", c, "--deploy", "own", "--prices", "x.toml",
        ],
        &["--prices"],
    );
    common::fails_saying(
        &["decide", "--from", c, "--deploy", "aws-vms", "--multi-az"],
        &["--multi-az"],
    );
    common::fails_saying(
        &["decide", "--from", c, "--deploy", "managed"],
        &["--prices FILE"],
    );
    let bad = copy.join("bad.toml");
    std::fs::write(&bad, "name = 3\n").unwrap();
    common::fails_saying(
        &["decide", "--from", c, "--prices", bad.to_str().unwrap()],
        &["--prices", "is not a price catalog"],
    );
    let o = common::kvlab().args(["prices"]).output().unwrap();
    common::succeeds(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    for name in ["aws-us-east-1", "gcp-us-central1", "azure-eastus"] {
        assert!(text.contains(&format!("\n{name}  ")), "{name}: {text}");
    }
    assert!(text.contains("put together 2026-12-07"), "{text}");
    let o = common::kvlab()
        .args(["prices", "aws-us-east-1", "--json", "-"])
        .output()
        .unwrap();
    common::succeeds(&o);
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let cat = &listed[0]["catalog"];
    let sources = cat["sources"].as_object().unwrap();
    for kind in ["vm", "database", "cache"] {
        for row in cat[kind].as_array().unwrap() {
            let src = row["source"].as_str().unwrap();
            assert!(sources.contains_key(src), "{row}");
            assert!(sources[src]["date"].as_str().unwrap().len() == 10);
        }
    }
}

/// A team's own catalog of virtual machines (`--prices FILE`, no
/// `--deploy`): the decision priced on its machines, in its currency.
#[test]
fn a_teams_own_catalog_prices_the_decision_in_its_currency() {
    let (_dir, copy) = fixture_copy();
    let file = copy.join("ours.toml");
    std::fs::write(
        &file,
        "name = \"ours\"\nprovider = \"hetzner\"\nregion = \"fsn1\"\ncurrency = \"EUR\"\ndate = \"2026-11-30\"\n[sources.INV]\ncites = \"our invoice\"\ndate = \"2026-11-30\"\n[[vm]]\nservice = \"Cloud\"\nname = \"cx22\"\nvcpu = 2\ngib = 4\nhour = 0.006\nsource = \"INV\"\n",
    )
    .unwrap();
    let d = from_with(&copy, &["--prices", file.to_str().unwrap()]);
    assert_eq!(d["load"]["deployment"]["deploy"], "vms");
    assert_eq!(d["load"]["currency"], "EUR");
    // 0.18 cores and 25 MiB on cx22 (2 vCPU, 4 × 0.75 GiB): 0.006 × 730.
    let db = &d["architectures"][0];
    assert_eq!(db["servers"][0]["placed"]["shape"], "cx22");
    assert!((db["monthly_cost"].as_f64().unwrap() - 4.38).abs() < 0.005);
}
