//! PostgreSQL, started through kvlab's managed-server code, beyond the contract
//! every product passes (tests/contract): kvlab's table is reused by a run of
//! the same shape, kvlab never touches a table that is not its own, refused
//! connections are counted, and TLS and unix sockets work.

use crate::common;

use std::time::Duration;

use common::{measure, measure_err, plan, server_with};
use kvlab::driver::Connector;
use kvlab::plan::{Ratio, Stop, TargetKind};

const PGSS: (&str, &str) = ("shared_preload_libraries", "pg_stat_statements");

fn sql(connector: &Connector, q: &str) -> Vec<Vec<Option<String>>> {
    kvlab::products::postgres::open(connector, Duration::from_secs(5))
        .unwrap()
        .query(q)
        .unwrap()
}

#[test]
fn the_table_is_reused_by_the_next_run_of_the_same_shape() {
    let s = server_with(TargetKind::Postgres, &[PGSS], 20);
    let connector = Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap();
    sql(&connector, "CREATE EXTENSION pg_stat_statements");
    let mut p = plan(TargetKind::Postgres, s.endpoint());
    p.workload.ratio = Ratio { set: 1, get: 3 };
    p.load.pipeline = 3;
    let r = measure(&p);
    assert_eq!(
        (r.totals.errors, r.totals.misses),
        (0, 0),
        "{:?}",
        r.problems
    );
    assert_eq!(r.load.as_ref().unwrap().keys, 2_000);
    let r2 = measure(&p);
    assert!(r2.load.is_none(), "reused, not reloaded");
    assert_eq!(r2.totals.errors, 0);
    let total = connector.counters().unwrap();
    assert_eq!(
        total.gets,
        r.warmup.gets + r.totals.gets + r2.warmup.gets + r2.totals.gets
    );
}

#[test]
fn a_table_that_is_not_kvlabs_is_never_touched() {
    let s = server_with(TargetKind::Postgres, &[], 20);
    let connector = Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap();
    sql(
        &connector,
        "CREATE TABLE kvlab_kv (k bigint PRIMARY KEY, v bytea); INSERT INTO kvlab_kv VALUES (1, 'precious')",
    );
    let mut p = plan(TargetKind::Postgres, s.endpoint());
    p.target.schema.recreate = true;
    let err = measure_err(&p);
    assert!(err.contains("not kvlab's"), "{err}");
    let rows = sql(&connector, "SELECT count(*) FROM kvlab_kv");
    assert_eq!(rows[0][0].as_deref(), Some("1"));
    // kvlab's own table with the wrong shape is reloaded, other tables survive.
    sql(
        &connector,
        "DROP TABLE kvlab_kv; CREATE TABLE other (x int); INSERT INTO other VALUES (7)",
    );
    let p = plan(TargetKind::Postgres, s.endpoint());
    let _ = measure(&p);
    sql(&connector, "INSERT INTO kvlab_kv VALUES (5000, 'extra')");
    let r = measure(&p);
    assert!(r.load.is_some(), "a wrong row count reloads kvlab's table");
    assert_eq!(
        sql(&connector, "SELECT count(*) FROM kvlab_kv")[0][0].as_deref(),
        Some("2000")
    );
    assert_eq!(
        sql(&connector, "SELECT x FROM other")[0][0].as_deref(),
        Some("7")
    );
}

#[test]
fn refused_connections_are_counted_and_the_run_goes_on() {
    let s = server_with(TargetKind::Postgres, &[("max_connections", "12")], 12);
    let mut p = plan(TargetKind::Postgres, s.endpoint());
    p.load.connections = 30;
    p.load.pipeline = 1;
    p.load.stop = Stop::Duration(1.5);
    let r = measure(&p);
    assert!(r.connections.failures > 0);
    let e = r.connections.last_error.clone().unwrap_or_default();
    assert!(
        e.contains("too many clients") || e.contains("reserved"),
        "{e}"
    );
    assert!(r.totals.requests > 1_000, "{}", r.totals.requests);
    assert!(r.connections.established < 30, "{:?}", r.connections);
    assert_eq!(r.totals.errors, 0);
    assert!(r.server.server_cpu_s.is_none() && r.server.server_cpu_source.is_none());
    let summary = kvlab::report::summary::summary(&r);
    assert!(summary.contains("server CPU  not known"), "{summary}");
    // A fixed number of requests ends too (the refused connections' share is
    // not made, and the result says so) instead of waiting for them forever.
    p.load.stop = Stop::Requests(3_000);
    let r = measure(&p);
    assert!(
        r.totals.requests < 3_000 && r.totals.requests > 0,
        "{}",
        r.totals.requests
    );
    assert!(
        r.problems
            .iter()
            .any(|m| m.contains("of the 3000 requests asked for")),
        "{:?}",
        r.problems
    );
}

