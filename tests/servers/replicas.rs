//! Managed read replicas (`--server-opt replicas=N`) on real servers, started
//! through kvlab's own managed-server code: a row written on the primary is
//! read on every replica within seconds, the lag function reports every
//! replica streaming, a run's load replicates, and dropping the server stops
//! every pid, primary and replicas. The refusals (a URL target, a product
//! without replicas, a bad count) are one line each through the binary.

use crate::common;

use std::time::{Duration, Instant};

use common::{alive, each_fails_in_one_line, measure, plan, server_with};
use kvlab::driver::{Connector, ReplicaLag};
use kvlab::plan::TargetKind;
use kvlab::servers::ManagedServer;

/// Runs `q` on `c` (PostgreSQL or MariaDB); the rows as text.
fn sql(kind: TargetKind, c: &Connector, q: &str) -> Vec<Vec<Option<String>>> {
    let t = Duration::from_secs(5);
    match kind {
        TargetKind::Postgres => kvlab::products::postgres::open(c, t).unwrap().query(q),
        _ => kvlab::products::mysql::open(c, t).unwrap().query(q),
    }
    .unwrap_or_else(|e| panic!("{q}: {e}"))
}

/// The first cell of `q` on `c`, or `None` (no row, or an error such as a
/// table not replicated yet).
fn first(kind: TargetKind, c: &Connector, q: &str) -> Option<String> {
    let t = Duration::from_secs(5);
    let rows = match kind {
        TargetKind::Postgres => kvlab::products::postgres::open(c, t).ok()?.query(q),
        _ => kvlab::products::mysql::open(c, t).ok()?.query(q),
    };
    rows.ok()?.into_iter().next()?.into_iter().next()?
}

/// Starts `kind` with `n` replicas, timed.
fn start(kind: TargetKind, n: usize) -> ManagedServer {
    let started = Instant::now();
    let n_text = n.to_string();
    let s = server_with(kind, &[("replicas", n_text.as_str())], 20);
    eprintln!(
        "managed {} with {n} replicas started in {:.2} s",
        kind.name(),
        started.elapsed().as_secs_f64()
    );
    s
}

