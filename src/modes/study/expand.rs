//! Expansion of a study into a flat, ordered list of points, and the names of
//! the axes it sweeps. The values each axis takes are resolved here; what a
//! point's plan is at its place on them is `parts`.

mod parts;

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};

use crate::plan::study::{StudyFile, label};
use crate::plan::{KeyDistribution, Ratio, RunPlan, TargetSpec};
use crate::workload::draws::{self, Phase};
use crate::workload::profiles::Profile;
use crate::workload::{LinkDelay, SizeDist};

use super::Point;
use parts::{apply_profile, cache_at, check_point, load_at, params, target_at, workload_at};

/// Names of the axes a study sweeps (more than one value), as in point params.
pub fn swept_axes(study: &StudyFile) -> Vec<String> {
    let s = &study.sweep;
    let mut axes: Vec<(String, usize)> = vec![
        ("connections".into(), s.connections.len()),
        ("threads".into(), s.threads.len()),
        ("pipeline".into(), s.pipeline.len()),
        ("value_size".into(), s.value_size.len()),
        ("rate".into(), s.rate.len()),
        ("rtt".into(), s.rtt.len()),
        ("keys".into(), s.keys.len()),
        ("ratio".into(), s.ratio.len()),
        ("profile".into(), s.profile.len()),
    ];
    axes.push(("distribution".into(), s.distribution.len()));
    axes.extend(
        s.server
            .iter()
            .map(|(k, v)| (format!("server.{k}"), v.len())),
    );
    axes.extend(s.cache.iter().map(|(k, v)| (format!("cache.{k}"), v.len())));
    axes.into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(a, _)| a)
        .collect()
}

/// The axis a point varies along, for charts: the first swept axis with more
/// than one value (`connections`, `server.io-threads`, ...).
pub fn main_axis(study: &StudyFile) -> Option<String> {
    swept_axes(study).into_iter().next()
}

/// A swept server setting's value as text: strings bare, others as TOML.
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Expands a study into its points, in the order they run: target by target;
/// within a target, server settings outermost (so a server restarts only when
/// its settings change), then value size, connections, threads, pipeline, rate;
/// repetitions innermost.
pub fn expand(s: &StudyFile) -> Result<Vec<Point>> {
    let axes = Axes::of(s)?;
    let mut points = Vec::new();
    for t in &s.targets {
        let mut base: TargetSpec = t.target.parse()?;
        t.apply_request_options(&mut base)?;
        let cache = t.cache_aside()?;
        let (rtt, cache_rtt) = t.round_trips()?;
        if rtt.is_some() && !s.sweep.rtt.is_empty() {
            bail!(
                "target '{}': rtt and sweep.rtt: give one or the other",
                label(t)
            );
        }
        for at in axes.places(s.repetitions) {
            let target = target_at(t, &base, at.server);
            let mut cache = cache_at(&cache, &at.workload.cache);
            if let Some(c) = cache.as_mut() {
                c.profile_ttl(t.cache_ttl, at.workload.profile);
            }
            let params = params(s, &at, cache.is_some());
            let mut workload = workload_at(s, &axes, &at)?;
            // Each point (and repetition) draws its own keys: a server kept
            // across points never sees one replay another's.
            workload.seed = draws::seed(workload.seed, Phase::Point(points.len() as u32));
            if let Some(p) = at.workload.profile {
                let expires = cache.is_none() && target.kind.expires();
                apply_profile(&mut workload, p, expires)?;
            }
            let mut load = load_at(s, &axes, &at, t.events()?)?;
            // A swept round trip is the target's and, unless it has its own,
            // the cache's.
            let swept = at.shape.rtt.map(|rtt_ms| LinkDelay {
                rtt_ms,
                jitter_ms: 0.0,
            });
            load.rtt = swept.or(rtt);
            load.cache_rtt = match cache.is_some() {
                true => t.cache_rtt.as_ref().and(cache_rtt).or(load.rtt),
                false => None,
            };
            let plan = RunPlan {
                near: t
                    .near()
                    .map_err(|e| anyhow!("target '{}': {e}", label(t)))?,
                cache,
                target,
                workload,
                load,
                shared: Default::default(),
            };
            check_point(&plan, t)?;
            points.push(Point {
                index: points.len(),
                target: label(t),
                repetition: at.repetition,
                params,
                plan,
            });
        }
    }
    Ok(points)
}

