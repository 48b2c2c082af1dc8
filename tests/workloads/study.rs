//! Studies and reports: a tiny study runs end to end against a managed server,
//! an interrupted study keeps its finished points, the report of a fixed results
//! file matches its snapshot, and every chart in the HTML has data.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kvlab::modes::study;
use kvlab::report;
use kvlab::results::study::StudyResult;
use kvlab::runner::RunOptions;

/// Two connection counts against a managed memcached.
fn tiny() -> String {
    let head = common::study_head("tiny", "two connection counts against memcached", 0.6, 0.2);
    head + r#"[goal]
p99_ms = 50
[workload]
keys = 2000
value_size = 64
[[target]]
target = "memcached"
[sweep]
connections = [2, 8]
"#
}

fn run_tiny(text: &str, dir: &Path, stop: &AtomicBool) -> StudyResult {
    let s = study::parse(text, "tiny.toml").unwrap();
    let path = study::exec::run(&s, dir, RunOptions::default(), stop, &mut |_, _| {}).unwrap();
    StudyResult::read(&path).unwrap()
}

#[test]
fn a_tiny_study_runs_end_to_end_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_tiny(&tiny(), dir.path(), &AtomicBool::new(false));
    assert_eq!((r.planned, r.points.len()), (2, 2));
    assert!(r.points.iter().all(|p| {
        p.result
            .as_ref()
            .is_some_and(|x| x.totals.errors == 0 && x.totals.requests > 0)
    }));
    assert!(r.machine.cores >= 1 && !r.machine.kernel.is_empty());
    // Data is loaded once per server: the second point reuses it.
    assert!(r.points[0].result.as_ref().unwrap().load.is_some());
    assert!(r.points[1].result.as_ref().unwrap().load.is_none());
    let rep = report::build(std::slice::from_ref(&r));
    assert!(
        rep.verdict.iter().any(|v| v.contains("memcached: best")),
        "{:?}",
        rep.verdict
    );
    let html = String::from_utf8(report::html::render(&rep)).unwrap();
    check_html(&html, rep.charts.len());
}

/// Every chart is an inline SVG with at least one data point; nothing external.
fn check_html(html: &str, charts: usize) {
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert_eq!(html.matches("<svg").count(), charts);
    assert!(charts >= 4, "{charts}");
    for svg in html.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").unwrap()];
        assert!(svg.contains("<circle"), "a chart without data");
        assert!(
            svg.contains("font-weight=\"bold\""),
            "a chart without a title"
        );
    }
    assert!(
        !html.contains("http://")
            || html.matches("http://").count()
                == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    assert!(!html.contains("<script"));
}

/// A study's rate that steps up: its point's seconds carry the offer of
/// each, and report.html draws the offer dashed beside what was carried.
#[test]
fn a_stepped_rate_is_offered_second_by_second_and_charted() {
    let head = common::study_head("stepped", "a rate that steps up", 4.0, 0.5);
    let text = head
        + r#"[workload]
keys = 2000
value_size = 64
[load]
connections = 4
rate = 3000
rate_shape = "step:ratio=3"
[[target]]
target = "memcached"
"#;
    let dir = tempfile::tempdir().unwrap();
    let r = run_tiny(&text, dir.path(), &AtomicBool::new(false));
    let res = r.points[0].result.as_ref().unwrap();
    let offered: Vec<f64> = res
        .timeline
        .iter()
        .filter_map(|s| Some(s.offered_rps?.round()))
        .collect();
    assert_eq!(
        offered,
        [1000.0, 1000.0, 3000.0, 3000.0],
        "{:?}",
        res.timeline
    );
    let html = String::from_utf8(report::html::render(&report::build(&[r]))).unwrap();
    assert!(html.contains("memcached offered"), "the offer is charted");
    let e = study::parse(&text.replace("rate = 3000\n", ""), "s.toml")
        .and_then(|s| study::expand(&s))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rate_shape") && !e.contains('\n'), "{e}");
}

