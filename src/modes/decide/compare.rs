//! The check of a decision (`kvlab decide --check`) as pure functions of the
//! saved measurements and the check's run: the keys a check runs at, its
//! cache's memory, what the decision predicts there (its hit ratio carried
//! to those keys as the decision carries its curve, the database's reads,
//! each server's CPU per request, p99), and each figure held against what
//! the run measured, with the verdict.

use super::carry;
use super::cpu::CpuCurves;
use super::measure::AsideRun;
use super::size::{self, Shape};
use crate::results::RunResult;
use crate::results::check::{Compared, Figure, Outcome, Server, Tolerance, Tolerances, Verdict};
use crate::results::decide::assumptions::Method;
use crate::results::decide::{DataCopy, ServerSize, bytes};
use crate::results::stats::num;
use crate::results::usage::Role;
use crate::workload::trace::model::Model;

/// The tolerances of a check: 3 points of hit ratio; 25% of a server's CPU
/// per request, as the decision's own check of its sizing model.
pub const TOLERANCES: Tolerances = Tolerances {
    hit_points: 0.03,
    cpu_share: size::MODEL_TOLERANCE,
};

/// The copy a check runs on: the stated keys where their data fits the
/// decision's share of the `available` memory (its memory rule for its
/// copy, `m`, without its cap on the run's length), else as many as do.
pub fn keys(stated: u64, value_size: usize, available: u64, m: &Method) -> DataCopy {
    let per_key = super::copy::key_bytes(value_size, m);
    let fit = super::copy::fitting(available, per_key, m);
    let (keys, why) = match stated <= fit {
        true => (stated, "the stated keys".into()),
        false => (
            fit,
            format!(
                "{} of the stated {} keys: the most whose data ({per_key} B a key) fits {}% of this machine's available memory ({})",
                num(fit as f64),
                num(stated as f64),
                m.copy_memory_share * 100.0,
                bytes(available)
            ),
        ),
    };
    DataCopy {
        keys,
        why,
        bytes_per_key: per_key,
    }
}

/// The cache's memory limit at `keys`, MiB: the decision's chosen limit for
/// its copy of `copy` keys carried as the decision carries memory (its
/// `base` bytes, which hold no key, as is; the rest per key), rounded up;
/// `None`: no limit.
pub fn cache_mb(chosen: Option<u64>, (copy, keys): (u64, u64), base: f64) -> Option<u64> {
    let ratio = keys as f64 / copy.max(1) as f64;
    chosen.map(|mb| {
        let bytes = super::carry::at_stated(mb << 20, base, ratio);
        bytes.div_ceil(1 << 20).max(1)
    })
}

/// The figures a check compares, as predicted or as measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// The cache's hit ratio of all reads.
    pub hit: Option<f64>,
    /// The database's reads per 1,000 requests.
    pub db_reads: Option<f64>,
    /// Each server's CPU per request.
    pub cpu_us: Vec<Cpu>,
    /// p99 latency, ms.
    pub p99_ms: Option<f64>,
}

/// A server's CPU per request, µs, as predicted or as measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Cpu {
    /// The server.
    pub server: Server,
    /// Its CPU per request, µs (`None`: not known).
    pub us: Option<f64>,
    /// Predicted below its product's lowest search step: the range its
    /// runs allow there, µs (see [`CpuCurve::range_at`]).
    ///
    /// [`CpuCurve::range_at`]: super::cpu::CpuCurve::range_at
    pub range: Option<[f64; 2]>,
}

/// The database's reads per 1,000 requests with `write_share` of them
/// writes and a hit ratio of all reads `hit`: the reads it missed.
pub fn db_reads(write_share: f64, hit: f64) -> f64 {
    1000.0 * (1.0 - write_share) * (1.0 - hit)
}

