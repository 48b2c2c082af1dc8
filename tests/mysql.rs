//! MariaDB, started through kvlab's managed-server code: kvlab's counts agree
//! with `SHOW GLOBAL STATUS` exactly, misses and corruption are detected, the
//! MEMORY engine works, kvlab never touches a table that is not its own, and
//! refused connections are counted.

mod common;

use std::time::Duration;

use common::{alive, measure, measure_err, plan, server_with};
use kvlab::driver::Connector;
use kvlab::plan::{Ratio, Stop, TargetKind};

fn sql(connector: &Connector, q: &str) -> Vec<Vec<Option<String>>> {
    kvlab::products::mysql::open(connector, Duration::from_secs(5))
        .unwrap()
        .query(q)
        .unwrap()
}

#[test]
fn counts_agree_with_global_status() {
    let s = server_with(TargetKind::Mariadb, &[], 20);
    let connector = Connector::new(TargetKind::Mariadb, &s.endpoint()).unwrap();
    let mut p = plan(TargetKind::Mariadb, s.endpoint());
    p.workload.ratio = Ratio { set: 1, get: 3 };
    let before = connector.counters().unwrap();
    let r = measure(&p);
    let d = connector.counters().unwrap().since(&before);
    assert_eq!(r.requests, 20_000);
    assert_eq!((r.errors, r.misses), (0, 0), "{:?}", r.problems);
    // +1: kvlab's own look-up of its table in information_schema before loading.
    assert_eq!(d.gets, r.warmup.gets + r.gets + 1);
    // The load's multi-row INSERTs count as INSERT statements too.
    let load_statements = d.sets - r.warmup.sets - r.sets;
    assert!((2..=8).contains(&load_statements), "{load_statements}");
    assert!(r.server_counters.unwrap().agrees());
    assert!(
        r.problems
            .iter()
            .any(|m| m.contains("--pipeline 4 was run as 1")),
        "{:?}",
        r.problems
    );
    assert_eq!(r.target.product, "mariadb");
    let pid = s.pid();
    drop(s);
    assert!(!alive(pid));
}

#[test]
fn the_memory_engine_misses_and_corruption() {
    let s = server_with(TargetKind::Mariadb, &[], 20);
    let connector = Connector::new(TargetKind::Mariadb, &s.endpoint()).unwrap();
    let mut p = plan(TargetKind::Mariadb, s.endpoint());
    p.target.schema.table_engine = Some("memory".into());
    let r = measure(&p);
    assert_eq!((r.errors, r.misses, r.hits), (0, 0, r.gets));
    let engine = sql(
        &connector,
        "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_NAME = 'kvlab_kv'",
    );
    assert_eq!(engine[0][0].as_deref(), Some("MEMORY"));

    sql(
        &connector,
        "UPDATE kvlab_kv SET v = REPEAT('x', 100) WHERE k = 3",
    );
    sql(&connector, "DELETE FROM kvlab_kv WHERE k = 4");
    p.workload.load = false;
    let r = measure(&p);
    assert!(r.errors_by_kind["wrong_value"] > 0 && r.misses > 0, "{r:?}");
    assert_eq!(r.errors_by_kind["wrong_value"] + r.hits + r.misses, r.gets);
}

#[test]
fn a_table_that_is_not_kvlabs_is_never_touched() {
    let s = server_with(TargetKind::Mariadb, &[], 20);
    let connector = Connector::new(TargetKind::Mariadb, &s.endpoint()).unwrap();
    sql(
        &connector,
        "CREATE TABLE kvlab_kv (k BIGINT PRIMARY KEY, v BLOB)",
    );
    sql(&connector, "INSERT INTO kvlab_kv VALUES (1, 'precious')");
    let mut p = plan(TargetKind::Mariadb, s.endpoint());
    p.target.schema.recreate = true;
    let err = measure_err(&p);
    assert!(err.contains("not kvlab's"), "{err}");
    assert_eq!(
        sql(&connector, "SELECT COUNT(*) FROM kvlab_kv")[0][0].as_deref(),
        Some("1")
    );
}

#[test]
fn refused_connections_are_counted_and_the_run_goes_on() {
    let s = server_with(TargetKind::Mariadb, &[("max_connections", "10")], 10);
    let mut p = plan(TargetKind::Mariadb, s.endpoint());
    p.load.connections = 25;
    p.load.stop = Stop::Duration(1.5);
    let r = measure(&p);
    assert!(r.connections.failures > 0);
    let e = r.connections.last_error.clone().unwrap_or_default();
    assert!(e.contains("Too many connections"), "{e}");
    assert!(r.requests > 1_000 && r.errors == 0, "{r:?}");
}

/// The endpoint a `mysql://` URL names.
fn from_url(url: &str) -> kvlab::plan::Endpoint {
    let t: kvlab::plan::TargetSpec = url.parse().unwrap_or_else(|e| panic!("{url}: {e}"));
    t.external.unwrap()
}

#[test]
fn mariadb_over_tls_from_ssl_mode_counts_agree() {
    common::transport_counts_agree(TargetKind::Mariadb, &[("tls", "on")], |ep, s| {
        let ca = s.tls_files().unwrap().ca.display().to_string();
        let (user, pass) = (ep.user.clone().unwrap(), ep.password.clone().unwrap());
        *ep = from_url(&format!(
            "mysql://{user}:{}@127.0.0.1:{}/{}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}",
            pass.expose(),
            ep.port,
            ep.database.clone().unwrap()
        ));
    });
}

#[test]
fn mariadb_over_a_unix_socket_counts_agree() {
    common::transport_counts_agree(TargetKind::Mariadb, &[("socket", "on")], |ep, _| {
        let (user, pass) = (ep.user.clone().unwrap(), ep.password.clone().unwrap());
        *ep = from_url(&format!(
            "mysql://{user}:{}@localhost/{}?socket={}",
            pass.expose(),
            ep.database.clone().unwrap(),
            ep.socket.clone().unwrap().display()
        ));
    });
}
