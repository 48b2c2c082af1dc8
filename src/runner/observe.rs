//! What a run samples while it goes: the progress line, and the CPU and memory
//! of kvlab itself and of the managed servers at the edges of the measured
//! window (an engine [`Observer`]); for a server kvlab did not start (the
//! target, the cache of a cache-aside run), what the server reports of itself,
//! sampled at the same edges and every second (for its peak memory); and
//! the host's load between the edges.

use std::time::Duration;

use super::events::Events;
use crate::driver::{Cache, CacheMemory, Connector, ReportedUsage, UsageReport};
use crate::engine::{Beat, Observer, Tick};
use crate::servers::ManagedServer;
use crate::system::ProcUsage;
use crate::system::host_load::{HostLoad, Sample as HostSample};
pub(super) use crate::system::procfs::{self_cpu_s, self_peak_rss_kb};
use crate::system::progress::Progress;

/// Resources used so far, at one instant.
#[derive(Clone, Copy)]
pub(super) struct Sample {
    /// kvlab's own CPU seconds.
    pub client_cpu_s: f64,
    /// The managed server's use (its whole process tree where it has one).
    pub server: Option<ProcUsage>,
    /// The managed cache's use (cache-aside).
    pub cache: Option<ProcUsage>,
    /// The use of the pooler in front of the server.
    pub pooler: Option<ProcUsage>,
    /// What the target, when kvlab did not start it, reports of its own use.
    pub reported: Option<ReportedUsage>,
    /// What the cache, when kvlab did not start it, reports of its own use.
    pub reported_cache: Option<ReportedUsage>,
}

/// The largest memory seen of each managed process (KiB; `None`: never read).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Peaks {
    /// The server (the target).
    pub server: Option<u64>,
    /// The cache of a cache-aside run.
    pub cache: Option<u64>,
    /// The pooler in front of the server.
    pub pooler: Option<u64>,
    /// The memory the target reported of itself (bytes), when kvlab did not
    /// start it.
    pub reported: Option<u64>,
    /// The memory the cache reported of itself (bytes), when kvlab did not
    /// start it.
    pub reported_cache: Option<u64>,
}

/// A server kvlab did not start that reports its own CPU and memory.
#[derive(Clone)]
pub(super) struct Reporting<'a> {
    /// How to reach it.
    pub connector: &'a Connector,
    /// What its report is.
    pub report: UsageReport,
    /// It failed to answer once: not asked again in this run (a server that
    /// stops answering would hold each second's sample for its timeout).
    pub silent: std::cell::Cell<bool>,
}

impl<'a> Reporting<'a> {
    /// The server `connector` reaches, unless kvlab started it (`managed`)
    /// or its product reports nothing of itself.
    pub fn of(connector: &'a Connector, managed: bool) -> Option<Reporting<'a>> {
        let report = connector
            .product
            .facts()
            .usage_report
            .filter(|_| !managed)?;
        Some(Reporting {
            connector,
            report,
            silent: Default::default(),
        })
    }

    /// Its use now, unless it failed to answer before in this run.
    pub fn usage(&self) -> Option<ReportedUsage> {
        if self.silent.get() {
            return None;
        }
        let u = self.connector.reported_usage().ok();
        self.silent.set(u.is_none());
        u
    }
}

/// Which server kvlab did not start: the target or the cache.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reporter {
    /// The target (the database of a cache-aside run).
    Target,
    /// The cache of a cache-aside run.
    Cache,
}

/// What a server kvlab did not start reported over the window.
#[derive(Clone, Copy)]
pub(super) struct Reported {
    /// CPU seconds it spent in the window (`None`: not known, e.g. its
    /// counter went back, as after a restart).
    pub cpu_s: Option<f64>,
    /// The memory it reported at the window's end, bytes.
    pub memory_end: Option<u64>,
    /// Its peak resident memory, KiB: the largest sample, where its memory
    /// figure is resident ([`UsageReport::resident`]).
    pub peak_rss_kb: Option<u64>,
    /// Where the figures come from.
    pub report: UsageReport,
}

