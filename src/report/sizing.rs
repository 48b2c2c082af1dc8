//! The sizing table of a study that states a load (`[sizing]`): for each
//! architecture the study ran — a database alone, a cache in front of a
//! database, a cache alone — the server cores and memory that load needs,
//! machines of the given shape, the cost a month, the stale-read rate and the
//! database's load if the cache fails. Every figure names the measurement it
//! comes from. Cores come as kvlab decide sizes them where the study searched
//! a target's capacity (`[goal] capacity`): the operations per core within
//! the goal at the capacity found; else from the point within the goal that
//! spent the least CPU per request, extrapolated linearly (the caveat says
//! so). Machines and prices are decide's.

use std::collections::BTreeMap;

use crate::plan::study::Sizing;
use crate::report::table::Table;
use crate::results::RunResult;
use crate::results::decide::{KVLAB, Machine};
use crate::results::stats::num;
use crate::results::study::StudyResult;
use crate::results::usage::Role;

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
    /// Server cores and memory (GiB); `None`: no point to size from.
    size: Option<(f64, f64)>,
    /// Each server's cores and memory (GiB), priced on machines of its own
    /// (the run's whole as one server where it kept no server's own).
    servers: Vec<(f64, f64)>,
    stale: String,
    if_cache_fails: String,
    source: String,
}

/// Per target, the run it is sized from (see [`Basis`]); and every
/// architecture the study ran, in its order, with its points.
type Points<'a> = (
    BTreeMap<&'a str, (&'a RunResult, Basis)>,
    Vec<(&'a str, Vec<&'a RunResult>)>,
);

/// Which run a target is sized from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Basis {
    /// Its capacity search's run at the capacity found, with the search's
    /// requests per second per server core within the goal (as kvlab
    /// decide sizes).
    Search(f64),
    /// The point within the limit that spent the least server CPU per
    /// request (the cheapest way the study saw it carry its load).
    Cheapest,
}

/// The sizing section (`None` when the study states no load or measured
/// nothing within its limit).
pub fn section(results: &[StudyResult]) -> Option<Section> {
    let study = &results.first()?.study;
    let s = study.sizing.as_ref()?;
    let p99_ms = s.p99_ms.or(study.goal.p99_ms);
    let keys = s.keys.unwrap_or(study.workload.keys);
    let value = s.value_size.unwrap_or(study.workload.value_size);
    let (best, ran) = points(results, p99_ms);
    if ran.is_empty() {
        return None;
    }
    // A database's own cost alone, for what it must carry when a cache fails.
    let db_alone = |product: &str| -> Option<(f64, String)> {
        best.iter()
            .map(|(t, (r, _))| (t, r))
            .filter(|(_, r)| r.cache_aside.is_none() && r.target.product == product)
            .filter_map(|(t, r)| Some((cpu_per_req(r)? * s.rps / 1e6, t.to_string())))
            .next()
    };
    let mut table = table(s, p99_ms, keys, value);
    let mut verdict = Vec::new();
    for (t, rs) in &ran {
        let n = match best.get(t) {
            Some(&(r, basis)) => need((t, r, basis), s, keys, value, &db_alone),
            None => no_point(rs, p99_ms),
        };
        let (line, row) = sized(&n, s);
        verdict.push(line);
        table.rows.push(row);
    }
    let caveats = caveats(s, &best, results, keys);
    Some(Section {
        verdict,
        caveats,
        table,
    })
}