/// What the decision predicts for its cache-aside run `a` (measured on a
/// copy of `copy` keys) at `keys` keys and the same rate: its hit ratio
/// carried by `model`, as the decision carries its curve; the database's
/// reads that leaves; each of `servers` (the decision's cache-aside row) its
/// CPU per request at `rps` ([`cpu_us`], from `cpu`, its products' own
/// search steps); the p99 the run measured.
pub fn predicted(
    (a, model): (&AsideRun, &Model),
    (copy, keys): (u64, u64),
    (rps, write_share): (f64, f64),
    (servers, cpu): (&[ServerSize], &CpuCurves),
) -> Figures {
    let hit = a.result.cache_aside.as_ref().map(|x| {
        carry::held_items(&a.result).map_or(x.hit_ratio, |items| {
            model.carry_items(x.hit_ratio, items, copy, keys).hit
        })
    });
    Figures {
        hit,
        db_reads: hit.map(|h| db_reads(write_share, h)),
        cpu_us: hit.map_or_else(Vec::new, |h| {
            cpu_us(
                servers,
                cpu,
                Shape::Aside { hit: h, near: 0.0 },
                (rps, write_share),
            )
        }),
        p99_ms: Some(a.result.latency.latency_us.p99 / 1000.0),
    }
}

/// Each server's CPU per request predicted, µs, at `rps` requests a second
/// of `shape` with `write_share` of them writes: the cores its product's own
/// search steps give at the operations per second that puts on it
/// ([`CpuCurve::cores_at`], as the decision checks its own fixed-rate runs),
/// over the requests; below the product's lowest step, with the range those
/// allow. A product whose steps measured no CPU: its row's operations per
/// request over its operations per core at capacity. (The one place this
/// prediction is made.)
///
/// [`CpuCurve::cores_at`]: super::cpu::CpuCurve::cores_at
pub fn cpu_us(
    servers: &[ServerSize],
    cpu: &CpuCurves,
    shape: Shape,
    (rps, write_share): (f64, f64),
) -> Vec<Cpu> {
    let ops = size::ops(shape, 1.0, write_share);
    let rps = rps.max(f64::MIN_POSITIVE);
    servers
        .iter()
        .filter(|s| matches!(s.role, Role::Database | Role::Cache))
        .filter_map(|s| {
            let role = s.role;
            let per_request = ops.iter().find(|o| o.0 == s.role)?.1;
            let curve = cpu.of_role(s.role);
            let x = per_request * rps;
            let us = |cores: f64| 1e6 * cores / rps;
            let at_capacity = s.ops_per_core.filter(|pc| *pc > 0.0);
            let range = curve
                .range_at(x)
                .filter(|(lo, hi)| lo < hi)
                .map(|(lo, hi)| [us(lo), us(hi)]);
            Some(Cpu {
                server: Server {
                    role,
                    product: s.product.clone(),
                },
                us: curve
                    .cores_at(x)
                    .map(us)
                    .or_else(|| at_capacity.map(|pc| 1e6 * per_request / pc)),
                range,
            })
        })
        .collect()
}

/// What the check's run `r` measured.
pub fn measured(r: &RunResult) -> Figures {
    let aside = r.cache_aside.as_ref();
    let rate = r.totals.throughput_rps;
    Figures {
        hit: aside.map(|a| a.hit_ratio),
        db_reads: aside
            .filter(|_| rate > 0.0)
            .map(|a| 1000.0 * a.db_reads_per_s / rate),
        cpu_us: r
            .server
            .servers
            .iter()
            .filter(|s| matches!(s.role, Role::Database | Role::Cache))
            .map(|s| Cpu {
                server: Server {
                    role: s.role,
                    product: s.product.clone(),
                },
                us: s.cpu_us_per_request,
                range: None,
            })
            .collect(),
        p99_ms: (r.totals.requests > 0).then(|| r.latency.latency_us.p99 / 1000.0),
    }
}

