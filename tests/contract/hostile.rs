//! Replies no server should send: a hostile proxy the test starts on a free
//! loopback port in front of a real managed server forwards faithfully, then,
//! at set-up (its first byte) or mid-run (after a while), misbehaves — with
//! garbage, a close in the middle of a frame, a frame cut short that the
//! next replies run into, a huge declared length, an endless reply, a reply
//! after the timeout, or a reply repeated (the right reply to the wrong
//! request, then every reply out of step). For RESP, memcached (text and meta), PostgreSQL, MySQL and
//! Tarantool here (CQL on the contract's one Cassandra node, in
//! `tests/contract/cassandra.rs`), `kvlab run` must exit non-zero within its
//! timeout plus a few seconds, with a one-line error, no panic, and its peak
//! RSS under 128 MiB (set-up replies stop at 16 MiB; a run's read buffers at
//! twice the largest reply it can be answered with). A server that breaks
//! no protocol but streams valid invalidations without end must not hold a
//! near-cache run past its end either. The proxy is `common::hostile`.

use crate::common;

use kvlab::plan::TargetKind;

/// Every act against managed servers of `kind`: one for a cache (each run
/// under its own key prefix), three for a database (whose runs share
/// kvlab's one table: an act at a time on each). Started by this test's
/// own thread: a managed server dies with the thread that started it.
fn every_act(kind: TargetKind) {
    let n = if common::hostile::is_cache(kind) {
        1
    } else {
        3
    };
    let servers: Vec<_> = (0..n).map(|_| common::server(kind)).collect();
    let es: Vec<_> = servers.iter().map(|s| s.endpoint()).collect();
    common::hostile::every_act(kind, &es);
}

#[test]
fn redis_survives_every_hostile_reply() {
    every_act(TargetKind::Redis);
}

#[test]
fn memcached_survives_every_hostile_reply() {
    every_act(TargetKind::Memcached);
}

#[test]
fn memcached_meta_survives_every_hostile_reply() {
    let server = common::server(TargetKind::Memcached);
    common::hostile::every_act_in(TargetKind::Memcached, &[server.endpoint()], Some("meta"));
}

#[test]
fn postgres_survives_every_hostile_reply() {
    every_act(TargetKind::Postgres);
}

#[test]
fn mariadb_survives_every_hostile_reply() {
    every_act(TargetKind::Mariadb);
}

#[test]
fn tarantool_survives_every_hostile_reply() {
    every_act(TargetKind::Tarantool);
}

#[test]
fn a_flood_of_invalidations_does_not_hold_a_run_past_its_end() {
    let server = common::server(TargetKind::Redis);
    for invalidation in ["tracking", "bcast"] {
        let (secs, heard, stderr) =
            common::hostile::flood_pushes(&server.endpoint(), invalidation, 2.5);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        eprintln!("flood ({invalidation}): {secs:.1} s, {heard} invalidations heard: {last:?}");
    }
}
