//! A target with read replicas during a run: each replica's lag read every
//! 100 ms from the servers' own views (on a thread of its own), each managed server's CPU at the
//! window's edges, and the report of every server after it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::driver::{Connector, ReplicaLag, ServerCounters};
use crate::engine::EngineReport;
use crate::results::replication::{Part, ReplicationReport, ServerReads};
use crate::servers::ManagedServer;
use crate::system::ProcUsage;

/// How often the replicas' lag is read during the window.
const LAG_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// What a run watches of a target's replicas.
pub(super) struct Watch<'a> {
    primary: &'a Connector,
    replicas: &'a [Connector],
    server: Option<&'a ManagedServer>,
    /// The lag read every [`LAG_EVERY`] (by the sampler thread while the
    /// window runs, and at its edges).
    samples: Arc<Mutex<Vec<Vec<ReplicaLag>>>>,
    /// The sampler thread and its stop flag.
    sampler: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    /// Each managed server's use at the window's start and end.
    at_start: Vec<Option<ProcUsage>>,
    at_end: Vec<Option<ProcUsage>>,
}

impl Drop for Watch<'_> {
    /// A window cut short (an error) stops the sampler too.
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.sampler.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
    }
}

impl<'a> Watch<'a> {
    /// A watch of `replicas` of `primary` (`None` without replicas).
    pub fn new(
        primary: &'a Connector,
        replicas: &'a [Connector],
        server: Option<&'a ManagedServer>,
    ) -> Option<Watch<'a>> {
        (!replicas.is_empty()).then(|| Watch {
            primary,
            replicas,
            server,
            samples: Arc::default(),
            sampler: None,
            at_start: Vec::new(),
            at_end: Vec::new(),
        })
    }

    /// Reads each replica's lag now (nothing when the servers cannot say).
    fn sample(primary: &Connector, replicas: &[Connector], into: &Mutex<Vec<Vec<ReplicaLag>>>) {
        let Some(r) = primary.product.server().replication() else {
            return;
        };
        if let Ok(lags) = r.lag(primary, replicas) {
            into.lock().unwrap_or_else(|e| e.into_inner()).push(lags);
        }
    }

    /// Each managed server's use now: the primary's, then each replica's.
    fn usage(&self) -> Vec<Option<ProcUsage>> {
        let Some(s) = self.server else {
            return Vec::new();
        };
        let primary = s
            .pids()
            .first()
            .and_then(|&pid| s.product().server().usage(pid));
        std::iter::once(primary).chain(s.replica_usage()).collect()
    }

    /// The window begins: the lag is read from now on, off the engine's
    /// thread.
    pub fn started(&mut self) {
        self.at_start = self.usage();
        let (primary, replicas) = (self.primary.clone(), self.replicas.to_vec());
        let (samples, stop) = (self.samples.clone(), Arc::new(AtomicBool::new(false)));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                Self::sample(&primary, &replicas, &samples);
                std::thread::sleep(LAG_EVERY);
            }
        });
        self.sampler = Some((stop, thread));
    }

    /// The window ended.
    pub fn ended(&mut self) {
        self.at_end = self.usage();
        if let Some((stop, thread)) = self.sampler.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
        Self::sample(self.primary, self.replicas, &self.samples);
    }

    /// Every server's report: `each` are their counters (primary first)
    /// before and after the run.
    pub fn report(
        &self,
        r: &EngineReport,
        read_from: &str,
        each: (&[Option<ServerCounters>], &[Option<ServerCounters>]),
    ) -> ReplicationReport {
        let delta = |i: usize| {
            each.0
                .get(i)
                .copied()
                .flatten()
                .zip(each.1.get(i).copied().flatten())
                .map(|(a, b)| b.since(&a))
        };
        let cpu = |i: usize| {
            let a = self.at_start.get(i).copied().flatten()?;
            let b = self.at_end.get(i).copied().flatten()?;
            Some((b.cpu_s - a.cpu_s).max(0.0))
        };
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let mut servers = Vec::with_capacity(self.replicas.len() + 1);
        for (i, c) in std::iter::once(self.primary)
            .chain(self.replicas)
            .enumerate()
        {
            let sent = r.servers_sent.get(i).copied().unwrap_or_default();
            let counted = delta(i);
            let lags: Vec<&ReplicaLag> = match i {
                0 => Vec::new(),
                _ => samples.iter().filter_map(|s| s.get(i - 1)).collect(),
            };
            servers.push(ServerReads {
                server: c.addr.to_string(),
                role: match i {
                    0 => Part::Primary,
                    _ => Part::Replica,
                },
                reads: sent.reads,
                writes: sent.writes,
                counted_gets: counted.as_ref().map(|c| c.gets),
                counted_sets: counted.as_ref().map(|c| c.sets),
                stale_reads: sent.stale,
                stale_per_million: sent.stale as f64 * 1e6 / sent.reads.max(1) as f64,
                stale_age_max_us: (sent.stale > 0).then(|| sent.stale_age_max_ns as f64 / 1e3),
                cpu_s: cpu(i),
                peak_rss_kb: self.at_end.get(i).copied().flatten().map(|u| u.peak_rss_kb),
                state: lags.last().map(|l| l.state.clone()),
                lag_s_max: lags.iter().filter_map(|l| l.lag_s).reduce(f64::max),
                bytes_behind_max: lags.iter().filter_map(|l| l.bytes_behind).max(),
            });
        }
        ReplicationReport {
            read_from: read_from.into(),
            servers,
        }
    }
}
