//! Expansion of a study into a flat, ordered list of points, and the names of
//! the axes it sweeps.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::plan::events::{EventAction, EventOn};
use crate::plan::study::{StudyFile, label};
use crate::plan::{
    KeyDistribution, LoadShape, Ratio, RunPlan, SchemaOptions, Stop, TargetSpec, Workload,
};
use crate::workload::profiles::Profile;

/// One measured point of a study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    /// Position in the plan.
    pub index: usize,
    /// Label of the target.
    pub target: String,
    /// Repetition number, from 1.
    pub repetition: usize,
    /// The values of the swept axes at this point, by axis name.
    pub params: BTreeMap<String, String>,
    /// The run this point is.
    pub plan: RunPlan,
}

/// Names of the axes a study sweeps (more than one value), as in point params.
pub fn swept_axes(study: &StudyFile) -> Vec<String> {
    let s = &study.sweep;
    let mut axes: Vec<(String, usize)> = vec![
        ("connections".into(), s.connections.len()),
        ("threads".into(), s.threads.len()),
        ("pipeline".into(), s.pipeline.len()),
        ("value_size".into(), s.value_size.len()),
        ("rate".into(), s.rate.len()),
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

impl Point {
    /// Every setting that shapes this point, as name and value (secrets
    /// masked), in a fixed order; swept ones named as in `params`
    /// (`connections`, `server.io-threads`, `cache.memory-mb`).
    pub fn settings(&self) -> Vec<(String, String)> {
        let p = self.plan.redacted();
        let mut out: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, v: String| out.push((k.to_string(), v));
        let t = &p.target;
        put("target", server_text(t));
        for (k, v) in &t.server_opts {
            put(&format!("server.{k}"), v.clone());
        }
        if let Some(e) = &t.schema.table_engine {
            put("table_engine", e.clone());
        }
        if t.schema.unlogged {
            put("unlogged", "true".into());
        }
        if let Some(c) = &t.consistency {
            put("consistency", c.clone());
        }
        if let Some(m) = t.query_mode_used() {
            put("query_mode", m);
        }
        if let Some(pooler) = &t.pooler {
            put("pooler", pooler.clone());
            for (k, v) in &t.pooler_opts {
                put(&format!("pooler.{k}"), v.clone());
            }
        }
        if let Some(c) = &p.cache {
            put("cache", server_text(&c.cache));
            put("cache_start", c.start.name().into());
            put("write_policy", c.policy.name().into());
            put("cache_ttl", secs_or(c.ttl_s, "never"));
            if c.cache.external.is_none() && !c.cache.server_opts.contains_key("memory-mb") {
                put("cache.memory-mb", "no-limit".into());
            }
            for (k, v) in &c.cache.server_opts {
                put(&format!("cache.{k}"), v.clone());
            }
            if let Some(m) = c.cache.query_mode_used() {
                put("cache_query_mode", m);
            }
        }
        if !p.load.events.is_empty() {
            let e: Vec<String> = p.load.events.iter().map(|e| e.to_string()).collect();
            put("events", e.join(","));
        }
        let w = &p.workload;
        put("keys", w.keys.to_string());
        put("value_size", w.values().label().to_string());
        put("ratio", w.ratio.to_string());
        put("distribution", w.distribution.to_string());
        if let Some(pr) = &w.profile {
            put("profile", pr.clone());
        }
        put("key_prefix", w.key_prefix.clone());
        put("load", if w.load { "yes" } else { "no" }.into());
        if w.ttl_s > 0 {
            put("ttl", format!("{}s", w.ttl_s));
        }
        if let Some(b) = &w.batch {
            put("batch", b.to_string());
        }
        if let Some(b) = w.background_writes {
            put("background_writes", format!("{b}/s"));
        }
        let l = &p.load;
        put("connections", l.connections.to_string());
        put("threads", l.threads.to_string());
        put("pipeline", l.pipeline.to_string());
        put(
            "rate",
            l.rate.map_or("closed-loop".into(), |r| r.to_string()),
        );
        put("warmup", format!("{}s", l.warmup_s));
        match l.stop {
            Stop::Duration(d) => put("duration", format!("{d}s")),
            Stop::Requests(n) => put("requests", n.to_string()),
        }
        put("timeout", format!("{}s", l.timeout_s));
        put("timeline_seconds", l.timeline_seconds.to_string());
        out
    }

    /// The settings that tell the points of a target apart (those that take more
    /// than one value among its points), in the order of [`Point::settings`]:
    /// every swept setting, the cache's memory or the key distribution included.
    pub fn varying(points: &[Point]) -> Vec<String> {
        let all: Vec<(&str, Vec<(String, String)>)> = points
            .iter()
            .map(|p| (p.target.as_str(), p.settings()))
            .collect();
        let mut names: Vec<String> = Vec::new();
        for (_, set) in &all {
            for (k, _) in set {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        let value = |set: &[(String, String)], k: &str| {
            set.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };
        // A setting varies when a point's value differs from its target's first.
        let mut first: BTreeMap<&str, &[(String, String)]> = BTreeMap::new();
        for (t, set) in &all {
            first.entry(t).or_insert(set);
        }
        names.retain(|k| {
            all.iter()
                .any(|(t, set)| first.get(t).is_some_and(|f| value(set, k) != value(f, k)))
        });
        names
    }

    /// The point as text: its target and its value of each setting in `axes`
    /// (see [`Point::varying`]), e.g. `pg+redis cache.memory-mb=4 distribution=zipf:0.8`.
    pub fn label(&self, axes: &[String]) -> String {
        let settings = self.settings();
        std::iter::once(self.target.clone())
            .chain(axes.iter().filter_map(|a| {
                settings
                    .iter()
                    .find(|(k, _)| k == a)
                    .map(|(k, v)| format!("{k}={v}"))
            }))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A server as text: its kind, and its URL (password masked) if not managed.
fn server_text(t: &TargetSpec) -> String {
    match &t.external {
        Some(e) => e.display_for(t.kind.product()),
        None => t.kind.name().to_string(),
    }
}

/// `n` seconds as `"{n}s"`, or `zero` for 0.
fn secs_or(n: u32, zero: &str) -> String {
    match n {
        0 => zero.to_string(),
        n => format!("{n}s"),
    }
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
    let one = |v: &Vec<usize>, d: usize| if v.is_empty() { vec![d] } else { v.clone() };
    let threads_default = s
        .load
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let server_combos = combos(&s.sweep.server, "sweep.server")?;
    let rates: Vec<Option<f64>> = if s.sweep.rate.is_empty() {
        vec![s.load.rate]
    } else {
        s.sweep.rate.iter().map(|r| Some(*r)).collect()
    };
    let base_ratio: Ratio = s.workload.ratio.parse()?;
    let ratios: Vec<Ratio> = if s.sweep.ratio.is_empty() {
        vec![base_ratio]
    } else {
        s.sweep
            .ratio
            .iter()
            .map(|r| r.parse())
            .collect::<Result<_, _>>()?
    };
    let keys_list = if s.sweep.keys.is_empty() {
        vec![s.workload.keys]
    } else {
        s.sweep.keys.clone()
    };
    let keys_ratios: Vec<(u64, Ratio)> = keys_list
        .iter()
        .flat_map(|&k| ratios.iter().map(move |&r| (k, r)))
        .collect();
    let per_point_requests = match &s.workload.requests {
        None => None,
        Some(toml::Value::String(x)) if x == "keys" => Some(None),
        Some(toml::Value::Integer(n)) if *n > 0 => Some(Some(*n as u64)),
        Some(other) => bail!("workload.requests = {other}: give a positive number or \"keys\""),
    };
    let distributions: Vec<(String, KeyDistribution)> = if s.sweep.distribution.is_empty() {
        vec![(String::new(), s.workload.distribution.parse()?)]
    } else {
        s.sweep
            .distribution
            .iter()
            .map(|d| Ok((d.clone(), d.parse()?)))
            .collect::<Result<_>>()?
    };
    let sizes: Option<crate::workload::SizeDist> = match &s.workload.value_sizes {
        None => None,
        Some(_) if !s.sweep.value_size.is_empty() => {
            bail!("workload.value_sizes and sweep.value_size: give one or the other")
        }
        Some(text) => Some(
            text.parse()
                .map_err(|e| anyhow!("workload.value_sizes = \"{text}\": {e}"))?,
        ),
    };
    let sizes = &sizes;
    let cache_combos = &combos(&s.sweep.cache, "sweep.cache")?;
    let distributions = &distributions;
    let profiles = &profiles(s)?;
    // Each key count and ratio, crossed with each distribution, cache setting
    // and profile.
    let keys_ratios: Vec<(u64, Ratio, &Named, &Settings, Option<&Profile>)> = keys_ratios
        .iter()
        .flat_map(|&(k, r)| {
            distributions.iter().flat_map(move |d| {
                cache_combos
                    .iter()
                    .flat_map(move |c| profiles.iter().map(move |p| (k, r, d, c, *p)))
            })
        })
        .collect();
    let mut points = Vec::new();
    for t in &s.targets {
        let base: TargetSpec = t.target.parse()?;
        let cache = t.cache_aside()?;
        for combo in &server_combos {
            for &(keys, ratio, (dist_name, distribution), cache_combo, profile) in &keys_ratios {
                for &value_size in &one(&s.sweep.value_size, s.workload.value_size) {
                    for &connections in &one(&s.sweep.connections, s.load.connections) {
                        for &threads in &one(&s.sweep.threads, threads_default) {
                            for &pipeline in &one(&s.sweep.pipeline, s.load.pipeline) {
                                for &rate in &rates {
                                    for repetition in 1..=s.repetitions {
                                        let mut target = base.clone();
                                        target.server_opts = t.server_opts.clone();
                                        target.schema = SchemaOptions {
                                            table_engine: t.table_engine.clone(),
                                            unlogged: t.unlogged,
                                            recreate: false,
                                        };
                                        t.apply_request_options(&mut target);
                                        let mut params = BTreeMap::new();
                                        for (k, v) in combo {
                                            target.server_opts.insert(k.clone(), v.clone());
                                            params.insert(format!("server.{k}"), v.clone());
                                        }
                                        params
                                            .insert("connections".into(), connections.to_string());
                                        params.insert(
                                            "threads".into(),
                                            threads.min(connections).to_string(),
                                        );
                                        params.insert("pipeline".into(), pipeline.to_string());
                                        params.insert("value_size".into(), value_size.to_string());
                                        params.insert("keys".into(), keys.to_string());
                                        params.insert("ratio".into(), ratio.to_string());
                                        if !dist_name.is_empty() {
                                            params.insert("distribution".into(), dist_name.clone());
                                        }
                                        let mut cache = cache.clone();
                                        for (k, v) in cache_combo {
                                            if let Some(c) = cache.as_mut() {
                                                c.cache.server_opts.insert(k.clone(), v.clone());
                                                params.insert(format!("cache.{k}"), v.clone());
                                            }
                                        }
                                        if let Some(r) = rate {
                                            params.insert("rate".into(), r.to_string());
                                        }
                                        if let Some(p) = profile {
                                            // The profile's mix, sizes and keys, not the study's.
                                            for k in ["ratio", "value_size", "distribution"] {
                                                params.remove(k);
                                            }
                                            params.insert("profile".into(), p.name.into());
                                        } else if !s.sweep.profile.is_empty() {
                                            params.insert("profile".into(), "none".into());
                                        }
                                        let mut workload = Workload {
                                            keys,
                                            value_size: match &sizes {
                                                Some(d) => {
                                                    crate::workload::Values::with(d).mean().round()
                                                        as usize
                                                }
                                                None => value_size,
                                            },
                                            value_sizes: sizes.clone(),
                                            ratio,
                                            distribution: *distribution,
                                            key_prefix: s.workload.key_prefix.clone(),
                                            load: s.workload.load,
                                            seed: 1,
                                            background_writes: s.workload.background_writes,
                                            ttl_s: s.workload.ttl.unwrap_or(0),
                                            profile: None,
                                            batch: crate::plan::parse_batch(
                                                s.workload.batch.as_deref(),
                                            )?,
                                            trace: None,
                                        };
                                        if let Some(p) = profile {
                                            let expires = cache.is_none() && target.kind.expires();
                                            apply_profile(&mut workload, p, expires)?;
                                        }
                                        let plan = RunPlan {
                                            cache,
                                            target,
                                            workload,
                                            load: LoadShape {
                                                connections,
                                                threads: threads.min(connections),
                                                pipeline,
                                                stop: match per_point_requests {
                                                    None => Stop::Duration(s.duration),
                                                    Some(None) => Stop::Requests(keys),
                                                    Some(Some(n)) => Stop::Requests(n),
                                                },
                                                warmup_s: s.warmup,
                                                rate,
                                                timeout_s: s.load.timeout,
                                                shard: None,
                                                start_at_ms: None,
                                                events: t.events()?,
                                                timeline_seconds: s.load.timeline_seconds,
                                            },
                                        };
                                        plan.check_ttl()
                                            .map_err(|e| anyhow!("target '{}': {e}", label(t)))?;
                                        plan.check_cache()
                                            .map_err(|e| anyhow!("target '{}': {e}", label(t)))?;
                                        plan.check_batch()
                                            .map_err(|e| anyhow!("target '{}': {e}", label(t)))?;
                                        for e in &plan.load.events {
                                            let window = match plan.load.stop {
                                                Stop::Duration(d) => Some(d),
                                                Stop::Requests(_) => None,
                                            };
                                            e.check(&plan, window).map_err(|e| {
                                                anyhow!("target '{}': {e}", label(t))
                                            })?;
                                            if e.on == EventOn::Target
                                                && e.action == EventAction::Kill
                                            {
                                                bail!(
                                                    "target '{}': events = \"{e}\" would leave the server down for the points after it; use restart-target",
                                                    label(t)
                                                );
                                            }
                                            if e.action == EventAction::KillPrimary {
                                                bail!(
                                                    "target '{}': events = \"{e}\" would leave the cluster without a replica for the points after it; run it with `kvlab run --event`",
                                                    label(t)
                                                );
                                            }
                                        }
                                        points.push(Point {
                                            index: points.len(),
                                            target: label(t),
                                            repetition,
                                            params,
                                            plan,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(points)
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

/// Replaces `w`'s value sizes, mix, key popularity and (where keys expire)
/// TTL with `p`'s.
fn apply_profile(w: &mut Workload, p: &Profile, expires: bool) -> Result<()> {
    let sizes: crate::workload::SizeDist = p.value_sizes.parse()?;
    w.value_size = crate::workload::Values::with(&sizes).mean().round() as usize;
    w.value_sizes = Some(sizes);
    w.ratio = p.ratio;
    w.distribution = KeyDistribution::Zipf { theta: p.theta };
    if expires {
        w.ttl_s = p.ttl_s;
    }
    w.profile = Some(p.name.to_string());
    Ok(())
}
