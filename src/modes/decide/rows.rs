//! Each architecture's row at the stated load, carried from the runs on the
//! measured copy (rates per server core, memory per key) and the miss-ratio
//! curve at the stated data; the decision's extrapolations are said in
//! `results::decide::said`.

use super::ask::Asked;
use super::cpu::CpuCurves;
use super::measure::{Measured, Searched, mb_name};
use super::size::{self, Check, Memory, PerCore, Shape};
use crate::results::decide::{ArchName, Architecture, CacheLoss, ServerSize, bytes};
use crate::results::stats::num;

/// The figures a row is sized with at one end of its ranges (see
/// [`super::decision`]): each product's operations per core, the
/// cache-aside hit ratio carried to the stated keys; and what its run is
/// checked with.
#[derive(Clone)]
pub(super) struct At {
    /// The database's and the cache's operations per core within the goal.
    pub searched: PerCore,
    /// The products' operations per core for the servers behind or beside a
    /// cache (the database's closed loop where no rate met the goal).
    pub any: PerCore,
    /// Cache-aside's hit ratio of all reads at the stated keys and mix.
    pub aside_hit: Option<f64>,
    /// What the carry added to the measured hit ratio (for the rows with the
    /// same cache beside it).
    pub hit_delta: f64,
    /// Each product's CPU against its operations per second, from its
    /// search's steps: the model's check (the same at every end).
    pub cpu: CpuCurves,
}

/// Sizes `row` by the one method: its `servers` (see [`size`]), their
/// cores and memory summed, their whole machines and cost.
pub(super) fn size(ask: &Asked, row: &mut Architecture, mut servers: Vec<ServerSize>) {
    let hours = ask.assumed.policy.hours_per_month;
    let priced = crate::pricing::price(&ask.load, hours, &mut servers);
    row.server_cores = servers.iter().map(|s| s.cores).sum();
    row.memory_bytes = servers.iter().map(|s| s.memory_bytes).sum();
    row.machines = priced.map(|p| p.0);
    row.monthly_cost = priced.map(|p| p.1);
    row.model_warning = size::model_warning(&servers);
    row.servers = servers;
}

/// An empty row named `name` of `product`.
pub(super) fn row(name: ArchName, product: &str) -> Architecture {
    Architecture {
        name,
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
        servers: Vec::new(),
        capacity_rps: None,
        capacity_bracket: None,
        model_warning: None,
        range: None,
    }
}

/// Why a search found no rate within the goal: kvlab's own limit where it
/// was one, else the fixed rate that came closest (the closed loop's p99 is
/// not a fixed rate's, so it is not offered).
fn missed(s: &Searched, p99_ms: f64) -> String {
    if let Some(at) = s.capacity.client_limited_at {
        return format!(
            "no rate was measured within p99 ≤ {p99_ms} ms: down to {} req/s kvlab itself could not keep up on this machine, so the server's capacity is not known (give kvlab more cores or --threads, or run it on another machine)",
            num(at)
        );
    }
    let best = s
        .capacity
        .steps
        .iter()
        .filter(|st| st.rate.is_some())
        .min_by(|a, b| {
            let p = |x: &crate::results::capacity::Step| x.result.latency.latency_us.p99;
            p(a).total_cmp(&p(b))
        })
        .map(|st| {
            format!(
                "; the lowest p99 was {} ms at {} req/s ({})",
                num(st.result.latency.latency_us.p99 / 1000.0),
                num(st.result.totals.throughput_rps),
                st.reason.as_deref().unwrap_or("failed")
            )
        })
        .unwrap_or_default();
    format!("no rate met p99 ≤ {p99_ms} ms on this machine{best}")
}

/// A capacity search as words: the rate within the goal, the cores it took.
fn searched_from(s: &Searched) -> String {
    let lower = match (s.capacity.client_limited_at, s.capacity.capped_at) {
        (Some(at), _) => format!(
            " (at least: at {} req/s kvlab itself could not keep up, so the server may carry more)",
            num(at)
        ),
        (None, Some(cap)) => format!(
            " (at least: --max-rps held the search to {} req/s on a server kvlab did not start, so it may carry more)",
            num(cap)
        ),
        (None, None) => String::new(),
    };
    match (s.capacity.capacity_rps, s.cores, s.per_core()) {
        (Some(rate), Some(cores), Some(pc)) => format!(
            "capacity search: {} req/s within the goal{lower} on {:.2} server cores ({}; {} req/s per core)",
            num(rate),
            cores,
            s.cores_source.said(),
            num(pc)
        ),
        (Some(rate), _, _) => format!(
            "capacity search: {} req/s within the goal{lower} (its cores not known: kvlab did not start it and none were stated)",
            num(rate)
        ),
        _ => "capacity search".into(),
    }
}

