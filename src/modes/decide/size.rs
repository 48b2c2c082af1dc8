//! The one sizing method of a decision, for every row: each server's
//! operations per second at the stated load, from the measured shares of its
//! architecture (hits, near-cache hits, reads to replicas, writes, fills,
//! invalidations), divided by its product's operations per core within the
//! goal (its capacity search). The same formula at a fixed-rate run's rate
//! predicts that run's server CPU: the check of the model, shown per row.

use crate::results::RunResult;
use crate::results::decide::{ServerSize, StatedLoad};
use crate::results::usage::Role;

/// A model off by more than this share of the measured CPU is said.
pub const MODEL_TOLERANCE: f64 = 0.25;

/// How an architecture spreads its requests over its servers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// The database alone.
    Database,
    /// The cache alone (the data only in the cache).
    Cache,
    /// Cache-aside with a hit ratio of all reads `hit`, of which `near`
    /// (of all reads) a near cache in the application answered.
    Aside { hit: f64, near: f64 },
    /// A near cache answering `near` of the reads in front of the database.
    DatabaseNear { near: f64 },
    /// The database with `replicas` read replicas taking every read.
    Replicas { replicas: u32 },
}

/// Each product's operations per second per core within the goal.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerCore {
    /// The database's (its capacity search on the stated mix).
    pub db: Option<f64>,
    /// The cache's (the cache alone's capacity search).
    pub cache: Option<f64>,
}

/// Memory at the stated data: the database's table, the cache's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// A database server's (each replica holds the table too).
    pub table: Option<u64>,
    /// The cache's.
    pub cache: Option<u64>,
}

/// Operations per second of each server (role, ops) of `shape` at `rps`
/// with `write_share` of requests writing.
pub fn ops(shape: Shape, rps: f64, write_share: f64) -> Vec<(&'static str, f64)> {
    let (r, w) = (rps * (1.0 - write_share), rps * write_share);
    match shape {
        Shape::Database => vec![("database", rps)],
        Shape::Cache => vec![("cache", rps)],
        // The cache: the reads the near cache left, a fill per miss and an
        // invalidation per write; the database: the misses and the writes.
        Shape::Aside { hit, near } => vec![
            ("database", r * (1.0 - hit) + w),
            ("cache", r * (1.0 - near) + r * (1.0 - hit) + w),
        ],
        Shape::DatabaseNear { near } => vec![("database", r * (1.0 - near) + w)],
        // Writes to the primary; each replica its share of the reads and
        // every write, applied.
        Shape::Replicas { replicas } => {
            let n = replicas.max(1) as f64;
            let mut v = vec![("database", w)];
            v.extend((0..replicas.max(1)).map(|_| ("replica", r / n + w)));
            v
        }
    }
}

/// The servers of `shape` at `load`, sized by the one method, each with the
/// model's check against `run` (a fixed-rate run of it, and its shape as
/// measured there: its own hit ratio on the copy) where there is one.
pub fn servers(
    load: &StatedLoad,
    shape: Shape,
    per_core: PerCore,
    memory: Memory,
    products: (&str, &str),
    run: Option<(&RunResult, Shape)>,
) -> Vec<ServerSize> {
    let at_run = run.map(|(r, measured)| {
        let rate = r.totals.throughput_rps;
        let ws = r.config.workload.ratio.set as f64
            / (r.config.workload.ratio.set + r.config.workload.ratio.get).max(1) as f64;
        (ops(measured, rate, ws), measured_cores(r))
    });
    ops(shape, load.rps, load.write_share)
        .into_iter()
        .enumerate()
        .map(|(i, (role, ops_per_s))| {
            let (pc, product, mem) = match role {
                "cache" => (per_core.cache, products.1, memory.cache),
                _ => (per_core.db, products.0, memory.table),
            };
            let (predicted, measured) = match &at_run {
                Some((ops, cpu)) => (pc.map(|pc| ops[i].1 / pc), cpu.get(i).copied().flatten()),
                None => (None, None),
            };
            ServerSize {
                role: role.into(),
                product: product.into(),
                ops_per_s,
                ops_per_core: pc,
                cores: pc.map(|pc| ops_per_s / pc),
                memory_bytes: mem,
                machines: None,
                monthly_cost: None,
                predicted_cores_at_run: predicted,
                measured_cores_at_run: measured,
            }
        })
        .collect()
}

/// Each server's CPU over `r`'s window, cores, in the order [`ops`] lists
/// them (database or primary first, then replicas, then the cache).
fn measured_cores(r: &RunResult) -> Vec<Option<f64>> {
    let window = r.totals.duration_s.max(1e-9);
    match &r.replication {
        Some(rep) => rep
            .servers
            .iter()
            .map(|s| s.cpu_s.map(|c| c / window))
            .collect(),
        None => {
            let of = |role: Role| {
                r.server
                    .servers
                    .iter()
                    .find(|s| s.role == role)
                    .and_then(|s| s.cpu_s)
                    .map(|c| c / window)
            };
            match r.cache_aside.is_some() {
                true => vec![of(Role::Database), of(Role::Cache)],
                false => vec![of(Role::Database).or_else(|| of(Role::Cache))],
            }
        }
    }
}

/// Where the model is off by more than [`MODEL_TOLERANCE`]: one line.
pub fn model_warning(servers: &[ServerSize]) -> Option<String> {
    let off: Vec<String> = servers
        .iter()
        .filter_map(|s| {
            let (p, m) = (s.predicted_cores_at_run?, s.measured_cores_at_run?);
            ((p - m).abs() > MODEL_TOLERANCE * m.max(1e-9)).then(|| {
                format!(
                    "{} {}: predicted {:.2} cores at the run's rate, measured {:.2}",
                    s.role, s.product, p, m
                )
            })
        })
        .collect();
    (!off.is_empty()).then(|| {
        format!(
            "the sizing model is off by more than {:.0}% here ({}): its cores are less certain",
            MODEL_TOLERANCE * 100.0,
            off.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_spreads_the_requests_as_its_servers_see_them() {
        let sum = |v: Vec<(&str, f64)>| v.iter().map(|x| x.1).sum::<f64>();
        assert_eq!(
            ops(Shape::Database, 1000.0, 0.3),
            vec![("database", 1000.0)]
        );
        // 700 reads, 300 writes; 60% hit: the database 280 misses + 300
        // writes; the cache 700 reads + 280 fills + 300 invalidations.
        let a = ops(
            Shape::Aside {
                hit: 0.6,
                near: 0.0,
            },
            1000.0,
            0.3,
        );
        assert!((a[0].1 - 580.0).abs() < 1e-9 && (a[1].1 - 1280.0).abs() < 1e-9);
        // A near cache answering 20% of reads spares the cache 140 reads.
        let n = ops(
            Shape::Aside {
                hit: 0.6,
                near: 0.2,
            },
            1000.0,
            0.3,
        );
        assert!((n[1].1 - 1140.0).abs() < 1e-9);
        // In front of the database alone: never more than the database alone.
        let d = sum(ops(Shape::DatabaseNear { near: 0.5 }, 1000.0, 0.3));
        assert!((d - 650.0).abs() < 1e-9 && d <= 1000.0);
        let r = ops(Shape::Replicas { replicas: 2 }, 1000.0, 0.3);
        assert_eq!(r.len(), 3);
        assert!((r[1].1 - 650.0).abs() < 1e-9);
    }
}