/// The engine observer of a measured run: progress, and resource samples at
/// the edges of the measured window (and every second, for peak memory).
pub(super) struct RunObserver<'a> {
    /// The progress line.
    pub progress: Progress,
    /// The managed server, if kvlab started it.
    pub server: Option<&'a ManagedServer>,
    /// A managed cache in front of the server (cache-aside).
    pub cache: Option<&'a ManagedServer>,
    /// The target, when kvlab did not start it and it reports its own use.
    pub reporting: Option<Reporting<'a>>,
    /// The cache, when kvlab did not start it and it reports its own use.
    pub reporting_cache: Option<Reporting<'a>>,
    /// Largest memory seen at any sample (KiB) of the server, the cache and
    /// the pooler.
    pub peak_kb: Peaks,
    /// Sample when measuring began.
    pub at_start: Option<Sample>,
    /// Sample when measuring ended.
    pub at_end: Option<Sample>,
    /// The host's CPU when measuring began and when it ended.
    pub host: (Option<HostSample>, Option<HostSample>),
    /// The warm-up, for the progress line.
    pub warmup: Duration,
    /// What kvlab does to its servers during the window.
    pub events: Events<'a>,
    /// A cache whose memory is read every second (cache-aside).
    pub cache_memory: Option<(&'a dyn Cache, &'a Connector)>,
    /// Those readings: at the window's start (second -1), then at the end of
    /// each second.
    pub memory: Vec<(i64, CacheMemory)>,
    /// The live `--metrics` endpoint's feed, when one is installed.
    pub metrics: Option<crate::runner::metrics::Feed>,
    /// The target's read replicas: their lag through the window, their CPU.
    pub replicas: Option<super::replication::Watch<'a>>,
}

impl RunObserver<'_> {
    fn sample(&self) -> Sample {
        Sample {
            client_cpu_s: self_cpu_s(),
            server: self.server.and_then(ManagedServer::usage),
            cache: self.cache.and_then(ManagedServer::usage),
            pooler: self
                .server
                .and_then(ManagedServer::pooler)
                .and_then(|p| p.usage()),
            reported: self.reporting.as_ref().and_then(Reporting::usage),
            reported_cache: self.reporting_cache.as_ref().and_then(Reporting::usage),
        }
    }

    /// What the target or the cache, a server kvlab did not start, reported
    /// over the window: its CPU, its memory at the end, its peak RSS.
    pub fn reported(&self, who: Reporter) -> Option<Reported> {
        let (reporting, pick, peak): (_, fn(&Sample) -> Option<ReportedUsage>, _) = match who {
            Reporter::Target => (&self.reporting, |s| s.reported, self.peak_kb.reported),
            Reporter::Cache => (
                &self.reporting_cache,
                |s| s.reported_cache,
                self.peak_kb.reported_cache,
            ),
        };
        let report = reporting.as_ref()?.report;
        let (a, b) = (
            self.at_start.and_then(|s| pick(&s)),
            self.at_end.and_then(|s| pick(&s)),
        );
        Some(Reported {
            cpu_s: a
                .zip(b)
                .map(|(a, b)| b.cpu_s - a.cpu_s)
                .filter(|d| *d >= 0.0),
            memory_end: b.and_then(|b| b.memory_bytes),
            peak_rss_kb: peak.filter(|_| report.resident).map(|b| b.div_ceil(1024)),
            report,
        })
    }

    /// CPU seconds and peak memory (KiB) of the pooler over the window.
    pub fn pooler_use(&self) -> Option<(f64, u64)> {
        let (a, b) = self.at_start.zip(self.at_end)?;
        let (a, b) = (a.pooler?, b.pooler?);
        Some(((b.cpu_s - a.cpu_s).max(0.0), b.peak_rss_kb))
    }

    /// The host's load over the window (what other processes took, what was
    /// stolen), where /proc could be read at both ends.
    pub fn host_load(&self) -> Option<HostLoad> {
        let (a, b) = (self.host.0?, self.host.1?);
        Some(crate::system::host_load::between(&a, &b))
    }

    /// CPU seconds the server and the cache spent between the window's samples.
    pub fn cpu_deltas(&self) -> (Option<f64>, Option<f64>) {
        let Some((a, b)) = self.at_start.zip(self.at_end) else {
            return (None, None);
        };
        let d = |x: Option<ProcUsage>, y: Option<ProcUsage>| {
            x.zip(y)
                .map(|(x, y)| y.cpu_s - x.cpu_s)
                .filter(|d| *d >= 0.0)
        };
        (d(a.server, b.server), d(a.cache, b.cache))
    }
}