/// What the sizing rests on, said: the linear extrapolation where a target
/// was sized from its cheapest point, the memory per key, the pricing.
fn caveats(
    s: &Sizing,
    best: &BTreeMap<&str, (&RunResult, Basis)>,
    results: &[StudyResult],
    keys: u64,
) -> Vec<String> {
    let cheapest = || {
        best.values()
            .filter(|(_, basis)| *basis == Basis::Cheapest)
            .map(|(r, _)| r.totals.throughput_rps)
    };
    let measured = cheapest().fold(0.0, f64::max);
    let searched = best.len() - cheapest().count();
    let cores = results.first().map_or(0, |r| r.machine.cores);
    let cpu = match (searched, cheapest().count()) {
        (_, 0) => "Cores come from each target's capacity search, as kvlab decide sizes them: operations per core within the goal at the capacity found, divided into the stated rate".to_string(),
        (n, _) => format!(
            "{}Cores extrapolate server CPU per request, measured at up to {} req/s on a {cores}-core machine that client and servers shared, linearly to {} req/s: per-core rates do not scale linearly to many cores (locks, memory bandwidth, interrupts); a capacity search ([goal] capacity = true) sizes as kvlab decide does, and measuring on the target machine before buying is better still",
            match n {
                0 => "",
                _ => "Targets with a capacity search are sized from it (operations per core within the goal). ",
            },
            num(measured),
            num(s.rps),
        ),
    };
    let machine = machine_of(s);
    vec![format!(
        "{cpu}. Memory is the measured server's resident memory per key times {} keys. Machines and cost as kvlab decide prices them: each server on whole machines of its own ({} cores and {} GiB each{}), a month of {} hours. Whether to keep the cache is kvlab decide's answer: for that, use a [decide] study.",
        num(keys as f64),
        machine.cores,
        machine.gib,
        match (s.machine_cores, s.machine_gib) {
            (Some(_), Some(_)) => "",
            _ => ", kvlab's machine where the study gives none",
        },
        KVLAB.policy.hours_per_month
    )]
}

/// The run each target is sized from within `p99_ms` and every
/// architecture ran (see [`Points`]).
fn points(results: &[StudyResult], p99_ms: Option<f64>) -> Points<'_> {
    let mut best: BTreeMap<&str, (&RunResult, Basis)> = BTreeMap::new();
    let mut ran: Vec<(&str, Vec<&RunResult>)> = Vec::new();
    for p in results.iter().flat_map(|r| &r.points) {
        let Some(r) = p.result.as_ref() else { continue };
        match ran.iter_mut().find(|(t, _)| *t == p.target) {
            Some((_, rs)) => rs.push(r),
            None => ran.push((p.target.as_str(), vec![r])),
        }
        let within = r.valid
            && r.totals.errors == 0
            && p99_ms.is_none_or(|ms| r.latency.latency_us.p99 <= ms * 1e3);
        if !within || cpu_per_req(r).is_none() {
            continue;
        }
        let e = best
            .entry(p.target.as_str())
            .or_insert((r, Basis::Cheapest));
        if cpu_per_req(r) < cpu_per_req(e.0) {
            e.0 = r;
        }
    }
    for c in results.iter().flat_map(|r| &r.capacity) {
        let (Some(at), Some(per_core)) = (c.search.at_capacity(), c.search.per_core()) else {
            continue;
        };
        if cpu_per_req(&at.result).is_none() {
            continue;
        }
        let t = c.target.as_str();
        if !ran.iter().any(|(r, _)| *r == t) {
            ran.push((t, vec![&at.result]));
        }
        best.insert(t, (&at.result, Basis::Search(per_core)));
    }
    (best, ran)
}

/// The machine `s` prices on: its shape, kvlab's where it gives none.
fn machine_of(s: &Sizing) -> Machine {
    Machine {
        cores: s.machine_cores.unwrap_or(KVLAB.policy.machine_cores),
        gib: s.machine_gib.unwrap_or(KVLAB.policy.machine_gib),
    }
}

/// The currency of the costs, as their header and verdict name it.
fn cost_unit(s: &Sizing) -> String {
    match &s.currency {
        Some(c) => c.clone(),
        None => "in the unit of price_core_hour".to_string(),
    }
}

/// The sizing table's title and headers, without rows.
fn table(s: &Sizing, p99_ms: Option<f64>, keys: u64, value: usize) -> Table {
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
    if s.price_core_hour.is_some() || s.price_gib_hour.is_some() {
        table.headers[5] = format!("cost a month ({})", cost_unit(s));
    }
    table
}

