//! The checks every product passes, written once: each takes the product's
//! entry and the one server of it the contract started, and runs kvlab
//! against that server as a server it did not start.

use std::time::{Duration, Instant};

use kvlab::driver::Connector;
use kvlab::plan::{Endpoint, Ratio, RunPlan, Secret, TargetKind};
use kvlab::results::RunResult;

use crate::common::{measure, measure_err, plan, server};
use crate::table::{Entry, Fresh, LoadCount, Password};

/// The product's plan against `e`, with its own changes.
fn plan_of(kind: TargetKind, entry: &Entry, e: &Endpoint) -> RunPlan {
    let mut p = plan(kind, e.clone());
    (entry.tune)(&mut p);
    p
}

/// kvlab's counts equal the server's own: the run's window as the result
/// compares them, and a reading of the counters around the whole run (load
/// included) taken here. Returns the run.
pub fn counts_agree(kind: TargetKind, entry: &Entry, e: &Endpoint) -> RunResult {
    let connector = Connector::new(kind, e).unwrap();
    let before = connector.counters().unwrap();
    if let Fresh::Zero = entry.fresh {
        assert_eq!(before.gets + before.sets, 0, "{kind:?}: fresh server");
    }
    let mut p = plan_of(kind, entry, e);
    p.workload.ratio = Ratio { set: 1, get: 3 };
    p.load.pipeline = 8;
    let r = measure(&p);
    let t = &r.totals;
    let d = connector.counters().unwrap().since(&before);
    assert_eq!(r.load.as_ref().unwrap().keys, 2_000, "{kind:?}");
    assert_eq!(t.requests, 20_000, "{kind:?}");
    assert_eq!((t.errors, t.misses), (0, 0), "{kind:?}: {:?}", r.problems);
    assert_eq!(t.hits, t.gets, "{kind:?}");
    assert!(
        t.sets > 3_000 && t.gets > 12_000,
        "{kind:?}: mix 1:3: {} sets {} gets",
        t.sets,
        t.gets
    );
    // The result's own comparison, over the run's window.
    let cc = r.server_counters.as_ref().expect("the server's counters");
    assert!(cc.server.exact && cc.agrees(), "{kind:?}: {cc:?}");
    assert_eq!(cc.server.gets, r.warmup.gets + t.gets, "{kind:?}");
    assert_eq!(cc.server.sets, r.warmup.sets + t.sets, "{kind:?}");
    // Around the whole run, load included.
    let (load_sets, lookups) = match &entry.load {
        LoadCount::OneSetPerKey => (Some(2_000..=2_000), Some(0)),
        LoadCount::Statements(n, lookups) => (Some(n.clone()), Some(*lookups)),
        LoadCount::Apart(_) => (None, Some(0)),
        LoadCount::WindowOnly(_) => (None, None),
    };
    if let Some(lookups) = lookups {
        assert_eq!(d.gets, r.warmup.gets + t.gets + lookups, "{kind:?}: {d:?}");
    }
    if let Some(n) = load_sets {
        let load = d.sets.saturating_sub(r.warmup.sets + t.sets);
        assert!(n.contains(&load), "{kind:?}: the load as {load} writes");
    }
    if entry.counts_misses {
        assert_eq!(d.hits, r.warmup.hits + t.hits, "{kind:?}: {d:?}");
        assert_eq!(d.misses, 0, "{kind:?}: {d:?}");
    }
    assert!(r.valid, "{kind:?}: {:?}", r.problems);
    assert_eq!(r.target.kind, kind.name());
    // The server's product: a cluster's is its nodes' (`redis` of `redis-cluster`).
    let product = r.target.product.as_str();
    assert!(kind.name().starts_with(product), "{kind:?}: {product}");
    let product = kind.product();
    if !product.facts().pipelines {
        let said = "--pipeline 8 was run as 1";
        assert!(
            r.problems.iter().any(|m| m.contains(said)),
            "{:?}",
            r.problems
        );
    }
    // A server kvlab did not start: its CPU as the server reports it, if it does.
    let source = product.facts().usage_report.map(|u| u.cpu);
    assert_eq!(r.server.server_cpu_source.as_deref(), source, "{kind:?}");
    // TLS runs over epoll only (io_uring by name is refused for them).
    for io in crate::common::transports() {
        if e.tls.is_none() || io == kvlab::plan::io::IoChoice::Epoll {
            agrees_over(kind, &p, io);
        }
    }
    r
}

