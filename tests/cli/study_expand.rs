//! Study files through the public API: expansion order, server settings
//! outermost, and parse errors that name the file, the line and the fix. Needs
//! no servers: nothing here runs a point.

use crate::common;

use kvlab::modes::study::{expand, main_axis, parse};

const STUDY: &str = r#"
name = "t"
duration = 1
[workload]
keys = 1000
[[target]]
target = "redis"
[[target]]
name = "mc"
target = "memcached"
[sweep]
connections = [10, 20]
pipeline = [1, 4]
"#;

#[test]
fn expands_in_a_pinned_order() {
    let s = parse(STUDY, "t.toml").unwrap();
    let p = expand(&s).unwrap();
    let order: Vec<String> = p
        .iter()
        .map(|p| {
            format!(
                "{}:{}:{}",
                p.target, p.params["connections"], p.params["pipeline"]
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            "redis:10:1",
            "redis:10:4",
            "redis:20:1",
            "redis:20:4",
            "mc:10:1",
            "mc:10:4",
            "mc:20:1",
            "mc:20:4"
        ]
    );
    assert_eq!(main_axis(&s).as_deref(), Some("connections"));
}

#[test]
fn server_settings_are_outermost() {
    let text = format!("{STUDY}\n[sweep.server]\nthreads = [1, 2]\n")
        .replace("target = \"redis\"\n[[target]]\n", "");
    let s = parse(&text, "t.toml").unwrap();
    let p = expand(&s).unwrap();
    let order: Vec<String> = p
        .iter()
        .map(|p| format!("{}:{}", p.params["server.threads"], p.params["connections"]))
        .collect();
    assert_eq!(&order[..4], ["1:10", "1:10", "1:20", "1:20"]);
    assert_eq!(p[4].plan.target.server_opts["threads"], "2");
}

#[test]
fn errors_name_file_line_and_fix() {
    let e = parse(
        "name = \"x\"\nduraton = 3\n[[target]]\ntarget = \"redis\"\n",
        "s.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("s.toml:2:") && e.contains("duraton") && e.contains("spelling"),
        "{e}"
    );
    let e = parse("name = \"x\"\n", "s.toml").unwrap_err().to_string();
    assert!(e.contains("target"), "{e}");
    let e = parse("name = \"x\"\n[[target]]\ntarget = \"mongo\"\n", "s.toml")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("s.toml:3:") && e.contains("--target"), "{e}");
    let e = parse(
        "name = \"x\"\nduration = -1\n[[target]]\ntarget = \"redis\"\n",
        "s.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("s.toml:2:"), "{e}");
    let e = parse(
        "name = \"x\"\n[workload]\nratio = \"1/2\"\n[[target]]\ntarget = \"redis\"\n",
        "s.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("s.toml:3: workload.ratio:"), "{e}");
    let e = parse(
        "name = \"x\"\n[load]\ntimeline_seconds = 0\n[[target]]\ntarget = \"redis\"\n",
        "s.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("s.toml:3: load.timeline_seconds"), "{e}");
}

#[test]
fn the_load_table_sets_the_per_second_part_of_the_timeline() {
    let s = parse(
        &STUDY.replace(
            "[[target]]\ntarget = \"redis\"",
            "[load]\ntimeline_seconds = 120\n[[target]]\ntarget = \"redis\"",
        ),
        "t.toml",
    )
    .unwrap();
    assert!(
        expand(&s)
            .unwrap()
            .iter()
            .all(|p| p.plan.load.timeline_seconds == 120)
    );
    let s = parse(STUDY, "t.toml").unwrap();
    assert!(
        expand(&s)
            .unwrap()
            .iter()
            .all(|p| p.plan.load.timeline_seconds == 600)
    );
}

#[test]
fn warns_of_threads_beyond_the_cores() {
    let s = kvlab::modes::study::parse(
        r#"
name = "t"
[load]
threads = 2
[[target]]
target = "redis"
[[target]]
target = "memcached"
[sweep.server]
io-threads = [1, 2, 8]
"#,
        "t.toml",
    )
    .unwrap();
    let c = kvlab::modes::study::core_caveats(&s, 2);
    assert_eq!(c.len(), 1, "memcached's setting is threads: {c:?}");
    assert!(c[0].starts_with("redis: io-threads up to 8 on a machine with 2 cores"));
    assert!(kvlab::modes::study::core_caveats(&s, 16).is_empty());
    let c = kvlab::modes::study::core_caveats(&s, 1);
    assert!(c[0].contains("client threads go up to 2"), "{c:?}");
}

#[test]
fn pooled_targets_carry_their_pooler_and_query_mode() {
    let text = "name = \"p\"\n[[target]]\ntarget = \"postgres\"\n[[target]]\nname = \"tx\"\ntarget = \"postgres\"\npooler = \"pgbouncer\"\npooler_opts = { pool_mode = \"transaction\" }\n";
    let s = parse(text, "p.toml").unwrap();
    let p = expand(&s).unwrap();
    assert_eq!(p[0].plan.target.pooler, None);
    assert_eq!(
        p[0].plan.target.query_mode_used().map(|m| m.name()),
        Some("prepared")
    );
    let t = &p[1].plan.target;
    assert_eq!(t.pooler.as_deref(), Some("pgbouncer"));
    assert_eq!(t.pooler_opts["pool_mode"], "transaction");
    assert_eq!(t.query_mode_used().map(|m| m.name()), Some("extended"));
    let bad = text.replace("\"transaction\"", "\"txn\"");
    let e = parse(&bad, "p.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("p.toml:") && e.contains("pooler_opts: unknown pool_mode 'txn'"),
        "{e}"
    );
}

/// A study of two cache-aside targets (as studies/cache-failure.toml), with
/// keys set in every table, so that a key's line is not its table's.
fn caches() -> String {
    let head = r#"# two caches in front of a database
name = "caches"
duration = 20
warmup = 0

[workload]
keys = 100000
value_size = 256
ratio = "1:19"
distribution = "zipf:0.99"

[load]
connections = 32
rate = 8000

"#;
    let settling = [
        "cache_opts = { memory-mb = \"16\" }",
        "cache_start = \"settle\"",
        "events = [\"8:restart-cache:2\"]\n",
    ];
    let tail = r#"[sweep]
ratio = ["0:1", "1:19"]

[original.workload]
keys = 1000000
"#;
    [
        head.into(),
        common::aside_target("redis", "redis", &settling),
        common::aside_target("memcached", "memcached", &settling),
        tail.into(),
    ]
    .concat()
}

/// The line (from 1) of the `nth` line of `text` that starts with `start`.
fn line_of(text: &str, start: &str, nth: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with(start))
        .nth(nth)
        .map(|(i, _)| i + 1)
        .unwrap()
}

/// The error `text` gets at `scale`, which must say `what`, and the line it names.
fn error_line(text: &str, scale: kvlab::modes::study::Scale, what: &str) -> usize {
    let e = kvlab::modes::study::parse_scaled(text, "s.toml", scale)
        .unwrap_err()
        .to_string();
    assert!(e.contains(what), "{e}");
    let rest = e
        .strip_prefix("s.toml:")
        .unwrap_or_else(|| panic!("no line: {e}"));
    rest.split(':').next().unwrap().parse().unwrap()
}

#[test]
fn every_error_points_at_the_offending_keys_own_line() {
    use kvlab::modes::study::Scale::{Original, Quick};
    let caches = caches();
    assert!(parse(&caches, "s.toml").is_ok());
    // A key of the wrong table: its own line, not that of the top-level key.
    let t = caches.replace("ratio = \"1:19\"\n", "ratio = \"1:19\"\nduration = 5\n");
    assert_eq!(
        error_line(&t, Quick, "unknown field `duration`"),
        line_of(&t, "duration = 5", 0)
    );
    // A bad value of the second target's key: that key's line, not `target`'s.
    let t = caches.replacen("cache_start = \"settle\"", "cache_start = \"setle\"", 2);
    let t = t.replacen("cache_start = \"setle\"", "cache_start = \"settle\"", 1);
    let line = error_line(&t, Quick, "cache_start: 'setle' is not a way");
    assert_eq!(line, line_of(&t, "cache_start", 1));
    // A plan check on a target: the key it names, not `target`.
    let t = caches.replacen("cache = \"redis\"", "cache = \"redis://127.0.0.1:1\"", 1);
    let t = t.replacen("cache_opts = { memory-mb = \"16\" }\n", "", 1);
    let line = error_line(&t, Quick, "restart-cache");
    assert_eq!(line, line_of(&t, "events", 0));
    // An event of the second target.
    let t = caches.replacen(
        "events = [\"8:restart-cache:2\"]\n",
        "events = [\"8:restart-cash:2\"]\n",
        2,
    );
    let t = t.replacen(
        "events = [\"8:restart-cash:2\"]",
        "events = [\"8:restart-cache:2\"]",
        1,
    );
    let line = error_line(&t, Quick, "unknown action 'restart-cash'");
    assert_eq!(line, line_of(&t, "events", 1));
    // A swept value: the line of the element, in an array over lines.
    let t = caches.replace(
        "ratio = [\"0:1\", \"1:19\"]",
        "ratio = [\n  \"0:1\",\n  \"1/19\",\n]",
    );
    let line = error_line(&t, Quick, "'1/19'");
    assert_eq!(line, line_of(&t, "  \"1/19\"", 0));
    // A key of [original] at the original's scale: its line there.
    let t = caches.replace("keys = 1000000", "keys = 1000000\nkyes = 3");
    assert!(
        parse(&t, "s.toml").is_ok(),
        "[original] is read at its scale"
    );
    let line = error_line(&t, Original, "unknown field `kyes`");
    assert_eq!(line, line_of(&t, "kyes", 0));
    let t = caches.replace(
        "[original.workload]",
        "[original]\nduration = -1\n\n[original.workload]",
    );
    let line = error_line(&t, Original, "duration must be a positive number");
    assert_eq!(line, line_of(&t, "duration = -1", 0));
}

#[test]
fn a_points_label_names_every_swept_setting_the_cache_memory_included() {
    let s = parse(
        kvlab::modes::study::builtin("cache-size").unwrap(),
        "c.toml",
    )
    .unwrap();
    let p = expand(&s).unwrap();
    let axes = kvlab::modes::study::Point::varying(&p);
    assert_eq!(axes, ["cache.memory-mb", "distribution"]);
    assert_eq!(
        p[1].label(&axes),
        "redis in front of postgres cache.memory-mb=4 distribution=uniform"
    );
    let labels: std::collections::BTreeSet<String> = p.iter().map(|p| p.label(&axes)).collect();
    assert_eq!(labels.len(), p.len(), "each point's label is its own");
    assert!(kvlab::modes::study::swept_axes(&s).contains(&"cache.memory-mb".to_string()));
    // A cache's start and events shape every point, swept or not.
    let s = parse(&caches(), "s.toml").unwrap();
    let p = expand(&s).unwrap();
    let set = p[0].settings();
    for (k, v) in [
        ("cache_start", "settle"),
        ("events", "8:restart-cache:2"),
        ("cache.memory-mb", "16"),
    ] {
        assert!(
            set.contains(&(k.to_string(), v.to_string())),
            "{k}: {set:?}"
        );
    }
    assert_eq!(kvlab::modes::study::Point::varying(&p), ["ratio"]);
    assert_eq!(p[3].label(&["ratio".into()]), "memcached ratio=1:19");
}

#[test]
fn the_time_estimate_counts_starts_loads_settling_and_events() {
    use kvlab::modes::study::exec::estimate;
    let s = parse(
        kvlab::modes::study::builtin("cache-failure").unwrap(),
        "f.toml",
    )
    .unwrap();
    let p = expand(&s).unwrap();
    let t = estimate(&s, &p);
    let part = |name: &str| {
        t.parts
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, s)| *s)
    };
    // Two points of 20 s measured, each on its own database with a fresh,
    // settling cache restarted once.
    assert_eq!(part("measured"), 40.0);
    assert!(part("cache settling") >= 2.0 * 20.0, "{t:?}");
    assert!(part("server starts") >= 2.0 * 2.0, "{t:?}");
    assert!(part("data loads") >= 2.0 * 1.0, "{t:?}");
    assert!(
        part("event restarts") > 0.0 && part("cache starts") > 0.0,
        "{t:?}"
    );
    // It took 1 min 47 s; the warm-up and window alone say 40 s.
    assert!((90.0..150.0).contains(&t.about_s), "{t:?}");
    assert!(t.at_most_s >= t.about_s + 2.0 * 90.0, "{t:?}");
    assert!(
        t.text().starts_with("about ") && t.text().contains("(at most "),
        "{}",
        t.text()
    );
    // Without settling or events: no upper bound beyond the estimate.
    let s = parse(STUDY, "t.toml").unwrap();
    let t = estimate(&s, &expand(&s).unwrap());
    assert_eq!(t.at_most_s, t.about_s);
    assert!(!t.text().contains("at most"), "{}", t.text());
    assert!(
        t.about_s > 8.0 * 2.0,
        "warm-up and window of 8 points: {t:?}"
    );
}
