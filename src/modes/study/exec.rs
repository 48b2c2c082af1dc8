//! Running a study: points in plan order, managed servers restarted only when
//! their settings change, data loaded once per server, and the results file
//! rewritten after every point so Ctrl-C or a crash keeps what finished.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use super::{Point, StudyFile, expand};
use crate::results::study::{Machine, PointResult, STUDY_SCHEMA, StudyResult, TargetCapacity};
use crate::runner::{self, RunOptions};
use crate::servers::ManagedServer;

/// Parses a CPU list such as `0`, `1-3` or `0,2`.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (
            a.trim().parse().context("bad CPU list")?,
            b.trim().parse().context("bad CPU list")?,
        );
        out.extend(a..=b);
    }
    anyhow::ensure!(!out.is_empty(), "empty CPU list");
    Ok(out)
}

/// Pins the calling thread (and threads it starts later) to `cpus`.
pub fn pin(cpus: &[usize]) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            anyhow::bail!(
                "cannot pin to CPUs {cpus:?}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// Runs `study`, writing results under `out_dir`; returns the results file.
/// `on_point` is told about each finished point (for a progress line).
pub fn run(
    study: &StudyFile,
    out_dir: &Path,
    opts: RunOptions,
    shutdown: &AtomicBool,
    on_point: &mut dyn FnMut(&Point, &PointResult),
) -> Result<PathBuf> {
    let points = expand(study)?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let path = out_dir.join(format!("{}-{started_unix_s}.json", study.name));
    let server_cpus = study.server_cpus.as_deref().map(parse_cpus).transpose()?;
    let client_cpus = study.client_cpus.as_deref().map(parse_cpus).transpose()?;
    if let Some(c) = &client_cpus {
        pin(c)?;
    }
    let out = StudyResult {
        schema_version: STUDY_SCHEMA,
        kvlab_version: env!("CARGO_PKG_VERSION").into(),
        started_unix_s,
        study: study.clone(),
        machine: Machine::this(),
        planned: points.len(),
        points: Vec::new(),
        interrupted: false,
        capacity: Vec::new(),
    };
    let mut log = Log {
        out,
        path,
        on_point,
        shutdown,
    };
    log.write()?;
    // The managed server in use: its target label and settings, and what it holds.
    let mut current: Option<(String, BTreeMap<String, String>, ManagedServer)> = None;
    let mut loaded: Option<(u64, usize)> = None;
    for (i, point) in points.iter().enumerate() {
        if shutdown.load(Ordering::SeqCst) {
            log.out.interrupted = true;
            break;
        }
        let mut plan = point.plan.clone();
        let managed = plan.target.external.is_none();
        let same = current
            .as_ref()
            .is_some_and(|(t, o, _)| *t == point.target && *o == plan.target.server_opts);
        if managed && !same {
            current = None; // stops the previous server
            loaded = None;
            // Size the server for the largest point it will serve.
            let mut sized = plan.clone();
            for p in points[i..].iter().take_while(|p| {
                p.target == point.target && p.plan.target.server_opts == plan.target.server_opts
            }) {
                sized.load.connections = sized.load.connections.max(p.plan.load.connections);
                sized.workload.value_size =
                    sized.workload.value_size.max(p.plan.workload.value_size);
            }
            match start_pinned(&sized.target, &sized, opts, server_cpus.as_deref()) {
                Ok(Some(s)) => {
                    current = Some((point.target.clone(), plan.target.server_opts.clone(), s))
                }
                Ok(None) => {}
                Err(e) => {
                    log.fail(point, &e)?;
                    continue;
                }
            }
        }
        let shape = (plan.workload.keys, plan.workload.value_size);
        if managed && loaded == Some(shape) && !plan.target.kind.is_sql() {
            plan.workload.load = false; // this server holds the data already
        }
        let server = current.as_ref().map(|(_, _, s)| s).filter(|_| managed);
        if study.mode.as_deref() == Some("fill") {
            let pr = match crate::modes::fill::fill(&plan, server, opts, shutdown) {
                Ok(f) => PointResult {
                    fill: Some(f),
                    ..blank(point)
                },
                Err(e) => failed(point, &e),
            };
            log.record(point, pr)?;
            continue;
        }
        // A managed cache in front (cache-aside) is fresh for every point and
        // pinned like the server.
        let cache = match &plan.cache {
            Some(a) => match start_pinned(&a.cache, &plan, opts, server_cpus.as_deref())
                .map_err(runner::cache::as_cache)
            {
                Ok(s) => s,
                Err(e) => {
                    log.fail(point, &e)?;
                    continue;
                }
            },
            None => None,
        };
        if let Some(m) = crate::metrics::installed() {
            m.set_point(&blank(point).label());
        }
        let pr = match runner::measure_with(&plan, server, cache, opts, shutdown) {
            Ok(r) => {
                loaded = Some(shape);
                PointResult {
                    result: Some(r),
                    ..blank(point)
                }
            }
            Err(e) => failed(point, &e),
        };
        if pr.result.as_ref().is_some_and(|r| r.interrupted) {
            log.out.interrupted = true;
        }
        log.record(point, pr)?;
        // After a target's last point on this server: its capacity, if asked.
        let last_here = points.get(i + 1).is_none_or(|n| {
            n.target != point.target || n.plan.target.server_opts != point.plan.target.server_opts
        });
        if let (true, true, Some(ms)) = (study.goal.capacity, last_here, study.goal.p99_ms)
            && !shutdown.load(Ordering::SeqCst)
        {
            let first = points
                .iter()
                .find(|p| {
                    p.target == point.target
                        && p.plan.target.server_opts == point.plan.target.server_opts
                })
                .unwrap_or(point);
            let mut plan = first.plan.clone();
            plan.workload.load = plan.target.kind.is_sql()
                || loaded != Some((plan.workload.keys, plan.workload.value_size));
            let server = current.as_ref().map(|(_, _, s)| s).filter(|_| managed);
            let label = match point
                .params
                .iter()
                .filter(|(k, _)| k.starts_with("server."))
                .map(|(k, v)| format!("{}={v}", &k[7..]))
                .collect::<Vec<_>>()
            {
                v if v.is_empty() => point.target.clone(),
                v => format!("{} {}", point.target, v.join(" ")),
            };
            match crate::modes::capacity::search_on(
                &plan,
                server,
                (ms, crate::modes::capacity::MoreLimits::default()),
                6,
                opts,
                shutdown,
                &mut |_| {},
            ) {
                Ok(search) => log.out.capacity.push(TargetCapacity {
                    target: label,
                    search,
                }),
                Err(e) => eprintln!("kvlab: capacity search for {label} failed: {e:#}"),
            }
            log.write()?;
        }
    }
    drop(current);
    log.write()?;
    Ok(log.path)
}

/// The result of `point`, empty: nothing measured, no error yet.
fn blank(point: &Point) -> PointResult {
    PointResult {
        index: point.index,
        target: point.target.clone(),
        repetition: point.repetition,
        params: point.params.clone(),
        result: None,
        error: None,
        fill: None,
        interrupted: false,
    }
}

/// The result of `point` that failed with `e`.
fn failed(point: &Point, e: &anyhow::Error) -> PointResult {
    PointResult {
        error: Some(format!("{e:#}")),
        ..blank(point)
    }
}

/// The results file of a study being run: each finished point is told to
/// `on_point`, kept, and written at once.
struct Log<'a> {
    out: StudyResult,
    path: PathBuf,
    on_point: &'a mut dyn FnMut(&Point, &PointResult),
    shutdown: &'a AtomicBool,
}

