//! The one sizing method of a decision, for every row: each server's
//! operations per second at the stated load, from the measured shares of its
//! architecture (hits, near-cache hits, reads to replicas, writes, fills,
//! invalidations), divided by its product's operations per core within the
//! goal (its capacity search: what a production server at its capacity
//! costs). The check of the model, shown per row: each server's operations
//! per second at a fixed-rate run, by the same shares, predict its CPU there
//! from its product's own search steps at those ops/s (see [`super::cpu`]),
//! held against the CPU the run measured.

use super::cpu::CpuCurves;
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

/// A fixed-rate run of an architecture, the model's check.
#[derive(Clone, Copy, Debug)]
pub struct Check<'a> {
    /// The run.
    pub run: &'a RunResult,
    /// Its shape as measured there (its own hit ratio on the copy).
    pub shape: Shape,
    /// Its products' CPU against their operations per second.
    pub cpu: &'a CpuCurves,
}

impl Check<'_> {
    /// Each server's cores at the run, predicted (its product's curve at
    /// its operations per second there, and the range its runs allow) and
    /// measured, in the order [`ops`] lists them.
    fn cores(&self) -> Vec<AtRun> {
        let r = self.run;
        let ratio = &r.config.workload.ratio;
        let ws = ratio.set as f64 / (ratio.set + ratio.get).max(1) as f64;
        let measured = measured_cores(r);
        ops(self.shape, r.totals.throughput_rps, ws)
            .into_iter()
            .enumerate()
            .map(|(i, (role, x))| {
                let curve = self.cpu.of_role(role);
                AtRun {
                    predicted: curve.cores_at(x),
                    range: curve.range_at(x).map(|(lo, hi)| [lo, hi]),
                    measured: measured.get(i).copied().flatten(),
                }
            })
            .collect()
    }
}

/// One server's cores at a fixed-rate run.
#[derive(Clone, Copy, Debug, Default)]
struct AtRun {
    predicted: Option<f64>,
    range: Option<[f64; 2]>,
    measured: Option<f64>,
}

/// Operations per second of each server (role, ops) of `shape` at `rps`
/// with `write_share` of requests writing.
pub fn ops(shape: Shape, rps: f64, write_share: f64) -> Vec<(Role, f64)> {
    let (r, w) = (rps * (1.0 - write_share), rps * write_share);
    match shape {
        Shape::Database => vec![(Role::Database, rps)],
        Shape::Cache => vec![(Role::Cache, rps)],
        // The cache: the reads the near cache left, a fill per miss and an
        // invalidation per write; the database: the misses and the writes.
        Shape::Aside { hit, near } => vec![
            (Role::Database, r * (1.0 - hit) + w),
            (Role::Cache, r * (1.0 - near) + r * (1.0 - hit) + w),
        ],
        Shape::DatabaseNear { near } => vec![(Role::Database, r * (1.0 - near) + w)],
        // Writes to the primary; each replica its share of the reads and
        // every write, applied.
        Shape::Replicas { replicas } => {
            let n = replicas.max(1) as f64;
            let mut v = vec![(Role::Database, w)];
            v.extend((0..replicas.max(1)).map(|_| (Role::Replica, r / n + w)));
            v
        }
    }
}