#[test]
fn an_interrupted_study_keeps_its_finished_points() {
    let dir = tempfile::tempdir().unwrap();
    let text = tiny().replace("connections = [2, 8]", "connections = [2, 4, 6, 8, 10, 12]");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2500));
        flag.store(true, Ordering::SeqCst);
    });
    let r = run_tiny(&text, dir.path(), &stop);
    t.join().unwrap();
    assert!(r.interrupted);
    assert!(
        !r.points.is_empty() && r.points.len() < 6,
        "{}",
        r.points.len()
    );
    assert!(r.points.iter().filter(|p| p.result.is_some()).count() >= 1);
    let rep = report::build(&[r]);
    assert!(rep.caveats.iter().any(|c| c.contains("interrupted")));
}

#[test]
fn the_report_of_a_fixed_results_file_matches_its_snapshot() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let r = StudyResult::read(&fixtures.join("study.json")).unwrap();
    let rep = report::build(&[r]);
    let md = String::from_utf8(report::markdown::render(&rep)).unwrap();
    let snap = fixtures.join("report.md");
    if std::env::var_os("KVLAB_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snap, &md).unwrap();
    }
    assert_eq!(
        md,
        std::fs::read_to_string(&snap).unwrap(),
        "run with KVLAB_UPDATE_SNAPSHOTS=1 to accept a deliberate change"
    );
    let html = String::from_utf8(report::html::render(&rep)).unwrap();
    check_html(&html, rep.charts.len());
    // A pure function of the data: the same input gives the same bytes.
    assert_eq!(
        html.as_bytes(),
        report::html::render(&report::build(&[StudyResult::read(
            &fixtures.join("study.json")
        )
        .unwrap()]))
        .as_slice()
    );
}

#[test]
fn a_study_can_search_capacity_within_its_goal() {
    let dir = tempfile::tempdir().unwrap();
    let text = tiny()
        .replace("p99_ms = 50", "p99_ms = 50\ncapacity = true")
        .replace("connections = [2, 8]", "connections = [4]");
    let r = run_tiny(&text, dir.path(), &AtomicBool::new(false));
    assert_eq!(r.capacity.len(), 1);
    let c = &r.capacity[0].search;
    assert!(c.steps.len() >= 2, "a closed-loop bound and paced steps");
    assert!(c.capacity_rps.is_some_and(|x| x > 0.0), "{c:?}");
    let rep = report::build(&[r]);
    assert!(
        rep.verdict.iter().any(|v| v.contains("capacity search")),
        "{:?}",
        rep.verdict
    );
}

#[test]
fn a_fill_study_measures_items_per_gib() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
name = "fill"
mode = "fill"
[workload]
keys = 200000
value_size = 1000
[[target]]
target = "memcached"
server_opts = { memory-mb = "8" }
"#;
    let r = run_tiny(text, dir.path(), &AtomicBool::new(false));
    let f = r.points[0].fill.as_ref().expect("a fill result");
    assert!(f.stopped_by.starts_with("evictions"), "{f:?}");
    assert_eq!(f.bytes, 8 << 20);
    assert!(f.items > 3_000 && f.items < 9_000, "{f:?}");
    assert!(f.bytes_per_item > 1000.0, "{f:?}");
    let rep = report::build(&[r]);
    assert!(rep.verdict.iter().any(|v| v.contains("per GiB")));
    let html = String::from_utf8(report::html::render(&rep)).unwrap();
    check_html_min(&html, 1);
}

fn check_html_min(html: &str, charts: usize) {
    assert_eq!(html.matches("<svg").count(), charts);
    assert!(html.contains("<circle"));
}

const TINY_ASIDE: &str = r#"
name = "tiny-aside"
duration = 1
warmup = 0.2
[workload]
keys = 500
value_size = 64
distribution = "zipf:0.99"
[load]
connections = 8
[[target]]
name = "pg"
target = "postgres"
[[target]]
name = "pg+redis"
target = "postgres"
cache = "redis"
write_policy = "invalidate"
[sweep]
ratio = ["0:1", "1:4"]
"#;

