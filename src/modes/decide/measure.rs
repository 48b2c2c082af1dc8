//! The runs of a decision, one function each: the database alone and the
//! cache alone (capacity searches within the goal), the miss-ratio curve, the
//! cache-aside confirmation at a fixed rate, and a cache loss under load.

use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::Ask;
use crate::driver::{Connector, Role};
use crate::modes::capacity::{self, Capacity, MoreLimits};
use crate::plan::{CacheStart, RunPlan, Stop};
use crate::results::RunResult;
use crate::results::decide::{ArchName, CacheLoss, DataCopy, StatedLoad, db_load};
use crate::results::stats::num;
use crate::runner::{self, RunOptions};
use crate::servers::ManagedServer;
use crate::workload::draws::{self, Phase};

/// Where a search's server cores came from (saved as these words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CoresSource {
    /// Measured: the server's CPU at the capacity found.
    #[serde(rename = "measured")]
    Measured,
    /// Stated by the user (`--target-cores`, `--cache-cores`).
    #[serde(
        rename = "the cores stated for it: the server is taken to use all of them at its capacity"
    )]
    Stated,
    /// Neither.
    #[serde(rename = "not known")]
    NotKnown,
}

impl CoresSource {
    /// The cores where `measured` is not known: `stated`, and where from.
    pub fn stated(stated: Option<f64>) -> (Option<f64>, CoresSource) {
        match stated {
            Some(c) => (Some(c), CoresSource::Stated),
            None => (None, CoresSource::NotKnown),
        }
    }

    /// In words.
    pub fn said(self) -> &'static str {
        match self {
            CoresSource::Measured => "measured",
            CoresSource::Stated => {
                "the cores stated for it: the server is taken to use all of them at its capacity"
            }
            CoresSource::NotKnown => "not known",
        }
    }
}

/// A capacity search and what it gives per server core and per key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Searched {
    /// The search.
    pub capacity: Capacity,
    /// Server cores busy at the capacity found (measured), or the cores the
    /// user stated for a server kvlab cannot read the CPU of.
    pub cores: Option<f64>,
    /// Where `cores` came from.
    pub cores_source: CoresSource,
    /// The server's memory for the measured copy: a database's table, a
    /// cache's resident memory, bytes.
    pub bytes: Option<u64>,
}

impl Searched {
    /// Requests per second per server core within the goal.
    pub fn per_core(&self) -> Option<f64> {
        Some(self.capacity.capacity_rps? / self.cores.filter(|c| *c > 0.0)?)
    }

    /// The same at the top of the search's bracket (the first rate that
    /// failed): the most the server may carry per core, the low end of its
    /// cores; the capacity itself where there is no bracket.
    pub fn per_core_top(&self) -> Option<f64> {
        let top = match (self.capacity.bracket, self.capacity.client_limited_at) {
            (Some([_, fail]), None) => fail,
            _ => self.capacity.capacity_rps?,
        };
        Some(top / self.cores.filter(|c| *c > 0.0)?)
    }
}

/// One point of the measured curve: the cache's memory limit (`None`: no
/// limit) and the settled run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CurveRun {
    pub memory_mb: Option<u64>,
    pub result: RunResult,
}

/// The cache-aside configuration chosen and its confirmation at a fixed rate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AsideRun {
    pub memory_mb: Option<u64>,
    pub result: RunResult,
    /// Whether it met the goal.
    pub within_goal: bool,
    /// Why not, when it did not.
    pub why_not: Option<String>,
}

/// A curve point's hit ratio carried to the stated keys.
pub type Carried<'a> = dyn Fn(&CurveRun) -> f64 + 'a;

/// One fixed-rate run of another architecture, or why there is none.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Other {
    /// The row's architecture and products.
    pub name: ArchName,
    pub product: String,
    /// The run, judged against the goal (`None`: not run, `why_not` says).
    pub run: Option<(RunResult, Result<(), String>)>,
    /// Why it was not run.
    pub why_not: Option<String>,
    /// What was run, in words.
    pub what: String,
}

