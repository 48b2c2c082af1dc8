//! Set-up of a cache-aside run around the engine: the cache (started or
//! reached), a consistent start (the database's values reset to version 0 and
//! the cache loaded with the same values), its counters, and the report of
//! what the cache did (hit ratio, database reads saved, each leg).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::driver::{CacheMemory, Connector, OwnKeys, Role, ServerCounters};
use crate::engine::{AsideSpec, EngineReport, Spec};
use crate::plan::{CacheAside, CacheStart, WritePolicy};
use crate::results::stats::{Leg, Percentiles};
use crate::results::{AsideReport, CounterCheck, LegReport, Second, TargetInfo, WorkingSet};
use crate::runner::resolve::Resolved;
use crate::servers::ManagedServer;
use crate::system::progress::{RunOptions, note};
use crate::workload::VERSIONED_SIZE;

/// How a settling cache was brought to its steady state (all empty for a
/// warm or cold start).
#[derive(Clone, Debug, Default)]
pub struct Settled {
    /// How the steady state was reached, or that it was not.
    pub steady: Option<crate::results::aside::Steady>,
    /// Seconds the workload settled it (`None`: it did not settle).
    pub after_s: Option<f64>,
    /// The hit ratio of each second of the settling.
    pub curve: Vec<f64>,
    /// The seconds of each mean it compared (`None`: no settling ran).
    pub window_s: Option<usize>,
    /// Keys kvlab wrote into it first, coldest first.
    pub filled: Option<u64>,
    /// Keys it evicted while the workload settled it.
    pub evictions: Option<u64>,
    /// The seed the settling drew its keys from.
    pub seed: Option<u64>,
}

/// The cache of a cache-aside run, ready to use. A managed cache lives as long
/// as this value.
pub struct Cache {
    /// How to reach it.
    pub connector: Connector,
    /// What it is.
    pub info: TargetInfo,
    /// kvlab's cache server, if kvlab started it.
    pub server: Option<ManagedServer>,
    pub(super) aside: CacheAside,
    /// The round trip emulated to it (`--cache-rtt`).
    link: Option<crate::workload::LinkDelay>,
    /// What kvlab may do to it when kvlab did not start it.
    shared: crate::plan::shared::Shared,
}