/// The values each axis of a study takes, resolved once: the sweep's where it
/// sweeps the axis, else the study's one value.
struct Axes {
    /// Server settings, every combination.
    server: Vec<Settings>,
    /// Keys, ratio, distribution, cache settings and profile, crossed.
    workloads: Vec<WorkloadAt>,
    /// Value size, connections, threads, pipeline and rate, crossed.
    shapes: Vec<Shape>,
    /// `workload.requests`: `None`, the study's duration; `Some(None)`, as
    /// many requests as keys; `Some(Some(n))`, n.
    requests: Option<Option<u64>>,
    /// `workload.value_sizes`: the sizes every point's values are drawn from.
    sizes: Option<SizeDist>,
}

/// A point's workload axes.
#[derive(Clone)]
struct WorkloadAt {
    keys: u64,
    ratio: Ratio,
    distribution: Named,
    cache: Settings,
    profile: Option<&'static Profile>,
}

/// A point's load axes (and its value size).
#[derive(Clone, Copy)]
struct Shape {
    value_size: usize,
    connections: usize,
    threads: usize,
    pipeline: usize,
    rate: Option<f64>,
    /// The swept round trip, ms (`None`: not swept).
    rtt: Option<f64>,
}

/// One point's place on every axis.
struct At<'a> {
    server: &'a Settings,
    workload: &'a WorkloadAt,
    shape: Shape,
    repetition: usize,
}

impl Axes {
    /// The axes of study `s`, each checked.
    fn of(s: &StudyFile) -> Result<Axes> {
        let server = combos(&s.sweep.server, "sweep.server")?;
        let base_ratio: Ratio = s.workload.ratio.parse()?;
        let ratios: Vec<Ratio> = match s.sweep.ratio.is_empty() {
            true => vec![base_ratio],
            false => s
                .sweep
                .ratio
                .iter()
                .map(|r| r.parse())
                .collect::<Result<_, _>>()?,
        };
        let requests = match &s.workload.requests {
            None => None,
            Some(toml::Value::String(x)) if x == "keys" => Some(None),
            Some(toml::Value::Integer(n)) if *n > 0 => Some(Some(*n as u64)),
            Some(other) => {
                bail!("workload.requests = {other}: give a positive number or \"keys\"")
            }
        };
        let distributions: Vec<Named> = match s.sweep.distribution.is_empty() {
            true => vec![(String::new(), s.workload.distribution.parse()?)],
            false => s
                .sweep
                .distribution
                .iter()
                .map(|d| Ok((d.clone(), d.parse()?)))
                .collect::<Result<_>>()?,
        };
        let sizes = value_sizes(s)?;
        let keys = one(&s.sweep.keys, s.workload.keys);
        let workloads = cross(&cross(&keys, &ratios), &distributions);
        let workloads = cross(&workloads, &combos(&s.sweep.cache, "sweep.cache")?);
        let workloads = cross(&workloads, &profiles(s)?)
            .into_iter()
            .map(
                |((((keys, ratio), distribution), cache), profile)| WorkloadAt {
                    keys,
                    ratio,
                    distribution,
                    cache,
                    profile,
                },
            )
            .collect();
        Ok(Axes {
            server,
            workloads,
            shapes: shapes(s),
            requests,
            sizes,
        })
    }

    /// Every point's place, in the order they run: server settings
    /// outermost, then the workload's axes, the load's, and repetitions.
    fn places(&self, repetitions: usize) -> Vec<At<'_>> {
        let mut out = Vec::new();
        for server in &self.server {
            for workload in &self.workloads {
                for &shape in &self.shapes {
                    for repetition in 1..=repetitions {
                        out.push(At {
                            server,
                            workload,
                            shape,
                            repetition,
                        });
                    }
                }
            }
        }
        out
    }
}

