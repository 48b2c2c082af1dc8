//! Each architecture's row at the stated load, carried from the runs on the
//! measured copy (rates per server core, memory per key), the miss-ratio
//! curve at the stated data, and the decision with every extrapolation said.

use super::measure::{AsideRun, CurveRun, Searched, mb_name};
use super::{Ask, trace};
use crate::results::decide::{
    self, Architecture, CacheLoss, CurvePoint, Decision, Scaled, bytes, db_load, sized,
};
use crate::results::stats::num;

/// What the runs measured.
pub(super) struct Measured {
    pub db: Searched,
    pub cache: Searched,
    pub curve: Vec<CurveRun>,
    pub aside: Option<AsideRun>,
    pub loss: Option<CacheLoss>,
    /// The other architectures' rows: a read replica, a near cache in
    /// front of cache-aside, a near cache in front of the database.
    pub others: Vec<Architecture>,
}

/// The decision for `ask` from what was measured.
pub(super) fn decision(ask: &Ask, scaled: Scaled, m: Measured) -> Decision {
    let per_key = ask.load.keys as f64 / scaled.keys.max(1) as f64;
    let db = database(ask, &m.db, per_key);
    let cache = cache_alone(ask, &m.cache, per_key);
    let aside = cache_aside(ask, &m, per_key);
    let mut loss = m.loss.clone();
    if let Some(l) = loss.as_mut() {
        l.database_alone_carries = db.within_goal;
    }
    let aside = with_loss(aside, loss.as_ref(), &db);
    let answer = decide::decide(Some(&db), Some(&aside), Some(&cache));
    let (before, after) = m.others.split_at(m.others.len().min(1));
    let architectures = [
        vec![db],
        before.to_vec(),
        vec![aside],
        after.to_vec(),
        vec![cache],
    ]
    .concat();
    Decision {
        kvlab_version: env!("CARGO_PKG_VERSION").to_string(),
        load: ask.load.clone(),
        extrapolations: extrapolations(ask, &scaled),
        scaled,
        architectures,
        miss_ratio_curve: curve(ask, &m, per_key),
        cache_loss: loss,
        decision: answer,
    }
}

/// The cores, memory, machines and cost of `servers` (each its cores and
/// memory at the stated load), into `row`.
pub(super) fn size(ask: &Ask, row: &mut Architecture, servers: &[(f64, u64)]) {
    let (machines, cost) = sized(&ask.load, servers);
    let cores: f64 = servers.iter().map(|s| s.0).sum();
    row.server_cores = Some((cores * 10.0).ceil() / 10.0);
    row.memory_bytes = Some(servers.iter().map(|s| s.1).sum());
    row.machines = Some(machines);
    row.monthly_cost = Some(cost);
}

/// An empty row named `name` of `product`.
pub(super) fn row(name: &str, product: &str) -> Architecture {
    Architecture {
        name: name.into(),
        product: product.into(),
        server_cores: None,
        memory_bytes: None,
        machines: None,
        monthly_cost: None,
        p99_ms: None,
        within_goal: false,
        hit_ratio: None,
        cache_memory_bytes: None,
        stale_reads_per_million: None,
        on_cache_loss: None,
        measured_from: String::new(),
        why_not: None,
    }
}

/// Why a search found no rate within the goal.
fn missed(s: &Searched, p99_ms: f64) -> String {
    let best = s
        .capacity
        .steps
        .iter()
        .min_by(|a, b| {
            let p = |x: &crate::results::capacity::Step| x.result.latency.latency_us.p99;
            p(a).total_cmp(&p(b))
        })
        .map(|st| {
            format!(
                "; the lowest p99 was {} ms at {} req/s",
                num(st.result.latency.latency_us.p99 / 1000.0),
                num(st.result.totals.throughput_rps)
            )
        })
        .unwrap_or_default();
    format!("no rate met p99 ≤ {p99_ms} ms on this machine{best}")
}

/// A capacity search as words: the rate within the goal, the cores it took.
fn searched_from(s: &Searched) -> String {
    match (s.capacity.capacity_rps, s.cores, s.per_core()) {
        (Some(rate), Some(cores), Some(pc)) => format!(
            "capacity search: {} req/s within the goal on {:.2} server cores ({} req/s per core), carried to the stated rate linearly in cores",
            num(rate),
            cores,
            num(pc)
        ),
        (Some(rate), _, _) => format!(
            "capacity search: {} req/s within the goal (its CPU not known)",
            num(rate)
        ),
        _ => "capacity search".into(),
    }
}

