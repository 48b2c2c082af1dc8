//! A product's server CPU against its operations per second, from its own
//! capacity search's steps: what a fixed-rate run should cost each of its
//! servers at that server's operations per second, the check of the sizing
//! model (see [`super::size`]). CPU per operation falls as load rises (fixed
//! per-second costs and wake-ups amortised over more operations, replies
//! batched), so a run at a light rate is held against the product's own runs
//! near its rate, never against its cost per operation at capacity.

use super::measure::Searched;
use crate::results::capacity::Step;
use crate::results::usage::Role;

/// One run of a product: its operations per second and its server's cores
/// busy over the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuPoint {
    /// Operations the server served per second.
    pub ops_per_s: f64,
    /// Its CPU over the run, cores.
    pub cores: f64,
}

/// A product's server cores against its operations per second: its points
/// sorted by ops/s (points at equal ops/s averaged), unrounded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuCurve {
    points: Vec<CpuPoint>,
}

impl CpuCurve {
    /// The curve through `points`, in any order; a point without positive,
    /// finite ops/s and cores is no figure (a CPU reading of 0 is below the
    /// clock's resolution) and is left out.
    pub fn new(points: impl IntoIterator<Item = CpuPoint>) -> CpuCurve {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        let mut p: Vec<CpuPoint> = points
            .into_iter()
            .filter(|p| ok(p.ops_per_s) && ok(p.cores))
            .collect();
        p.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
        let mut points: Vec<(CpuPoint, f64)> = Vec::new();
        for x in p {
            match points.last_mut() {
                Some((last, n)) if last.ops_per_s == x.ops_per_s => {
                    last.cores = (last.cores * *n + x.cores) / (*n + 1.0);
                    *n += 1.0;
                }
                _ => points.push((x, 1.0)),
            }
        }
        CpuCurve {
            points: points.into_iter().map(|(p, _)| p).collect(),
        }
    }

    /// The curve of a capacity search's `steps`: every run (the closed loop
    /// and each rate, passed or failed) whose server CPU was measured.
    pub fn of_steps(steps: &[Step]) -> CpuCurve {
        CpuCurve::new(steps.iter().filter_map(|s| {
            let r = &s.result;
            Some(CpuPoint {
                ops_per_s: r.totals.throughput_rps,
                cores: r.server.server_cpu_s? / r.totals.duration_s,
            })
        }))
    }

    /// Its points, sorted by ops/s.
    pub fn points(&self) -> &[CpuPoint] {
        &self.points
    }

    /// The server cores the product's own runs give at `ops_per_s`
    /// (`None`: no CPU known). Between two points, the line between them.
    /// Above the highest, its CPU per operation (the cheapest per operation
    /// the product was seen at). Below the lowest, that point's cores
    /// scaled by `(ops / its ops)^e`, `e` the [`elasticity`](Self::elasticity)
    /// the steps show: the same fall of CPU per operation with load that the
    /// product's runs show, carried down. `e` is held within 0..=1: at 1 CPU
    /// per operation stays the lowest point's (it never falls as load falls),
    /// at 0 the cores stay the lowest point's (less work never costs more
    /// CPU). A line's intercept (a fixed cost per second) is not used: the
    /// steps span about a factor of two in rate (the search starts at half
    /// the closed loop's), where an intercept is mostly noise, and a light
    /// run is often several times below them.
    pub fn cores_at(&self, ops_per_s: f64) -> Option<f64> {
        let x = ops_per_s.max(0.0);
        let (first, last) = (self.points.first()?, self.points.last()?);
        if x >= last.ops_per_s {
            return Some(x * last.cores / last.ops_per_s);
        }
        if x <= first.ops_per_s {
            return Some(first.cores * (x / first.ops_per_s).powf(self.elasticity()));
        }
        let i = self.points.partition_point(|p| p.ops_per_s <= x);
        let (a, b) = (self.points[i - 1], self.points[i]);
        let t = (x - a.ops_per_s) / (b.ops_per_s - a.ops_per_s);
        Some(a.cores + t * (b.cores - a.cores))
    }

    /// The cores the product's own runs allow at `ops_per_s`, low and high
    /// (`None`: no CPU known). From its lowest run up, the one figure of
    /// [`cores_at`](Self::cores_at) twice. Below its lowest run no run says
    /// how much of its CPU is a fixed cost: between that run's CPU per
    /// operation (no fixed cost) and that run's cores (all of it fixed).
    pub fn range_at(&self, ops_per_s: f64) -> Option<(f64, f64)> {
        let first = self.points.first()?;
        let c = self.cores_at(ops_per_s)?;
        match ops_per_s < first.ops_per_s {
            true => Some((
                first.cores * ops_per_s.max(0.0) / first.ops_per_s,
                first.cores,
            )),
            false => Some((c, c)),
        }
    }