/// What the runs of a decision measured (each step as saved under `--out`).
#[derive(Clone, Debug)]
pub struct Measured {
    /// The copy measured.
    pub copy: DataCopy,
    /// The rate of the fixed-rate runs (the cache-aside confirmation and
    /// the cache loss), req/s.
    pub rate: f64,
    /// Why that rate.
    pub rate_why: String,
    /// The database alone's capacity search.
    pub db: Searched,
    /// The cache alone's.
    pub cache: Searched,
    /// The miss-ratio curve's settled runs.
    pub curve: Vec<CurveRun>,
    /// The cache-aside configuration chosen and its confirmation.
    pub aside: Option<AsideRun>,
    /// The cache loss.
    pub loss: Option<CacheLoss>,
    /// The other architectures' runs.
    pub others: Vec<Other>,
    /// The steps the host was busy in (each by its file's name), said.
    pub host_busy: Vec<(&'static str, String)>,
    /// The load the runs were made for.
    pub measured_for: StatedLoad,
}

/// The runs of one decision against the database kvlab started (if it did).
pub(super) struct Runs<'a> {
    pub ask: &'a Ask,
    /// The copy measured.
    pub copy: &'a DataCopy,
    pub db_server: Option<&'a ManagedServer>,
    pub opts: RunOptions,
    pub shutdown: &'a AtomicBool,
    /// Runs (and searches) started so far: run `n` draws its keys from the
    /// decision's seed's [`Phase::Point`]`(n)`.
    pub drawn: std::cell::Cell<u32>,
}

