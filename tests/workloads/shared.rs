//! Servers kvlab did not start, as a team has them: a Redis with a small
//! maxmemory full of another application's keys and a PostgreSQL with its
//! own table. kvlab refuses a write that would make the cache evict them,
//! measures a cache too small for its copy beside it, says the load it puts
//! on them, holds it to `--max-rps`/`--max-connections`, and leaves nothing
//! of its own behind; their own keys and table are untouched.

use crate::common;

use std::time::Duration;

use kvlab::driver::Connector;
use kvlab::plan::TargetKind;
use kvlab::servers::ManagedServer;

/// The other application's keys, of [`TEAM_VALUE`] bytes each.
const TEAM_KEYS: u64 = 20_000;
const TEAM_VALUE: usize = 300;

/// A Redis of 16 MiB, allkeys-lru, holding the other application's keys.
fn team_redis() -> ManagedServer {
    let s = common::server_with(
        TargetKind::Redis,
        &[("memory-mb", "16"), ("maxmemory-policy", "allkeys-lru")],
        100,
    );
    let value = "v".repeat(TEAM_VALUE);
    let mut req = Vec::new();
    for i in 0..TEAM_KEYS {
        let key = format!("team:{i}");
        req.extend(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                key.len(),
                value.len()
            )
            .into_bytes(),
        );
    }
    let want = TEAM_KEYS as usize * 5;
    common::raw(s.endpoint().port, &req, |b| b.len() >= want);
    assert_eq!(team_keys(&s), TEAM_KEYS, "the team's keys all held");
    s
}

/// The Redis's keys: those of the other application (all of them when
/// kvlab's are gone).
fn team_keys(s: &ManagedServer) -> u64 {
    let c = Connector::new(TargetKind::Redis, &s.endpoint()).unwrap();
    match c.product.role() {
        kvlab::driver::Role::Cache(cache) => cache.memory(&c).unwrap().items,
        _ => unreachable!("redis is a cache"),
    }
}

/// Whether any key under kvlab's prefix is left in the Redis.
fn kvlab_keys_left(s: &ManagedServer) -> bool {
    let reply = common::raw(
        s.endpoint().port,
        b"*6\r\n$4\r\nSCAN\r\n$1\r\n0\r\n$5\r\nMATCH\r\n$7\r\nkvlab:*\r\n$5\r\nCOUNT\r\n$6\r\n100000\r\n",
        |b| b.ends_with(b"\r\n") && b.windows(2).filter(|w| w == b"\r\n").count() >= 4,
    );
    // `*2 $N cursor *K …`: K keys found.
    let text = String::from_utf8_lossy(&reply);
    text.lines().nth(3).is_none_or(|l| l != "*0")
}

/// A PostgreSQL holding the other application's table of 5,000 rows.
fn team_postgres() -> ManagedServer {
    let s = common::server(TargetKind::Postgres);
    let c = Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap();
    let mut pg = kvlab::products::postgres::open(&c, Duration::from_secs(5)).unwrap();
    pg.query("CREATE TABLE team (id int PRIMARY KEY, v text)")
        .unwrap();
    pg.query("INSERT INTO team SELECT g, md5(g::text) FROM generate_series(1, 5000) g")
        .unwrap();
    s
}

/// The PostgreSQL's tables and the other application's rows.
fn tables(s: &ManagedServer) -> (Vec<String>, String) {
    let c = Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap();
    let mut pg = kvlab::products::postgres::open(&c, Duration::from_secs(5)).unwrap();
    let names = pg
        .query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
        .unwrap()
        .into_iter()
        .filter_map(|r| r[0].clone())
        .collect();
    let rows = pg
        .query("SELECT count(*) || ' ' || sum(length(v)) FROM team")
        .unwrap();
    (names, rows[0][0].clone().unwrap())
}

/// The URL of a managed server, as a team would give it.
fn url(s: &ManagedServer, scheme: &str) -> String {
    let e = s.endpoint();
    match scheme {
        "postgres" => format!(
            "postgres://{}@127.0.0.1:{}/{}",
            e.user.clone().unwrap_or_else(|| "postgres".into()),
            e.port,
            e.database.clone().unwrap_or_else(|| "postgres".into())
        ),
        _ => format!("{scheme}://127.0.0.1:{}", e.port),
    }
}