/// An architecture's verdict line and table row: what it needs, in cores,
/// memory, machines and money, or why it was not sized.
fn sized(n: &Need, s: &Sizing) -> (String, Vec<String>) {
    let Some((cores, gib)) = n.size else {
        let line = format!(
            "Sizing: {} ({}): not sized: {}.",
            n.architecture, n.target, n.source
        );
        return (line, n.row(["-", "-", "-", "-"].map(String::from)));
    };
    // Priced as kvlab decide prices: each server on whole machines of its
    // own, a month of the policy's hours.
    let policy = KVLAB.policy;
    let machine = machine_of(s);
    let count: u32 = n.servers.iter().map(|&(c, g)| machine.machines(c, g)).sum();
    let machines = count.to_string();
    let cost = match (s.price_core_hour, s.price_gib_hour) {
        (None, None) => "-".to_string(),
        (c, g) => format!(
            "{:.0}",
            count as f64
                * policy.machine_month(
                    machine.cores,
                    machine.gib,
                    c.unwrap_or(0.0),
                    g.unwrap_or(0.0)
                )
        ),
    };
    let line = format!(
        "Sizing: {} ({}) needs {:.1} server cores and {:.1} GiB for {} req/s: {count} machine(s){}.",
        n.architecture,
        n.target,
        cores,
        gib,
        num(s.rps),
        match cost.as_str() {
            "-" => String::new(),
            c => format!(", about {c} a month ({})", cost_unit(s)),
        }
    );
    let row = n.row([format!("{cores:.1}"), format!("{gib:.2}"), machines, cost]);
    (line, row)
}

impl Need {
    /// The table row with `sized`: server cores, memory, machines and cost.
    fn row(&self, sized: [String; 4]) -> Vec<String> {
        let mut row = vec![self.architecture.to_string(), self.target.clone()];
        row.extend(sized);
        row.extend([
            self.stale.clone(),
            self.if_cache_fails.clone(),
            self.source.clone(),
        ]);
        row
    }
}

/// Server CPU µs per request of a run: every server of it together (cache
/// and database in a cache-aside run, the pooler too).
fn cpu_per_req(r: &RunResult) -> Option<f64> {
    match (&r.cache_aside, r.server.servers.is_empty()) {
        // Results from before each server's use was kept.
        (Some(a), true) => {
            let cpu = a.cache_cpu_s? + a.db_cpu_s?;
            (r.totals.requests > 0).then(|| cpu * 1e6 / r.totals.requests as f64)
        }
        _ => r.server.server_cpu_us_per_request,
    }
}

/// The architecture of a run, in the sizing's words.
fn architecture(r: &RunResult) -> &'static str {
    let cache_alone = match crate::results::usage::of(&r.server.servers, Role::Cache) {
        Some(_) => r.server.servers.len() == 1,
        None if r.server.servers.is_empty() => !r.config.target.kind.is_sql(),
        None => false,
    };
    match (&r.cache_aside, cache_alone) {
        (Some(_), _) => "cache-aside",
        (None, true) => "the cache alone",
        (None, false) => "the database alone",
    }
}

/// An architecture the study ran with no point to size from: why, its
/// lowest p99, and what to run to get one.
fn no_point(rs: &[&RunResult], p99_ms: Option<f64>) -> Need {
    let ok: Vec<&&RunResult> = rs
        .iter()
        .filter(|r| r.valid && r.totals.errors == 0)
        .collect();
    let p99 = |r: &&&RunResult| r.latency.latency_us.p99;
    let low = ok.iter().min_by(|a, b| p99(a).total_cmp(&p99(b)));
    let why = match (low, p99_ms) {
        (None, _) => "every point had errors or was not valid; see each point's problems".into(),
        (Some(l), Some(ms)) => format!(
            "no point met p99 ≤ {ms} ms; the lowest p99 was {} ms at {} req/s. To get one, run it at lower rates (a [sweep] of rate) or search its capacity: kvlab capacity --target {} --p99-ms {ms}",
            num(l.latency.latency_us.p99 / 1e3),
            num(l.totals.throughput_rps),
            l.config.target.kind.name()
        ),
        (Some(_), None) => {
            "its server CPU was not measured (a server kvlab did not start that reports none)"
                .into()
        }
    };
    let r = rs[0];
    Need {
        architecture: architecture(r),
        target: r.architecture(),
        size: None,
        servers: Vec::new(),
        stale: "-".into(),
        if_cache_fails: "-".into(),
        source: why,
    }
}

