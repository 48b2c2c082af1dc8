//! Set-up of a cache-aside run around the engine: the cache (started or
//! reached), a consistent start (the database's values reset to version 0 and
//! the cache loaded with the same values), its counters, and the report of
//! what the cache did (hit ratio, database reads saved, each leg).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::driver::{CacheMemory, Connector, Role, ServerCounters};
use crate::engine::{AsideSpec, Beat, EngineReport, Observer, Spec};
use crate::plan::{CacheAside, CacheStart, WritePolicy};
use crate::results::aside::Steady;
use crate::results::stats::{Leg, Percentiles};
use crate::results::{AsideReport, CounterCheck, LegReport, Second, TargetInfo, WorkingSet};
use crate::runner::resolve::Resolved;
use crate::servers::ManagedServer;
use crate::system::progress::Progress;
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
    /// The round trip emulated to it (`--cache-rtt`).
    link: Option<crate::workload::LinkDelay>,
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

/// How a settling cache was brought to its steady state (all empty for a
/// warm or cold start).
#[derive(Clone, Debug, Default)]
pub struct Settled {
    /// How the steady state was reached, or that it was not.
    pub steady: Option<Steady>,
    /// Seconds the workload settled it (`None`: it did not settle).
    pub after_s: Option<f64>,
    /// The hit ratio of each second of the settling.
    pub curve: Vec<f64>,
    /// Keys kvlab wrote into it first, coldest first.
    pub filled: Option<u64>,
    /// Keys it evicted while the workload settled it.
    pub evictions: Option<u64>,
    /// The seed the settling drew its keys from.
    pub seed: Option<u64>,
}

