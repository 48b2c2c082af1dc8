//! Tarantool, started through kvlab's managed-server code, beyond the contract
//! every product passes (tests/contract): with either engine, pipelined with
//! writes whose replies come out of order, counts agree with `box.stat()` and
//! every write lands; its own CPU report agrees with /proc; a unix socket works.

use crate::common;

use std::time::Duration;

use common::{measure, plan, server};
use kvlab::driver::Connector;
use kvlab::plan::{Ratio, TargetKind};

#[test]
fn counts_agree_with_box_stat_also_out_of_order() {
    for engine in ["memtx", "vinyl"] {
        let s = server(TargetKind::Tarantool);
        let mut p = plan(TargetKind::Tarantool, s.endpoint());
        p.target.schema.table_engine = Some(engine.into());
        p.workload.ratio = Ratio { set: 1, get: 4 };
        p.load.pipeline = 16;
        let r = measure(&p);
        assert_eq!(
            (r.totals.errors, r.totals.misses),
            (0, 0),
            "{engine}: {:?}",
            r.problems
        );
        assert_eq!(r.totals.requests, 20_000);
        assert!(r.totals.sets > 0 && r.totals.gets > 0);
        let cc = r.server_counters.as_ref().expect("box.stat counters");
        assert!(cc.agrees(), "{engine}: {cc:?}");
        assert_eq!(cc.server.gets, r.warmup.gets + r.totals.gets);
        assert_eq!(cc.server.sets, r.warmup.sets + r.totals.sets);
        assert!(r.valid, "{:?}", r.problems);
        // Every write made one version: the versions in the space add up.
        let c = Connector::new(TargetKind::Tarantool, &s.endpoint()).unwrap();
        let mut conn = kvlab::products::tarantool::open(&c, Duration::from_secs(5)).unwrap();
        let sum = conn
            .eval(
                "local n = 0 for _, t in box.space.kvlab_kv:pairs() do n = n + tonumber(string.sub(t[2], 17, 32), 16) end return n",
                vec![],
            )
            .unwrap();
        // Writes to one key may overlap and land out of order (each is sent
        // to the key drawn): a key then keeps a version below its writes.
        let (sum, sets) = (sum[0].as_u64().unwrap(), r.warmup.sets + r.totals.sets);
        assert!(
            sum <= sets && sets - sum <= sets / 100,
            "{engine}: versions in the space {sum} of {sets} writes"
        );
    }
}

#[test]
fn an_external_tarantool_reports_its_own_cpu_as_proc_sees_it() {
    let s = common::server(TargetKind::Tarantool);
    common::cpu_sources_agree(TargetKind::Tarantool, &s);
}

#[test]
fn tarantool_over_a_unix_socket_counts_agree() {
    common::transport_counts_agree(TargetKind::Tarantool, &[("socket", "on")], |_, _| {});
}
