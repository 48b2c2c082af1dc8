//! A target with read replicas during a run: each replica's lag read once a
//! second from the servers' own views, each managed replica's CPU at the
//! window's edges, and the report of every server after it.

use crate::driver::{Connector, ReplicaLag, ServerCounters};
use crate::engine::EngineReport;
use crate::results::replication::{ReplicationReport, ServerReads};
use crate::servers::ManagedServer;
use crate::system::ProcUsage;

/// What a run watches of a target's replicas.
pub(super) struct Watch<'a> {
    primary: &'a Connector,
    replicas: &'a [Connector],
    server: Option<&'a ManagedServer>,
    /// The lag read each second.
    samples: Vec<Vec<ReplicaLag>>,
    /// Each managed replica's use at the window's start and end.
    at_start: Vec<Option<ProcUsage>>,
    at_end: Vec<Option<ProcUsage>>,
}

impl<'a> Watch<'a> {
    /// A watch of `replicas` of `primary` (`None` without replicas).
    pub fn new(
        primary: &'a Connector,
        replicas: &'a [Connector],
        server: Option<&'a ManagedServer>,
    ) -> Option<Watch<'a>> {
        (!replicas.is_empty()).then_some(Watch {
            primary,
            replicas,
            server,
            samples: Vec::new(),
            at_start: Vec::new(),
            at_end: Vec::new(),
        })
    }

    /// Reads each replica's lag now (nothing when the servers cannot say).
    pub fn sample(&mut self) {
        let Some(r) = self.primary.product.server().replication() else {
            return;
        };
        if let Ok(lags) = r.lag(self.primary, self.replicas) {
            self.samples.push(lags);
        }
    }

    /// Each managed replica's use now.
    fn usage(&self) -> Vec<Option<ProcUsage>> {
        self.server
            .map(ManagedServer::replica_usage)
            .unwrap_or_default()
    }

    /// The window begins.
    pub fn started(&mut self) {
        self.at_start = self.usage();
        self.sample();
    }

    /// The window ended.
    pub fn ended(&mut self) {
        self.at_end = self.usage();
        self.sample();
    }

    /// Every server's report: `each` are their counters (primary first)
    /// before and after the run; `server_cpu` the managed primary's and
    /// replicas' CPU together and their peak memory.
    pub fn report(
        &self,
        r: &EngineReport,
        read_from: &str,
        each: (&[Option<ServerCounters>], &[Option<ServerCounters>]),
        server_use: Option<(f64, u64)>,
    ) -> ReplicationReport {
        let delta = |i: usize| {
            each.0
                .get(i)
                .cloned()
                .flatten()
                .zip(each.1.get(i).cloned().flatten())
                .map(|(a, b)| b.since(&a))
        };
        let replica_cpu: Vec<Option<f64>> = (0..self.replicas.len())
            .map(|i| {
                let a = self.at_start.get(i).copied().flatten()?;
                let b = self.at_end.get(i).copied().flatten()?;
                Some((b.cpu_s - a.cpu_s).max(0.0))
            })
            .collect();
        let replicas_cpu: Option<f64> = replica_cpu.iter().copied().sum();
        let mut servers = Vec::with_capacity(self.replicas.len() + 1);
        for (i, c) in std::iter::once(self.primary)
            .chain(self.replicas)
            .enumerate()
        {
            let sent = r.servers_sent.get(i).copied().unwrap_or_default();
            let counted = delta(i);
            let lags: Vec<&ReplicaLag> = match i {
                0 => Vec::new(),
                _ => self.samples.iter().filter_map(|s| s.get(i - 1)).collect(),
            };
            let max = |f: fn(&ReplicaLag) -> Option<f64>| {
                lags.iter().filter_map(|l| f(l)).reduce(f64::max)
            };
            servers.push(ServerReads {
                server: c.addr.to_string(),
                role: if i == 0 { "primary" } else { "replica" }.into(),
                reads: sent.reads,
                writes: sent.writes,
                counted_gets: counted.as_ref().map(|c| c.gets),
                counted_sets: counted.as_ref().map(|c| c.sets),
                stale_reads: sent.stale,
                stale_per_million: sent.stale as f64 * 1e6 / sent.reads.max(1) as f64,
                stale_age_max_us: (sent.stale > 0).then(|| sent.stale_age_max_ns as f64 / 1e3),
                cpu_s: match i {
                    0 => server_use
                        .zip(replicas_cpu)
                        .map(|((all, _), rep)| (all - rep).max(0.0)),
                    _ => replica_cpu[i - 1],
                },
                peak_rss_kb: match i {
                    0 => None,
                    _ => self
                        .at_end
                        .get(i - 1)
                        .copied()
                        .flatten()
                        .map(|u| u.peak_rss_kb),
                },
                state: lags.last().map(|l| l.state.clone()),
                lag_s_max: max(|l| l.lag_s),
                bytes_behind_max: lags.iter().filter_map(|l| l.bytes_behind).max(),
            });
        }
        ReplicationReport {
            read_from: read_from.into(),
            servers,
        }
    }
}
