//! The exposition: [`State`] as OpenMetrics text, through `prometheus-client`.
//! Latency is a histogram with fixed buckets (never percentile gauges), so
//! `sum by (le)` over the clients of a sharded run is the whole run.

use std::collections::HashMap;
use std::fmt::Error;
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::registry::{Registry, Unit};

use super::series::{Series, State};
use crate::results::stats::{Counts, ErrorKind};

/// Every metric kvlab exports, as it appears in a scrape (counters with
/// `_total`, histograms with `_bucket`, `_sum` and `_count`).
pub const METRICS: &[&str] = &[
    "kvlab_requests_total",
    "kvlab_hits_total",
    "kvlab_misses_total",
    "kvlab_stored_total",
    "kvlab_errors_total",
    "kvlab_stale_reads_total",
    "kvlab_latency_seconds",
    "kvlab_service_time_seconds",
    "kvlab_cache_lookups_total",
    "kvlab_db_reads_total",
    "kvlab_connections",
    "kvlab_offered_requests_per_second",
    "kvlab_achieved_requests_per_second",
    "kvlab_running",
    "kvlab_server_cpu_seconds_total",
    "kvlab_server_memory_bytes",
    "kvlab_client_cpu_seconds_total",
];

/// Histogram buckets' upper bounds, seconds: 2^(k/4) µs for k = 0..=108 (1 µs
/// to 134 s, each 19% above the last), then +Inf.
pub fn bounds() -> Vec<f64> {
    (0..=108)
        .map(|k| 2f64.powf(k as f64 / 4.0) * 1e-6)
        .chain(std::iter::once(f64::INFINITY))
        .collect()
}

/// The state, shared with the engine's feed, as a collector.
#[derive(Debug)]
pub struct Shared(pub Arc<Mutex<State>>);

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "metrics state of run {}", self.run)
    }
}

/// The whole exposition now.
pub fn render(shared: &Arc<Mutex<State>>) -> String {
    let mut reg = Registry::default();
    reg.register_collector(Box::new(Shared(Arc::clone(shared))));
    let mut out = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}