/// Memory the stated keys need (GiB), from each server's peak resident
/// memory per key measured, and how it was read.
fn memory(r: &RunResult, keys: u64, data_gib: f64) -> (f64, String) {
    let measured_keys = r.config.workload.keys.max(1) as f64;
    let gib = |kb: u64| kb as f64 * 1024.0 / measured_keys * keys as f64 / (1u64 << 30) as f64;
    let parts: Vec<String> = r
        .server
        .servers
        .iter()
        .filter_map(|u| {
            Some(format!(
                "{} {} MiB",
                u.product,
                num(u.peak_rss_kb? as f64 / 1024.0)
            ))
        })
        .collect();
    match r.server.server_peak_rss_kb {
        Some(kb) if !parts.is_empty() => (
            gib(kb),
            format!(
                "memory {} at {} keys, scaled per key",
                parts.join(" + "),
                num(measured_keys)
            ),
        ),
        Some(kb) => (gib(kb), "memory: resident, scaled per key".into()),
        None => (
            data_gib,
            "memory: the data's size (no server memory measured)".into(),
        ),
    }
}

/// Each server of `r` at `rps` and `keys`: its CPU per request times the
/// rate, its resident memory per key times the keys (`None`: the run kept
/// no server's own, or one's is not known).
fn per_server(r: &RunResult, rps: f64, keys: u64) -> Option<Vec<(f64, f64)>> {
    let measured_keys = r.config.workload.keys.max(1) as f64;
    let each: Vec<(f64, f64)> = r
        .server
        .servers
        .iter()
        .map(|u| {
            let cores = u.cpu_us_per_request? * rps / 1e6;
            let gib =
                u.peak_rss_kb? as f64 * 1024.0 / measured_keys * keys as f64 / (1u64 << 30) as f64;
            Some((cores, gib))
        })
        .collect::<Option<_>>()?;
    (!each.is_empty()).then_some(each)
}