/// An architecture of one server at the stated load, from its capacity
/// search `s`: `name` (`database` or `cache`) of `product`, its memory
/// `memory` (what `s.bytes` measured) per key.
fn searched(
    ask: &Ask,
    name: &str,
    product: &str,
    s: &Searched,
    per_key: f64,
    memory: &str,
) -> Architecture {
    let mut r = row(name, product);
    r.measured_from = format!(
        "{}; memory: {memory} ({}) per key × the stated keys",
        searched_from(s),
        s.bytes.map_or("not known".into(), bytes)
    );
    r.p99_ms = step_p99(s);
    match s.per_core() {
        Some(pc) => {
            r.within_goal = true;
            let b = (s.bytes.unwrap_or(0) as f64 * per_key) as u64;
            size(ask, &mut r, &[(ask.load.rps / pc, b)]);
        }
        None => r.why_not = Some(missed(s, ask.load.p99_ms)),
    }
    r
}

/// The database alone at the stated load.
fn database(ask: &Ask, s: &Searched, per_key: f64) -> Architecture {
    let product = ask.plan.target.kind.product().name();
    searched(ask, "database", product, s, per_key, "its table")
}

/// The p99 at the capacity a search found, ms.
fn step_p99(s: &Searched) -> Option<f64> {
    let rate = s.capacity.capacity_rps?;
    let st = s
        .capacity
        .steps
        .iter()
        .rev()
        .find(|x| x.passed && x.rate == Some(rate))?;
    Some(st.result.latency.latency_us.p99 / 1000.0)
}

/// The cache alone (the data only in the cache) at the stated load.
fn cache_alone(ask: &Ask, s: &Searched, per_key: f64) -> Architecture {
    let product = ask.cache.cache.kind.product().name();
    let mut r = searched(
        ask,
        "cache",
        product,
        s,
        per_key,
        "its resident memory holding the copy",
    );
    r.on_cache_loss = Some("the data is lost with the cache: not durable as a database".into());
    r.cache_memory_bytes = r.memory_bytes;
    r
}

/// Requests per second per server core: within the goal, else the closed
/// loop's (the database behind a cache serves only its misses).
fn any_per_core(s: &Searched) -> Option<f64> {
    s.per_core().or_else(|| {
        let st = s.capacity.steps.first()?;
        let cores = st.result.server.server_cpu_s? / st.result.totals.duration_s;
        (cores > 0.0).then(|| st.result.totals.throughput_rps / cores)
    })
}

/// Cache-aside at the stated load, from its confirmation run.
fn cache_aside(ask: &Ask, m: &Measured, per_key: f64) -> Architecture {
    let product = crate::results::architecture_name(
        ask.plan.target.kind.product().name(),
        Some(ask.cache.cache.kind.product().name()),
        None,
    );
    let mut r = row("cache-aside", &product);
    let Some(a) = &m.aside else {
        r.why_not = Some("no cache size on the curve left the database's misses within its capacity at the rate run".into());
        r.measured_from = "the miss-ratio curve".into();
        return r;
    };
    let aside = a.result.cache_aside.as_ref();
    let hit = aside.map_or(0.0, |x| x.hit_ratio);
    let used = aside
        .and_then(|x| x.working_set.as_ref())
        .map_or(0, |w| w.memory_used_bytes);
    let cache_bytes = (provisioned(a.memory_mb, used, m.cache.bytes) as f64 * per_key) as u64;
    r.hit_ratio = Some(hit);
    r.cache_memory_bytes = Some(cache_bytes);
    r.p99_ms = Some(a.result.latency.latency_us.p99 / 1000.0);
    r.stale_reads_per_million = a
        .result
        .consistency
        .as_ref()
        .map(|c| c.stale_per_million_reads);
    r.within_goal = a.within_goal;
    r.why_not = a.why_not.clone();
    let ws = ask.load.write_share;
    let db_ops = db_load(ask.load.rps, ws, hit);
    let cache_ops = ask.load.rps * ((1.0 - ws) * (2.0 - hit) + ws);
    r.measured_from = format!(
        "a run at {} req/s with a {} cache ({} in use, {:.1}% hits); the database's cores for its {} reads and writes per second at the stated rate, the cache's for its {} operations, each at its own rate per core; memory: the table and the cache's limit (or, with none, the whole copy's) per key × the stated keys",
        num(a.result.config.load.rate.unwrap_or(0.0)),
        mb_name(a.memory_mb),
        bytes(used),
        hit * 100.0,
        num(db_ops),
        num(cache_ops)
    );
    match (any_per_core(&m.db), m.cache.per_core()) {
        (Some(dpc), Some(cpc)) => {
            let db_bytes = (m.db.bytes.unwrap_or(0) as f64 * per_key) as u64;
            size(
                ask,
                &mut r,
                &[(db_ops / dpc, db_bytes), (cache_ops / cpc, cache_bytes)],
            );
        }
        _ => {
            r.within_goal = false;
            r.why_not.get_or_insert_with(|| {
                "a server's rate per core is not known (its CPU was not measured)".into()
            });
        }
    }
    r
}

