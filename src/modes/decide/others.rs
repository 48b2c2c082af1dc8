//! The other architectures a team weighs beside the cache: the database with
//! a read replica (reads to the replica, writes to the primary), cache-aside
//! with a near cache in each application thread (kept coherent by the
//! cache's client tracking), and a near cache in front of the database alone
//! (a TTL its only coherence). Each is one fixed-rate run at the rate the
//! cache-aside confirmation ran at, and a row carried from its servers' CPU
//! and memory.

use anyhow::Result;

use super::Ask;
use super::measure::{AsideRun, Runs, mb_name};
use crate::plan::near::{Invalidation, NearBound, NearCache};
use crate::results::RunResult;
use crate::results::decide::{Architecture, bytes};
use crate::results::stats::num;
use crate::results::usage::Role;

/// The TTL of a near cache in front of the database alone, seconds: its
/// stale reads are bounded by it.
pub const NEAR_TTL_S: u32 = 1;

/// One fixed-rate run of another architecture, or why there is none.
pub(super) struct Other {
    /// The row's name and products.
    pub name: &'static str,
    pub product: String,
    /// The run, judged against the goal (`None`: not run, `why_not` says).
    pub run: Option<(RunResult, Result<(), String>)>,
    /// Why it was not run.
    pub why_not: Option<String>,
    /// What was run, in words.
    pub what: String,
}

/// The near cache each client thread gets in a decision: a tenth of the
/// keys of the measured copy (at least 1,000).
fn near_of(ask: &Ask, invalidation: Invalidation) -> NearCache {
    NearCache {
        bound: NearBound::Items((ask.plan.workload.keys / 10).max(1000)),
        invalidation,
    }
}

impl Runs<'_> {
    /// The database with one read replica at `rate`: kvlab starts both.
    pub fn replicas(&self, rate: f64, say: &mut dyn FnMut(&str)) -> Result<Other> {
        let t = &self.ask.plan.target;
        let mut other = Other {
            name: "database-replicas",
            product: format!("{} with a read replica", t.kind.name()),
            run: None,
            why_not: None,
            what:
                "the database with one streaming read replica (reads to it, writes to the primary)"
                    .into(),
        };
        if t.kind.product().server().replication().is_none() || t.external.is_some() {
            other.why_not = Some(format!(
                "not measured: kvlab starts read replicas only of a {} it starts itself (postgres or mariadb); give --target without a URL to weigh them",
                t.kind.name()
            ));
            return Ok(other);
        }
        let mut p = self.timed(self.ask.plan.clone());
        p.target.server_opts.insert("replicas".into(), "1".into());
        p.load.rate = Some(rate);
        other.run = Some(self.fixed(p, &other.what.clone(), say)?);
        Ok(other)
    }

    /// Cache-aside as `a` chose it, with a near cache in each client thread.
    pub fn near_aside(&self, a: &AsideRun, rate: f64, say: &mut dyn FnMut(&str)) -> Result<Other> {
        let near = near_of(self.ask, Invalidation::Tracking);
        let mut p = self.aside(a.memory_mb, rate);
        p.near = Some(near);
        let what = format!(
            "cache-aside with a {} cache and a near cache of {}",
            mb_name(a.memory_mb),
            near.describe()
        );
        Ok(Other {
            name: "cache-aside-near",
            product: format!(
                "near cache, {}",
                crate::results::architecture_name(
                    self.ask.plan.target.kind.product().name(),
                    Some(self.ask.cache.cache.kind.product().name()),
                    None,
                )
            ),
            run: Some(self.fixed(p, &what, say)?),
            why_not: None,
            what,
        })
    }

    /// A near cache in front of the database alone, entries kept
    /// [`NEAR_TTL_S`] seconds (a database cannot tell a client of changes).
    pub fn near_database(&self, rate: f64, say: &mut dyn FnMut(&str)) -> Result<Other> {
        let near = near_of(self.ask, Invalidation::Ttl(NEAR_TTL_S));
        let mut p = self.timed(self.ask.plan.clone());
        p.near = Some(near);
        p.load.rate = Some(rate);
        let what = format!("the database with a near cache of {}", near.describe());
        Ok(Other {
            name: "database-near",
            product: format!(
                "near cache in front of {}",
                self.ask.plan.target.kind.name()
            ),
            run: Some(self.fixed(p, &what, say)?),
            why_not: None,
            what,
        })
    }
}

/// `o`'s row at the stated load: each server's cores at the run's rate
/// carried linearly to the stated one, its memory per key to the stated keys
/// (a replica holds the whole table, as the primary does).
pub(super) fn row(ask: &Ask, o: &Other, per_key: f64, table: Option<u64>) -> Architecture {
    let mut r = super::rows::row(o.name, &o.product);
    let Some((run, verdict)) = &o.run else {
        r.why_not = o.why_not.clone();
        r.measured_from = o.what.clone();
        return r;
    };
    let rate = run.config.load.rate.unwrap_or(0.0).max(1.0);
    let window = run.totals.duration_s.max(1e-9);
    let scale = ask.load.rps / rate;
    r.p99_ms = Some(run.latency.latency_us.p99 / 1000.0);
    r.within_goal = verdict.is_ok();
    r.why_not = verdict.clone().err();
    r.stale_reads_per_million = run.consistency.as_ref().map(|c| c.stale_per_million_reads);
    r.hit_ratio = run
        .cache_aside
        .as_ref()
        .map(|a| a.hit_ratio)
        .or_else(|| run.near_cache.as_ref().map(|n| n.hit_ratio));
    let table = (table.unwrap_or(0) as f64 * per_key) as u64;
    let mut servers: Vec<(f64, u64)> = Vec::new();
    match &run.replication {
        Some(rep) => {
            for s in &rep.servers {
                servers.push((s.cpu_s.unwrap_or(0.0) / window * scale, table));
            }
        }
        None => {
            for s in &run.server.servers {
                let mem = match s.role {
                    Role::Cache => {
                        let b = (s.peak_rss_kb.unwrap_or(0) as f64 * 1024.0 * per_key) as u64;
                        r.cache_memory_bytes = Some(b);
                        b
                    }
                    _ => table,
                };
                servers.push((s.cpu_s.unwrap_or(0.0) / window * scale, mem));
            }
        }
    }
    let known = !servers.is_empty() && servers.iter().all(|s| s.0 > 0.0);
    if known {
        super::rows::size(ask, &mut r, &servers);
    } else {
        r.within_goal = false;
        r.why_not
            .get_or_insert_with(|| "its servers' CPU was not measured".into());
    }
    let near = run.near_cache.as_ref().map_or(String::new(), |n| {
        format!(
            "; the near caches answered {:.1}% of reads and held at most {} in the application (not counted as server memory)",
            n.hit_ratio * 100.0,
            bytes(n.peak_bytes)
        )
    });
    r.measured_from = format!(
        "a run of {} at {} req/s: each server's CPU over the window carried linearly to the stated rate; memory: the table per key × the stated keys on every database server{}{}",
        o.what,
        num(rate),
        if run.cache_aside.is_some() {
            ", the cache's resident memory likewise"
        } else {
            ""
        },
        near
    );
    r
}
