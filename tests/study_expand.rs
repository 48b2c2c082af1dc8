//! Study files through the public API: expansion order, server settings
//! outermost, and parse errors that name the file, the line and the fix. Needs
//! no servers: nothing here runs a point.

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
        p[0].plan.target.query_mode_used().as_deref(),
        Some("prepared")
    );
    let t = &p[1].plan.target;
    assert_eq!(t.pooler.as_deref(), Some("pgbouncer"));
    assert_eq!(t.pooler_opts["pool_mode"], "transaction");
    assert_eq!(t.query_mode_used().as_deref(), Some("extended"));
    let bad = text.replace("\"transaction\"", "\"txn\"");
    let e = parse(&bad, "p.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("p.toml:") && e.contains("pooler_opts: unknown pool_mode 'txn'"),
        "{e}"
    );
}