type Labels = Vec<(&'static str, String)>;

fn labels(st: &State, s: &Series, more: &[(&'static str, &str)]) -> Labels {
    let mut l = vec![
        ("run", st.run.clone()),
        ("shard", st.shard.clone()),
        ("target", s.labels.target.clone()),
        ("product", s.labels.product.clone()),
        ("point", s.labels.point.clone()),
    ];
    l.extend(more.iter().map(|(k, v)| (*k, v.to_string())));
    l
}

/// One family: its descriptor, then each (labels, value) sample.
fn family<V>(
    enc: &mut DescriptorEncoder,
    (name, help, unit, ty): (&str, &str, Option<&Unit>, MetricType),
    samples: Vec<(Labels, V)>,
    mut put: impl FnMut(&mut MetricEncoder, &V) -> Result<(), Error>,
) -> Result<(), Error> {
    if samples.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, unit, ty)?;
    for (l, v) in &samples {
        put(&mut m.encode_family(l)?, v)?;
    }
    Ok(())
}

fn counter(m: &mut MetricEncoder, v: &u64) -> Result<(), Error> {
    m.encode_counter::<NoLabelSet, u64, u64>(v, None)
}

fn seconds_counter(m: &mut MetricEncoder, v: &f64) -> Result<(), Error> {
    m.encode_counter::<NoLabelSet, f64, f64>(v, None)
}

fn gauge(m: &mut MetricEncoder, v: &f64) -> Result<(), Error> {
    m.encode_gauge(v)
}

/// A counter family of whole numbers: `name` (`_total` is added) and `help`.
fn counters(
    e: &mut DescriptorEncoder,
    (name, help): (&str, &str),
    samples: Vec<(Labels, u64)>,
) -> Result<(), Error> {
    family(e, (name, help, None, MetricType::Counter), samples, counter)
}

/// A gauge family: `name` and `help`.
fn gauges(
    e: &mut DescriptorEncoder,
    (name, help): (&str, &str),
    samples: Vec<(Labels, f64)>,
) -> Result<(), Error> {
    family(e, (name, help, None, MetricType::Gauge), samples, gauge)
}

/// A histogram family in seconds of every series' histogram `of` that has
/// recorded anything.
fn histograms(
    e: &mut DescriptorEncoder,
    st: &State,
    (name, help): (&str, &str),
    of: fn(&Series) -> &Histogram<u64>,
) -> Result<(), Error> {
    let samples = per_series(st, |s| Some(of(s)).filter(|h| !h.is_empty()));
    let desc = (name, help, Some(&Unit::Seconds), MetricType::Histogram);
    family(e, desc, samples, |m, h| histogram(m, h))
}

/// Every series' value `f(series)`, where it has one, with its labels.
fn per_series<'a, V>(st: &'a State, f: impl Fn(&'a Series) -> Option<V>) -> Vec<(Labels, V)> {
    st.series
        .iter()
        .filter_map(|s| f(s).map(|v| (labels(st, s, &[]), v)))
        .collect()
}

/// Every series' servers by role, `f(cpu seconds, memory bytes)` of each.
fn per_server(st: &State, f: fn(f64, u64) -> f64) -> Vec<(Labels, f64)> {
    st.series
        .iter()
        .flat_map(|s| {
            s.servers
                .iter()
                .map(move |&(role, cpu, mem)| (labels(st, s, &[("role", role)]), f(cpu, mem)))
        })
        .collect()
}

/// Per-phase counts of every series, as samples of `f(counts)`.
fn by_phase(
    st: &State,
    f: impl Fn(&Counts) -> Vec<(Vec<(&'static str, &str)>, u64)>,
) -> Vec<(Labels, u64)> {
    let mut out = Vec::new();
    for s in &st.series {
        for (phase, c) in [("warmup", &s.warmup), ("measured", &s.measured)] {
            for (more, v) in f(c) {
                let mut m = vec![("phase", phase)];
                m.extend(more);
                out.push((labels(st, s, &m), v));
            }
        }
    }
    out
}

fn histogram(m: &mut MetricEncoder, h: &Histogram<u64>) -> Result<(), Error> {
    let b = bounds();
    let mut per = vec![0u64; b.len()];
    for v in h.iter_recorded() {
        let s = h.highest_equivalent(v.value_iterated_to()) as f64 / 1e9;
        let i = b.partition_point(|&ub| ub < s).min(b.len() - 1);
        per[i] += v.count_at_value();
    }
    let buckets: Vec<(f64, u64)> = b.into_iter().zip(per).collect();
    let sum = h.mean() * h.len() as f64 / 1e9;
    m.encode_histogram::<NoLabelSet>(
        sum,
        h.len(),
        &buckets,
        None::<&HashMap<usize, Exemplar<NoLabelSet, f64>>>,
    )
}

impl Collector for Shared {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), Error> {
        let st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (st, e) = (&*st, &mut enc);
        outcomes(e, st)?;
        latencies(e, st)?;
        cache_aside(e, st)?;
        load(e, st)?;
        resources(e, st)
    }
}

/// Requests and their outcomes by phase; measured stale reads.
fn outcomes(e: &mut DescriptorEncoder, st: &State) -> Result<(), Error> {
    let requests = by_phase(st, |c| {
        vec![(vec![("op", "get")], c.gets), (vec![("op", "set")], c.sets)]
    });
    counters(
        e,
        (
            "kvlab_requests",
            "Requests finished (any outcome); GETs count requests, a batch read is one",
        ),
        requests,
    )?;
    let hits = by_phase(st, |c| vec![(vec![], c.hits)]);
    counters(
        e,
        ("kvlab_hits", "Keys read back with the right value"),
        hits,
    )?;
    let misses = by_phase(st, |c| vec![(vec![], c.misses)]);
    counters(e, ("kvlab_misses", "Keys read and not found"), misses)?;
    let stored = by_phase(st, |c| vec![(vec![], c.stored)]);
    counters(e, ("kvlab_stored", "Writes the server stored"), stored)?;
    let errors = by_phase(st, |c| {
        ErrorKind::ALL
            .iter()
            .map(|&k| (vec![("kind", k.name())], c.error(k)))
            .collect()
    });
    counters(e, ("kvlab_errors", "Failed requests by kind"), errors)?;
    counters(
        e,
        (
            "kvlab_stale_reads",
            "Measured reads that returned an older value than one already written",
        ),
        per_series(st, |s| Some(s.measured.stale)),
    )
}

/// Measured latency and service time, as histograms.
fn latencies(e: &mut DescriptorEncoder, st: &State) -> Result<(), Error> {
    histograms(
        e,
        st,
        (
            "kvlab_latency",
            "Measured latency from each request's intended send time (its send, closed loop)",
        ),
        |s| &s.latency,
    )?;
    histograms(
        e,
        st,
        (
            "kvlab_service_time",
            "Measured service time from the actual send (paced runs)",
        ),
        |s| &s.service,
    )
}

/// Cache-aside: the cache's lookups by result and the database's reads.
fn cache_aside(e: &mut DescriptorEncoder, st: &State) -> Result<(), Error> {
    let lookups: Vec<(Labels, u64)> = st
        .series
        .iter()
        .filter_map(|s| s.cache.map(|c| (s, c)))
        .flat_map(|(s, c)| {
            [("hit", c[0]), ("miss", c[1]), ("bypassed", c[2])]
                .map(|(r, v)| (labels(st, s, &[("result", r)]), v))
        })
        .collect();
    counters(
        e,
        (
            "kvlab_cache_lookups",
            "Cache-aside: cache reads by result (bypassed: the cache was unreachable)",
        ),
        lookups,
    )?;
    counters(
        e,
        ("kvlab_db_reads", "Cache-aside: reads the database answered"),
        per_series(st, |s| s.cache.map(|c| c[3])),
    )
}

/// The load: connections, offered and achieved rates, and whether it runs.
fn load(e: &mut DescriptorEncoder, st: &State) -> Result<(), Error> {
    gauges(
        e,
        ("kvlab_connections", "Connections opened"),
        per_series(st, |s| Some(s.connections as f64)),
    )?;
    gauges(
        e,
        (
            "kvlab_offered_requests_per_second",
            "The offered rate of a paced run",
        ),
        per_series(st, |s| s.offered_rps),
    )?;
    gauges(
        e,
        (
            "kvlab_achieved_requests_per_second",
            "Requests finished in the newest complete second",
        ),
        per_series(st, |s| Some(s.achieved_rps)),
    )?;
    gauges(
        e,
        ("kvlab_running", "1 while this point runs"),
        per_series(st, |s| Some(if s.running { 1.0 } else { 0.0 })),
    )
}

/// The servers' CPU and memory by role, and kvlab's own CPU.
fn resources(e: &mut DescriptorEncoder, st: &State) -> Result<(), Error> {
    family(
        e,
        (
            "kvlab_server_cpu_seconds",
            "The server's CPU seconds so far (a process kvlab started, or what a server reports of itself)",
            None,
            MetricType::Counter,
        ),
        per_server(st, |cpu, _| cpu),
        seconds_counter,
    )?;
    gauges(
        e,
        (
            "kvlab_server_memory_bytes",
            "The server's memory: peak resident of a process kvlab started, else what it reports",
        ),
        per_server(st, |_, mem| mem as f64),
    )?;
    let me = vec![(
        vec![("run", st.run.clone()), ("shard", st.shard.clone())],
        (st.client_cpu_s)(),
    )];
    family(
        e,
        (
            "kvlab_client_cpu_seconds",
            "kvlab's own CPU seconds so far",
            None,
            MetricType::Counter,
        ),
        me,
        seconds_counter,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::metrics::series::PointLabels;

    #[test]
    fn a_scrape_names_only_the_listed_metrics_with_cumulative_buckets() {
        let st = Arc::new(Mutex::new(State {
            run: "r".into(),
            shard: "1".into(),
            point: "p".into(),
            series: Vec::new(),
            client_cpu_s: || 1.5,
        }));
        {
            let mut g = st.lock().unwrap();
            let i = g.series_for(PointLabels {
                target: "redis".into(),
                product: "redis".into(),
                point: "p".into(),
            });
            let s = &mut g.series[i];
            s.measured.gets = 5;
            for ns in [10_000, 20_000, 20_000, 1_000_000, 5_000_000] {
                s.latency.record(ns).unwrap();
            }
            s.cache = Some([1, 2, 3, 4]);
            s.set_server("server", 0.5, 4096);
        }
        let text = render(&st);
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(text.contains(r#"kvlab_requests_total{run="r",shard="1",target="redis",product="redis",point="p",phase="measured",op="get"} 5"#), "{text}");
        assert!(text.contains(r#"kvlab_latency_seconds_count{run="r",shard="1",target="redis",product="redis",point="p"} 5"#), "{text}");
        assert!(
            text.contains(r#"kvlab_latency_seconds_bucket{le="+Inf",run="r""#),
            "{text}"
        );
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(
                METRICS.iter().any(|m| name == *m
                    || name
                        .strip_prefix(m)
                        .is_some_and(|r| ["_bucket", "_sum", "_count"].contains(&r))),
                "{name} is not listed"
            );
        }
        // Buckets are cumulative and end at the count.
        let counts: Vec<u64> = text
            .lines()
            .filter(|l| l.starts_with("kvlab_latency_seconds_bucket"))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert!(counts.windows(2).all(|w| w[0] <= w[1]) && counts.last() == Some(&5));
        assert_eq!(bounds().len(), 110);
    }
}