/// What kvlab's fill of a settling cache left.
enum Fill {
    /// Every key, nothing evicted: the cache holds the data.
    All,
    /// The coldest-first fill of this many keys evicted: the cache is full.
    Full(u64),
    /// The cache does not say its memory: left to the workload.
    Unknown,
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
                note(
                    opts,
                    format!(
                        "kvlab: cache {} is {} {}; kvlab writes only keys under the prefix '{}' and never flushes a server it did not start",
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
        if self.aside.start != CacheStart::Warm {
            // kvlab's fresh cache is empty (RunPlan::check_cache refuses a URL).
            return Ok(());
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

    /// After a warm fill under writes that invalidate: the keys whose last
    /// access in the load's steady state is a write
    /// ([`crate::workload::last_written`]) deleted from the cache again and
    /// marked so on the versions board, so that the first read of a key hits
    /// only as often as the load allows (a cache holding every key would hit
    /// reads that in a long-running application follow a write).
    fn steady_state(&self, db: &Spec) -> Result<()> {
        let share = db.mix.write_share();
        if share <= 0.0 || self.aside.policy != WritePolicy::Invalidate {
            return Ok(());
        }
        let Role::Cache(c) = self.connector.product.role() else {
            return Ok(());
        };
        let written = |k: &u64| crate::workload::last_written(*k, share);
        c.delete_keys(
            &self.connector,
            &db.key_prefix,
            &mut (0..db.keys).filter(written),
        )
        .context("dropping the keys last written in the steady state from the cache failed")?;
        if let Some(b) = &db.board {
            (0..db.keys.min(b.keys()))
                .filter(written)
                .for_each(|k| b.mark_written(k));
        }
        Ok(())
    }

    /// A settling start, to the steady state of a cache that has been full
    /// for days: kvlab first fills it coldest key first until it evicts
    /// ([`Cache::fill`]; a cache that holds every key is then a warm one),
    /// then runs the workload, drawn from `seed`, unmeasured (at full speed
    /// unless keys expire), until the cache
    /// has turned over (evicted as many keys as it held), is still evicting
    /// and its hit ratio holds still (the mean of the last 3 seconds within
    /// half a point of the 3 before); at most [`SETTLE_MAX_S`] seconds.
    pub fn settle(
        &self,
        db: &Spec,
        seed: u64,
        opts: RunOptions,
        shutdown: &AtomicBool,
    ) -> Result<Settled> {
        let fill = self.fill(db, opts, shutdown)?;
        let filled = match fill {
            Fill::All => {
                self.steady_state(db)?;
                return Ok(Settled {
                    steady: Some(Steady::HoldsTheData),
                    filled: Some(db.keys),
                    ..Settled::default()
                });
            }
            Fill::Full(k) => Some(k),
            Fill::Unknown => None,
        };
        let spec = Spec {
            warmup: Duration::ZERO,
            stop: crate::workload::Stop::Duration(SETTLE_MAX_S),
            start_at: None,
            seed,
            // What an evicting cache holds follows the sequence of requests,
            // not their rate: without expiry, the workload runs at full speed.
            rate: db.rate.filter(|_| self.aside.ttl_s > 0),
            ..db.clone()
        };
        let stop = AtomicBool::new(false);
        let start = self.memory();
        let mut obs = Settling {
            stop: &stop,
            shutdown,
            ratios: Vec::new(),
            settled: None,
            progress: Progress::spinner("settle", opts.progress),
            memory: self.memory_reader(),
            start,
            evicted: Vec::new(),
        };
        crate::engine::execute(&spec, &stop, &mut obs)?;
        obs.progress.finish();
        if shutdown.load(Ordering::SeqCst) {
            bail!("interrupted while the cache settled; nothing was measured");
        }
        let evictions = obs.evicted.last().copied();
        let steady = match (obs.settled, filled, evictions) {
            (None, ..) => Steady::NotReached,
            (Some(_), Some(_), _) => Steady::FilledByKvlab,
            (Some(_), None, Some(e)) if e > 0 => Steady::FilledByWorkload,
            (Some(_), None, _) => Steady::NotReached,
        };
        if steady == Steady::NotReached {
            note(
                opts,
                format!(
                    "kvlab: the cache did not reach its steady state (full, turned over, evicting, its hit ratio still) in {SETTLE_MAX_S} s of warming; measuring now, and the result says so"
                ),
            );
        }
        Ok(Settled {
            steady: Some(steady),
            after_s: obs.settled,
            curve: obs.ratios,
            filled,
            evictions,
            seed: Some(seed),
        })
    }

    /// kvlab's fill of a settling cache: where its memory limit holds less
    /// than the data, keys written coldest first (key 0, the hottest, last)
    /// from about 1.5 times the keys the limit could hold at their bare size,
    /// twice as many again until the cache evicts; with no limit, or where
    /// every key fits, all of them (nothing to settle: a warm cache).
    fn fill(&self, db: &Spec, opts: RunOptions, shutdown: &AtomicBool) -> Result<Fill> {
        let Some(m) = self.memory() else {
            return Ok(Fill::Unknown);
        };
        let spec = Spec {
            connector: self.connector.clone(),
            ttl_s: self.aside.ttl_s,
            board: None,
            aside: None,
            topology: None,
            ..db.clone()
        };
        let bare = (db.values.mean() as u64 + db.key_prefix.len() as u64 + 8).max(1);
        let mut k = match m.limit {
            0 => db.keys,
            limit => (limit / bare).saturating_mul(3) / 2,
        }
        .clamp(1, db.keys.max(1));
        let managed = self.server.is_some();
        loop {
            note(
                opts,
                format!(
                    "kvlab: filling the cache {} with keys {}..0, coldest first",
                    self.connector.display,
                    k - 1
                ),
            );
            let evicted = crate::runner::dataset::fill_cache(&spec, k, managed, opts, shutdown)
                .map_err(as_cache)?;
            match evicted {
                Some(e) if e > 0 => return Ok(Fill::Full(k)),
                _ if k >= db.keys => return Ok(Fill::All),
                _ => k = k.saturating_mul(2).min(db.keys),
            }
        }
    }

    /// The cache's memory now (`None`: it does not say).
    fn memory(&self) -> Option<CacheMemory> {
        self.memory_reader()
            .and_then(|(c, conn)| c.memory(conn).ok())
    }

    /// The cache's own memory report, to read each second.
    fn memory_reader(&self) -> Option<(&dyn crate::driver::Cache, &Connector)> {
        match self.connector.product.role() {
            Role::Cache(c) => Some((c, &self.connector)),
            Role::Database(_) => None,
        }
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

/// The longest a settling start warms the cache, seconds.
pub const SETTLE_MAX_S: f64 = 120.0;

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
fn step(a: u64, b: u64) -> u64 {
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

/// The observer of a settling start: stops the load once the cache has
/// turned over, is still evicting and its hit ratio holds still.
struct Settling<'a> {
    stop: &'a AtomicBool,
    shutdown: &'a AtomicBool,
    ratios: Vec<f64>,
    settled: Option<f64>,
    progress: Progress,
    /// The cache's memory report, read each second.
    memory: Option<(&'a dyn crate::driver::Cache, &'a Connector)>,
    /// Its memory when the settling began.
    start: Option<CacheMemory>,
    /// Keys evicted since then, at the end of each second.
    evicted: Vec<u64>,
}

impl Observer for Settling<'_> {
    fn second(&mut self, beat: &Beat) {
        if let Some((hits, lookups)) = beat.cache
            && lookups > 0
        {
            self.ratios.push(hits as f64 / lookups as f64);
        }
        let now = self.memory.and_then(|(c, conn)| c.memory(conn).ok());
        if let Some((a, b)) = self.start.zip(now) {
            self.evicted.push(step(a.evictions, b.evictions));
        }
        let r = &self.ratios;
        self.progress.message(format!(
            "warming the cache: second {}, hit ratio {:.1}%, {} evicted",
            r.len(),
            r.last().copied().unwrap_or(0.0) * 100.0,
            self.evicted.last().copied().unwrap_or(0)
        ));
        let held = self.start.map(|m| m.items);
        if self.settled.is_none() && settled(r) && steady(&self.evicted, held) {
            self.settled = Some(beat.elapsed.as_secs_f64());
            self.stop.store(true, Ordering::SeqCst);
        }
        if self.shutdown.load(Ordering::SeqCst) {
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

/// Whether a cache that held `held` items when the settling began is at its
/// policy's steady state by its evictions since then (`evicted`, at the end of
/// each second): it evicted in the last 3 seconds (it is full), and as many
/// keys as it held (every key the fill left that the workload did not read
/// since is gone: what it holds is the workload's own). A cache that does not
/// report its memory cannot tell: true.
fn steady(evicted: &[u64], held: Option<u64>) -> bool {
    let (Some(held), Some(&last)) = (held, evicted.last()) else {
        return held.is_none();
    };
    let before = evicted.len().checked_sub(4).map_or(0, |i| evicted[i]);
    last > before && last >= held
}

/// Whether a hit ratio has settled: the mean of the last 3 seconds within half
/// a point of the mean of the 3 before.
fn settled(ratios: &[f64]) -> bool {
    let n = ratios.len();
    if n < 6 {
        return false;
    }
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    (mean(&ratios[n - 3..]) - mean(&ratios[n - 6..n - 3])).abs() <= 0.005
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
    fn a_hit_ratio_settles_when_it_stops_rising() {
        let rising = [0.1, 0.3, 0.45, 0.55, 0.62, 0.67];
        assert!(!settled(&rising));
        assert!(settled(&[
            0.6, 0.7, 0.75, 0.80, 0.801, 0.80, 0.802, 0.80, 0.803
        ]));
        assert!(!settled(&[0.8; 5]));
    }

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
