//! Study files: a TOML description of targets, a workload, sweep axes and
//! repetitions, expanded up front into a flat, ordered list of points. The
//! engine runs one point at a time and knows nothing of sweeps.

pub mod exec;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::plan::{
    KeyDistribution, LoadShape, Ratio, RunPlan, SchemaOptions, Stop, TargetSpec, Workload,
};

/// A study as written in its file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    /// Short name, used in file names.
    pub name: String,
    /// What the study asks, for the report.
    #[serde(default)]
    pub description: String,
    /// Where results and reports go (relative to the current directory).
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Seconds measured per point.
    #[serde(default = "d_duration")]
    pub duration: f64,
    /// Seconds of warm-up per point.
    #[serde(default = "d_warmup")]
    pub warmup: f64,
    /// Runs of each point.
    #[serde(default = "d_one")]
    pub repetitions: usize,
    /// `measure` (default): timed load per point. `fill`: memory efficiency —
    /// caches are filled until they evict or refuse, databases loaded and sized.
    #[serde(default)]
    pub mode: Option<String>,
    /// What "good enough" means, for the verdict.
    #[serde(default)]
    pub goal: Goal,
    /// CPUs for managed servers, e.g. "1" or "2-3" (sched_setaffinity).
    #[serde(default)]
    pub server_cpus: Option<String>,
    /// CPUs for kvlab's own threads.
    #[serde(default)]
    pub client_cpus: Option<String>,
    /// The data and operations.
    #[serde(default)]
    pub workload: WorkloadSection,
    /// The load shape before sweeping.
    #[serde(default)]
    pub load: LoadSection,
    /// The systems to compare.
    #[serde(rename = "target")]
    pub targets: Vec<TargetSection>,
    /// Axes to sweep: each a list of values.
    #[serde(default)]
    pub sweep: Sweep,
}

fn d_duration() -> f64 {
    5.0
}
fn d_warmup() -> f64 {
    1.0
}
fn d_one() -> usize {
    1
}

/// Optional targets for the verdict.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Goal {
    /// Requests per second the system must sustain.
    pub rps: Option<f64>,
    /// Largest acceptable p99 latency in milliseconds.
    pub p99_ms: Option<f64>,
    /// Also search each target's highest open-loop rate within `p99_ms`
    /// (at the first point's load shape, on the same server).
    #[serde(default)]
    pub capacity: bool,
}

/// `[workload]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadSection {
    /// Distinct keys.
    pub keys: u64,
    /// Value bytes.
    pub value_size: usize,
    /// SET:GET.
    pub ratio: String,
    /// uniform | zipf | zipf:THETA | sequential.
    pub distribution: String,
    /// Key prefix.
    pub key_prefix: String,
    /// A separate writer at this many SETs per second beside the load.
    pub background_writes: Option<f64>,
    /// Load the keys before measuring (false: the points write them).
    pub load: bool,
    /// Measure this many requests per point instead of `duration`: a number,
    /// or "keys" for one request per key.
    pub requests: Option<toml::Value>,
}

impl Default for WorkloadSection {
    fn default() -> Self {
        WorkloadSection {
            keys: 100_000,
            value_size: 256,
            ratio: "0:1".into(),
            distribution: "uniform".into(),
            key_prefix: "kvlab:".into(),
            background_writes: None,
            load: true,
            requests: None,
        }
    }
}

/// `[load]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadSection {
    /// Total connections.
    pub connections: usize,
    /// Client threads (default: cores).
    pub threads: Option<usize>,
    /// In-flight requests per connection.
    pub pipeline: usize,
    /// Open-loop rate, requests per second.
    pub rate: Option<f64>,
    /// Per-request timeout, seconds.
    pub timeout: f64,
}

impl Default for LoadSection {
    fn default() -> Self {
        LoadSection {
            connections: 50,
            threads: None,
            pipeline: 1,
            rate: None,
            timeout: 5.0,
        }
    }
}

/// One `[[target]]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// Label in the report (default: the kind).
    pub name: Option<String>,
    /// `redis`, `valkey`, `memcached`, `postgres`, `mariadb` (managed) or a URL.
    pub target: String,
    /// Settings of a managed server.
    #[serde(default)]
    pub server_opts: BTreeMap<String, String>,
    /// MariaDB table engine.
    #[serde(default)]
    pub table_engine: Option<String>,
    /// PostgreSQL UNLOGGED table.
    #[serde(default)]
    pub unlogged: bool,
    /// Cache-aside: a cache in front of this database (`redis`, `valkey`,
    /// `memcached` or a URL); each point starts a fresh managed cache.
    #[serde(default)]
    pub cache: Option<String>,
    /// Cache-aside: `invalidate` (default) or `update`.
    #[serde(default)]
    pub write_policy: Option<String>,
    /// Cache-aside: expiry of cache entries, seconds (default 0: never).
    #[serde(default)]
    pub cache_ttl: Option<u32>,
    /// Cache-aside: settings of the managed cache.
    #[serde(default)]
    pub cache_opts: BTreeMap<String, String>,
}

