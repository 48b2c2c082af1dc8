//! `kvlab study --dry-run`: the plan shows every setting that shapes a point,
//! swept or not, and how long the study takes. Starts no server.

use std::process::Command;

/// The dry run of built-in study `name`: its stdout.
fn dry_run(name: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kvlab"))
        .args(["study", name, "--dry-run"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn the_dry_run_shows_the_settings_every_point_shares() {
    let text = dry_run("cache-failure");
    let every = text
        .split("every point:")
        .nth(1)
        .and_then(|t| t.split("points:").next())
        .unwrap_or_else(|| panic!("{text}"));
    for shown in [
        "cache_start=settle",
        "events=8:restart-cache:2",
        "cache.memory-mb=16",
        "duration=20s",
        "rate=8000",
        "keys=100000",
    ] {
        assert!(every.contains(shown), "{shown}: {text}");
    }
    // Each target's own cache, and the points.
    assert!(
        text.contains(
            "target redis (redis in front of postgres, invalidate, settle start):\n  cache=redis"
        ),
        "{text}"
    );
    assert!(
        text.contains("target memcached (memcached in front of postgres, invalidate, settle start):\n  cache=memcached"),
        "{text}"
    );
    assert!(
        text.contains("    1 #1 redis\n") && text.contains("    2 #1 memcached\n"),
        "{text}"
    );
    // Settling and the restarts count: not 40 s of load.
    let head = text.lines().next().unwrap();
    assert!(
        head.contains("about 1 min") || head.contains("about 2 min"),
        "{head}"
    );
    assert!(head.contains("(at most "), "{head}");
    assert!(
        text.contains("cache settling ") && text.contains("event restarts"),
        "{text}"
    );
    assert!(text.contains("up to 120 s"), "{text}");
}

#[test]
fn the_dry_run_shows_swept_cache_memory_per_point_and_each_targets_own_settings() {
    let text = dry_run("cache-size");
    assert!(
        text.contains(
            "    1 #1 redis in front of postgres cache.memory-mb=2 distribution=uniform\n"
        ),
        "{text}"
    );
    assert!(text.contains("cache_start=settle"), "{text}");
    let text = dry_run("cache-aside");
    // A setting only some targets have is on their line.
    assert!(
        text.contains("target aside-invalidate (redis in front of postgres, invalidate, warm start):\n  cache=redis cache_start=warm write_policy=invalidate"),
        "{text}"
    );
}
