//! Each architecture's row at the stated load, carried from the runs on the
//! measured copy (rates per server core, memory per key), the miss-ratio
//! curve at the stated data, and the decision with every extrapolation said.

use super::cpu::CpuCurves;
use super::measure::{Measured, Searched, mb_name};
use super::size::{self, Check, Memory, PerCore, Shape};
use super::{Ask, trace};
use crate::results::decide::{
    ArchName, Architecture, CacheLoss, Scaled, ServerSize, StatedLoad, bytes, price,
};
use crate::results::stats::num;

/// The figures a row is sized with at one end of its ranges (see
/// [`super::decision`]): each product's operations per core, the
/// cache-aside hit ratio carried to the stated keys; and what its run is
/// checked with.
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
pub(super) fn size(ask: &Ask, row: &mut Architecture, mut servers: Vec<ServerSize>) {
    let priced = price(&ask.load, &mut servers);
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
    ask: &Ask,
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
    r.p99_ms = step_p99(s);
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
pub(super) fn database(ask: &Ask, s: &Searched, pc: Option<f64>, per_key: f64) -> Architecture {
    let product = ask.plan.target.kind.product().name();
    searched(
        ask,
        (ArchName::Database, product, Shape::Database),
        (s, pc),
        per_key,
        "its table",
    )
}

/// The p99 at the capacity a search found, ms.
fn step_p99(s: &Searched) -> Option<f64> {
    let st = s.capacity.at_capacity()?;
    Some(st.result.latency.latency_us.p99 / 1000.0)
}

/// The cache alone (the data only in the cache) at the stated load, `pc`
/// operations per core.
pub(super) fn cache_alone(ask: &Ask, s: &Searched, pc: Option<f64>, per_key: f64) -> Architecture {
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
pub(super) fn cache_aside(ask: &Ask, m: &Measured, at: &At, per_key: f64) -> Architecture {
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

/// Every step from the measured copy to the stated load (and, for a decision
/// recomputed for another load, the one its runs were made for).
/// With `--cache-ttl`, the floor the TTL puts under the curve and the live
/// working set, the most memory worth buying.
fn ttl_said(ask: &Ask) -> Option<String> {
    let ttl = ask.cache.ttl_s;
    if ttl == 0 {
        return None;
    }
    let l = &ask.load;
    let reads = l.rps * (1.0 - l.write_share);
    let dist = &ask.plan.workload.distribution;
    let (miss, live) =
        crate::workload::trace::model::ttl_bound(dist, l.keys, reads, f64::from(ttl))?;
    let per_key = l.value_size as u64 + ask.assumed.method.key_overhead_bytes;
    Some(format!(
        "TTL {ttl} s (--cache-ttl): even a cache with room for every key misses {:.1}% of reads at {} reads/s (a key misses 1/(1 + λT) of its reads, λ its reads a second); about {} keys are live at a time (about {} at {per_key} B a key), the most memory worth buying{}.",
        miss * 100.0,
        num(reads),
        num(live),
        crate::results::decide::bytes((live * per_key as f64) as u64),
        match f64::from(ttl) > ask.run_s() {
            true => format!(
                "; the runs last {} s, too short to show its expiry (the measured curve has none)",
                num(ask.run_s())
            ),
            false => String::new(),
        },
    ))
}

pub(super) fn extrapolations(ask: &Ask, s: &Scaled, measured_for: &StatedLoad) -> Vec<String> {
    // A decision recomputed (--from) for another load than its runs were
    // made for says so last.
    let recomputed = (measured_for != &ask.load).then(|| format!(
        "Recomputed (kvlab decide --from) from runs made for {} req/s at p99 ≤ {} ms and {} keys; the runs' rates and the copy are as measured then.",
        num(measured_for.rps),
        measured_for.p99_ms,
        num(measured_for.keys as f64)
    ));
    let mut out = vec![
        format!("Data: {}.", s.why),
        format!("Rate: {}.", s.rate_why),
        "Cores, one method for every row: each server's operations per second at the stated load (from its architecture's measured shares: hits, near-cache hits, reads to replicas, writes, fills, invalidations) divided by its product's operations per core within the goal (its capacity search on this machine, client and servers sharing its cores); each fixed-rate run checks the model: each server's CPU measured there against its product's own search steps at the same operations per second (CPU per operation falls as load rises, so a light run is not held to the cost per operation at capacity). A real server scales less than linearly past a machine.".into(),
        "Memory: a table's size per key, times the stated keys; a cache's memory on the curve and in cache-aside as its base (what it takes holding no key, fitted over the curve's sizes: the items each held against its memory) as is, plus the rest per key times the stated keys, so that it holds the same share of them (a small cache's base is not multiplied); the cache alone's resident memory per key; a figure kvlab could not read is not known, never 0.".into(),
    ];
    let l = &ask.load;
    out.push(format!(
        "Machines and cost: {}; a machine is {} cores and {} GiB at {} {} a month{}. Prices: {}.",
        match l.shared {
            true => "the servers of each architecture share whole machines (--shared)",
            false => "each server on whole machines of its own (the cache is a second system with machines of its own; --shared packs them)",
        },
        l.machine_cores,
        l.machine_gib,
        num(l.price_machine_month),
        l.currency,
        match ask.plan.target.external.is_some() || ask.cache.cache.external.is_some() {
            true => "; a server given by URL is sized by the cores it used (or, where kvlab cannot read them, the cores stated with --target-cores or --cache-cores)",
            false => "",
        },
        match l.example_prices {
            true => format!(
                "{}: give --price-machine-month or --price-core-hour and --price-gib-hour",
                ask.assumed.policy.examples_said()
            ),
            false => "as given".into(),
        }
    ));
    if let Some(e) = &l.eviction {
        out.push(e.said());
    }
    out.extend(ttl_said(ask));
    if let Some(t) = &l.trace {
        out.push(trace::said(t));
    }
    if !l.observed.is_empty() {
        out.push(format!(
            "Observed (the servers' own counters, read-only): {}.",
            l.observed.join("; ")
        ));
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
    out.push(ask.assumed.said(ask.quick, ask.run_s()));
    out.extend(recomputed);
    out
}