/// The endpoint a `postgres://` URL names.
fn from_url(url: &str) -> kvlab::plan::Endpoint {
    let t: kvlab::plan::TargetSpec = url.parse().unwrap_or_else(|e| panic!("{url}: {e}"));
    t.external.unwrap()
}

#[test]
fn postgres_over_tls_from_libpq_url_settings_counts_agree() {
    let opts = [("tls", "on"), PGSS];
    let r = common::transport_counts_agree(TargetKind::Postgres, &opts, |ep, s| {
        sql(
            &Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap(),
            "CREATE EXTENSION pg_stat_statements",
        );
        let ca = s.tls_files().unwrap().ca.display().to_string();
        *ep = from_url(&format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=verify-full&sslrootcert={ca}",
            ep.port
        ));
    });
    let t = r.target.transport.unwrap();
    assert_eq!(t.verify, Some(kvlab::transport::Verify::Full));
}

#[test]
fn postgres_over_a_unix_socket_from_host_dir_counts_agree() {
    let opts = [("socket", "on"), PGSS];
    common::transport_counts_agree(TargetKind::Postgres, &opts, |ep, s| {
        sql(
            &Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap(),
            "CREATE EXTENSION pg_stat_statements",
        );
        *ep = from_url(&format!(
            "postgres://postgres@/postgres?host={}&port={}",
            s.dir().display(),
            ep.port
        ));
    });
}

/// PostgreSQL's sessions opened (`pg_stat_database.sessions`), once every
/// session that ended has been counted (it stops moving).
fn sessions(connector: &Connector) -> i64 {
    let q = "SELECT sum(sessions) FROM pg_stat_database";
    let read = || -> i64 { sql(connector, q)[0][0].as_deref().unwrap().parse().unwrap() };
    let mut last = read();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(300));
        let now = read();
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// `--conn-life`: a run whose connections live 50 requests opens as many
/// sessions more than the same run without as it says it renewed, about one
/// per 50 requests, and its counts still agree with the server's.
#[test]
fn connections_renewed_at_the_end_of_their_life_are_the_servers_extra_sessions() {
    let s = server_with(TargetKind::Postgres, &[], 20);
    let connector = Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap();
    let mut p = plan(TargetKind::Postgres, s.endpoint());
    p.load.pipeline = 1;
    p.load.stop = Stop::Requests(6_000);
    measure(&p); // loads the table: the runs below reuse it
    let before = sessions(&connector);
    let steady = measure(&p);
    let between = sessions(&connector);
    p.load.conn_life = Some(kvlab::workload::ConnLife::parse("50").unwrap());
    let churned = measure(&p);
    let after = sessions(&connector);
    assert_eq!(steady.connections.renewed, 0);
    let c = &churned.connections;
    assert_eq!(
        (after - between) - (between - before),
        c.renewed as i64,
        "{c:?}"
    );
    let requests = churned.totals.requests + churned.warmup.requests();
    let per_life = requests as f64 / (c.renewed + c.established as u64) as f64;
    assert!(
        (40.0..=60.0).contains(&per_life),
        "{per_life} requests a life"
    );
    assert!(c.renewed_in_window > 0 && c.renewed_in_window <= c.renewed);
    assert_eq!(churned.totals.errors, 0, "{:?}", churned.problems);
    let summary = kvlab::report::summary::summary(&churned);
    assert!(summary.contains("opened anew in the window"), "{summary}");
}