/// A row written on the primary shows on every replica within 10 s; the lag
/// function reports each replica streaming; the settings say how many;
/// dropped, every process is gone.
fn replicates(kind: TargetKind, n: usize) {
    let s = start(kind, n);
    assert_eq!(s.replica_count(), n);
    assert_eq!(s.settings["replicas"], n.to_string());
    let replicas: Vec<Connector> = s
        .replica_endpoints()
        .iter()
        .map(|e| Connector::new(kind, e).unwrap())
        .collect();
    assert_eq!(replicas.len(), n);
    let primary = Connector::new(kind, &s.endpoint()).unwrap();
    sql(
        kind,
        &primary,
        "CREATE TABLE kvlab_replicated (k INT PRIMARY KEY, v TEXT)",
    );
    sql(
        kind,
        &primary,
        "INSERT INTO kvlab_replicated VALUES (7, 'seen')",
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    for r in &replicas {
        loop {
            let v = first(kind, r, "SELECT v FROM kvlab_replicated WHERE k = 7");
            if v.as_deref() == Some("seen") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{r:?} did not see the row: {v:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // A replica is read-only.
    let refused = match kind {
        TargetKind::Postgres => {
            kvlab::products::postgres::open(&replicas[0], Duration::from_secs(5))
                .unwrap()
                .query("INSERT INTO kvlab_replicated VALUES (8, 'no')")
                .is_err()
        }
        _ => kvlab::products::mysql::open(&replicas[0], Duration::from_secs(5))
            .unwrap()
            .query("INSERT INTO kvlab_replicated VALUES (8, 'no')")
            .is_err(),
    };
    assert!(refused, "a replica took a write");

    let lag: Vec<ReplicaLag> = s.replica_lag().unwrap();
    eprintln!("{}", serde_json::to_string(&lag).unwrap());
    assert_eq!(lag.len(), n);
    for (l, r) in lag.iter().zip(&replicas) {
        assert!(l.streaming && l.state == "streaming", "{l:?}");
        assert_eq!(l.server, r.addr.to_string());
        assert!(l.lag_s.is_some_and(|s| s >= 0.0), "{l:?}");
    }
    if kind == TargetKind::Postgres {
        assert!(lag.iter().all(|l| l.bytes_behind.is_some()), "{lag:?}");
    }

    // The usage covers the replicas too.
    assert!(s.usage().unwrap().peak_rss_kb > 0);
    let pids: Vec<u32> = s.pids().into_iter().chain(s.replica_pids()).collect();
    assert_eq!(pids.len(), 1 + n);
    assert!(pids.iter().all(|&p| alive(p)));
    drop(s);
    let gone = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = pids.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "still running after drop: {left:?}");
}

#[test]
fn postgres_streams_to_two_replicas_and_stops_them_all() {
    replicates(TargetKind::Postgres, 2);
}

#[test]
fn mariadb_replicates_to_a_replica_and_stops_it() {
    replicates(TargetKind::Mariadb, 1);
}

/// kvlab's load on the primary reaches the replica: replication started
/// before the server counted as ready.
#[test]
fn a_runs_load_replicates() {
    for kind in [TargetKind::Mariadb, TargetKind::Postgres] {
        let s = start(kind, 1);
        let r = measure(&plan(kind, s.endpoint()));
        assert_eq!(r.totals.errors, 0, "{:?}", r.problems);
        let replica = Connector::new(kind, &s.replica_endpoints()[0]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let n = first(kind, &replica, "SELECT count(*) FROM kvlab_kv");
            if n.as_deref() == Some("2000") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{}: {n:?} rows on the replica",
                kind.name()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn no_replicas_is_the_default_and_zero() {
    let s = server_with(TargetKind::Postgres, &[("replicas", "0")], 20);
    assert_eq!(s.replica_count(), 0);
    assert!(s.replica_endpoints().is_empty() && s.replica_lag().unwrap().is_empty());
}

#[test]
fn replicas_are_refused_where_kvlab_cannot_start_them() {
    each_fails_in_one_line(&[
        (
            "run --target postgres://u:p@127.0.0.1:1/db --server-opt replicas=1",
            "--server-opt: replicas= starts read replicas of a server kvlab starts",
        ),
        (
            "run --target redis --server-opt replicas=1",
            "--server-opt: replicas= is for managed postgres and mariadb, not redis",
        ),
        (
            "run --target memcached --server-opt replicas=2",
            "replicas= is for managed postgres and mariadb",
        ),
        (
            "run --target postgres --server-opt replicas=9",
            "from 0 to 8",
        ),
        (
            "run --target mariadb --server-opt replicas=two",
            "give e.g. replicas=2",
        ),
    ]);
}

/// A run of `kind` that kvlab starts with `n` read replicas: 1,000 keys,
/// one write in five, for 2 s.
fn replicated(kind: TargetKind, n: usize) -> kvlab::plan::RunPlan {
    let mut p = common::managed_plan(kind);
    p.target
        .server_opts
        .insert("replicas".into(), n.to_string());
    p.workload.keys = 1_000;
    p.workload.ratio = kvlab::plan::Ratio { set: 1, get: 4 };
    p.load.stop = kvlab::plan::Stop::Duration(2.0);
    p.load.warmup_s = 0.5;
    p
}

/// Reads land on the replicas and writes on the primary, by the servers'
/// own counters; every server's counts add up to what kvlab sent; the stale
/// reads the replicas served are, as a rule, no older than the lag they
/// reported (the median; the lag is read every 0.1 s, and on a busy host a
/// spike between two readings can leave a few reads older than any).
#[test]
fn reads_go_to_the_replicas_and_writes_to_the_primary() {
    let r = measure(&replicated(TargetKind::Postgres, 2));
    common::every_request_clean(&r);
    let check = r.server_counters.as_ref().expect("counters");
    assert!(check.agrees(), "{check:?}");
    let rep = r.replication.as_ref().expect("a replication report");
    assert_eq!(rep.servers.len(), 3);
    let (primary, replicas) = rep.servers.split_first().unwrap();
    assert_eq!(
        (primary.reads, primary.counted_gets),
        (0, Some(0)),
        "{primary:?}"
    );
    assert_eq!(primary.writes, r.totals.sets, "{primary:?}");
    assert_eq!(primary.counted_sets, Some(check.kvlab_sets), "{primary:?}");
    for x in replicas {
        assert!(x.reads > r.totals.gets / 3 && x.writes == 0, "{x:?}");
        assert_eq!(x.counted_sets, Some(0), "{x:?}");
        assert_eq!(x.state.as_deref(), Some("streaming"), "{x:?}");
        assert!(x.cpu_s.is_some() && x.peak_rss_kb.is_some(), "{x:?}");
    }
    let gets: u64 = replicas.iter().map(|x| x.counted_gets.unwrap()).sum();
    assert_eq!(gets, check.kvlab_gets);
    let c = r.consistency.as_ref().expect("writes are versioned");
    let stale: u64 = replicas.iter().map(|x| x.stale_reads).sum();
    assert_eq!(stale, c.stale_reads);
    let lag_us = replicas
        .iter()
        .filter_map(|x| x.lag_s_max)
        .fold(0.0, f64::max)
        * 1e6;
    // A stale read may fall between two readings of a lag a little larger
    // than either (a few ms here); none is older than the run.
    assert!(
        c.stale_age_us.p50 <= lag_us + 10_000.0 && c.stale_age_us.max < 2e6,
        "{c:?} lag {lag_us} µs"
    );
}

/// MariaDB, reads from any server: the primary and the replica both serve
/// reads; the replica applies writes without counting them; a killed
/// replica leaves reads to the primary, counted, and the run goes on.
#[test]
fn reads_from_any_server_go_on_when_a_replica_dies() {
    let mut p = replicated(TargetKind::Mariadb, 1);
    p.target.read_from = Some(kvlab::plan::reads::ReadFrom::Any);
    p.load.stop = kvlab::plan::Stop::Duration(3.0);
    p.load.events = vec!["1:kill-replica".parse().unwrap()];
    let r = measure(&p);
    let rep = r.replication.as_ref().expect("a replication report");
    let (primary, replica) = (&rep.servers[0], &rep.servers[1]);
    assert!(primary.reads > 0 && replica.reads > 0, "{rep:?}");
    assert!(
        primary.reads > replica.reads,
        "the replica died at 1 s: {rep:?}"
    );
    assert_eq!(r.events.len(), 1, "{:?}", r.events);
    assert!(r.events[0].error.is_none(), "{:?}", r.events);
    let kinds: Vec<&String> = r
        .totals
        .errors_by_kind
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, _)| k)
        .collect();
    assert!(
        kinds
            .iter()
            .all(|k| ["disconnect", "timeout"].contains(&k.as_str())),
        "{kinds:?}"
    );
}

#[test]
fn reads_and_replicas_asked_wrongly_are_refused_in_a_line() {
    each_fails_in_one_line(&[
        (
            "run --target postgres --read-from replicas",
            "--read-from: replicas needs read replicas",
        ),
        (
            "run --target postgres --read-replica postgres://u@127.0.0.1:1/db",
            "--read-replica: names a replica of a server kvlab did not start",
        ),
        (
            "run --target postgres://u@127.0.0.1:1/db --read-replica redis://127.0.0.1:2",
            "--read-replica:",
        ),
        (
            "run --target postgres --event 1:kill-replica",
            "--event: 1:kill-replica: this target has no read replicas",
        ),
        (
            "run --target postgres --server-opt replicas=1 --read-from nearest",
            "--read-from:",
        ),
        (
            "run --target postgres --server-opt replicas=1 --cache redis",
            "--read-from: a cache-aside run's database reads from its primary",
        ),
    ]);
}

/// Replicas of a server kvlab did not start (`--read-replica`): reads reach
/// them by URL, and their lag comes from the servers' own views too.
#[test]
fn replicas_given_by_url_serve_the_reads() {
    let s = start(TargetKind::Postgres, 1);
    let mut p = replicated(TargetKind::Postgres, 0);
    p.target.server_opts.clear();
    p.target.external = Some(s.endpoint());
    p.target.read_replicas = s.replica_endpoints();
    let r = measure(&p);
    // A server kvlab did not start keeps its extensions as they are: no
    // pg_stat_statements here, so no counters to cross-check (said).
    assert!(
        r.totals.errors == 0 && r.totals.misses == 0,
        "{:?}",
        r.problems
    );
    let rep = r.replication.as_ref().expect("a replication report");
    assert_eq!(rep.servers[0].reads, 0, "{rep:?}");
    assert_eq!(rep.servers[1].reads, r.totals.gets, "{rep:?}");
    assert_eq!(
        rep.servers[1].state.as_deref(),
        Some("streaming"),
        "{rep:?}"
    );
}

/// A killed primary: writes fail and are counted, reads go on at the replica.
#[test]
fn a_killed_primary_fails_the_writes_and_the_reads_go_on() {
    let mut p = replicated(TargetKind::Postgres, 1);
    p.load.stop = kvlab::plan::Stop::Duration(3.0);
    p.load.timeout_s = 1.0;
    p.load.events = vec!["1:kill-primary".parse().unwrap()];
    let r = measure(&p);
    assert!(r.events[0].error.is_none(), "{:?}", r.events);
    assert!(r.totals.errors > 0, "writes to a dead primary fail");
    let rep = r.replication.as_ref().expect("a replication report");
    // About two thirds of the window's reads came after the kill.
    assert!(rep.servers[1].reads > r.totals.gets / 2, "{rep:?}");
    assert!(rep.servers[0].writes > 0, "writes before the kill: {rep:?}");
}
