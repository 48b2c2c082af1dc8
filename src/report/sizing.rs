//! The sizing table of a study that states a load (`[sizing]`): for each
//! architecture the study ran — a database alone, a cache in front of a
//! database, a cache alone — the server cores and memory that load needs,
//! machines of the given shape, the cost a month, the stale-read rate and the
//! database's load if the cache fails. Every figure names the measurement it
//! comes from; CPU is extrapolated linearly from the rate measured, which the
//! caveat says does not hold to many cores.

use crate::driver::Role;
use crate::plan::study::Sizing;
use crate::report::table::Table;
use crate::results::RunResult;
use crate::results::stats::num;
use crate::results::study::StudyResult;

/// Hours in a month, for prices per hour.
const MONTH_H: f64 = 730.0;

/// What a sizing adds to the report: verdict lines, caveats and the table.
pub struct Section {
    /// Verdict sentences.
    pub verdict: Vec<String>,
    /// What to keep in mind.
    pub caveats: Vec<String>,
    /// The sizing table.
    pub table: Table,
}

/// One architecture's needs at the stated load.
struct Need {
    architecture: &'static str,
    target: String,
    cores: f64,
    gib: f64,
    stale: String,
    if_cache_fails: String,
    source: String,
}

/// The sizing section (`None` when the study states no load or measured
/// nothing within its limit).
pub fn section(results: &[StudyResult]) -> Option<Section> {
    let study = &results.first()?.study;
    let s = study.sizing.as_ref()?;
    let p99_ms = s.p99_ms.or(study.goal.p99_ms);
    let keys = s.keys.unwrap_or(study.workload.keys);
    let value = s.value_size.unwrap_or(study.workload.value_size);
    // Per target, the point within the limit that spent the least server CPU
    // per request: the cheapest way the study saw it carry its load.
    let mut best: std::collections::BTreeMap<&str, &RunResult> = Default::default();
    for p in results.iter().flat_map(|r| &r.points) {
        let Some(r) = p.result.as_ref() else { continue };
        let within =
            r.valid && r.errors == 0 && p99_ms.is_none_or(|ms| r.latency_us.p99 <= ms * 1e3);
        if !within || cpu_per_req(r).is_none() {
            continue;
        }
        let e = best.entry(p.target.as_str()).or_insert(r);
        if cpu_per_req(r) < cpu_per_req(e) {
            *e = r;
        }
    }
    if best.is_empty() {
        return None;
    }
    // A database's own cost alone, for what it must carry when a cache fails.
    let db_alone = |product: &str| -> Option<(f64, String)> {
        best.iter()
            .filter(|(_, r)| r.cache_aside.is_none() && r.target.product == product)
            .filter_map(|(t, r)| Some((cpu_per_req(r)? * s.rps / 1e6, t.to_string())))
            .next()
    };
    let needs: Vec<Need> = best
        .iter()
        .map(|(t, r)| need(t, r, s, keys, value, db_alone))
        .collect();
    let mut table = Table {
        title: format!(
            "Sizing for {} req/s{}, {} keys x {} B",
            num(s.rps),
            p99_ms
                .map(|m| format!(" within p99 {m} ms"))
                .unwrap_or_default(),
            num(keys as f64),
            value
        ),
        headers: [
            "architecture",
            "target",
            "server cores",
            "memory GiB",
            "machines",
            "cost a month",
            "stale reads",
            "database if the cache fails",
            "from",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let mut verdict = Vec::new();
    for n in &needs {
        let machines = match (s.machine_cores, s.machine_gib) {
            (None, None) => "-".to_string(),
            (c, g) => {
                let by_cores = c.map_or(0.0, |c| n.cores / c);
                let by_mem = g.map_or(0.0, |g| n.gib / g);
                format!("{:.0}", by_cores.max(by_mem).ceil().max(1.0))
            }
        };
        let cost = match (s.price_core_hour, s.price_gib_hour) {
            (None, None) => "-".to_string(),
            (c, g) => format!(
                "{:.0}",
                (n.cores * c.unwrap_or(0.0) + n.gib * g.unwrap_or(0.0)) * MONTH_H
            ),
        };
        verdict.push(format!(
            "Sizing: {} ({}) needs {:.1} server cores and {:.1} GiB for {} req/s{}.",
            n.architecture,
            n.target,
            n.cores,
            n.gib,
            num(s.rps),
            match cost.as_str() {
                "-" => String::new(),
                c => format!(", about {c} a month"),
            }
        ));
        table.rows.push(vec![
            n.architecture.to_string(),
            n.target.clone(),
            format!("{:.1}", n.cores),
            format!("{:.2}", n.gib),
            machines,
            cost,
            n.stale.clone(),
            n.if_cache_fails.clone(),
            n.source.clone(),
        ]);
    }
    let measured = best.values().map(|r| r.throughput_rps).fold(0.0, f64::max);
    let cores = results.first().map_or(0, |r| r.machine.cores);
    let caveats = vec![format!(
        "Sizing extrapolates server CPU per request, measured at up to {} req/s on a {cores}-core machine that client and servers shared, linearly to {} req/s: per-core rates do not scale linearly to many cores (locks, memory bandwidth, interrupts); measure at more threads or on the target machine before buying. Memory is the measured server's resident memory per key times {} keys.",
        num(measured),
        num(s.rps),
        num(keys as f64)
    )];
    Some(Section {
        verdict,
        caveats,
        table,
    })
}

/// Server CPU µs per request of a run (cache and database together in a
/// cache-aside run).
fn cpu_per_req(r: &RunResult) -> Option<f64> {
    match &r.cache_aside {
        Some(a) => {
            let cpu = a.cache_cpu_s? + a.db_cpu_s?;
            (r.requests > 0).then(|| cpu * 1e6 / r.requests as f64)
        }
        None => r.server_cpu_us_per_request,
    }
}

/// What target `t`'s best run `r` says the stated load needs.
fn need(
    t: &str,
    r: &RunResult,
    s: &Sizing,
    keys: u64,
    value: usize,
    db_alone: impl Fn(&str) -> Option<(f64, String)>,
) -> Need {
    let measured_keys = r.config.workload.keys.max(1) as f64;
    let rss_gib = |kb: u64| kb as f64 * 1024.0 / measured_keys * keys as f64 / (1u64 << 30) as f64;
    let at = format!(
        "{} at {} req/s, p99 {:.0} µs, {:.1} µs server CPU/req",
        t,
        num(r.throughput_rps),
        r.latency_us.p99,
        cpu_per_req(r).unwrap_or(0.0)
    );
    let cores = cpu_per_req(r).unwrap_or(0.0) * s.rps / 1e6;
    let data_gib = keys as f64 * value as f64 / (1u64 << 30) as f64;
    match &r.cache_aside {
        Some(a) => {
            let stale = r.consistency.as_ref().map_or("not measured".into(), |c| {
                format!("{:.1} per million reads", c.stale_per_million_reads)
            });
            let cache_gib = a.working_set.as_ref().map_or(data_gib, |w| {
                w.memory_limit_bytes as f64 / w.data_bytes.max(1) as f64 * data_gib
            });
            let fails = match db_alone(&r.target.product) {
                Some((c, from)) => format!("all {} req/s: {c:.1} cores ({from})", num(s.rps)),
                None => format!(
                    "all {} req/s (no point of the database alone to size it)",
                    num(s.rps)
                ),
            };
            Need {
                architecture: "cache in front of the database",
                target: format!("{} + {}", a.cache.product, r.target.product),
                cores,
                gib: cache_gib + r.server_peak_rss_kb.map_or(data_gib, rss_gib),
                stale,
                if_cache_fails: fails,
                source: format!(
                    "{at}; hit ratio {:.1}%; cache sized as measured",
                    a.hit_ratio * 100.0
                ),
            }
        }
        None => {
            let cache = matches!(r.config.target.kind.product().role(), Role::Cache(_));
            Need {
                architecture: if cache {
                    "the cache alone"
                } else {
                    "the database alone"
                },
                target: r.target.product.clone(),
                cores,
                gib: r.server_peak_rss_kb.map_or(data_gib, rss_gib),
                stale: "-".into(),
                if_cache_fails: "-".into(),
                source: at,
            }
        }
    }
}