#[test]
fn a_cache_aside_study_reports_hit_ratio_latency_and_stale_reads() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_tiny(TINY_ASIDE, dir.path(), &AtomicBool::new(false));
    assert_eq!(r.points.len(), 4);
    for p in &r.points {
        let x = p.result.as_ref().expect("every point ran");
        assert_eq!(x.totals.errors, 0, "{:?}", x.problems);
        assert_eq!(x.cache_aside.is_some(), p.target == "pg+redis");
        assert_eq!(x.consistency.is_some(), p.params["ratio"] == "1:4");
    }
    let rep = report::build(std::slice::from_ref(&r));
    let t = rep
        .tables
        .iter()
        .find(|t| t.title == "Cache-aside vs the database alone")
        .expect("a cache-aside table");
    assert_eq!(t.rows.len(), 4);
    for h in [
        "hit ratio of all reads",
        "p50 µs",
        "p99 µs",
        "DB reads saved/s",
        "stale reads / M reads",
    ] {
        assert!(t.headers.iter().any(|x| x == h), "{h}");
    }
    let mixed = t
        .rows
        .iter()
        .find(|row| row[0] == "pg+redis" && row[2] == "1:4")
        .unwrap();
    assert!(mixed[6].ends_with('%') && mixed[9] != "-", "{mixed:?}");
    assert!(
        rep.verdict.iter().any(|v| v.starts_with("SET:GET 1:4:")),
        "{:?}",
        rep.verdict
    );
    assert!(
        rep.verdict
            .iter()
            .any(|v| v.contains("fills the cache with the old value"))
    );
    let html = String::from_utf8(report::html::render(&rep)).unwrap();
    check_html(&html, rep.charts.len());
    assert!(html.contains("Cache hit ratio by SET:GET mix"));
    let legs = rep
        .tables
        .iter()
        .find(|t| t.title.starts_with("Cache-aside legs"))
        .expect("a table of each leg's latency");
    assert_eq!(legs.rows.len(), 2, "one row per cache-aside point");
    let mixed = legs.rows.iter().find(|r| r[1] == "1:4").unwrap();
    assert!(mixed[2..].iter().all(|c| c.contains(" / ")), "{mixed:?}");
}

/// A small redis in front of postgres at two sizes, and one killed mid-run.
fn working_set() -> String {
    let description = "a small redis in front of postgres at two sizes, then killed mid-run";
    let workload = r#"[workload]
keys = 20000
value_size = 256
ratio = "1:19"
distribution = "zipf:0.99"
[load]
connections = 8
pipeline = 1
rate = 2000
"#;
    let sized = common::aside_target("sized", "redis", &["cache_start = \"cold\""]);
    let failing = common::aside_target(
        "failing",
        "redis",
        &[
            "cache_opts = { memory-mb = \"3\" }",
            "cache_start = \"cold\"",
            "events = [\"1:restart-cache:0\"]",
        ],
    );
    let sweep = "[sweep]\ncache = { memory-mb = [2, 4] }\n";
    [
        common::study_head("working-set", description, 3.0, 0.0),
        workload.into(),
        sized,
        failing,
        sweep.into(),
    ]
    .concat()
}

#[test]
fn a_working_set_study_charts_hit_ratio_by_size_and_marks_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_tiny(&working_set(), dir.path(), &AtomicBool::new(false));
    assert_eq!(r.points.len(), 4);
    let rep = report::build(std::slice::from_ref(&r));
    let has = |what: &str| rep.verdict.iter().any(|v| v.contains(what));
    assert!(has("MiB of values) hit"), "{:?}", rep.verdict);
    assert!(
        has("restart-cache:0: the database's reads peaked"),
        "{:?}",
        rep.verdict
    );
    assert!(has("started cold"), "{:?}", rep.verdict);
    let titles: Vec<&str> = rep.charts.iter().map(|c| c.title.as_str()).collect();
    assert!(
        titles.contains(&"Cache hit ratio vs cache memory"),
        "{titles:?}"
    );
    let events = rep
        .charts
        .iter()
        .find(|c| c.title == "Events: database reads per second")
        .expect("the events' timeline");
    assert_eq!(events.markers, vec![(1.0, "restart-cache:0".to_string())]);
    let html = String::from_utf8(report::html::render(&rep)).unwrap();
    assert!(
        html.contains("stroke-dasharray=\"3 3\""),
        "the event is drawn"
    );
    check_html(&html, rep.charts.len());
}