impl Observer for RunObserver<'_> {
    fn connecting(&mut self, done: usize, total: usize) {
        if let Some(m) = &self.metrics {
            m.connections(done);
        }
        self.progress
            .message(format!("opening connections: {done}/{total}"));
    }
    fn started(&mut self, warmup: Duration) {
        if !warmup.is_zero() {
            self.progress
                .message(format!("warming up for {:.0?}", warmup));
        }
    }
    fn waiting(&mut self, left: Duration, warmup: Duration) {
        self.progress.message(format!(
            "ready; the load starts in {:.1} s for --start-at, then warms up for {:.0?}",
            left.as_secs_f64(),
            warmup
        ));
    }
    fn measure_started(&mut self) {
        let s = self.sample();
        self.track_peak(&s);
        self.at_start = Some(s);
        self.host.0 = crate::system::host_load::sample();
        self.read_memory(-1);
        if let Some(w) = self.replicas.as_mut() {
            w.started();
        }
    }
    fn second_begins(&mut self, s: i64) {
        if s > 0 {
            self.read_memory(s - 1);
        }
        self.events.second_begins(s);
    }
    fn second(&mut self, beat: &Beat) {
        let (elapsed, requests, p99_us, errors) =
            (beat.elapsed, beat.requests, beat.p99_us, beat.errors);
        // A process tree's peak is the largest total seen at a sample; a
        // server kvlab did not start, the largest memory it reported.
        let sampled = self.server.is_some() || self.cache.is_some();
        let reporting = self.reporting.is_some() || self.reporting_cache.is_some();
        if sampled || reporting || self.metrics.is_some() {
            let s = self.sample();
            self.track_peak(&s);
            if let Some(m) = &self.metrics {
                m.beat(beat);
                live_usage(m, &s);
            }
        }
        let phase = if elapsed <= self.warmup {
            "warm-up"
        } else {
            "measuring"
        };
        let err = if errors > 0 {
            format!(", {errors} errors")
        } else {
            String::new()
        };
        self.progress.message(format!(
            "{phase}: {requests} req/s, p99 {p99_us:.0} µs{err}"
        ));
    }
    fn tick(&mut self, tick: &Tick) {
        if let Some(m) = &self.metrics {
            m.tick(tick);
        }
    }
    fn measure_ended(&mut self) {
        let s = self.sample();
        self.track_peak(&s);
        if let Some(m) = &self.metrics {
            live_usage(m, &s);
        }
        self.at_end = Some(s);
        self.host.1 = crate::system::host_load::sample();
        if let Some(w) = self.replicas.as_mut() {
            w.ended();
        }
        let next = self.memory.last().map_or(0, |m| m.0 + 1);
        self.read_memory(next);
        self.events.finish();
    }
}

impl RunObserver<'_> {
    /// Reads the cache's memory for second `s` (nothing while it is down).
    fn read_memory(&mut self, s: i64) {
        if let Some((cache, c)) = self.cache_memory
            && let Ok(m) = cache.memory(c)
        {
            self.memory.push((s, m));
        }
    }

    fn track_peak(&mut self, s: &Sample) {
        let p = &mut self.peak_kb;
        for (peak, u) in [
            (&mut p.server, s.server),
            (&mut p.cache, s.cache),
            (&mut p.pooler, s.pooler),
        ] {
            if let Some(u) = u {
                *peak = Some(peak.unwrap_or(0).max(u.peak_rss_kb));
            }
        }
        for (peak, u) in [
            (&mut p.reported, s.reported),
            (&mut p.reported_cache, s.reported_cache),
        ] {
            if let Some(m) = u.and_then(|u| u.memory_bytes) {
                *peak = Some(peak.unwrap_or(0).max(m));
            }
        }
    }
}

/// Tells the live endpoint the servers' use in `s`.
fn live_usage(m: &crate::runner::metrics::Feed, s: &Sample) {
    for (role, u) in [
        ("server", s.server),
        ("cache", s.cache),
        ("pooler", s.pooler),
    ] {
        if let Some(u) = u {
            m.usage(role, u);
        }
    }
    if let Some(r) = s.reported {
        m.reported(r.cpu_s, r.memory_bytes);
    }
}