impl Runs<'_> {
    pub(super) fn limits(&self) -> (f64, MoreLimits) {
        let l = &self.ask.load;
        (
            l.p99_ms,
            MoreLimits {
                p50_ms: l.p50_ms,
                p999_ms: l.p999_ms,
            },
        )
    }

    /// `p` with the seed of the decision's next run: no run of a decision
    /// replays another's keys (each result's plan holds its seed).
    fn drawn(&self, mut p: RunPlan) -> RunPlan {
        let n = self.drawn.get();
        self.drawn.set(n + 1);
        p.workload.seed = draws::seed(self.ask.plan.workload.seed, Phase::Point(n));
        p
    }

    /// The plan of one measured run: `ask`'s, `run_s` long.
    pub(super) fn timed(&self, mut p: RunPlan) -> RunPlan {
        p.load.stop = Stop::Duration(self.ask.run_s());
        p.load.warmup_s = 1.0;
        p
    }

    /// A capacity search of `plan` against `server`, each step said.
    fn search(
        &self,
        plan: &RunPlan,
        (server, stated): (Option<&ManagedServer>, Option<f64>),
        what: &str,
        say: &mut dyn FnMut(&str),
    ) -> Result<Searched> {
        say(&format!("kvlab decide: {what}: capacity within the goal\n"));
        let c = capacity::search_on(
            &self.drawn(self.timed(plan.clone())),
            server,
            self.limits(),
            self.ask.reach(),
            self.opts,
            self.shutdown,
            &mut |s| say(&step_line(s, self.ask.load.p99_ms)),
        )?;
        let (cores, cores_source) = match c.cores_at_capacity() {
            Some(c) => (Some(c), CoresSource::Measured),
            None => CoresSource::stated(stated),
        };
        Ok(Searched {
            capacity: c,
            cores,
            cores_source,
            bytes: None,
        })
    }

    /// The database alone, and its table's size.
    pub fn database(&self, say: &mut dyn FnMut(&str)) -> Result<Searched> {
        let stated = self.ask.load.target_cores;
        let mut s = self.search(
            &self.ask.plan,
            (self.db_server, stated),
            "the database alone",
            say,
        )?;
        s.bytes = self.table_bytes().ok();
        Ok(s)
    }

    /// The size of kvlab's table on the database, bytes.
    fn table_bytes(&self) -> Result<u64> {
        let t = &self.ask.plan.target;
        let endpoint = match (&t.external, self.db_server) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => s.endpoint(),
            (None, None) => anyhow::bail!("no database"),
        };
        let c = Connector::new(t.kind, &endpoint)?;
        let Role::Database(db) = c.product.role() else {
            anyhow::bail!("not a database");
        };
        Ok(db.table_size(&c)?.0)
    }

    /// The cache alone (the data held in the cache only), on a cache kvlab
    /// starts for it.
    pub fn cache_alone(&self, say: &mut dyn FnMut(&str)) -> Result<Searched> {
        let mut p = self.ask.plan.clone();
        p.target = self.ask.cache.cache.clone();
        p.load.rtt = p.load.cache_rtt;
        let server = runner::start_server(&p, self.opts)?;
        let stated = self.ask.load.cache_cores;
        let mut s = self.search(&p, (server.as_ref(), stated), "the cache alone", say)?;
        // Its resident memory holding the copy: a server kvlab did not start
        // and cannot read leaves it not known (never 0).
        s.bytes = s
            .capacity
            .steps
            .first()
            .and_then(|st| st.result.server.server_peak_rss_kb)
            .filter(|kb| *kb > 0)
            .map(|kb| kb * 1024);
        Ok(s)
    }

    /// The cache-aside plan with a cache of `memory_mb` (`None`: no limit,
    /// loaded with every key), settled before the window, at `rate`.
    pub(super) fn aside(&self, memory_mb: Option<u64>, rate: f64) -> RunPlan {
        let mut p = self.timed(self.ask.plan.clone());
        let mut cache = self.ask.cache.clone();
        // With no limit the cache holds every key: loaded first (warm), it
        // is at its steady state; a smaller one is warmed by the workload
        // until its hit ratio settles.
        cache.start = match memory_mb {
            None => CacheStart::Warm,
            Some(_) => CacheStart::Settle,
        };
        if let Some(mb) = memory_mb {
            cache
                .cache
                .server_opts
                .insert("memory-mb".into(), mb.to_string());
        }
        // Full, it evicts as a deployed cache does (the product's settings).
        p.cache = Some(cache.evict_by_default());
        p.load.rate = Some(rate);
        p
    }

    /// `plan` run at `rate`, judged against the goal; each step said.
    pub(super) fn fixed(
        &self,
        plan: RunPlan,
        what: &str,
        say: &mut dyn FnMut(&str),
    ) -> Result<(RunResult, Result<(), String>)> {
        let rate = plan.load.rate.unwrap_or(0.0);
        say(&format!("kvlab decide: {what} at {} req/s\n", num(rate)));
        let server = match plan.target.server_opts.contains_key("replicas") {
            true => runner::start_server(&plan, self.opts)?,
            false => None,
        };
        let db = server.as_ref().or(self.db_server);
        let r = runner::measure(&self.drawn(plan), db, self.opts, self.shutdown)?;
        let verdict = capacity::judge(&r, rate, self.ask.load.p99_ms, self.limits().1);
        say(&format!(
            "  p99 {}: {}\n",
            p99_said(&r),
            verdict
                .as_ref()
                .err()
                .map_or("within the goal", |w| w.as_str())
        ));
        Ok((r, verdict))
    }

    /// The miss-ratio curve: settled cache-aside runs at `rate` with the
    /// cache at the method's shares of the copy's data (5%, 15% and 40%, and
    /// its base for its own use) and with no limit.
    pub fn curve(&self, rate: f64, say: &mut dyn FnMut(&str)) -> Result<Vec<CurveRun>> {
        let data_mb = self.copy.bytes() as f64 / (1u64 << 20) as f64;
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
            .chain(self.ask.team_cache_mb.map(Some))
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

    /// The cache restarted empty 3 s into a run of the chosen cache-aside at
    /// `rate` (a cache kvlab did not start: kvlab's own keys deleted, the loss
    /// emulated): the database's read load, p99 and errors while it refills.
    pub fn cache_loss(
        &self,
        a: &AsideRun,
        rate: f64,
        say: &mut dyn FnMut(&str),
    ) -> Result<CacheLoss> {
        let mut p = self.aside(a.memory_mb, rate);
        let m = &self.ask.assumed.method;
        p.load.stop = Stop::Duration(m.loss_run_s(self.ask.quick));
        let emulated = self.ask.cache.cache.external.is_some();
        let at = m.loss_at_s;
        p.load.events = vec![match emulated {
            true => format!("{at}:drop-keys-cache").parse()?,
            false => format!("{at}:restart-cache").parse()?,
        }];
        say(&format!(
            "kvlab decide: a cache loss: {} {at} s into a run at {} req/s{}\n",
            match emulated {
                true =>
                    "kvlab's own keys deleted from the cache given by URL (a loss emulated; the server keeps running)",
                false => "the cache restarted empty",
            },
            num(rate),
            match self.ask.load.rate_shape {
                Some(_) if rate == self.ask.load.rps => " (the peak of the stated day)",
                _ => "",
            }
        ));
        let r = runner::measure(&self.drawn(p), self.db_server, self.opts, self.shutdown)?;
        let mut loss = loss_of(&r, at, self.ask.load.p99_ms);
        loss.emulated = emulated;
        loss.rate_rps = rate;
        loss.event_error = r.events.iter().find_map(|e| e.error.clone());
        Ok(loss)
    }
}