/// An architecture of one server at the stated load, from its capacity
/// search `s`: `name` (`database` or `cache`) of `product`, its memory
/// `memory` (what `s.bytes` measured) per key. Its cores not known, it meets
/// the goal where the server as measured carries the stated rate.
fn searched(
    ask: &Asked,
    (name, product, shape): (ArchName, &str, Shape),
    (s, pc): (&Searched, Option<f64>),
    per_key: f64,
    memory: &str,
) -> Architecture {
    let mut r = row(name, product);
    r.measured_from = format!(
        "{}; memory: {memory} ({}) per key × the stated keys",
        searched_from(s),
        s.bytes.map_or("not known".into(), bytes)
    );
    r.capacity_rps = s.capacity.capacity_rps;
    r.capacity_bracket = s.capacity.bracket;
    let mem = s.bytes.map(|b| (b as f64 * per_key) as u64);
    let (per_core, memory) = match shape {
        Shape::Cache => (
            PerCore {
                db: None,
                cache: pc,
            },
            Memory {
                table: None,
                cache: mem,
            },
        ),
        _ => (
            PerCore {
                db: pc,
                cache: None,
            },
            Memory {
                table: mem,
                cache: None,
            },
        ),
    };
    let servers = size::servers(&ask.load, shape, per_core, memory, (product, product), None);
    size(ask, &mut r, servers);
    r.p99_ms = s.capacity.p99_ms_at_capacity();
    match (s.capacity.capacity_rps, pc) {
        (None, _) => r.why_not = Some(missed(s, ask.load.p99_ms)),
        (Some(_), Some(_)) => r.within_goal = true,
        (Some(cap), None) => {
            r.within_goal = cap >= ask.load.rps;
            if !r.within_goal {
                r.why_not = Some(format!(
                    "the server as given carries {} req/s within the goal, below the stated {}; its cores are not known, so more of them cannot be priced (give --target-cores or --cache-cores)",
                    num(cap),
                    num(ask.load.rps)
                ));
            }
        }
    }
    r
}

/// The database alone at the stated load, `pc` operations per core.
pub(super) fn database(ask: &Asked, s: &Searched, pc: Option<f64>, per_key: f64) -> Architecture {
    let product = ask.plan.target.kind.product().name();
    searched(
        ask,
        (ArchName::Database, product, Shape::Database),
        (s, pc),
        per_key,
        "its table",
    )
}

/// The cache alone (the data only in the cache) at the stated load, `pc`
/// operations per core.
pub(super) fn cache_alone(
    ask: &Asked,
    s: &Searched,
    pc: Option<f64>,
    per_key: f64,
) -> Architecture {
    let product = ask.cache.cache.kind.product().name();
    let mut r = searched(
        ask,
        (ArchName::Cache, product, Shape::Cache),
        (s, pc),
        per_key,
        "its resident memory holding the copy",
    );
    r.on_cache_loss = Some("the data is lost with the cache: not durable as a database".into());
    r.cache_memory_bytes = r.memory_bytes;
    r
}

/// Requests per second per server core (`pc`, within the goal), else the
/// closed loop's (the database behind a cache serves only its misses).
pub(super) fn any_per_core(s: &Searched, pc: Option<f64>) -> Option<f64> {
    pc.or_else(|| {
        let st = s.capacity.steps.first()?;
        let cores = st.result.server.server_cpu_s? / st.result.totals.duration_s;
        (cores > 0.0).then(|| st.result.totals.throughput_rps / cores)
    })
}

