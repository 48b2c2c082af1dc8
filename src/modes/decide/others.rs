//! The other architectures a team weighs beside the cache: the database with
//! a read replica (reads to the replica, writes to the primary), cache-aside
//! with a near cache in each application thread (kept coherent by the
//! cache's client tracking), and a near cache in front of the database alone
//! (a TTL its only coherence). Each is one fixed-rate run at the rate the
//! cache-aside confirmation ran at, and a row carried from its servers' CPU
//! and memory.

use anyhow::Result;

use super::ask::Asked;
use super::copy::OnCopy;
pub use super::measure::Other;
use super::measure::{AsideRun, Runs, mb_name};
use super::size::{self, Check, Memory, Shape};
use crate::plan::near::{Invalidation, NearBound, NearCache};
use crate::results::decide::{ArchName, Architecture, bytes};
use crate::results::replication::Part;
use crate::results::stats::num;
use crate::results::usage::Role;

/// The near cache of each application instance in a decision on `on`: the
/// method's share of the keys of the measured copy (a tenth, at least 1,000).
fn near_of(ask: &Asked, on: &OnCopy, invalidation: Invalidation) -> NearCache {
    NearCache {
        bound: NearBound::Items(ask.assumed.method.near_keys(on.copy.keys)),
        invalidation,
    }
}

/// `p` with a near cache as an application's: one per stated instance,
/// shared by its threads. kvlab's near cache is one per client thread, so
/// the run has one client thread per instance, whatever the measuring host
/// (its hit ratio then does not change with `--threads` or the cores).
pub(super) fn as_instances(
    instances: u32,
    mut p: crate::plan::RunPlan,
    near: NearCache,
) -> crate::plan::RunPlan {
    p.near = Some(near);
    p.load.threads = instances.max(1) as usize;
    p.load.connections = p.load.connections.max(p.load.threads);
    p
}