/// A cache size as said: `12 MiB` or `no limit`.
pub(super) fn mb_name(mb: Option<u64>) -> String {
    mb.map_or("no-limit".into(), |m| format!("{m} MiB"))
}

/// What the run `r`, whose cache was lost at second `at`, shows.
fn loss_of(r: &RunResult, at: i64, p99_ms: f64) -> CacheLoss {
    let reads = |s: &crate::results::Second| {
        s.cache
            .as_ref()
            .map_or(0.0, |c| c.db_reads as f64 / s.span_s.max(1) as f64)
    };
    let before: Vec<f64> = r
        .timeline
        .iter()
        .filter(|s| s.second < at)
        .map(reads)
        .collect();
    let after: Vec<&crate::results::Second> =
        r.timeline.iter().filter(|s| s.second >= at).collect();
    let recovered = after
        .iter()
        .find(|s| s.second > at && s.p99_us <= p99_ms * 1000.0)
        .map(|s| (s.second - at) as f64);
    let until = recovered.map_or(i64::MAX, |d| at + d as i64);
    CacheLoss {
        db_peak_rps: after.iter().map(|s| reads(s)).fold(0.0, f64::max),
        db_before_rps: before.iter().sum::<f64>() / before.len().max(1) as f64,
        db_counted: r
            .server_counters
            .as_ref()
            .map(|c| [c.server.gets, c.kvlab_gets]),
        p99_ms: after
            .iter()
            .filter(|s| s.second < until)
            .map(|s| s.p99_us / 1000.0)
            .fold(0.0, f64::max),
        errors: r.totals.errors,
        seconds_to_recover: recovered,
        database_alone_carries: false,
        emulated: false,
        rate_rps: 0.0,
        event_error: None,
        at_s: at,
        seconds: r
            .timeline
            .iter()
            .filter(|s| s.span_s == 1)
            .map(|s| crate::results::decide::LossSecond {
                second: s.second,
                db_reads_per_s: reads(s),
                p99_ms: s.p99_us / 1000.0,
            })
            .collect(),
    }
}

/// The rate of the curve's runs: half the database's capacity (a small cache
/// sends most reads through), whatever the stated rate, so that each run
/// touches enough of the keys for its cache to reach its steady hit ratio
/// (which an LRU cache's does not owe to the rate).
pub(super) fn curve_rate(ask: &Ask, db: &Searched) -> f64 {
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
pub(super) fn confirm_rate(
    ask: &Ask,
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

/// A capacity step's progress line: its rate (the closed loop's measured
/// one), its p99 and whether it met the goal, or why not.
/// A run's p99 as said: `3,293 µs`, or not known where no request finished
/// (a run cut short), never 0.
fn p99_said(r: &RunResult) -> String {
    match r.totals.requests {
        0 => "not known (no request finished)".into(),
        _ => format!("{} µs", num(r.latency.latency_us.p99)),
    }
}

fn step_line(s: &crate::results::capacity::Step, p99_ms: f64) -> String {
    let p99 = s.result.latency.latency_us.p99;
    match s.rate {
        None => format!(
            "  closed loop (the search's ceiling, not judged): {} req/s, p99 {}{}\n",
            num(s.result.totals.throughput_rps),
            p99_said(&s.result),
            match p99 <= p99_ms * 1000.0 {
                true => ", within the goal",
                false => ", over the goal",
            }
        ),
        Some(rate) => format!(
            "  {} req/s: p99 {}, {}\n",
            num(rate),
            p99_said(&s.result),
            s.reason.as_deref().unwrap_or("within the goal")
        ),
    }
}
