//! MariaDB, started through kvlab's managed-server code, beyond the contract
//! every product passes (tests/contract): the MEMORY engine works (misses and
//! corruption detected on it too), kvlab never touches a table that is not its
//! own, refused connections are counted, and TLS and unix sockets work.

use crate::common;

use std::time::Duration;

use common::{measure, measure_err, plan, server_with};
use kvlab::driver::Connector;
use kvlab::plan::{Stop, TargetKind};

fn sql(connector: &Connector, q: &str) -> Vec<Vec<Option<String>>> {
    kvlab::products::mysql::open(connector, Duration::from_secs(5))
        .unwrap()
        .query(q)
        .unwrap()
}

#[test]
fn the_memory_engine_misses_and_corruption() {
    let s = server_with(TargetKind::Mariadb, &[], 20);
    let connector = Connector::new(TargetKind::Mariadb, &s.endpoint()).unwrap();
    let mut p = plan(TargetKind::Mariadb, s.endpoint());
    p.target.schema.table_engine = Some("memory".into());
    let r = measure(&p);
    assert_eq!(
        (r.totals.errors, r.totals.misses, r.totals.hits),
        (0, 0, r.totals.gets)
    );
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
    assert!(
        r.totals.errors_by_kind["wrong_value"] > 0 && r.totals.misses > 0,
        "{r:?}"
    );
    assert_eq!(
        r.totals.errors_by_kind["wrong_value"] + r.totals.hits + r.totals.misses,
        r.totals.gets
    );
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
    assert!(r.totals.requests > 1_000 && r.totals.errors == 0, "{r:?}");
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