impl TargetSection {
    /// The cache-aside part of this target's plans, if it has a cache.
    fn cache_aside(&self) -> Result<Option<crate::plan::CacheAside>> {
        let Some(c) = &self.cache else {
            if self.write_policy.is_some()
                || self.cache_ttl.is_some()
                || !self.cache_opts.is_empty()
            {
                bail!(
                    "write_policy, cache_ttl and cache_opts need cache = \"redis\" (or valkey, memcached, a URL)"
                );
            }
            return Ok(None);
        };
        let mut cache: TargetSpec = c.parse().map_err(|e| anyhow!("cache: {e}"))?;
        if cache.external.is_some() && !self.cache_opts.is_empty() {
            bail!("cache_opts apply only to a cache kvlab starts; drop them or use a bare kind");
        }
        cache.server_opts = self.cache_opts.clone();
        Ok(Some(crate::plan::CacheAside {
            cache,
            policy: self
                .write_policy
                .as_deref()
                .unwrap_or("invalidate")
                .parse()?,
            ttl_s: self.cache_ttl.unwrap_or(0),
        }))
    }
}

/// `[sweep]`: every listed axis is crossed with every other.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Total connections.
    #[serde(default)]
    pub connections: Vec<usize>,
    /// Client threads.
    #[serde(default)]
    pub threads: Vec<usize>,
    /// Pipeline depth.
    #[serde(default)]
    pub pipeline: Vec<usize>,
    /// Value size in bytes.
    #[serde(default)]
    pub value_size: Vec<usize>,
    /// Open-loop rates.
    #[serde(default)]
    pub rate: Vec<f64>,
    /// Key counts.
    #[serde(default)]
    pub keys: Vec<u64>,
    /// SET:GET ratios, e.g. ["1:0", "0:1"] (write, then read).
    #[serde(default)]
    pub ratio: Vec<String>,
    /// Server settings: name -> values (applied to every managed target that
    /// accepts them, e.g. `io-threads`, `threads`, `query_cache_type`).
    #[serde(default)]
    pub server: BTreeMap<String, Vec<toml::Value>>,
}

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
    ];
    axes.extend(
        s.server
            .iter()
            .map(|(k, v)| (format!("server.{k}"), v.len())),
    );
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

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Reads and checks a study file; errors name the file, the line and the fix.
pub fn load(path: &Path) -> Result<StudyFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("{}: cannot read the study file: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Parses study text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<StudyFile> {
    let study: StudyFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
        // An unknown key's span may cover its whole table: point at the key.
        let key_line = msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
            .and_then(|k| {
                text.lines()
                    .position(|l| l.trim_start().starts_with(k))
                    .map(|i| i + 1)
            });
        let line = key_line.or_else(|| {
            e.span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
        });
        let fix = if msg.contains("unknown field") {
            "; check the spelling against the annotated examples in studies/"
        } else if msg.contains("missing field") {
            "; add it (see studies/ for examples)"
        } else {
            ""
        };
        match line {
            Some(l) => anyhow!("{origin}:{l}: {msg}{fix}"),
            None => anyhow!("{origin}: {msg}{fix}"),
        }
    })?;
    check(&study, text, origin)?;
    Ok(study)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}