/// Each figure of `p` beside `m`'s, with its tolerance from `t`: the hit
/// ratio and the database's reads (the same points of the reads, at
/// `write_share` writes) to within `t.hit_points`, each server's CPU per
/// request to within `t.cpu_share` of the measured, p99 to the goal
/// `goal_ms`.
pub fn compare(
    p: &Figures,
    m: &Figures,
    (goal_ms, write_share): (f64, f64),
    t: Tolerances,
) -> Vec<Compared> {
    let reads_within = 1000.0 * (1.0 - write_share) * t.hit_points;
    let mut out = vec![
        compared(
            (Figure::HitRatio, None),
            (p.hit, None, m.hit),
            Tolerance::Absolute {
                within: t.hit_points,
            },
        ),
        compared(
            (Figure::DatabaseReads, None),
            (p.db_reads, None, m.db_reads),
            Tolerance::Absolute {
                within: reads_within,
            },
        ),
    ];
    for role in [Role::Database, Role::Cache] {
        let of = |f: &Figures| f.cpu_us.iter().find(|c| c.server.role == role).cloned();
        let (pc, mc) = (of(p), of(m));
        let Some(server) = pc.as_ref().or(mc.as_ref()).map(|x| x.server.clone()) else {
            continue;
        };
        let range = pc.as_ref().and_then(|x| x.range);
        out.push(compared(
            (Figure::CpuPerRequest, Some(server)),
            (pc.and_then(|x| x.us), range, mc.and_then(|x| x.us)),
            Tolerance::Relative { share: t.cpu_share },
        ));
    }
    out.push(compared(
        (Figure::P99, None),
        (p.p99_ms, None, m.p99_ms),
        Tolerance::AtMost { limit: goal_ms },
    ));
    out
}

/// One figure compared.
fn compared(
    (figure, server): (Figure, Option<Server>),
    (predicted, range, measured): (Option<f64>, Option<[f64; 2]>, Option<f64>),
    tolerance: Tolerance,
) -> Compared {
    Compared {
        figure,
        server,
        predicted,
        predicted_range: range,
        measured,
        difference: measured.zip(predicted).map(|(m, p)| m - p),
        tolerance,
        outcome: judge(
            tolerance,
            predicted.map(|p| range.unwrap_or([p, p])),
            measured,
        ),
    }
}

/// Rounding slack, so a difference at its tolerance exactly is within it.
const SLACK: f64 = 1e-9;

/// How a figure predicted within `p` (low, high: one figure twice, or the
/// range its product's runs allow) and measured `m` comes out against `t`.
pub fn judge(t: Tolerance, p: Option<[f64; 2]>, m: Option<f64>) -> Outcome {
    let within = match (t, p, m) {
        (Tolerance::AtMost { limit }, _, Some(m)) => m <= limit + SLACK,
        (Tolerance::Absolute { within }, Some([lo, hi]), Some(m)) => {
            m >= lo - within - SLACK && m <= hi + within + SLACK
        }
        (Tolerance::Relative { share }, Some([lo, hi]), Some(m)) => {
            let within = share * m.abs() + SLACK;
            m >= lo - within && m <= hi + within
        }
        _ => return Outcome::NotKnown,
    };
    match within {
        true => Outcome::Within,
        false => Outcome::Past,
    }
}