impl Runs<'_> {
    /// The database with one read replica at `rate`: kvlab starts both.
    pub fn replicas(&self, rate: f64, say: &mut dyn FnMut(&str)) -> Result<Other> {
        let t = &self.ask.plan.target;
        let mut other = Other {
            name: ArchName::DatabaseReplicas,
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
        // Kept coherent by the cache's client tracking where it has one,
        // else (memcached) by a TTL, said in the row.
        let invalidation = match self.ask.cache.cache.kind.product().facts().client_tracking {
            true => Invalidation::Tracking,
            false => Invalidation::Ttl(self.ask.assumed.method.near_ttl_s),
        };
        let near = near_of(self.ask, self.on, invalidation);
        let p = as_instances(
            self.ask.load.app_instances,
            self.aside(a.memory_mb, rate),
            near,
        );
        let what = format!(
            "cache-aside with a {} cache and a near cache in each application instance of {}",
            mb_name(a.memory_mb),
            near.describe().replace("per client thread", "per instance")
        );
        Ok(Other {
            name: ArchName::CacheAsideNear,
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
    /// the method's near TTL (1 s) (a database cannot tell a client of changes).
    pub fn near_database(&self, rate: f64, say: &mut dyn FnMut(&str)) -> Result<Other> {
        let near = near_of(
            self.ask,
            self.on,
            Invalidation::Ttl(self.ask.assumed.method.near_ttl_s),
        );
        let mut p = as_instances(
            self.ask.load.app_instances,
            self.timed(self.ask.plan.clone()),
            near,
        );
        p.load.rate = Some(rate);
        let what = format!(
            "the database with a near cache in each application instance of {}",
            near.describe().replace("per client thread", "per instance")
        );
        Ok(Other {
            name: ArchName::DatabaseNear,
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

/// `o`'s row at the stated load, by the one method (see [`super::size`]):
/// each server's operations at the stated load from the run's measured
/// shares (near-cache hits, reads to the replica) over its product's rate per
/// core; the run checks the model. Memory: the table per key on every
/// database server, the cache's resident memory likewise.
pub(super) fn row(
    ask: &Asked,
    o: &Other,
    per_key: f64,
    (at, table): (&super::rows::At, Option<u64>),
) -> Architecture {
    let mut r = super::rows::row(o.name, &o.product);
    let Some((run, verdict)) = &o.run else {
        r.why_not = o.why_not.clone();
        r.measured_from = o.what.clone();
        return r;
    };
    let rate = run.config.load.rate.unwrap_or(0.0).max(1.0);
    r.p99_ms = Some(run.latency.latency_us.p99 / 1000.0);
    r.within_goal = verdict.is_ok();
    r.why_not = verdict.clone().err();
    r.stale_reads_per_million = run.consistency.as_ref().map(|c| c.stale_per_million_reads);
    let near = run.near_cache.as_ref().map_or(0.0, |n| n.hit_ratio);
    r.hit_ratio = run
        .cache_aside
        .as_ref()
        .map(|a| a.hit_ratio)
        .or_else(|| run.near_cache.as_ref().map(|n| n.hit_ratio));
    let shape = match (o.name, &run.cache_aside) {
        (ArchName::DatabaseReplicas, _) => Shape::Replicas {
            replicas: run.replication.as_ref().map_or(1, |x| {
                x.servers.iter().filter(|s| s.role == Part::Replica).count() as u32
            }),
        },
        (_, Some(a)) => Shape::Aside {
            hit: a.hit_ratio,
            near,
        },
        _ => Shape::DatabaseNear { near },
    };
    // The cache beside it is cache-aside's: its hit ratio carried as that
    // row's is (the near cache's own is the run's).
    let stated_shape = match shape {
        Shape::Aside { hit, near } => Shape::Aside {
            hit: (hit + at.hit_delta).clamp(near, 1.0),
            near,
        },
        s => s,
    };
    let cache_mem = run
        .server
        .servers
        .iter()
        .find(|s| s.role == Role::Cache)
        .and_then(|s| s.peak_rss_kb)
        .map(|kb| (kb as f64 * 1024.0 * per_key) as u64);
    if run.cache_aside.is_some() {
        r.cache_memory_bytes = cache_mem;
    }
    let memory = Memory {
        table: table.map(|b| (b as f64 * per_key) as u64),
        cache: cache_mem,
    };
    let servers = size::servers(
        &ask.load,
        stated_shape,
        at.any,
        memory,
        (
            ask.plan.target.kind.product().name(),
            ask.cache.cache.kind.product().name(),
        ),
        Some(Check {
            run,
            shape,
            cpu: &at.cpu,
        }),
    );
    let near = run.near_cache.as_ref().map_or(String::new(), |n| {
        format!(
            "; the near caches ({} application instance(s), one each) answered {:.1}% of reads and held at most {} in the application (not counted as server memory)",
            ask.load.app_instances,
            n.hit_ratio * 100.0,
            bytes(n.peak_bytes)
        )
    });
    let lag = run.replication.as_ref().and_then(lagged);
    r.measured_from = format!(
        "a run of {} at {} req/s{}{}{}",
        o.what,
        num(rate),
        super::rows::checked(&servers),
        near,
        lag.unwrap_or_default()
    );
    super::rows::size(ask, &mut r, servers);
    r
}

/// What the replicas said of their lag and how old the stale reads kvlab
/// saw were: two figures, side by side (the lag is sampled, and a spike
/// between two samples can leave a read older than any sample).
fn lagged(x: &crate::results::replication::ReplicationReport) -> Option<String> {
    let lag = x
        .servers
        .iter()
        .filter_map(|s| s.lag_s_max)
        .reduce(f64::max)?;
    let stale = x
        .servers
        .iter()
        .filter_map(|s| s.stale_age_max_us)
        .reduce(f64::max);
    let stale = match stale {
        Some(us) => format!("its stale reads were at most {} ms old", num(us / 1e3)),
        None => "no read was stale".into(),
    };
    Some(format!(
        "; the replica reported a lag of at most {} ms behind the primary (read every 0.1 s); {stale}",
        num(lag * 1e3)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_cache_run_has_one_client_thread_per_instance_whatever_the_host() {
        let near = NearCache {
            bound: NearBound::Items(1000),
            invalidation: Invalidation::Tracking,
        };
        for threads in [2, 8, 16] {
            use clap::Parser;
            let cli = crate::cli::Cli::try_parse_from([
                "kvlab",
                "run",
                "--threads",
                &threads.to_string(),
            ])
            .unwrap();
            let crate::cli::Command::Run(args) = cli.command else {
                unreachable!("a run")
            };
            let p = args.to_plan().unwrap();
            assert_eq!(p.load.threads, threads);
            let q = as_instances(3, p, near);
            assert_eq!(q.load.threads, 3, "with --threads {threads}");
            assert!(q.load.connections >= 3);
            assert_eq!(q.near, Some(near));
        }
    }
}