#[test]
fn a_teams_servers_keep_their_keys_and_table_and_nothing_of_kvlabs_is_left() {
    let redis = team_redis();
    let pg = team_postgres();
    let (redis_url, pg_url) = (url(&redis, "redis"), url(&pg, "postgres"));
    let before = tables(&pg);
    assert_eq!(before.0, ["team"]);

    // A load that does not fit beside the team's keys: refused before the
    // first write, with the figures and the ways on.
    let e = common::fails(&[
        "run",
        "--target",
        &redis_url,
        "--keys",
        "100000",
        "--value-size",
        "256",
    ]);
    assert!(e.contains("would make it evict about"), "{e}");
    assert!(e.contains("--allow-evictions"), "{e}");
    assert_eq!(team_keys(&redis), TEAM_KEYS);
    assert!(!kvlab_keys_left(&redis));

    // Cache-aside that fits beside them: measured in place, the load said
    // and held to the caps, then kvlab's keys and table removed.
    let files = tempfile::tempdir().unwrap();
    let json = files.path().join("run.json");
    let o = common::kvlab()
        .args(["run", "--target", &pg_url, "--cache", &redis_url])
        .args(["--keys", "2000", "--value-size", "256", "--ratio", "1:19"])
        .args(["--cache-start", "settle", "--duration", "1"])
        .args(["--max-connections", "4", "--max-rps", "800"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    common::ran(&o);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("it drives it with 4 connection(s), at 800 req/s"),
        "{said}"
    );
    assert!(said.contains("dropped kvlab's table kvlab_kv"), "{said}");
    assert!(
        said.contains(&format!(
            "its other keys: {TEAM_KEYS} before, {TEAM_KEYS} after (0 fewer)"
        )),
        "{said}"
    );
    assert_eq!(team_keys(&redis), TEAM_KEYS);
    assert!(!kvlab_keys_left(&redis));
    assert_eq!(tables(&pg), before);
    // The result file counts them too.
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cleanup = r["cleanup"].as_array().unwrap();
    let cache = cleanup.iter().find(|c| c["keys_removed"].is_u64()).unwrap();
    assert_eq!(cache["others_before"], TEAM_KEYS, "{cache}");
    assert_eq!(cache["others_after"], TEAM_KEYS, "{cache}");
    assert!(
        cleanup.iter().any(|c| c["table_bytes"].as_u64() > Some(0)),
        "{cleanup:?}"
    );

    // Load once, measure many: a --keep-data run leaves its keys, a
    // --no-load run after it measures them and leaves every one (it loaded
    // none), and a run without either removes them.
    let kvlab_keys = || team_keys(&redis) - TEAM_KEYS;
    let run = |more: &[&str]| {
        let o = common::kvlab()
            .args(["run", "--target", &redis_url, "--keys", "2000"])
            .args(["--value-size", "256", "--duration", "1", "--max-rps", "800"])
            .args(more)
            .output()
            .unwrap();
        common::ran(&o);
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    run(&["--keep-data"]);
    assert_eq!(kvlab_keys(), 2000);
    let said = run(&["--no-load"]);
    assert!(
        said.contains("--no-load, which loaded none of them"),
        "{said}"
    );
    assert_eq!(kvlab_keys(), 2000, "{said}");
    run(&[]);
    assert!(!kvlab_keys_left(&redis));
    assert_eq!(team_keys(&redis), TEAM_KEYS);

    // A decision by URL whose copy does not fit the cache beside the team's
    // keys: measured beside (a curve point at the cache's size), the
    // database's search held to the caps and said as a lower bound.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = common::QUICK_DECIDE.to_vec();
    args.extend(common::SMALL_DECISION);
    args.extend(["--target", &pg_url, "--cache", &redis_url, "--out", out]);
    args.extend(["--rps", "400", "--p99-ms", "20", "--target-cores", "1"]);
    args.extend(["--max-rps", "1500", "--max-connections", "8"]);
    let o = common::kvlab().args(&args).output().unwrap();
    // A step this host could not measure (exit 5, said): no decision, and
    // the team's servers left as they were all the same.
    if o.status.code() == Some(5) {
        common::said_not_measured(&String::from_utf8_lossy(&o.stderr));
    } else {
        decided_beside(&o, dir.path());
    }
    assert_eq!(team_keys(&redis), TEAM_KEYS);
    assert!(!kvlab_keys_left(&redis));
    assert_eq!(tables(&pg), before);
}

/// The decision by URL in [`a_teams_servers_keep_their_keys_and_table_and_nothing_of_kvlabs_is_left`]
/// (its output `o`, saved in `dir`): measured beside the team's cache on
/// one kvlab starts, the database's search held to the caps, kvlab's table
/// dropped and said.
fn decided_beside(o: &std::process::Output, dir: &std::path::Path) {
    common::succeeds(o);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stdout.contains("so kvlab measures beside it on a redis it starts"),
        "{stdout}"
    );
    assert!(
        stdout.contains("(16 MiB for 20,000 of the 20,000 keys)"),
        "{stdout}"
    );
    assert!(stdout.contains("  cache 16 MiB: hit ratio"), "{stdout}");
    assert!(
        stderr.contains("the capacity search drives --target"),
        "{stderr}"
    );
    assert!(
        stderr.contains("with 8 connection(s): first at 1500 req/s"),
        "{stderr}"
    );
    assert!(
        stderr.contains("dropped kvlab's table kvlab_kv"),
        "{stderr}"
    );
    for bad in ["***", "NaN", "4294967295"] {
        assert!(!stdout.contains(bad), "{bad} in {stdout}");
    }
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("decision.json")).unwrap()).unwrap();
    let cleanup = d["cleanup"].as_array().unwrap();
    assert!(
        cleanup.iter().any(|c| c["table_bytes"].as_u64() > Some(0)),
        "{d}"
    );
}
