//! The miss-ratio curve's runs (a settled cache-aside run at each size),
//! the cache-aside chosen on it and confirmed at a fixed rate, and the rates
//! they run at.

use anyhow::{Context, Result};

use super::{AsideRun, Carried, CurveRun, Runs, Searched, mb_name, p99_said};
use crate::modes::decide::ask::Asked;
use crate::results::decide::db_load;
use crate::results::stats::num;
use crate::runner;

impl Runs<'_> {
    /// The miss-ratio curve: settled cache-aside runs at `rate` with the
    /// cache at the method's shares of the copy's data (5%, 15% and 40%, and
    /// its base for its own use) and with no limit.
    pub fn curve(&self, rate: f64, say: &mut dyn FnMut(&str)) -> Result<Vec<CurveRun>> {
        let data_mb = self.on.copy.bytes() as f64 / (1u64 << 20) as f64;
        let mut out: Vec<CurveRun> = Vec::new();
        say(&format!(
            "kvlab decide: the miss-ratio curve: cache-aside at {} req/s, the cache settled at each size\n",
            num(rate)
        ));
        // A cache kvlab did not start is never resized: its one size, its own.
        let m = &self.ask.assumed.method;
        let fractions: Vec<Option<f64>> = match self.ask.cache.cache.external.is_some() {
            true => vec![None],
            false => m
                .curve_shares
                .iter()
                .copied()
                .map(Some)
                .chain([None])
                .collect(),
        };
        let mut sizes: Vec<Option<u64>> = fractions
            .iter()
            .map(|f| f.map(|f| (data_mb * f).ceil() as u64 + m.cache_base_mb))
            .chain(self.on.team_cache_mb.map(Some))
            .collect();
        // Smallest first, no limit last.
        sizes.sort_by_key(|mb| mb.unwrap_or(u64::MAX));
        sizes.dedup();
        for mb in sizes {
            let r = runner::measure(
                &self.drawn(self.aside(mb, rate)),
                self.db_server,
                self.opts,
                self.shutdown,
            )
            .with_context(|| format!("cache-aside with a {} cache", mb_name(mb)))?;
            let hit = r.cache_aside.as_ref().map_or(0.0, |a| a.hit_ratio);
            say(&format!(
                "  cache {}: hit ratio of all reads {:.1}%, p99 {}\n",
                mb_name(mb),
                hit * 100.0,
                p99_said(&r)
            ));
            out.push(CurveRun {
                memory_mb: mb,
                result: r,
            });
        }
        Ok(out)
    }

    /// Cache-aside at the smallest size on `curve` whose misses (at its hit
    /// ratio `carried` to the stated keys) the database carries at `rate`
    /// within its capacity, confirmed by a run at `rate`; a
    /// size that misses the goal gives way to the next larger one.
    pub fn cache_aside(
        &self,
        (curve, carried): (&[CurveRun], &Carried<'_>),
        db: &Searched,
        rate: f64,
        say: &mut dyn FnMut(&str),
    ) -> Result<Option<AsideRun>> {
        let cap = db.capacity.capacity_rps.unwrap_or(0.0);
        let ws = self.ask.load.write_share;
        // Picked on the curve carried to the stated keys.
        let room = self.ask.assumed.method.db_headroom * cap;
        let fits = |c: &&CurveRun| db_load(rate, ws, carried(c)) <= room || cap == 0.0;
        let mut last = None;
        for c in curve.iter().filter(fits).take(2) {
            let what = format!("cache-aside with a {} cache", mb_name(c.memory_mb));
            let (mut r, mut verdict) = self.fixed(self.aside(c.memory_mb, rate), &what, say)?;
            // Failing at half the database's capacity contradicts the
            // database alone's search: once more, and said if it holds.
            if verdict.is_err() && cap > 0.0 && rate <= 0.5 * cap {
                say("  it contradicts the database alone's capacity: run once more\n");
                (r, verdict) = self.fixed(self.aside(c.memory_mb, rate), &what, say)?;
                if let Err(why) = &mut verdict {
                    why.push_str(&format!(
                        "; failed again on a rerun, at no more than half the database alone's capacity ({} req/s): the cache in front costs latency here, or the host was busy",
                        num(cap)
                    ));
                }
            }
            let done = verdict.is_ok();
            last = Some(AsideRun {
                memory_mb: c.memory_mb,
                result: r,
                within_goal: done,
                why_not: verdict.err(),
            });
            if done {
                break;
            }
        }
        Ok(last)
    }
}

/// The rate of the curve's runs: half the database's capacity (a small cache
/// sends most reads through), whatever the stated rate, so that each run
/// touches enough of the keys for its cache to reach its steady hit ratio
/// (which an LRU cache's does not owe to the rate).
pub(in crate::modes::decide) fn curve_rate(ask: &Asked, db: &Searched) -> f64 {
    let cap = db
        .capacity
        .capacity_rps
        .or_else(|| {
            db.capacity
                .steps
                .first()
                .map(|s| s.result.totals.throughput_rps)
        })
        .unwrap_or(ask.load.rps);
    (0.5 * cap).max(100.0)
}

/// The rate of the fixed-rate runs: the stated one where this machine
/// carries it, else the rate the curve ran at (half the database's capacity,
/// at most half the cache's): a cache-aside request costs the machine a
/// client, a cache and a database, all on its cores; and why.
pub(in crate::modes::decide) fn confirm_rate(
    ask: &Asked,
    db: &Searched,
    cache: &Searched,
    curve: f64,
) -> (f64, String) {
    let cache_cap = cache.capacity.capacity_rps.unwrap_or(f64::INFINITY);
    let room = curve.min(0.5 * cache_cap);
    match ask.load.rps <= room {
        true => (
            ask.load.rps,
            "the stated rate: this machine carries it".into(),
        ),
        false => (
            room.max(1.0),
            format!(
                "{} req/s of the stated {}: the most this machine carries with room beside kvlab and both servers (half the capacity of the database alone{}, at most half the cache's); figures are carried to the stated rate per server core",
                num(room),
                num(ask.load.rps),
                db.capacity
                    .capacity_rps
                    .map(|c| format!(", {} req/s", num(c)))
                    .unwrap_or_default()
            ),
        ),
    }
}