/// The same load again (its keys in place) over the interface `io`: the
/// counts still equal the server's over the window, every read a verified hit.
fn agrees_over(kind: TargetKind, p: &RunPlan, io: kvlab::plan::io::IoChoice) {
    let mut p = p.clone();
    p.workload.load = false;
    p.load.io = io;
    let r = measure(&p);
    crate::common::ran_over(&r, io);
    let t = &r.totals;
    assert_eq!(
        (t.requests, t.errors, t.misses),
        (20_000, 0, 0),
        "{kind:?} {io:?}"
    );
    assert_eq!(t.hits, t.gets, "{kind:?} {io:?}");
    let cc = r.server_counters.as_ref().expect("the server's counters");
    assert!(cc.server.exact && cc.agrees(), "{kind:?} {io:?}: {cc:?}");
    assert_eq!(cc.server.gets, r.warmup.gets + t.gets, "{kind:?} {io:?}");
    assert_eq!(cc.server.sets, r.warmup.sets + t.sets, "{kind:?} {io:?}");
}

/// GETs of keys that are not there are misses, not hits or errors, and the
/// result says its figures describe misses.
pub fn misses_are_counted(kind: TargetKind, entry: &Entry, e: &Endpoint) {
    let mut p = plan_of(kind, entry, e);
    p.workload.load = false;
    p.workload.key_prefix = "miss:".into(); // keys no earlier run stored
    p.workload.value_size = 120; // another size: a database gets a new, empty table
    let r = measure(&p);
    let t = &r.totals;
    assert!(t.gets > 0, "{kind:?}");
    assert_eq!((t.hits, t.misses, t.errors), (0, t.gets, 0), "{kind:?}");
    assert!(!r.valid, "{kind:?}");
    assert!(
        r.problems.iter().any(|m| m.contains("missed")),
        "{kind:?}: {:?}",
        r.problems
    );
    if entry.counts_misses {
        let c = r.server_counters.as_ref().unwrap();
        assert_eq!(c.server.misses, t.gets + r.warmup.gets, "{kind:?}: {c:?}");
    }
}

/// Runs `p` (loading its keys), corrupts key 3 on `e` (the entry's `corrupt`),
/// and runs `p` again without loading: that run, and its `wrong_value` errors.
fn run_corrupted(p: &mut RunPlan, entry: &Entry, e: &Endpoint) -> (RunResult, u64) {
    let _ = measure(p);
    (entry.corrupt)(e);
    p.workload.load = false;
    let r = measure(p);
    let wrong = r.totals.errors_by_kind["wrong_value"];
    (r, wrong)
}

/// A value that is not the one kvlab wrote is a `wrong_value` error.
pub fn a_corrupted_value_is_wrong_value(kind: TargetKind, entry: &Entry, e: &Endpoint) {
    let mut p = plan_of(kind, entry, e);
    p.workload.keys = 10;
    let (r, wrong) = run_corrupted(&mut p, entry, e);
    assert!(
        wrong > 500,
        "{kind:?}: about a tenth of 20k GETs hit key 3: {wrong}"
    );
    assert_eq!(
        wrong + r.totals.hits,
        r.totals.gets,
        "{kind:?}: {:?}",
        r.totals.errors_by_kind
    );
    assert_eq!(r.totals.misses, 0, "{kind:?}");
    assert!(!r.valid, "{kind:?}");
}

/// Runs `p`, which must fail with one line within 5 s; the error.
fn fails_fast(p: &RunPlan) -> String {
    let started = Instant::now();
    let err = measure_err(p);
    let took = started.elapsed();
    let kind = p.target.kind;
    assert!(took < Duration::from_secs(5), "{kind:?}: {took:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{kind:?}: one line: {err}");
    err
}

/// A wrong password (or none) is a one-line error within seconds that never
/// shows the password; the right one works and no output shows it.
pub fn a_bad_password_fails_fast(kind: TargetKind, entry: &Entry, e: &Endpoint, r: &RunResult) {
    let Password::Asks { set, without, .. } = &entry.password else {
        return;
    };
    if let Some(pw) = set {
        let json = serde_json::to_string(r).unwrap();
        assert!(!json.contains(pw), "{kind:?}: the password in the JSON");
        assert!(!kvlab::report::summary::summary(r).contains(pw), "{kind:?}");
    }
    assert!(e.password.is_some(), "{kind:?}: the server asks for one");
    let mut bad = e.clone();
    bad.password = Some(Secret("wr0ng-pw".into()));
    let err = fails_fast(&plan_of(kind, entry, &bad));
    assert!(
        err.contains("check the user and password"),
        "{kind:?}: {err}"
    );
    assert!(!err.contains("wr0ng-pw"), "{kind:?}: {err}");
    (bad.user, bad.password) = (None, None);
    let err = fails_fast(&plan_of(kind, entry, &bad));
    for says in *without {
        let says = says.replace("{scheme}", kind.scheme());
        assert!(err.contains(&says), "{kind:?}: {err}");
    }
}