/// Readies the cache of a cache-aside run for `base`: filled (warm) or left
/// empty, then brought to its steady state where the plan asks, the
/// settling's load drawn from `settle_seed`; how it went.
pub fn ready(
    cache: Option<&Cache>,
    base: &mut Spec,
    settle_seed: u64,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Settled> {
    let Some(c) = cache else {
        return Ok(Settled::default());
    };
    c.prepare(base, opts, shutdown)?;
    let mut aside = c.spec();
    // A near cache in front of the cache hears of its changed keys.
    aside.cache = aside.cache.with_tracking(crate::plan::near::tracking(
        base.near.as_ref(),
        &base.key_prefix,
    ));
    base.aside = Some(aside);
    match c.start() {
        CacheStart::Settle => c.settle(base, settle_seed, opts, shutdown),
        _ => Ok(Settled::default()),
    }
}

impl Cache {
    /// Opens the cache of the resolved plan `rs`: `server` (kvlab's, already
    /// started) or the external one, probed.
    pub fn open(
        aside: &CacheAside,
        rs: &Resolved,
        opts: RunOptions,
        server: Option<ManagedServer>,
    ) -> Result<Cache> {
        let kind = aside.cache.kind;
        let endpoint = match (&aside.cache.external, &server) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => s.endpoint(),
            (None, None) => unreachable!("a managed cache has a server"),
        };
        let connector =
            Connector::new(kind, &endpoint)?.with_query_mode(aside.cache.query_mode_used());
        let sinfo = match &server {
            Some(s) => s.info.clone(),
            None => {
                let i = connector.probe(Duration::from_secs(4)).map_err(|e| {
                    anyhow::anyhow!("{}", format!("{e:#}").replace("--target", "--cache"))
                })?;
                super::foreign::reached(&connector.display, None);
                note(
                    opts,
                    format!(
                        "kvlab: cache {} is {} {}, not kvlab's: kvlab writes only keys under the prefix '{}', never flushes it, never makes it evict its other keys unless --allow-evictions, and removes its keys at the end unless --keep-data",
                        connector.display, i.product, i.version, rs.config.workload.key_prefix
                    ),
                );
                i
            }
        };
        let info = super::assemble::target_info(kind, &sinfo, &endpoint, server.as_ref());
        Ok(Cache {
            connector,
            info,
            server,
            aside: aside.clone(),
            link: rs.config.load.cache_rtt,
            shared: rs.config.shared,
        })
    }

    /// What the cache holds when the load starts.
    pub fn start(&self) -> CacheStart {
        self.aside.start
    }

    /// What the engine needs to drive this cache.
    pub fn spec(&self) -> AsideSpec {
        AsideSpec {
            cache: self.connector.clone(),
            policy: self.aside.policy,
            ttl_s: self.aside.ttl_s,
            link: self.link,
        }
    }

    /// A consistent start: every database value back at version 0, then (a
    /// warm start) every key loaded into the cache at version 0 (with the TTL,
    /// if any). A cold or settling start leaves kvlab's fresh cache empty.
    pub fn prepare(&self, db: &Spec, opts: RunOptions, shutdown: &AtomicBool) -> Result<()> {
        if db.values.size() >= VERSIONED_SIZE {
            reset_versions(&db.connector).context("resetting the database's values failed")?;
        }
        if let (None, Role::Cache(c)) = (&self.server, self.connector.product.role()) {
            // A cache kvlab did not start: kvlab's keys from before gone, and
            // room for its keys beside the server's own.
            let what = (db.key_prefix.as_slice(), db.keys, db.values.mean() as usize);
            super::foreign::make_room(c, &self.connector, what, self.shared)?;
        }
        if self.aside.start != CacheStart::Warm {
            // kvlab's fresh cache (or its keys deleted from one it did not start) is empty.
            return Ok(());
        }
        let spec = self.writes_spec(db);
        note(
            opts,
            format!("kvlab: filling the cache {}", self.connector.display),
        );
        crate::runner::dataset::load_cache(&spec, self.server.is_some(), opts, shutdown)
            .map_err(|e| {
                let e = as_cache(e);
                match format!("{e:#}").contains("evicted") {
                    true => anyhow::anyhow!(
                        "{e:#}; or, for a cache that holds only the hot part of the data, start it empty: --cache-start cold (measured from the first request) or settle (measured once its hit ratio settles)"
                    ),
                    false => e,
                }
            })?;
        self.steady_state(db)
    }

    /// `db`'s point aimed at the cache itself, for kvlab's own writes into it
    /// (a warm load, a settling fill): no versions, cache-aside or topology.
    pub(super) fn writes_spec(&self, db: &Spec) -> Spec {
        Spec {
            connector: self.connector.clone(),
            ttl_s: self.aside.ttl_s,
            board: None,
            aside: None,
            topology: None,
            ..db.clone()
        }
    }

    /// After a warm fill under writes that invalidate: the keys whose last
    /// access in the load's steady state is a write
    /// ([`crate::workload::last_written`]) deleted from the cache again and
    /// marked so on the versions board, so that the first read of a key hits
    /// only as often as the load allows (a cache holding every key would hit
    /// reads that in a long-running application follow a write).
    pub(super) fn steady_state(&self, db: &Spec) -> Result<()> {
        let share = db.mix.write_share();
        if share <= 0.0 || self.aside.policy != WritePolicy::Invalidate {
            return Ok(());
        }
        let Role::Cache(c) = self.connector.product.role() else {
            return Ok(());
        };
        let written = |k: &u64| crate::workload::last_written(*k, share);
        let numbers = &mut (0..db.keys).filter(written);
        c.delete_keys(
            &self.connector,
            OwnKeys {
                prefix: &db.key_prefix,
                numbers,
            },
        )
        .context("dropping the keys last written in the steady state from the cache failed")?;
        if let Some(b) = &db.board {
            (0..db.keys.min(b.keys()))
                .filter(written)
                .for_each(|k| b.mark_written(k));
        }
        Ok(())
    }

    /// The cache's counters now (`None` when they cannot be read).
    pub fn counters(&self) -> Option<ServerCounters> {
        self.connector.counters().ok()
    }

    /// The report of what the cache did in the run.
    pub fn report(&self, r: &EngineReport, w: CacheWindow) -> AsideReport {
        let CacheWindow {
            before,
            kills,
            slack,
            cache_cpu_s,
            db_cpu_s,
            memory,
            settled,
            data_bytes,
        } = w;
        let legs = r.measured.legs.as_deref().cloned().unwrap_or_default();
        let window = r.window.as_secs_f64().max(1e-9);
        let lookups = legs.cache_hits + legs.cache_misses + legs.cache_bypassed;
        let sent = |l: Leg| r.leg_requests[l as usize];
        let cache_sets = sent(Leg::CacheFill)
            + if self.aside.policy == WritePolicy::Update {
                sent(Leg::CacheWrite)
            } else {
                0
            };
        let after = self.counters();
        let cache_counters =
            super::events::counted_across(before, &kills, after).map(|server| CounterCheck {
                server,
                kvlab_gets: sent(Leg::CacheGet),
                kvlab_sets: cache_sets,
                exclusive: self.server.is_some(),
                raw: None,
                slack: slack * kills.len() as u64,
            });
        let working_set = memory.last().map(|&(_, end)| WorkingSet {
            data_bytes,
            memory_limit_bytes: end.limit,
            memory_used_bytes: end.used,
            items: end.items,
            evictions: evictions(&memory),
            settled_after_s: settled.after_s,
            settle_curve: settled.curve.clone(),
            settle_window_s: settled.window_s,
            steady: settled.steady,
            filled_keys: settled.filled,
            settle_evictions: settled.evictions,
        });
        AsideReport {
            cache: self.info.clone(),
            write_policy: self.aside.policy.name().to_string(),
            cache_query_mode: self.connector.query_mode.map(|m| m.to_string()),
            ttl_s: self.aside.ttl_s,
            cache_hits: legs.cache_hits,
            cache_misses: legs.cache_misses,
            cache_bypassed: legs.cache_bypassed,
            hit_ratio: crate::results::aside::hit_ratio(
                legs.cache_hits,
                legs.cache_misses,
                legs.cache_bypassed,
            )
            .unwrap_or(0.0),
            hit_ratio_ceiling: None,
            db_reads_saved_per_s: legs.cache_hits as f64 / window,
            db_reads_per_s: (legs.cache_misses + legs.cache_bypassed) as f64 / window,
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
            start: self.aside.start,
            working_set,
        }
    }
}