/// The cache-aside row with what a cache loss did.
fn with_loss(mut r: Architecture, loss: Option<&CacheLoss>, db: &Architecture) -> Architecture {
    if let Some(l) = loss {
        r.on_cache_loss = Some(format!(
            "the database's reads rose from {} to {} per second; p99 {} ms, {} errors; {}; the database alone {}",
            num(l.db_before_rps),
            num(l.db_peak_rps),
            num(l.p99_ms),
            l.errors,
            match l.seconds_to_recover {
                Some(s) => format!("p99 back within the goal after {s} s"),
                None => "p99 not back within the goal in the run".into(),
            },
            match (db.within_goal, db.server_cores) {
                (true, Some(c)) => format!("carries the full load with {c:.1} cores"),
                _ => "cannot carry the full load within the goal".into(),
            }
        ));
    }
    r
}

/// The memory of a cache limited to `mb` MiB (`None`: no limit) for the
/// measured copy: the limit, or, with none, what the cache alone holding the
/// whole copy took (`full`), at least what was in use.
fn provisioned(mb: Option<u64>, used: u64, full: Option<u64>) -> u64 {
    match mb {
        Some(mb) => mb << 20,
        None => full.unwrap_or(0).max(used),
    }
}

/// The measured curve at the stated data, then (with `--trace`) the trace's,
/// each measured point with the trace's hit ratio at the share of keys it held.
fn curve(ask: &Ask, m: &Measured, per_key: f64) -> Vec<CurvePoint> {
    let keys = ask.plan.workload.keys.max(1) as f64;
    let mut held: Vec<(f64, f64)> = Vec::new();
    let mut points: Vec<CurvePoint> = m
        .curve
        .iter()
        .filter_map(|c| {
            let a = c.result.cache_aside.as_ref()?;
            let ws = a.working_set.as_ref();
            let used = ws.map_or(0, |w| w.memory_used_bytes);
            let bytes = provisioned(c.memory_mb, used, m.cache.bytes);
            if let Some(w) = ws {
                held.push((w.items as f64, bytes as f64));
            }
            let share = ws.map(|w| w.items as f64 / keys);
            Some(CurvePoint {
                cache_memory_bytes: (bytes as f64 * per_key) as u64,
                hit_ratio: a.hit_ratio,
                source: "measured".into(),
                db_reads_per_s: db_load(ask.load.rps, ask.load.write_share, a.hit_ratio),
                trace_hit_ratio: ask
                    .trace
                    .as_ref()
                    .zip(share)
                    .map(|(t, s)| trace::at_share(&t.curve, s)),
            })
        })
        .collect();
    if let (Some(t), Some(memory)) = (&ask.trace, memory_of_items(&held)) {
        let l = &ask.load;
        let bytes = |share: f64| memory(share * keys) * per_key;
        points.extend(trace::points(&t.curve, &bytes, (l.rps, l.write_share)));
    }
    points
}

/// The cache's memory for a number of items held, fitted to the measured
/// points' (items, memory): a base plus a size per item (least squares).
fn memory_of_items(held: &[(f64, f64)]) -> Option<impl Fn(f64) -> f64> {
    let n = held.len() as f64;
    let (mx, my) = (
        held.iter().map(|p| p.0).sum::<f64>() / n,
        held.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = held.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = held.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let per_item = match sxx > 0.0 {
        true => sxy / sxx,
        false => my / mx,
    };
    let base = (my - per_item * mx).max(0.0);
    (mx > 0.0 && per_item > 0.0).then_some(move |items: f64| base + per_item * items)
}

/// Every step from the measured copy to the stated load.
fn extrapolations(ask: &Ask, s: &Scaled) -> Vec<String> {
    let mut out = vec![
        format!("Data: {}.", s.why),
        format!("Rate: {}.", s.rate_why),
        "Cores: each server's requests per second per core within the goal, measured on this machine (client and servers sharing its cores), carried to the stated rate linearly; a real server scales less than linearly past a machine.".into(),
        "Memory: a table's size and a cache's memory in use per key, times the stated keys.".into(),
    ];
    let l = &ask.load;
    if let Some(t) = &l.trace {
        out.push(trace::said(t));
    }
    let hop = |ms: Option<f64>| ms.map_or("loopback (~30 µs)".to_string(), |m| format!("{m} ms"));
    out.push(match (l.rtt_ms.is_some() || l.cache_rtt_ms.is_some(), l.rtt_assumed) {
        (true, assumed) => format!(
            "Round trips: database {}, cache {}, emulated by kvlab on every connection (a delay only: no loss, no bandwidth limit){}.",
            hop(l.rtt_ms),
            hop(l.cache_rtt_ms),
            match assumed {
                true => "; assumed, one hop within a zone, as none was given (--rtt, --cache-rtt; --rtt 0 for loopback)",
                false => "",
            }
        ),
        (false, _) => "Round trips: over loopback (~30 µs); in production each server is a network hop away (give --rtt to emulate one).".into(),
    });
    out
}
