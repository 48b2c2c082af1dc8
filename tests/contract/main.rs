//! One contract every product passes (issue 19): the checks each product in
//! the registry must pass, written once in `checks` and run for every
//! `TargetKind` against one server of it started by `kvlab serve`:
//!
//! - kvlab's counts equal the server's own counters;
//! - GETs of absent keys are counted as misses;
//! - a corrupted value is reported as `wrong_value`;
//! - batch reads (`--batch`) count keys and agree with the server's counters;
//! - a bad password (or none) is a one-line error within seconds;
//! - the wrong protocol, either way round, is a one-line error within seconds;
//! - Ctrl-C stops the server: none of its processes is left.
//!
//! What each product declares for them, and where a check cannot apply to it
//! and why, is data in `table` (an exhaustive match: a product added to the
//! registry without an entry fails to compile). A product in
//! `TargetKind::ALL` without a test here fails
//! `every_product_in_the_registry_runs_the_contract`. Products' own checks
//! that need the contract's server (Cassandra's JVM, started once in the whole
//! suite) run in the same test, after the contract's.

#[path = "../common/mod.rs"]
mod common;

mod cassandra;
mod checks;
mod served;
mod table;

mod hostile;

use kvlab::plan::TargetKind;

use served::Served;
use table::{Password, entry};

/// Starts one server of `kind` and runs every check of the contract on it.
fn passes(kind: TargetKind) {
    let entry = entry(kind);
    let mut opts = entry.opts.to_vec();
    let mut password = None;
    if let Password::Asks { opts: o, set, .. } = &entry.password {
        opts.extend_from_slice(o);
        password = *set;
    }
    let served = Served::start(kind, &opts, password);
    let e = &served.endpoint;
    (entry.prepare)(e);
    let r = checks::counts_agree(kind, &entry, e);
    checks::misses_are_counted(kind, &entry, e);
    checks::a_corrupted_value_is_wrong_value(kind, &entry, e);
    checks::batch_reads_agree(kind, &entry, e);
    checks::a_bad_password_fails_fast(kind, &entry, e, &r);
    checks::the_wrong_protocol_fails_fast(kind, &entry, e);
    (entry.also)(&served);
    served.interrupt();
}

/// One test per product, and the list of the products tested.
macro_rules! contract {
    ($($test:ident: $kind:ident),* $(,)?) => {
        const TESTED: &[TargetKind] = &[$(TargetKind::$kind),*];
        $(
            #[test]
            fn $test() {
                passes(TargetKind::$kind);
            }
        )*
    };
}

contract! {
    redis: Redis,
    valkey: Valkey,
    redis_cluster: RedisCluster,
    valkey_cluster: ValkeyCluster,
    memcached: Memcached,
    postgres: Postgres,
    mariadb: Mariadb,
    tarantool: Tarantool,
    cassandra: Cassandra,
}

#[test]
fn every_product_in_the_registry_runs_the_contract() {
    let mut tested = TESTED.to_vec();
    tested.dedup();
    assert_eq!(
        tested,
        TargetKind::ALL,
        "a test per product, in registry order"
    );
    for kind in TargetKind::ALL {
        // Where a check cannot apply, the entry says why.
        let e = entry(kind);
        if let Password::Never(why) = e.password {
            assert!(!why.is_empty(), "{kind:?}");
        }
        if let table::LoadCount::Apart(why) | table::LoadCount::WindowOnly(why) = e.load {
            assert!(!why.is_empty(), "{kind:?}");
        }
        if let table::Fresh::Counted(why) = e.fresh {
            assert!(!why.is_empty(), "{kind:?}");
        }
    }
}