impl Log<'_> {
    /// Keeps a finished point; one that failed after Ctrl-C is marked
    /// interrupted, not failed.
    fn record(&mut self, point: &Point, mut pr: PointResult) -> Result<()> {
        if self.shutdown.load(Ordering::SeqCst) && (pr.error.is_some() || pr.result.is_some()) {
            pr.interrupted =
                pr.error.is_some() || pr.result.as_ref().is_some_and(|r| r.interrupted);
            self.out.interrupted |= pr.interrupted;
        }
        (self.on_point)(point, &pr);
        self.out.points.push(pr);
        self.write()
    }

    /// Keeps `point` as failed with `e`.
    fn fail(&mut self, point: &Point, e: &anyhow::Error) -> Result<()> {
        self.record(point, failed(point, e))
    }

    /// Rewrites the results file.
    fn write(&self) -> Result<()> {
        self.out.write(&self.path)
    }
}

/// Starts `target` of `plan` when kvlab manages it, pinned to `cpus` if given.
fn start_pinned(
    target: &crate::plan::TargetSpec,
    plan: &crate::plan::RunPlan,
    opts: RunOptions,
    cpus: Option<&[usize]>,
) -> Result<Option<ManagedServer>> {
    let s = runner::start_managed(target, plan, opts)?;
    if let (Some(s), Some(cpus)) = (&s, cpus) {
        s.pin(cpus)?;
    }
    Ok(s)
}
