//! A decision beside a CPU hog says the host was busy; one kvlab is held to
//! too little CPU for says what it could not measure. In a test binary of
//! its own: the hog would slow the other decisions' runs in `tests/decide.rs`,
//! which cargo runs beside each other (and there, those decisions are the
//! other processes that make every step busy).

use crate::common;

/// A CPU hog beside a decision: the step it took CPU in is said busy, in the
/// output and in the step's saved JSON (which a decision's `host_busy`
/// gathers). The decision is stopped once its first step is saved: one step
/// shows it. The hog is this test's own child, killed by its pid.
#[test]
fn a_decision_beside_a_cpu_hog_says_the_host_was_busy() {
    let _alone = common::alone();
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
    // Stopped, or the step did not hold on the busy host (exit 5).
    assert!(matches!(code, Some(130) | Some(5)), "{said}{err}");
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

/// `kvlab decide`'s flags for a small decision on the servers at `db` and
/// `cache` (not kvlab's), into `out`.
fn on_urls<'a>(db: &'a str, cache: &'a str, out: &'a str) -> Vec<&'a str> {
    let mut args = common::QUICK_DECIDE.to_vec();
    args.extend(["--keys", "2000", "--value-size", "1024", "--ratio", "1:19"]);
    args.extend(["--target", db, "--cache", cache, "--out", out]);
    args.extend(["--rps", "200", "--p99-ms", "10"]);
    args
}

/// The most of `counter` (read every 0.25 s while `done` is unset) in any
/// 2 s: (its most, the most connections `clients` read).
fn watched(
    counter: impl Fn() -> (u64, u64) + Send + 'static,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<(u64, u64)> {
    std::thread::spawn(move || {
        let mut seen: Vec<(std::time::Instant, u64)> = Vec::new();
        let (mut most, mut conns) = (0, 0);
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let (n, c) = counter();
            let now = std::time::Instant::now();
            seen.retain(|(t, _)| now.duration_since(*t).as_secs_f64() <= 2.0);
            seen.push((now, n));
            most = most.max(n - seen[0].1);
            conns = conns.max(c);
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        (most, conns)
    })
}

/// PostgreSQL's transactions committed (each of kvlab's requests is one)
/// and its client connections, the reading one left out.
fn pg_now(url: &str) -> (u64, u64) {
    let spec: kvlab::plan::TargetSpec = url.parse().unwrap();
    let c = kvlab::driver::Connector::new(spec.kind, &spec.external.unwrap()).unwrap();
    let mut pg = kvlab::products::postgres::open(&c, std::time::Duration::from_secs(5)).unwrap();
    let n = pg
        .query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        .unwrap();
    let conns = pg
        .query("SELECT count(*) - 1 FROM pg_stat_activity WHERE backend_type = 'client backend'")
        .unwrap();
    let num = |r: &Vec<Vec<Option<String>>>| r[0][0].as_deref().unwrap().parse().unwrap();
    (num(&n), num(&conns))
}

/// A decision kvlab is held to too little CPU for (pinned beside three CPU
/// hogs at the lowest priority) cannot find the database's capacity: it says
/// what it could not measure and why, makes no answer from it, keeps what
/// it measured and exits 5. `--resume` on the quiet host measures that step
/// again and finishes (or, where this host is busy itself, says so and
/// exits 5 again). The servers are not kvlab's: with no `--max-rps` or
/// `--max-connections`, the database is driven at most at twice the stated
/// rate with the connections it serves plus 8, as its own counters show.
#[test]
fn a_decision_kvlab_cannot_measure_exits_5_and_resume_finishes_it_within_the_caps() {
    let _alone = common::alone();
    let (cache, cache_url) = common::serve("redis");
    let (db, db_url) = common::serve("postgres");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let args = on_urls(&db_url, &cache_url, out);
    let hogs: Vec<std::process::Child> = (0..3)
        .map(|_| {
            std::process::Command::new("taskset")
                .args(["-c", "0", "sh", "-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        })
        .collect();
    let starved = std::process::Command::new("taskset")
        .args(["-c", "0", "nice", "-n", "19"])
        .arg(assert_cmd::cargo::cargo_bin("kvlab"))
        .args(&args)
        .output()
        .unwrap();
    for mut h in hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    let err = String::from_utf8_lossy(&starved.stderr);
    let said = String::from_utf8_lossy(&starved.stdout);
    assert_eq!(starved.status.code(), Some(5), "{said}{err}");
    assert!(
        err.contains("Error: the database alone could not be measured: no rate within the goal"),
        "{err}"
    );
    assert!(err.contains("no decision is made from it"), "{err}");
    assert!(
        err.contains(&format!("kvlab decide --resume {out}")),
        "{err}"
    );
    assert!(!dir.path().join("decision.json").exists());
    let step: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("steps/01-database.json")).unwrap(),
    )
    .unwrap();
    assert!(step["unheld"].is_string(), "{}", step["unheld"]);
    assert!(
        said.contains("at most 400 req/s (2x the stated rate"),
        "{said}"
    );

    // Resumed on the quiet host, the database's counters read beside it.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let url = db_url.clone();
    let watch = watched(move || pg_now(&url), done.clone());
    let mut again = args.clone();
    let at = again.iter().position(|a| *a == "--out").unwrap();
    again[at] = "--resume";
    let o = common::kvlab().args(&again).output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (most, conns) = watch.join().unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("the database alone: its measurements did not hold (no rate within the goal"),
        "{said}"
    );
    match o.status.code() {
        Some(0) => assert!(dir.path().join("decision.json").exists()),
        // This host busy itself: said, no answer.
        Some(5) => assert!(said.contains("the host was busy"), "{said}"),
        c => panic!("exit {c:?}: {said}{}", String::from_utf8_lossy(&o.stderr)),
    }
    // At most 400 req/s (2 s: 800, and the copy's load beside, 2,000 rows
    // in a few batches), with at most 8 connections (and the one that
    // reads its size or drops its table).
    assert!(most <= 1000, "{most} transactions in 2 s: {said}");
    assert!(conns <= 9, "{conns} connections: {said}");
    common::stop(cache);
    common::stop(db);
}