fn check(s: &StudyFile, text: &str, origin: &str) -> Result<()> {
    let at = |needle: &str| format!("{origin}:{}", line_of(text, needle));
    if s.targets.is_empty() {
        bail!("{origin}: no [[target]]; add at least one, e.g. [[target]] target = \"redis\"");
    }
    if !(s.duration.is_finite() && s.duration > 0.0) {
        bail!(
            "{}: duration must be a positive number of seconds",
            at("duration")
        );
    }
    if !(s.warmup.is_finite() && s.warmup >= 0.0) {
        bail!("{}: warmup must be 0 or more seconds", at("warmup"));
    }
    if s.goal.capacity && s.goal.p99_ms.is_none() {
        bail!(
            "{}: goal.capacity needs goal.p99_ms, the latency limit to search within",
            at("capacity")
        );
    }
    if !matches!(s.mode.as_deref(), None | Some("measure") | Some("fill")) {
        bail!("{}: mode must be \"measure\" or \"fill\"", at("mode"));
    }
    if s.repetitions == 0 {
        bail!("{}: repetitions must be at least 1", at("repetitions"));
    }
    if s.name.is_empty()
        || !s
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!(
            "{}: name must be letters, digits, - or _ (it names files)",
            at("name")
        );
    }
    for (axis, n) in [
        ("connections", &s.sweep.connections),
        ("threads", &s.sweep.threads),
        ("pipeline", &s.sweep.pipeline),
        ("value_size", &s.sweep.value_size),
    ] {
        if n.contains(&0) {
            bail!("{}: sweep.{axis} has a 0; give positive values", at(axis));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for t in &s.targets {
        let spec: TargetSpec = t
            .target
            .parse()
            .map_err(|e| anyhow!("{}: {e}", at(&t.target)))?;
        if spec.external.is_some() && (!t.server_opts.is_empty() || !s.sweep.server.is_empty()) {
            bail!(
                "{}: server settings apply only to servers kvlab starts; drop them or use a bare kind",
                at(&t.target)
            );
        }
        t.cache_aside()
            .map_err(|e| anyhow!("{}: {}", at(&t.target), study_words(&format!("{e:#}"))))?;
        if !names.insert(label(t)) {
            bail!(
                "{}: two targets are named '{}'; give each a distinct name",
                at(&t.target),
                label(t)
            );
        }
    }
    // Every point must make a valid plan: expand once to surface errors early.
    expand(s).map_err(|e| anyhow!("{origin}: {}", study_words(&format!("{e:#}"))))?;
    Ok(())
}

/// A message about command-line flags, in the words of a study file.
fn study_words(msg: &str) -> String {
    [
        ("--write-policy", "write_policy"),
        ("--cache-ttl", "cache_ttl"),
        ("--cache-opt", "cache_opts"),
        ("--background-writes", "workload.background_writes"),
        ("--no-load", "workload.load = false"),
        ("--pipeline", "load.pipeline"),
        ("--target", "target"),
        ("--cache", "cache"),
    ]
    .iter()
    .fold(msg.to_string(), |m, (flag, key)| m.replace(flag, key))
}

/// The label of a target section.
pub fn label(t: &TargetSection) -> String {
    t.name.clone().unwrap_or_else(|| {
        t.target
            .split("://")
            .next()
            .unwrap_or(&t.target)
            .to_string()
    })
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
    let server_axes: Vec<(&String, &Vec<toml::Value>)> = s.sweep.server.iter().collect();
    let mut server_combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, values) in &server_axes {
        if values.is_empty() {
            bail!("sweep.server.{k} has no values");
        }
        server_combos = server_combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push(((*k).clone(), value_text(v)));
                    c
                })
            })
            .collect();
    }
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
    let distribution: KeyDistribution = s.workload.distribution.parse()?;
    let mut points = Vec::new();
    for t in &s.targets {
        let base: TargetSpec = t.target.parse()?;
        let cache = t.cache_aside()?;
        for combo in &server_combos {
            for &(keys, ratio) in &keys_ratios {
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
                                        if let Some(r) = rate {
                                            params.insert("rate".into(), r.to_string());
                                        }
                                        let plan = RunPlan {
                                            cache: cache.clone(),
                                            target,
                                            workload: Workload {
                                                keys,
                                                value_size,
                                                ratio,
                                                distribution,
                                                key_prefix: s.workload.key_prefix.clone(),
                                                load: s.workload.load,
                                                seed: 1,
                                                background_writes: s.workload.background_writes,
                                            },
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
                                            },
                                        };
                                        plan.check_cache()
                                            .map_err(|e| anyhow!("target '{}': {e}", label(t)))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    const STUDY: &str = r#"
name = "t"
duration = 1
[workload]
keys = 1000
[[target]]
target = "redis"
[[target]]
name = "mc"
target = "memcached"
[sweep]
connections = [10, 20]
pipeline = [1, 4]
"#;

    #[test]
    fn expands_in_a_pinned_order() {
        let s = parse(STUDY, "t.toml").unwrap();
        let p = expand(&s).unwrap();
        let order: Vec<String> = p
            .iter()
            .map(|p| {
                format!(
                    "{}:{}:{}",
                    p.target, p.params["connections"], p.params["pipeline"]
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                "redis:10:1",
                "redis:10:4",
                "redis:20:1",
                "redis:20:4",
                "mc:10:1",
                "mc:10:4",
                "mc:20:1",
                "mc:20:4"
            ]
        );
        assert_eq!(main_axis(&s).as_deref(), Some("connections"));
    }

    #[test]
    fn server_settings_are_outermost() {
        let text = format!("{STUDY}\n[sweep.server]\nthreads = [1, 2]\n")
            .replace("target = \"redis\"\n[[target]]\n", "");
        let s = parse(&text, "t.toml").unwrap();
        let p = expand(&s).unwrap();
        let order: Vec<String> = p
            .iter()
            .map(|p| format!("{}:{}", p.params["server.threads"], p.params["connections"]))
            .collect();
        assert_eq!(&order[..4], ["1:10", "1:10", "1:20", "1:20"]);
        assert_eq!(p[4].plan.target.server_opts["threads"], "2");
    }

    #[test]
    fn errors_name_file_line_and_fix() {
        let e = parse(
            "name = \"x\"\nduraton = 3\n[[target]]\ntarget = \"redis\"\n",
            "s.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("s.toml:2:") && e.contains("duraton") && e.contains("spelling"),
            "{e}"
        );
        let e = parse("name = \"x\"\n", "s.toml").unwrap_err().to_string();
        assert!(e.contains("target"), "{e}");
        let e = parse("name = \"x\"\n[[target]]\ntarget = \"mongo\"\n", "s.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.toml:3:") && e.contains("--target"), "{e}");
        let e = parse(
            "name = \"x\"\nduration = -1\n[[target]]\ntarget = \"redis\"\n",
            "s.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("s.toml:2:"), "{e}");
        let e = parse(
            "name = \"x\"\n[workload]\nratio = \"1/2\"\n[[target]]\ntarget = \"redis\"\n",
            "s.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--ratio"), "{e}");
    }
}
