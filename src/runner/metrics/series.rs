//! What the endpoint shows: one [`Series`] of running totals per (target,
//! product, point), fed once per worker per second from the engine's ticks
//! (never from the hot path), and the process's own figures.

use hdrhistogram::Histogram;

use crate::engine::Tick;
use crate::results::stats::{Counts, new_histogram};
use crate::system::ProcUsage;

/// The labels that tell one series from another (besides the process's run
/// and shard labels).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointLabels {
    /// The target's name (e.g. `redis`).
    pub target: String,
    /// The product behind it.
    pub product: String,
    /// The study point (or `run`, or a capacity step's rate).
    pub point: String,
}

/// Running totals of one label set: counters only grow, so a scrape at any
/// time and `rate()` over scrapes are exact.
pub struct Series {
    /// Its labels.
    pub labels: PointLabels,
    /// Warm-up requests' outcomes.
    pub warmup: Counts,
    /// Measured requests' outcomes.
    pub measured: Counts,
    /// Measured latency from the intended send (the send, closed loop), ns.
    pub latency: Histogram<u64>,
    /// Measured service time from the actual send (paced runs), ns.
    pub service: Histogram<u64>,
    /// Cache-aside lookups: hits, misses, bypassed; and database reads.
    pub cache: Option<[u64; 4]>,
    /// The offered rate (req/s), when paced.
    pub offered_rps: Option<f64>,
    /// Requests in the newest complete second (measured or warm-up).
    pub achieved_rps: f64,
    /// Connections opened.
    pub connections: u64,
    /// Whether this point is running now.
    pub running: bool,
    /// The servers' use, by role (`server`, `cache`, `pooler`, `reported`):
    /// CPU seconds so far and memory in bytes (peak for a managed process,
    /// what the server reports otherwise).
    pub servers: Vec<(&'static str, f64, u64)>,
}

impl Series {
    /// A new series with nothing counted.
    pub fn new(labels: PointLabels) -> Series {
        Series {
            labels,
            warmup: Counts::default(),
            measured: Counts::default(),
            latency: new_histogram(),
            service: new_histogram(),
            cache: None,
            offered_rps: None,
            achieved_rps: 0.0,
            connections: 0,
            running: false,
            servers: Vec::new(),
        }
    }

    /// Adds one worker's second.
    pub fn add(&mut self, tick: &Tick) {
        self.warmup.add(&tick.warmup);
        let m = &tick.measured;
        self.measured.add(&m.counts);
        let _ = self.latency.add(&m.latency);
        let _ = self.service.add(&m.service);
        if let Some(l) = &m.legs {
            l.add_cache_counts(self.cache.get_or_insert([0; 4]));
        }
    }

    /// Records the servers' use now.
    pub fn usage(&mut self, role: &'static str, u: ProcUsage) {
        self.set_server(role, u.cpu_s, u.peak_rss_kb * 1024);
    }

    /// Records a server's CPU seconds and memory bytes now.
    pub fn set_server(&mut self, role: &'static str, cpu_s: f64, memory_bytes: u64) {
        match self.servers.iter_mut().find(|s| s.0 == role) {
            Some(s) => *s = (role, cpu_s, memory_bytes),
            None => self.servers.push((role, cpu_s, memory_bytes)),
        }
    }
}

/// Everything the endpoint shows.
pub struct State {
    /// The run label (`--metrics-run`).
    pub run: String,
    /// This client's shard (`I` of `--shard I/N`), or `0`.
    pub shard: String,
    /// The study point, as the caller named it before the next run.
    pub point: String,
    /// Every label set seen so far, in order.
    pub series: Vec<Series>,
    /// kvlab's CPU seconds so far, read at scrape.
    pub client_cpu_s: fn() -> f64,
}

impl State {
    /// The series for `labels`, made when new; its index.
    pub fn series_for(&mut self, labels: PointLabels) -> usize {
        match self.series.iter().position(|s| s.labels == labels) {
            Some(i) => i,
            None => {
                self.series.push(Series::new(labels));
                self.series.len() - 1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::stats::Recorder;

    #[test]
    fn ticks_add_up_and_label_sets_are_found_again() {
        let mut st = State {
            run: "r".into(),
            shard: "0".into(),
            point: "p".into(),
            series: Vec::new(),
            client_cpu_s: || 0.0,
        };
        let l = PointLabels {
            target: "redis".into(),
            product: "redis".into(),
            point: "p".into(),
        };
        let i = st.series_for(l.clone());
        assert_eq!(st.series_for(l), i);
        let mut m = Recorder::default();
        m.counts.gets = 3;
        m.latency.record(1000).unwrap();
        let tick = Tick {
            second: 0,
            measured: m,
            warmup: Counts::default(),
        };
        st.series[i].add(&tick);
        st.series[i].add(&tick);
        assert_eq!(st.series[i].measured.gets, 6);
        assert_eq!(st.series[i].latency.len(), 2);
        st.series[i].set_server("server", 1.5, 10);
        st.series[i].set_server("server", 2.5, 20);
        assert_eq!(st.series[i].servers, vec![("server", 2.5, 20)]);
    }
}