/// The verdict of `figures`: a fail where any is past its tolerance.
pub fn verdict(figures: &[Compared]) -> Verdict {
    match figures.iter().any(|c| c.outcome == Outcome::Past) {
        true => Verdict::Fail,
        false => Verdict::Pass,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::decide::KVLAB;

    fn server(role: Role, product: &str) -> Server {
        Server {
            role,
            product: product.into(),
        }
    }

    fn figures(hit: f64, db_reads: f64, cpu: [Option<f64>; 2], p99_ms: f64) -> Figures {
        Figures {
            hit: Some(hit),
            db_reads: Some(db_reads),
            cpu_us: vec![
                Cpu {
                    server: server(Role::Database, "postgres"),
                    us: cpu[0],
                    range: None,
                },
                Cpu {
                    server: server(Role::Cache, "redis"),
                    us: cpu[1],
                    range: None,
                },
            ],
            p99_ms: Some(p99_ms),
        }
    }

    fn outcomes(c: &[Compared]) -> Vec<(Figure, Outcome)> {
        c.iter().map(|x| (x.figure, x.outcome)).collect()
    }

    #[test]
    fn figures_within_their_tolerances_pass_with_their_differences() {
        // 5% writes: 3 points of the reads are 28.5 reads per 1,000.
        let p = figures(0.62, db_reads(0.05, 0.62), [Some(40.0), Some(10.0)], 0.9);
        assert!((p.db_reads.unwrap() - 361.0).abs() < 1e-9);
        let m = figures(0.60, 380.0, [Some(45.0), Some(12.0)], 1.2);
        let c = compare(&p, &m, (5.0, 0.05), TOLERANCES);
        let diffs: Vec<f64> = c.iter().map(|x| x.difference.unwrap()).collect();
        for (d, want) in diffs.iter().zip([-0.02, 19.0, 5.0, 2.0, 0.3]) {
            assert!((d - want).abs() < 1e-9, "{diffs:?}");
        }
        assert_eq!(
            c[1].tolerance,
            Tolerance::Absolute { within: 28.5 },
            "{c:?}"
        );
        assert!(c.iter().all(|x| x.outcome == Outcome::Within), "{c:?}");
        assert_eq!(c[2].server, Some(server(Role::Database, "postgres")));
        assert_eq!(verdict(&c), Verdict::Pass);
        // At its tolerance exactly: within (3 points, 25% of the measured).
        let edge = figures(0.59, 361.0 + 28.5, [Some(50.0), Some(10.0)], 5.0);
        let c = compare(&p, &edge, (5.0, 0.05), TOLERANCES);
        assert_eq!(verdict(&c), Verdict::Pass, "{c:?}");
    }

    #[test]
    fn a_figure_past_its_tolerance_fails_the_check_and_an_unknown_one_does_not() {
        let p = figures(0.62, 361.0, [Some(40.0), Some(10.0)], 0.9);
        // 7 points fewer hits, the database's reads with them, the cache's
        // CPU doubled, p99 over the goal; the database's CPU not measured.
        let m = figures(0.55, 427.5, [None, Some(20.0)], 7.0);
        let c = compare(&p, &m, (5.0, 0.05), TOLERANCES);
        assert_eq!(
            outcomes(&c),
            [
                (Figure::HitRatio, Outcome::Past),
                (Figure::DatabaseReads, Outcome::Past),
                (Figure::CpuPerRequest, Outcome::NotKnown),
                (Figure::CpuPerRequest, Outcome::Past),
                (Figure::P99, Outcome::Past),
            ]
        );
        assert_eq!(c[2].difference, None);
        assert!((c[0].difference.unwrap() + 0.07).abs() < 1e-9);
        assert_eq!(verdict(&c), Verdict::Fail);
        // p99 is held to the goal, not to the prediction: far above the
        // predicted 0.9 ms, within 5 ms.
        assert_eq!(
            judge(
                Tolerance::AtMost { limit: 5.0 },
                Some([0.9, 0.9]),
                Some(4.0)
            ),
            Outcome::Within
        );
        assert_eq!(
            judge(Tolerance::AtMost { limit: 5.0 }, None, None),
            Outcome::NotKnown
        );
        let unknown = compare(
            &Figures::default(),
            &Figures::default(),
            (5.0, 0.0),
            TOLERANCES,
        );
        assert!(unknown.iter().all(|x| x.outcome == Outcome::NotKnown));
        assert_eq!(verdict(&unknown), Verdict::Pass);
    }

    #[test]
    fn cpu_per_request_is_the_rows_operations_per_request_over_its_per_core() {
        let row = |role: Role, product: &str, pc: Option<f64>| ServerSize {
            role,
            product: product.into(),
            ops_per_core: pc,
            ..Default::default()
        };
        let servers = [
            row(Role::Database, "postgres", Some(10_000.0)),
            row(Role::Cache, "redis", Some(50_000.0)),
            row(Role::Replica, "postgres", Some(1.0)),
        ];
        // 5% writes, 60% hits: the database 0.95 × 0.4 + 0.05 = 0.43
        // operations a request, the cache 0.95 + 0.38 + 0.05 = 1.38.
        let aside = Shape::Aside {
            hit: 0.6,
            near: 0.0,
        };
        let none = CpuCurves::default();
        let c = cpu_us(&servers, &none, aside, (1000.0, 0.05));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].server, server(Role::Database, "postgres"));
        assert!((c[0].us.unwrap() - 43.0).abs() < 1e-9, "{c:?}");
        assert!((c[1].us.unwrap() - 27.6).abs() < 1e-9, "{c:?}");
        let alone = cpu_us(
            &[row(Role::Cache, "redis", None)],
            &none,
            aside,
            (1000.0, 0.05),
        );
        assert_eq!(alone[0].us, None);
    }

    #[test]
    fn cpu_per_request_is_its_products_steps_at_the_operations_the_run_puts_on_it() {
        use super::super::cpu::{CpuCurve, CpuPoint};
        let steps = |p: &[(f64, f64)]| {
            CpuCurve::new(
                p.iter()
                    .map(|&(ops_per_s, cores)| CpuPoint { ops_per_s, cores }),
            )
        };
        let cpu = CpuCurves {
            db: steps(&[(200.0, 0.1), (400.0, 0.15)]),
            cache: steps(&[(1000.0, 0.1), (2000.0, 0.2)]),
        };
        let row = |role: Role, product: &str| ServerSize {
            role,
            product: product.into(),
            ops_per_core: Some(1e9),
            ..Default::default()
        };
        let servers = [row(Role::Database, "postgres"), row(Role::Cache, "redis")];
        // 1,000 req/s at 60% hits and 5% writes: the database serves 430
        // ops/s (above its steps: 0.15 / 400 a operation), the cache 1,380
        // (between its steps: 0.138 cores), never the ops per core.
        let aside = Shape::Aside {
            hit: 0.6,
            near: 0.0,
        };
        let c = cpu_us(&servers, &cpu, aside, (1000.0, 0.05));
        assert!((c[0].us.unwrap() - 1e6 * 0.15 * 430.0 / 400.0 / 1000.0).abs() < 1e-6);
        assert!((c[1].us.unwrap() - 138.0).abs() < 1e-6, "{c:?}");
        assert_eq!((c[0].range, c[1].range), (None, None));
        // At 100 req/s the cache's 138 ops/s are below its lowest step: the
        // range from that step's CPU per operation (100 µs an operation) to
        // its cores, 0.1 (1,000 µs a request).
        let light = cpu_us(&servers, &cpu, aside, (100.0, 0.05));
        let [lo, hi] = light[1].range.unwrap();
        assert!(
            (lo - 138.0).abs() < 1e-6 && (hi - 1000.0).abs() < 1e-6,
            "{light:?}"
        );
        // A measured figure in that range is within; far outside, past.
        let t = Tolerance::Relative { share: 0.25 };
        assert_eq!(judge(t, Some([lo, hi]), Some(700.0)), Outcome::Within);
        assert_eq!(judge(t, Some([lo, hi]), Some(2000.0)), Outcome::Past);
    }

    #[test]
    fn a_check_runs_the_stated_keys_where_they_fit_and_scales_the_cache_per_key() {
        let gib = 1u64 << 30;
        assert_eq!(
            keys(1_000_000, 1024, 8 * gib, &KVLAB.method).keys,
            1_000_000
        );
        // 2 GiB available: as many keys of 1,144 B as a quarter holds.
        let DataCopy { keys: k, why, .. } = keys(1_000_000, 1024, 2 * gib, &KVLAB.method);
        assert_eq!(k, (gib / 2) / 1144);
        assert!(why.contains("of the stated 1,000,000 keys"), "{why}");
        assert_eq!(cache_mb(Some(10), (20_000, 40_000), 0.0), Some(20));
        assert_eq!(cache_mb(Some(5), (20_000, 20_000), 1e6), Some(5));
        assert_eq!(cache_mb(None, (20_000, 40_000), 0.0), None);
        // A 7 MiB cache whose first MiB holds no key, at ten times the keys:
        // 1 + 6 × 10 MiB, not 70.
        let mib = (1u64 << 20) as f64;
        assert_eq!(cache_mb(Some(7), (100_000, 1_000_000), mib), Some(61));
    }
}