/// `v`, or `[d]` when empty (an axis not swept).
fn one<T: Clone>(v: &[T], d: T) -> Vec<T> {
    match v.is_empty() {
        true => vec![d],
        false => v.to_vec(),
    }
}

/// Every pair of `outer` and `inner`, `outer` outermost.
fn cross<A: Clone, B: Clone>(outer: &[A], inner: &[B]) -> Vec<(A, B)> {
    outer
        .iter()
        .flat_map(|a| inner.iter().map(move |b| (a.clone(), b.clone())))
        .collect()
}

/// `workload.value_sizes`, parsed; refused beside `sweep.value_size`.
fn value_sizes(s: &StudyFile) -> Result<Option<SizeDist>> {
    match &s.workload.value_sizes {
        None => Ok(None),
        Some(_) if !s.sweep.value_size.is_empty() => {
            bail!("workload.value_sizes and sweep.value_size: give one or the other")
        }
        Some(text) => {
            Ok(Some(text.parse().map_err(|e| {
                anyhow!("workload.value_sizes = \"{text}\": {e}")
            })?))
        }
    }
}

/// The load's axes crossed: value size, connections, threads, pipeline, rate.
fn shapes(s: &StudyFile) -> Vec<Shape> {
    let threads = s
        .load
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let rates: Vec<Option<f64>> = match s.sweep.rate.is_empty() {
        true => vec![s.load.rate],
        false => s.sweep.rate.iter().map(|r| Some(*r)).collect(),
    };
    let sizes = one(&s.sweep.value_size, s.workload.value_size);
    let shapes = cross(&sizes, &one(&s.sweep.connections, s.load.connections));
    let shapes = cross(&shapes, &one(&s.sweep.threads, threads));
    let shapes = cross(&shapes, &one(&s.sweep.pipeline, s.load.pipeline));
    let rtts: Vec<Option<f64>> = match s.sweep.rtt.is_empty() {
        true => vec![None],
        false => s.sweep.rtt.iter().map(|r| Some(*r)).collect(),
    };
    cross(&cross(&shapes, &rates), &rtts)
        .into_iter()
        .map(
            |(((((value_size, connections), threads), pipeline), rate), rtt)| Shape {
                value_size,
                connections,
                threads,
                pipeline,
                rate,
                rtt,
            },
        )
        .collect()
}

/// A distribution as written, and parsed.
type Named = (String, KeyDistribution);
/// Settings as name and value.
type Settings = Vec<(String, String)>;

/// Every combination of the settings `axes` (name -> values), in order.
fn combos(
    axes: &BTreeMap<String, Vec<toml::Value>>,
    what: &str,
) -> Result<Vec<Vec<(String, String)>>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, values) in axes {
        if values.is_empty() {
            bail!("{what}.{k} has no values");
        }
        out = out
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((k.clone(), value_text(v)));
                    c
                })
            })
            .collect();
    }
    Ok(out)
}

/// The study's profiles: those swept (`none`: its own workload), else its
/// `[workload] profile`, else none.
fn profiles(s: &StudyFile) -> Result<Vec<Option<&'static Profile>>> {
    let find = |n: &str| -> Result<Option<&'static Profile>> {
        if n == "none" {
            return Ok(None);
        }
        crate::workload::profiles::profile(n)
            .map(Some)
            .ok_or_else(|| {
                anyhow!(
                    "profile \"{n}\" is not known; use none or {}",
                    crate::workload::profiles::names()
                )
            })
    };
    if s.sweep.profile.is_empty() {
        return match &s.workload.profile {
            Some(n) => Ok(vec![find(n)?]),
            None => Ok(vec![None]),
        };
    }
    s.sweep.profile.iter().map(|n| find(n)).collect()
}