/// What target `t`'s run `r` (its capacity search's, or its cheapest
/// point) says the stated load needs.
fn need(
    (t, r, basis): (&str, &RunResult, Basis),
    s: &Sizing,
    keys: u64,
    value: usize,
    db_alone: &dyn Fn(&str) -> Option<(f64, String)>,
) -> Need {
    let at = format!(
        "{}{} at {} req/s, p99 {:.0} µs, {:.1} µs server CPU/req{}",
        t,
        match basis {
            Basis::Search(_) => "'s capacity",
            Basis::Cheapest => "",
        },
        num(r.totals.throughput_rps),
        r.latency.latency_us.p99,
        cpu_per_req(r).unwrap_or(0.0),
        match basis {
            Basis::Search(per_core) => format!(" ({} req/s per server core)", num(per_core)),
            Basis::Cheapest => String::new(),
        }
    );
    let cores = cpu_per_req(r).unwrap_or(0.0) * s.rps / 1e6;
    let data_gib = keys as f64 * value as f64 / (1u64 << 30) as f64;
    let (mut gib, mem) = memory(r, keys, data_gib);
    let target = r.architecture();
    let servers = per_server(r, s.rps, keys).unwrap_or_else(|| vec![(cores, gib)]);
    match &r.cache_aside {
        Some(a) => {
            let stale = r.consistency.as_ref().map_or("not measured".into(), |c| {
                format!("{:.1} per million reads", c.stale_per_million_reads)
            });
            if r.server.servers.is_empty() {
                // Results from before the cache's memory was kept: its share
                // of the data, as measured.
                gib += a.working_set.as_ref().map_or(data_gib, |w| {
                    w.memory_limit_bytes as f64 / w.data_bytes.max(1) as f64 * data_gib
                });
            }
            let fails = match db_alone(&r.target.product) {
                Some((c, from)) => format!("all {} req/s: {c:.1} cores ({from})", num(s.rps)),
                None => format!(
                    "all {} req/s (no point of the database alone to size it)",
                    num(s.rps)
                ),
            };
            Need {
                architecture: architecture(r),
                target,
                size: Some((cores, gib)),
                servers,
                stale,
                if_cache_fails: fails,
                source: format!(
                    "{at}; hit ratio {:.1}% of all reads; {mem}",
                    a.hit_ratio * 100.0
                ),
            }
        }
        None => Need {
            architecture: architecture(r),
            target,
            size: Some((cores, gib)),
            servers,
            stale: "-".into(),
            if_cache_fails: "-".into(),
            source: format!("{at}; {mem}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(p99_ms: f64, currency: Option<&str>) -> StudyResult {
        let mut s: StudyResult =
            serde_json::from_str(include_str!("../../tests/fixtures/study.json")).unwrap();
        s.study.sizing = Some(Sizing {
            rps: 100_000.0,
            p99_ms: Some(p99_ms),
            keys: None,
            value_size: None,
            machine_cores: Some(16.0),
            machine_gib: Some(64.0),
            price_core_hour: Some(0.04),
            price_gib_hour: Some(0.005),
            currency: currency.map(String::from),
        });
        s
    }

    #[test]
    fn an_architecture_with_no_point_within_the_limit_is_a_row_that_says_why() {
        // redis meets p99 ≤ 0.15 ms (124 µs at 4 connections); postgres's
        // lowest p99 is 200 µs.
        let sec = section(&[fixture(0.15, None)]).unwrap();
        let rows = &sec.table.rows;
        assert_eq!(rows.len(), 2, "{rows:?}");
        let redis = rows.iter().find(|r| r[1] == "redis").unwrap();
        assert_eq!(redis[0], "the cache alone");
        let pg = rows.iter().find(|r| r[1].starts_with("postgres")).unwrap();
        assert_eq!(pg[0], "the database alone");
        assert_eq!(pg[2], "-");
        assert!(
            pg[8].contains("no point met p99 ≤ 0.15 ms; the lowest p99 was 0.20 ms at"),
            "{pg:?}"
        );
        assert!(
            pg[8].contains("kvlab capacity --target postgres --p99-ms 0.15"),
            "{pg:?}"
        );
        assert!(sec.verdict.iter().any(|v| v.contains("not sized")));
        assert_eq!(
            sec.table.headers[5],
            "cost a month (in the unit of price_core_hour)"
        );
    }

    #[test]
    fn costs_carry_their_currency() {
        let sec = section(&[fixture(2.0, Some("EUR"))]).unwrap();
        assert_eq!(sec.table.headers[5], "cost a month (EUR)");
        assert!(
            sec.verdict.iter().any(|v| v.contains("a month (EUR)")),
            "{:?}",
            sec.verdict
        );
    }

    #[test]
    fn a_target_with_a_capacity_search_is_sized_from_its_operations_per_core() {
        use crate::results::capacity::{Capacity, Step};
        use crate::results::study::TargetCapacity;
        let mut s = fixture(2.0, None);
        let p = s
            .points
            .iter()
            .find(|p| p.target == "redis")
            .expect("the fixture has a redis point");
        let r = p.result.clone().unwrap();
        let rate = r.totals.throughput_rps;
        let cores = r.server.server_cpu_s.unwrap() / r.totals.duration_s;
        s.capacity.push(TargetCapacity {
            target: "redis".into(),
            search: Capacity {
                p99_ms: 2.0,
                limits: Default::default(),
                bracket: None,
                headroom: Vec::new(),
                capacity_rps: Some(rate),
                client_limited_at: None,
                capped_at: None,
                steps: vec![Step {
                    rate: Some(rate),
                    passed: true,
                    reason: None,
                    client_limited: false,
                    result: r,
                }],
                cleanup: Vec::new(),
            },
        });
        let sec = section(&[s]).unwrap();
        let redis = sec.table.rows.iter().find(|r| r[1] == "redis").unwrap();
        let per_core = num(rate / cores);
        assert!(
            redis[8].starts_with("redis's capacity at")
                && redis[8].contains(&format!("({per_core} req/s per server core)")),
            "{redis:?}"
        );
        // 100,000 req/s at the search's operations per core.
        let sized: f64 = redis[2].parse().unwrap();
        assert!(
            (sized - 100_000.0 / (rate / cores)).abs() < 0.1,
            "{redis:?}"
        );
        assert!(
            sec.caveats[0].starts_with("Targets with a capacity search are sized from it"),
            "{:?}",
            sec.caveats
        );
    }
}
