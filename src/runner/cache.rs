//! Set-up of a cache-aside run around the engine: the cache (started or
//! reached), a consistent start (the database's values reset to version 0 and
//! the cache loaded with the same values), its counters, and the report of
//! what the cache did (hit ratio, database reads saved, each leg).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::driver::{Connector, Role, ServerCounters};
use crate::engine::{AsideSpec, EngineReport, Spec};
use crate::plan::{CacheAside, RunPlan, WritePolicy};
use crate::results::stats::{Leg, Percentiles};
use crate::results::{AsideReport, CounterCheck, LegReport, TargetInfo};
use crate::runner::launch::start_managed;
use crate::servers::ManagedServer;
use crate::system::progress::{RunOptions, note};
use crate::workload::VERSIONED_SIZE;

/// The cache of a cache-aside run, ready to use. A managed cache lives as long
/// as this value.
pub struct Cache {
    /// How to reach it.
    pub connector: Connector,
    /// What it is.
    pub info: TargetInfo,
    /// kvlab's cache server, if kvlab started it.
    pub server: Option<ManagedServer>,
    aside: CacheAside,
}

impl Cache {
    /// Starts the managed cache (or probes the external one) for `plan`;
    /// `started`: a managed cache the caller already started (e.g. pinned).
    pub fn open(
        aside: &CacheAside,
        plan: &RunPlan,
        opts: RunOptions,
        started: Option<ManagedServer>,
    ) -> Result<Cache> {
        let kind = aside.cache.kind;
        kind.product()
            .check_prefix(&plan.workload.key_prefix)
            .map_err(|e| anyhow::anyhow!("{e:#} (of the cache)"))?;
        let server = match started {
            Some(s) => Some(s),
            None => start_managed(&aside.cache, plan, opts).map_err(as_cache)?,
        };
        let endpoint = match (&aside.cache.external, &server) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => s.endpoint(),
            (None, None) => unreachable!("a managed cache has a server"),
        };
        let connector = Connector::new(kind, &endpoint)?;
        let sinfo = match &server {
            Some(s) => s.info.clone(),
            None => {
                let i = connector.probe(Duration::from_secs(4)).map_err(|e| {
                    anyhow::anyhow!("{}", format!("{e:#}").replace("--target", "--cache"))
                })?;
                note(
                    opts,
                    format!(
                        "kvlab: cache {} is {} {}; kvlab writes only keys under the prefix '{}' and never flushes a server it did not start",
                        connector.display, i.product, i.version, plan.workload.key_prefix
                    ),
                );
                i
            }
        };
        let info = TargetInfo::of(kind, &sinfo, &endpoint, server.as_ref());
        Ok(Cache {
            connector,
            info,
            server,
            aside: aside.clone(),
        })
    }

    /// What the engine needs to drive this cache.
    pub fn spec(&self) -> AsideSpec {
        AsideSpec {
            cache: self.connector.clone(),
            policy: self.aside.policy,
            ttl_s: self.aside.ttl_s,
        }
    }

    /// A consistent start: every database value back at version 0, then every
    /// key loaded into the cache at version 0 (with the TTL, if any).
    pub fn prepare(&self, db: &Spec, opts: RunOptions, shutdown: &AtomicBool) -> Result<()> {
        if db.values.size() >= VERSIONED_SIZE {
            reset_versions(&db.connector).context("resetting the database's values failed")?;
        }
        let spec = Spec {
            connector: self.connector.clone(),
            ttl_s: self.aside.ttl_s,
            board: None,
            aside: None,
            topology: None,
            ..db.clone()
        };
        note(
            opts,
            format!("kvlab: filling the cache {}", self.connector.display),
        );
        crate::runner::dataset::load_cache(&spec, self.server.is_some(), opts, shutdown)
            .map_err(as_cache)?;
        Ok(())
    }

    /// The cache's counters now (`None` when they cannot be read).
    pub fn counters(&self) -> Option<ServerCounters> {
        self.connector.counters().ok()
    }

    /// The report of what the cache did in the run.
    pub fn report(
        &self,
        r: &EngineReport,
        before: Option<ServerCounters>,
        cache_cpu_s: Option<f64>,
        db_cpu_s: Option<f64>,
    ) -> AsideReport {
        let legs = r.measured.legs.as_deref().cloned().unwrap_or_default();
        let window = r.window.as_secs_f64().max(1e-9);
        let lookups = legs.cache_hits + legs.cache_misses;
        let sent = |l: Leg| r.leg_requests[l as usize];
        let cache_sets = sent(Leg::CacheFill)
            + if self.aside.policy == WritePolicy::Update {
                sent(Leg::CacheWrite)
            } else {
                0
            };
        let cache_counters = before.zip(self.counters()).map(|(b, a)| CounterCheck {
            server: a.since(&b),
            kvlab_gets: sent(Leg::CacheGet),
            kvlab_sets: cache_sets,
            exclusive: self.server.is_some(),
            raw: None,
        });
        AsideReport {
            cache: self.info.clone(),
            write_policy: self.aside.policy.name().to_string(),
            ttl_s: self.aside.ttl_s,
            cache_hits: legs.cache_hits,
            cache_misses: legs.cache_misses,
            hit_ratio: if lookups > 0 {
                legs.cache_hits as f64 / lookups as f64
            } else {
                0.0
            },
            db_reads_saved_per_s: legs.cache_hits as f64 / window,
            db_reads_per_s: legs.cache_misses as f64 / window,
            legs: Leg::ALL
                .iter()
                .map(|&l| {
                    let i = l as usize;
                    (
                        l.name().to_string(),
                        LegReport {
                            replies: legs.replies[i],
                            errors: legs.errors[i],
                            latency_us: Percentiles::of(&legs.latency[i]),
                            histogram: Some(crate::results::stats::encode_histogram(
                                &legs.latency[i],
                            )),
                        },
                    )
                })
                .collect(),
            cache_cpu_s,
            db_cpu_s,
            cache_counters,
            note: (self.aside.policy == WritePolicy::Update
                && self.aside.ttl_s == 0
                && legs.cache_misses == 0
                && lookups > 0)
                .then(|| {
                    "every key was loaded into the cache before the run, nothing expires and --write-policy update writes each new value into the cache: its 100% hits and 0 stale reads follow from this set-up, not from the cache".to_string()
                }),
        }
    }
}

/// Sets every value of kvlab's table back to version 0 (only rows that differ:
/// one scan, few writes).
fn reset_versions(db: &Connector) -> Result<()> {
    match db.product.role() {
        Role::Database(d) => d.reset_versions(db),
        Role::Cache(_) => Ok(()),
    }
}

/// An error of the cache, naming the flag its settings came from: the
/// products speak of `--server-opt`, a cache's settings are `--cache-opt`.
pub fn as_cache(e: anyhow::Error) -> anyhow::Error {
    anyhow::anyhow!(
        "{}",
        format!("{e:#}").replace("--server-opt", "--cache-opt")
    )
}