/// The servers of `shape` at `load`, sized by the one method (`per_core`),
/// each with the model's check against `check` where there is a run.
pub fn servers(
    load: &StatedLoad,
    shape: Shape,
    per_core: PerCore,
    memory: Memory,
    products: (&str, &str),
    check: Option<Check<'_>>,
) -> Vec<ServerSize> {
    let at_run = check.map(|c| c.cores()).unwrap_or_default();
    ops(shape, load.rps, load.write_share)
        .into_iter()
        .enumerate()
        .map(|(i, (role, ops_per_s))| {
            let (pc, product, mem) = match role {
                Role::Cache => (per_core.cache, products.1, memory.cache),
                _ => (per_core.db, products.0, memory.table),
            };
            let at = at_run.get(i).copied().unwrap_or_default();
            ServerSize {
                role,
                product: product.into(),
                ops_per_s,
                ops_per_core: pc,
                cores: pc.map(|pc| ops_per_s / pc),
                memory_bytes: mem,
                machines: None,
                monthly_cost: None,
                placed: None,
                unpriced: None,
                predicted_cores_at_run: at.predicted,
                predicted_range_at_run: at.range,
                measured_cores_at_run: at.measured,
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

/// Cores predicted, as said: `0.12`, or `0.05 (0.02–0.20)` where the run
/// was below the product's lowest search step.
pub fn cores_said(p: f64, [lo, hi]: [f64; 2]) -> String {
    match hi > lo {
        true => format!("{p:.2} ({lo:.2}–{hi:.2})"),
        false => format!("{p:.2}"),
    }
}

/// Where a run's measured CPU is off its product's own runs at the same
/// operations per second (below the product's lowest search step, off the
/// range they allow) by more than [`MODEL_TOLERANCE`]: one line.
pub fn model_warning(servers: &[ServerSize]) -> Option<String> {
    let off: Vec<String> = servers
        .iter()
        .filter_map(|s| {
            let (p, m) = (s.predicted_cores_at_run?, s.measured_cores_at_run?);
            let [lo, hi] = s.predicted_range_at_run.unwrap_or([p, p]);
            let off = m < lo * (1.0 - MODEL_TOLERANCE) || m > hi * (1.0 + MODEL_TOLERANCE);
            off.then(|| {
                format!(
                    "{} {}: its own search's runs give {} cores at the run's operations per second, the run measured {m:.2}",
                    s.role,
                    s.product,
                    cores_said(p, [lo, hi])
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
        let sum = |v: Vec<(Role, f64)>| v.iter().map(|x| x.1).sum::<f64>();
        assert_eq!(
            ops(Shape::Database, 1000.0, 0.3),
            vec![(Role::Database, 1000.0)]
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

    /// A stated load of `rps`, reads only.
    fn load(rps: f64) -> StatedLoad {
        StatedLoad {
            price_machine_month: 100.0,
            ..StatedLoad::example(rps)
        }
    }

    /// A fixed-rate run of the database alone, reads only, serving `rps`
    /// over 10 s with its server `cores` busy.
    fn run(rps: f64, cores: f64) -> RunResult {
        let mut r: RunResult =
            serde_json::from_str(include_str!("../../../tests/fixtures/client-result.json"))
                .unwrap();
        (r.config.workload.ratio.set, r.config.workload.ratio.get) = (0, 1);
        (r.totals.throughput_rps, r.totals.duration_s) = (rps, 10.0);
        (r.cache_aside, r.replication) = (None, None);
        let requests = (rps * 10.0) as u64;
        r.server.servers = vec![crate::results::usage::ServerUse::new(
            Role::Database,
            "postgres",
            Some(cores * 10.0),
            None,
            requests,
        )];
        r
    }

    #[test]
    fn a_light_run_is_checked_against_its_products_own_runs_at_its_rate() {
        use super::super::cpu::{CpuCurve, CpuPoint};
        // The database's search: 0.1 cores at 500 ops/s, 0.4 at 4,000 (its
        // CPU per operation falls as load rises); 10,000 ops per core at its
        // capacity.
        let db = CpuCurve::new(
            [(500.0, 0.1), (4000.0, 0.4)].map(|(ops_per_s, cores)| CpuPoint { ops_per_s, cores }),
        );
        let cpu = CpuCurves {
            db,
            cache: CpuCurve::default(),
        };
        let per_core = PerCore {
            db: Some(10_000.0),
            cache: None,
        };
        let sized = |r: &RunResult| {
            let check = Check {
                run: r,
                shape: Shape::Database,
                cpu: &cpu,
            };
            servers(
                &load(20_000.0),
                Shape::Database,
                per_core,
                Memory::default(),
                ("postgres", "redis"),
                Some(check),
            )
        };
        // At 1,000 ops/s the curve gives 0.1 + 0.3 × 500/3,500 cores; the
        // cost per operation at capacity would give 0.1, 30% under.
        let on_curve = 0.1 + 0.3 * 500.0 / 3500.0;
        let matched = sized(&run(1000.0, on_curve));
        let s = &matched[0];
        assert!((s.predicted_cores_at_run.unwrap() - on_curve).abs() < 1e-9);
        assert!((s.measured_cores_at_run.unwrap() - on_curve).abs() < 1e-9);
        assert_eq!(model_warning(&matched), None);
        // Sized at the stated load by operations per core at capacity.
        assert!((s.cores.unwrap() - 2.0).abs() < 1e-9);
        // Twice the curve's CPU: this architecture really costs more.
        let costly = sized(&run(1000.0, 2.0 * on_curve));
        let w = model_warning(&costly).expect("a warning");
        assert!(w.contains("off by more than 25%"), "{w}");
        // Below the search's lowest step, within the range its runs allow
        // (0.1 cores at 500 ops/s: from 0.02 at 100 ops/s to 0.1): no warning.
        let light = sized(&run(100.0, 0.08));
        let [lo, hi] = light[0].predicted_range_at_run.unwrap();
        assert!((lo - 0.02).abs() < 1e-12 && (hi - 0.1).abs() < 1e-12);
        assert_eq!(model_warning(&light), None);
        // No run: no check.
        let alone = servers(
            &load(20_000.0),
            Shape::Database,
            per_core,
            Memory::default(),
            ("postgres", "redis"),
            None,
        );
        assert_eq!(alone[0].predicted_cores_at_run, None);
    }
}