/// Cache-aside at the stated load, from its confirmation run, its hit ratio
/// carried to the stated keys.
pub(super) fn cache_aside(ask: &Asked, m: &Measured, at: &At, per_key: f64) -> Architecture {
    let product = crate::results::architecture_name(
        ask.plan.target.kind.product().name(),
        Some(ask.cache.cache.kind.product().name()),
        None,
    );
    let mut r = row(ArchName::CacheAside, &product);
    let Some(a) = &m.aside else {
        r.why_not = Some("no cache size on the curve left the database's misses within its capacity at the rate run".into());
        r.measured_from = "the miss-ratio curve".into();
        return r;
    };
    let aside = a.result.cache_aside.as_ref();
    let measured_hit = aside.map_or(0.0, |x| x.hit_ratio);
    let hit = at.aside_hit.unwrap_or(measured_hit);
    let used = aside
        .and_then(|x| x.working_set.as_ref())
        .map(|w| w.memory_used_bytes);
    let base = super::carry::cache_base(m);
    let cache_bytes = super::carry::provisioned(a.memory_mb, used, m.cache.bytes)
        .map(|b| super::carry::at_stated(b, base, per_key));
    r.hit_ratio = Some(hit);
    r.cache_memory_bytes = cache_bytes;
    r.p99_ms = Some(a.result.latency.latency_us.p99 / 1000.0);
    r.stale_reads_per_million = a
        .result
        .consistency
        .as_ref()
        .map(|c| c.stale_per_million_reads);
    r.within_goal = a.within_goal;
    r.why_not = a.why_not.clone();
    let shape = Shape::Aside { hit, near: 0.0 };
    let run_shape = Shape::Aside {
        hit: measured_hit,
        near: 0.0,
    };
    let memory = Memory {
        table: m.db.bytes.map(|b| (b as f64 * per_key) as u64),
        cache: cache_bytes,
    };
    let products = (
        ask.plan.target.kind.product().name(),
        ask.cache.cache.kind.product().name(),
    );
    let servers = size::servers(
        &ask.load,
        shape,
        at.any,
        memory,
        products,
        Some(Check {
            run: &a.result,
            shape: run_shape,
            cpu: &at.cpu,
        }),
    );
    r.measured_from = format!(
        "a run at {} req/s with a {} cache ({} in use, {:.1}% hits on the copy{}){}; memory: the table per key × the stated keys, the cache's limit (or, with none, the whole copy's) as its base (what it takes holding nothing, fitted over the curve's sizes) plus the rest per key",
        num(a.result.config.load.rate.unwrap_or(0.0)),
        mb_name(a.memory_mb),
        used.map_or("memory in use not known".into(), bytes),
        measured_hit * 100.0,
        match (hit - measured_hit).abs() > 5e-4 {
            true => format!(", {:.1}% carried to the stated keys and mix", hit * 100.0),
            false => String::new(),
        },
        checked(&servers)
    );
    size(ask, &mut r, servers);
    r
}

/// The model's check as words: each server's cores at the run, predicted
/// from its product's own search steps at its operations per second there,
/// and measured.
pub(super) fn checked(servers: &[ServerSize]) -> String {
    let each: Vec<String> = servers
        .iter()
        .filter_map(|s| {
            let p = s.predicted_cores_at_run?;
            Some(format!(
                "{} {}: {} cores predicted, {}",
                s.role,
                s.product,
                super::size::cores_said(p, s.predicted_range_at_run.unwrap_or([p, p])),
                s.measured_cores_at_run
                    .map_or("CPU not measured".into(), |m| format!("{m:.2} measured"))
            ))
        })
        .collect();
    match each.is_empty() {
        true => String::new(),
        false => format!(
            "; the model's check (each server's CPU at its operations per second in the run, from its product's own search steps there): {}",
            each.join(", ")
        ),
    }
}

/// The cache-aside row with what a cache loss did.
pub(super) fn with_loss(
    mut r: Architecture,
    loss: Option<&CacheLoss>,
    db: &Architecture,
    ask_rps: f64,
) -> Architecture {
    if let Some(l) = loss {
        r.on_cache_loss = Some(format!(
            "{} at {} req/s (the rate measured, not the stated {}): the database's reads rose from {} to {} per second; p99 {} ms, {} errors; {}; the database alone {}",
            match (l.emulated, &l.event_error) {
                (_, Some(e)) => format!("the loss could not be made ({e})"),
                (true, None) => "a loss emulated by deleting kvlab's own keys from the cache given by URL (it kept running)".into(),
                (false, None) => "the cache restarted empty".into(),
            },
            num(l.rate_rps),
            num(ask_rps),
            num(l.db_before_rps),
            num(l.db_peak_rps),
            num(l.p99_ms),
            l.errors,
            match l.seconds_to_recover {
                Some(s) => format!("p99 back within the goal after {s} s"),
                None => "p99 not back within the goal in the run".into(),
            },
            match (db.within_goal, db.server_cores) {
                (true, Some(c)) => format!("carries the full load with {c:.2} cores"),
                (true, None) => "carries the full load within the goal".into(),
                _ => "cannot carry the full load within the goal".into(),
            }
        ));
    }
    r
}
