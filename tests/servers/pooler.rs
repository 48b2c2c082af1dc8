//! PgBouncer in front of PostgreSQL, both started through kvlab's own managed
//! code (`--pooler`): transaction pooling with the unnamed statement and
//! session pooling with prepared statements, each with kvlab's counts equal to
//! pg_stat_statements' and to PgBouncer's `SHOW STATS`; and every
//! `--query-mode` directly against PostgreSQL, values verified.

use crate::common;

use std::time::Duration;

use common::{alive, measure, plan, server_with};
use kvlab::driver::Connector;
use kvlab::plan::{Ratio, RunPlan, TargetKind, TargetSpec};
use kvlab::results::RunResult;

/// A managed PostgreSQL with `pool_mode` PgBouncer in front.
fn pooled(pool_mode: &str) -> RunPlan {
    let mut p = plan(
        TargetKind::Postgres,
        "postgres://u@h/db"
            .parse::<TargetSpec>()
            .unwrap()
            .external
            .unwrap(),
    );
    p.target.external = None;
    p.target.pooler = Some("pgbouncer".into());
    p.target
        .pooler_opts
        .insert("pool_mode".into(), pool_mode.into());
    if pool_mode == "transaction" {
        p.target
            .pooler_opts
            .insert("default_pool_size".into(), "4".into());
    }
    p.workload.ratio = Ratio { set: 1, get: 3 };
    p.load.connections = 12;
    // PgBouncer counts a query per round trip: exact at pipeline 1.
    p.load.pipeline = 1;
    p
}

/// Errors 0, values verified, and both servers counted what kvlab sent.
fn agrees_everywhere(r: &RunResult) {
    assert_eq!(
        (r.totals.errors, r.totals.misses),
        (0, 0),
        "{:?}",
        r.problems
    );
    assert_eq!(r.totals.hits, r.totals.gets);
    assert!(r.totals.sets > 2_000);
    let db = r.server_counters.as_ref().expect("pg_stat_statements");
    assert!(db.server.exact && db.agrees(), "{db:?}");
    assert_eq!(
        db.server.gets + db.server.sets,
        r.warmup.requests() + r.totals.requests
    );
    let p = r.pooler.as_ref().expect("pooler report");
    let c = p.counters.as_ref().expect("SHOW STATS");
    assert_eq!(c.kvlab_requests, r.warmup.requests() + r.totals.requests);
    assert!(c.exact && c.agrees(), "{c:?}");
    assert!(p.pooler_cpu_s.is_some_and(|c| c > 0.0));
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

#[test]
fn transaction_pooling_counts_agree_with_postgres_and_pgbouncer() {
    let r = measure(&pooled("transaction"));
    assert_eq!(r.query_mode.as_deref(), Some("extended"));
    agrees_everywhere(&r);
    let c = r.pooler.as_ref().unwrap().counters.as_ref().unwrap();
    assert_eq!(c.set_up_queries, 0);
    assert_eq!(c.pooler.transactions, c.pooler.queries);
    let pid = r.pooler.as_ref().unwrap().pid;
    assert!(!alive(pid), "the pooler stopped with the run");
}

#[test]
fn session_pooling_keeps_prepared_statements() {
    let r = measure(&pooled("session"));
    assert_eq!(r.query_mode.as_deref(), Some("prepared"));
    agrees_everywhere(&r);
    let c = r.pooler.as_ref().unwrap().counters.as_ref().unwrap();
    assert_eq!(c.set_up_queries, 12, "one Sync per connection prepares");
}

#[test]
fn every_query_mode_verifies_values_and_counts() {
    let s = server_with(
        TargetKind::Postgres,
        &[("shared_preload_libraries", "pg_stat_statements")],
        20,
    );
    let connector = Connector::new(TargetKind::Postgres, &s.endpoint()).unwrap();
    let mut conn = kvlab::products::postgres::open(&connector, Duration::from_secs(5)).unwrap();
    conn.query("CREATE EXTENSION pg_stat_statements").unwrap();
    for mode in ["prepared", "extended", "simple"] {
        let mut p = plan(TargetKind::Postgres, s.endpoint());
        p.target.query_mode =
            Some(kvlab::plan::query_mode_of(p.target.kind, mode, "--query-mode").unwrap());
        p.workload.ratio = Ratio { set: 1, get: 3 };
        let r = measure(&p);
        assert_eq!(r.query_mode.as_deref(), Some(mode));
        assert_eq!(
            (r.totals.errors, r.totals.misses),
            (0, 0),
            "{mode}: {:?}",
            r.problems
        );
        assert_eq!(r.totals.hits, r.totals.gets, "{mode}");
        let c = r.server_counters.as_ref().unwrap();
        assert!(c.agrees(), "{mode}: {c:?}");
        assert_eq!(c.server.gets, r.warmup.gets + r.totals.gets, "{mode}");
    }
    // A value that is not kvlab's is caught in simple mode too (text replies).
    // A trailing backslash comes back escaped (doubled) as text: caught too.
    conn.query(
        "UPDATE kvlab_kv SET v = convert_to(repeat('x', 99) || '\\', 'UTF8') WHERE k < 1000",
    )
    .unwrap();
    let mut p = plan(TargetKind::Postgres, s.endpoint());
    p.target.query_mode =
        Some(kvlab::plan::query_mode_of(p.target.kind, "simple", "--query-mode").unwrap());
    p.workload.load = false;
    common::catches_wrong_values(&p);
}