    /// How the product's cores grow with its operations per second: the
    /// least-squares slope of ln(cores) on ln(ops/s) over every point (all
    /// of them, so that two close, noisy steps do not set it), held within
    /// 0..=1; 1 (CPU per operation constant) with fewer than two points.
    pub fn elasticity(&self) -> f64 {
        let n = self.points.len() as f64;
        let logs: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|p| (p.ops_per_s.ln(), p.cores.ln()))
            .collect();
        let mx = logs.iter().map(|l| l.0).sum::<f64>() / n;
        let my = logs.iter().map(|l| l.1).sum::<f64>() / n;
        let sxx: f64 = logs.iter().map(|l| (l.0 - mx).powi(2)).sum();
        let sxy: f64 = logs.iter().map(|l| (l.0 - mx) * (l.1 - my)).sum();
        match sxx > 0.0 {
            true => (sxy / sxx).clamp(0.0, 1.0),
            false => 1.0,
        }
    }
}

/// Each product's CPU curve: the model's check of every row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuCurves {
    /// The database's, from the database alone's search.
    pub db: CpuCurve,
    /// The cache's, from the cache alone's search.
    pub cache: CpuCurve,
}

impl CpuCurves {
    /// The curves of the database alone's search `db` and the cache
    /// alone's `cache` (derived from their saved steps, never stored).
    pub fn searched(db: &Searched, cache: &Searched) -> CpuCurves {
        CpuCurves {
            db: CpuCurve::of_steps(&db.capacity.steps),
            cache: CpuCurve::of_steps(&cache.capacity.steps),
        }
    }

    /// The curve of a server of `role` (`cache`; else a database server:
    /// the primary or a replica).
    pub fn of_role(&self, role: Role) -> &CpuCurve {
        match role {
            Role::Cache => &self.cache,
            _ => &self.db,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(f64, f64)]) -> CpuCurve {
        CpuCurve::new(
            points
                .iter()
                .map(|&(ops_per_s, cores)| CpuPoint { ops_per_s, cores }),
        )
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn below_the_lowest_step_the_range_runs_from_its_cost_per_operation_to_its_cores() {
        let c = curve(&[(1000.0, 0.2), (2000.0, 0.3)]);
        let (lo, hi) = c.range_at(100.0).unwrap();
        assert!((lo - 0.02).abs() < 1e-12 && (hi - 0.2).abs() < 1e-12);
        let p = c.cores_at(100.0).unwrap();
        assert!(lo <= p && p <= hi);
        assert_eq!(c.range_at(1500.0), Some((0.25, 0.25)));
        assert_eq!(CpuCurve::new([]).range_at(10.0), None);
    }

    #[test]
    fn between_two_steps_the_line_between_them() {
        let c = curve(&[(4000.0, 0.5), (1000.0, 0.2), (2000.0, 0.3)]);
        assert!(close(c.cores_at(1500.0), 0.25));
        assert!(close(c.cores_at(3000.0), 0.4));
        assert!(close(c.cores_at(2000.0), 0.3));
    }

    #[test]
    fn above_the_highest_its_cpu_per_operation() {
        let c = curve(&[(1000.0, 0.2), (4000.0, 0.5)]);
        assert!(close(c.cores_at(8000.0), 1.0));
    }

    #[test]
    fn below_the_lowest_the_fall_the_steps_show_carried_down() {
        // Cores double per 4x ops: elasticity 0.5; at a quarter of the
        // lowest step, half its cores (twice its CPU per operation).
        let c = curve(&[(1000.0, 0.2), (4000.0, 0.4)]);
        assert!((c.elasticity() - 0.5).abs() < 1e-9);
        assert!(close(c.cores_at(250.0), 0.1));
        // Within its bounds: never less CPU per operation than the lowest
        // point's, never more cores.
        let steep = curve(&[(1000.0, 0.1), (2000.0, 0.4)]);
        assert!(close(steep.cores_at(500.0), 0.05));
        let falling = curve(&[(1000.0, 0.4), (2000.0, 0.3)]);
        assert!(close(falling.cores_at(500.0), 0.4));
    }

    #[test]
    fn one_point_is_its_cpu_per_operation_both_sides() {
        let c = curve(&[(2000.0, 0.4)]);
        assert!(close(c.cores_at(1000.0), 0.2));
        assert!(close(c.cores_at(2000.0), 0.4));
        assert!(close(c.cores_at(4000.0), 0.8));
    }

    #[test]
    fn equal_rates_are_averaged_and_no_cpu_is_no_prediction() {
        let c = curve(&[(1000.0, 0.2), (1000.0, 0.4), (2000.0, 0.5)]);
        assert_eq!(c.points().len(), 2);
        assert!(close(c.cores_at(1000.0), 0.3));
        assert_eq!(CpuCurve::default().cores_at(1000.0), None);
        // A reading of 0 (below the clock's resolution) is no figure.
        assert_eq!(curve(&[(1000.0, 0.0)]).cores_at(1000.0), None);
    }
}
