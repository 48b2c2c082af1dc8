//! The runs of a decision, one function each: the database alone and the
//! cache alone (capacity searches within the goal), the miss-ratio curve, the
//! cache-aside confirmation at a fixed rate, and a cache loss under load.
//! The types and the runs' common parts are here; `curve` the curve and
//! the cache-aside chosen on it, `loss` the cache loss.

mod curve;
mod loss;

pub(super) use curve::{confirm_rate, curve_rate};

use std::sync::atomic::AtomicBool;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::ask::Asked;
use crate::driver::{Connector, Role};
use crate::modes::capacity::{self, Capacity, MoreLimits};
use crate::plan::{CacheStart, RunPlan, Stop};
use crate::results::RunResult;
use crate::results::decide::{ArchName, CacheLoss, DataCopy, StatedLoad};
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
    pub ask: &'a Asked,
    /// The copy measured, and the team's cache carried to it.
    pub on: &'a super::copy::OnCopy,
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
}

/// A cache size as said: `12 MiB` or `no limit`.
pub(super) fn mb_name(mb: Option<u64>) -> String {
    mb.map_or("no-limit".into(), |m| format!("{m} MiB"))
}

/// A run's p99 as said: `3,293 µs`, or not known where no request finished
/// (a run cut short), never 0.
fn p99_said(r: &RunResult) -> String {
    match r.totals.requests {
        0 => "not known (no request finished)".into(),
        _ => format!("{} µs", num(r.latency.latency_us.p99)),
    }
}

/// A capacity step's progress line: its rate (the closed loop's measured
/// one), its p99 and whether it met the goal, or why not.
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