/// A client of the product at a server of another protocol, and a client of
/// that protocol at the product's server, each fail with one line within
/// seconds naming the protocol the client expected.
pub fn the_wrong_protocol_fails_fast(kind: TargetKind, entry: &Entry, e: &Endpoint) {
    let other = server(entry.other);
    let mut at_other = e.clone();
    at_other.port = other.endpoint().port;
    (at_other.tls, at_other.socket, at_other.password) = (None, None, None);
    if !kind.product().facts().url_database {
        at_other.user = None;
    }
    let err = fails_fast(&plan_of(kind, entry, &at_other));
    let title = kind.product().facts().title;
    assert!(err.contains(&format!("{title} server")), "{kind:?}: {err}");

    let mut at_this = e.clone();
    (at_this.user, at_this.password, at_this.database) = (None, None, None);
    let err = fails_fast(&plan(entry.other, at_this));
    let title = entry.other.product().facts().title;
    assert!(err.contains(&format!("{title} server")), "{kind:?}: {err}");
}

/// Batch reads (`--batch`): with the protocol's own multi-key read, hits and
/// misses count keys, every value is verified (a corrupted one is a
/// `wrong_value`), and the server counts what its facts say (a request, or a
/// key). A product without one refuses `--batch` in one line.
pub fn batch_reads_agree(kind: TargetKind, entry: &Entry, e: &Endpoint) {
    let facts = kind.product().facts();
    let mut p = plan_of(kind, entry, e);
    p.workload.batch = Some("1:30,10:50,40:20".parse().unwrap());
    p.workload.ratio = Ratio { set: 1, get: 9 };
    if facts.batch_reads.is_none() {
        let err = p.check_batch().unwrap_err().to_string();
        assert!(
            err.contains("--batch") && err.contains("redis"),
            "{kind:?}: {err}"
        );
        return;
    }
    let r = measure(&p);
    let t = &r.totals;
    assert!(r.valid, "{kind:?}: {:?}", r.problems);
    let keys = t.keys_read.expect("keys read");
    // 13.3 keys per GET on average.
    assert!(
        keys > t.gets * 10 && keys < t.gets * 17,
        "{kind:?}: {keys} / {}",
        t.gets
    );
    assert_eq!((t.hits, t.misses, t.errors), (keys, 0, 0), "{kind:?}");
    assert!(t.sets > 0, "{kind:?}");
    let cc = r.server_counters.as_ref().expect("the server's counters");
    assert!(cc.agrees(), "{kind:?}: {cc:?}");
    let want = match (cc.server.per_key, facts.sharded) {
        (true, _) => r.warmup.keys_read() + keys,
        (false, false) => r.warmup.gets + t.gets,
        // A cluster counts one MGET per hash slot a batch's keys fall in.
        (false, true) => {
            let (requests, all_keys) = (r.warmup.gets + t.gets, r.warmup.keys_read() + keys);
            assert!(
                cc.kvlab_gets > requests && cc.kvlab_gets <= all_keys,
                "{kind:?}: {cc:?}"
            );
            cc.kvlab_gets
        }
    };
    assert_eq!(cc.server.gets, want, "{kind:?}: {cc:?}");
    // Keys no run stored: misses, key by key.
    let mut m = p.clone();
    m.workload.load = false;
    m.workload.key_prefix = "batchmiss:".into();
    m.workload.value_size = 120;
    m.workload.ratio = Ratio { set: 0, get: 1 };
    let r = measure(&m);
    let t = &r.totals;
    assert_eq!((t.hits, t.errors), (0, 0), "{kind:?}");
    assert_eq!(t.misses, t.keys_read.unwrap(), "{kind:?}");
    // A corrupted value within a batch fails its request as wrong_value.
    p.workload.keys = 10;
    p.workload.batch = Some("5".parse().unwrap());
    p.workload.ratio = Ratio { set: 0, get: 1 };
    let (r, wrong) = run_corrupted(&mut p, entry, e);
    assert!(
        wrong > 500,
        "{kind:?}: half the batches hold key 3: {wrong}"
    );
    assert!(!r.valid, "{kind:?}");
}
