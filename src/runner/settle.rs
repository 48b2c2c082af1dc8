//! A settling start: a cache smaller than the data brought to its policy's
//! steady state before the window (filled by kvlab coldest key first until it
//! evicts, then turned over by the workload until full, evicting and still);
//! a cache that holds every key loaded as a warm one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};

use super::cache::{Cache, Settled, as_cache, step};
use crate::driver::{CacheMemory, Connector, Role};
use crate::engine::{Beat, Observer, Spec};
use crate::results::aside::Steady;
use crate::system::progress::{Progress, RunOptions, note};

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
    /// A settling start, to the steady state of a cache that has been full
    /// for days: kvlab first fills it coldest key first until it evicts
    /// ([`Cache::fill`]; a cache that holds every key is then a warm one),
    /// then runs the workload, drawn from `seed`, unmeasured (at full speed
    /// unless keys expire), until the cache
    /// has turned over (evicted as many keys as it held), is still evicting
    /// and its hit ratio holds still (the mean of the last [`window_s`]
    /// seconds within half a point of the same before); at most
    /// [`SETTLE_MAX_S`] seconds.
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
            window: window_s(&db.stop),
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
        note(
            opts,
            match (steady, obs.settled) {
                (Steady::NotReached, _) | (_, None) => format!(
                    "kvlab: the cache did not reach its steady state (full, turned over, evicting, its hit ratio still) in {SETTLE_MAX_S} s of warming; measuring now, and the result says so"
                ),
                (_, Some(s)) => format!(
                    "kvlab: the cache settled in {s:.0} s of warming ({:.1}% hits, {} keys evicted); measuring now",
                    obs.ratios.last().copied().unwrap_or(0.0) * 100.0,
                    evictions.unwrap_or(0)
                ),
            },
        );
        Ok(Settled {
            steady: Some(steady),
            after_s: obs.settled,
            curve: obs.ratios,
            window_s: Some(obs.window),
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
        let spec = self.writes_spec(db);
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
}

/// The longest a settling start warms the cache, seconds.
pub const SETTLE_MAX_S: f64 = 120.0;

/// The seconds of each mean a settling compares: as long as the measured
/// run (its hit ratio is the mean over that run), 1 to 3; 3 for a run of a
/// number of requests.
pub fn window_s(measured: &crate::workload::Stop) -> usize {
    match *measured {
        crate::workload::Stop::Duration(d) => d.round().clamp(1.0, 3.0) as usize,
        crate::workload::Stop::Requests(_) => 3,
    }
}

/// The observer of a settling start: stops the load once the cache has
/// turned over, is still evicting and its hit ratio holds still.
struct Settling<'a> {
    stop: &'a AtomicBool,
    shutdown: &'a AtomicBool,
    /// The seconds of each mean compared ([`window_s`]).
    window: usize,
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
        let w = self.window;
        if self.settled.is_none() && settled(r, w) && steady(&self.evicted, held, w) {
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
/// each second): it evicted in the last `w` seconds (it is full), and as
/// many keys as it held (every key the fill left that the workload did not
/// read since is gone: what it holds is the workload's own). A cache that
/// does not report its memory cannot tell: true.
fn steady(evicted: &[u64], held: Option<u64>, w: usize) -> bool {
    let (Some(held), Some(&last)) = (held, evicted.last()) else {
        return held.is_none();
    };
    let before = evicted.len().checked_sub(w + 1).map_or(0, |i| evicted[i]);
    last > before && last >= held
}

/// Whether a hit ratio has settled: the mean of the last `w` seconds within
/// half a point of the mean of the `w` before.
fn settled(ratios: &[f64], w: usize) -> bool {
    let n = ratios.len();
    if n < 2 * w {
        return false;
    }
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    (mean(&ratios[n - w..]) - mean(&ratios[n - 2 * w..n - w])).abs() <= 0.005
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_ratio_settles_when_it_stops_rising() {
        let rising = [0.1, 0.3, 0.45, 0.55, 0.62, 0.67];
        assert!(!settled(&rising, 3));
        assert!(!settled(&rising, 1));
        assert!(settled(
            &[0.6, 0.7, 0.75, 0.80, 0.801, 0.80, 0.802, 0.80, 0.803],
            3
        ));
        assert!(!settled(&[0.8; 5], 3));
        assert!(settled(&[0.5, 0.8, 0.802], 1));
        assert!(!settled(&[0.8], 1));
    }

    #[test]
    fn the_means_compared_are_as_long_as_the_measured_run() {
        use crate::workload::Stop;
        assert_eq!(window_s(&Stop::Duration(1.0)), 1);
        assert_eq!(window_s(&Stop::Duration(0.2)), 1);
        assert_eq!(window_s(&Stop::Duration(2.4)), 2);
        assert_eq!(window_s(&Stop::Duration(60.0)), 3);
        assert_eq!(window_s(&Stop::Requests(1000)), 3);
    }

    #[test]
    fn a_full_cache_is_steady_once_it_evicted_within_the_window_and_turned_over() {
        // Evictions at the end of each second since the settling began.
        let evicted = [0, 50, 100, 100, 100];
        // It evicted 2 seconds ago: within 3, not within 1.
        assert!(steady(&evicted, Some(100), 3));
        assert!(!steady(&evicted, Some(100), 1));
        assert!(steady(&[0, 50, 100, 150], Some(100), 1));
        assert!(!steady(&[0, 50, 90], Some(100), 1));
        assert!(steady(&[], None, 1));
    }
}