/// What the run knows of the cache beyond the engine's report.
pub struct CacheWindow {
    /// Its counters when the window began.
    pub before: Option<ServerCounters>,
    /// Its counters just before each kill (`--event`).
    pub kills: Vec<Option<ServerCounters>>,
    /// Requests that may have been in flight at a kill.
    pub slack: u64,
    /// CPU seconds of the managed cache and database in the window.
    pub cache_cpu_s: Option<f64>,
    /// The database's.
    pub db_cpu_s: Option<f64>,
    /// The cache's memory at the window's start (second -1) and at the end of
    /// each second.
    pub memory: Vec<(i64, CacheMemory)>,
    /// A settling start: how it reached its steady state.
    pub settled: Settled,
    /// Keys × value size.
    pub data_bytes: u64,
}

/// Keys evicted over `samples` (a counter that went back was restarted: its
/// new count is all new).
fn evictions(samples: &[(i64, CacheMemory)]) -> u64 {
    samples
        .windows(2)
        .map(|w| step(w[0].1.evictions, w[1].1.evictions))
        .sum()
}

/// The growth of a counter from `a` to `b`, across a restart.
pub(super) fn step(a: u64, b: u64) -> u64 {
    if b >= a { b - a } else { b }
}

/// Adds the cache's own figures to each entry of `timeline` that has cache
/// figures, from `samples` (one at the end of each second): the evictions
/// of its seconds added up, the memory in use and the items at its last
/// sample (a minute's entry takes the samples of its seconds).
pub fn mark_timeline(timeline: &mut [Second], samples: &[(i64, CacheMemory)]) {
    let mut at = 0;
    for w in samples.windows(2) {
        let (prev, (s, m)) = (w[0].1, w[1]);
        // Samples come in order: the entry is this one or a later one.
        let Some(i) = timeline[at..].iter().position(|x| x.contains(s)) else {
            continue;
        };
        at += i;
        if let Some(c) = timeline[at].cache.as_mut() {
            let before = c.evictions.unwrap_or(0);
            c.evictions = Some(before + step(prev.evictions, m.evictions));
            c.memory_bytes = Some(m.used);
            c.items = Some(m.items);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evictions_add_up_across_a_restart() {
        let m = |e| CacheMemory {
            evictions: e,
            ..CacheMemory::default()
        };
        assert_eq!(
            evictions(&[(-1, m(10)), (0, m(50)), (1, m(5)), (2, m(7))]),
            47
        );
    }

    #[test]
    fn memory_samples_land_in_the_entry_that_holds_their_second() {
        let m = |evictions, used| CacheMemory {
            evictions,
            used,
            items: used / 10,
            ..CacheMemory::default()
        };
        let entry = |second, span_s| Second {
            second,
            span_s,
            cache: Some(crate::results::CacheSecond::default()),
            ..Second::default()
        };
        // Second 0, then a minute from 1 (1..61).
        let mut t = vec![entry(0, 1), entry(1, 60)];
        let samples = [
            (-1, m(0, 100)),
            (0, m(2, 200)),
            (1, m(3, 300)),
            (2, m(7, 400)),
            (60, m(8, 500)),
            (61, m(9, 600)),
        ];
        mark_timeline(&mut t, &samples);
        let c = |i: usize| t[i].cache.clone().unwrap();
        assert_eq!((c(0).evictions, c(0).memory_bytes), (Some(2), Some(200)));
        assert_eq!(
            (c(1).evictions, c(1).memory_bytes, c(1).items),
            (Some(6), Some(500), Some(50))
        );
    }
}
