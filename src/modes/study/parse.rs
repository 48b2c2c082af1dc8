//! Reading a study file: parse the TOML, then check it, with errors that name
//! the file, the line and the fix.

use std::path::Path;

use anyhow::{Result, anyhow, bail};

use super::builtin::{builtin, names};
use super::expand::expand;
use crate::plan::TargetSpec;
use crate::plan::study::{Scale, StudyFile, label};

/// Reads and checks a study file, or the built-in study of that name when no
/// such file exists, at `scale`; errors name the file, the line and the fix.
pub fn load(path: &Path, scale: Scale) -> Result<StudyFile> {
    if !path.exists()
        && let Some(name) = path.to_str()
        && let Some(text) = builtin(name)
    {
        return parse_scaled(text, &format!("built-in study {name}"), scale);
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        anyhow!(
            "{}: cannot read the study file: {e}; give a file or a built-in study ({})",
            path.display(),
            names()
        )
    })?;
    parse_scaled(&text, &path.display().to_string(), scale)
}

/// Parses study text at its written (quick) scale; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<StudyFile> {
    parse_scaled(text, origin, Scale::Quick)
}

/// Parses study text at `scale`: `Scale::Original` lays the file's
/// `[original]` tables over the rest (the published study's parameters).
pub fn parse_scaled(text: &str, origin: &str, scale: Scale) -> Result<StudyFile> {
    let mut study: StudyFile = toml::from_str(text).map_err(|e| {
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
    let original = study.original.take();
    if scale == Scale::Original {
        let Some(original) = original else {
            bail!(
                "{origin}: the study has no [original] section, so it runs only at the scale written; drop --scale original"
            );
        };
        let mut v = toml::Value::try_from(&study)
            .map_err(|e| anyhow!("{origin}: cannot apply [original]: {e}"))?;
        overlay(&mut v, toml::Value::Table(original));
        study = v.try_into().map_err(|e: toml::de::Error| {
            anyhow!("{origin}: [original]: {}", e.message().trim())
        })?;
        study.scale = Some("original".into());
    } else {
        study.original = original;
    }
    check(&study, text, origin)?;
    Ok(study)
}

/// Lays `top` over `base`: tables key by key, anything else replaced.
fn overlay(base: &mut toml::Value, top: toml::Value) {
    match (base, top) {
        (toml::Value::Table(b), toml::Value::Table(t)) => {
            for (k, v) in t {
                match b.get_mut(&k) {
                    Some(old) => overlay(old, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, t) => *b = t,
    }
}

/// The line (from 1) where `key` is set in table `table` of `text` (the top
/// level when empty; `[[table]]` blocks count from 0 by `nth`), else that
/// table's header, else 1.
fn line_in(text: &str, table: &str, nth: usize, key: &str) -> usize {
    let (set, header) = locate(text, table, nth, key);
    set.or(header).unwrap_or(1)
}

/// The line where `key` is set in table `table` (see [`line_in`]), and the
/// line of that table's header.
fn locate(text: &str, table: &str, nth: usize, key: &str) -> (Option<usize>, Option<usize>) {
    let mut here = table.is_empty();
    let mut header = None;
    let mut seen = 0;
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.starts_with('[') {
            let name = l.trim_matches(|c| c == '[' || c == ']').trim();
            here = name == table && {
                seen += 1;
                seen == nth + 1
            };
            if here {
                header = Some(i + 1);
            }
            continue;
        }
        let set = l
            .split_once('=')
            .is_some_and(|(k, _)| k.trim().trim_matches('"') == key);
        if here && set {
            return (Some(i + 1), header);
        }
    }
    (None, header)
}

/// Checks a parsed study; errors point at the offending line of `text`.
fn check(s: &StudyFile, text: &str, origin: &str) -> Result<()> {
    let at = |needle: &str| format!("{origin}:{}", line_in(text, "", 0, needle));
    let at_in =
        |table: &str, nth: usize, key: &str| format!("{origin}:{}", line_in(text, table, nth, key));
    if s.targets.is_empty() {
        bail!(
            "{origin}: no [[target]]; add at least one, e.g. [[target]] target = \"{}\"",
            crate::products::DEFAULT_TARGET
        );
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
    if s.load.timeline_seconds == 0 {
        bail!(
            "{}: load.timeline_seconds = 0 would keep no per-second figures; give at least 1, e.g. 600",
            at_in("load", 0, "timeline_seconds")
        );
    }
    if s.goal.capacity && s.goal.p99_ms.is_none() {
        bail!(
            "{}: goal.capacity needs goal.p99_ms, the latency limit to search within",
            at_in("goal", 0, "capacity")
        );
    }
    if let Some(ms) = s.goal.p99_ms
        && !(ms.is_finite() && ms > 0.0)
    {
        bail!(
            "{}: goal.p99_ms = {ms}: give a positive number of milliseconds, e.g. p99_ms = 2",
            at_in("goal", 0, "p99_ms")
        );
    }
    if let Some(rps) = s.goal.rps
        && !(rps.is_finite() && rps > 0.0)
    {
        bail!(
            "{}: goal.rps = {rps}: give a positive number of requests per second",
            at_in("goal", 0, "rps")
        );
    }
    // Limits and loads that must be positive numbers, by table.
    let z = s.sizing.clone().unwrap_or_default();
    let t = &s.thresholds;
    let positive = [
        ("sizing", "rps", s.sizing.as_ref().map(|z| z.rps)),
        ("sizing", "p99_ms", z.p99_ms),
        ("sizing", "machine_cores", z.machine_cores),
        ("sizing", "machine_gib", z.machine_gib),
        ("thresholds", "p50_ms", t.p50_ms),
        ("thresholds", "p99_ms", t.p99_ms),
        ("thresholds", "p999_ms", t.p999_ms),
        ("thresholds", "min_rps", t.min_rps),
    ];
    for (table, key, v) in positive {
        if let Some(v) = v
            && !(v.is_finite() && v > 0.0)
        {
            bail!(
                "{}: {table}.{key} = {v}: give a positive number",
                at_in(table, 0, key)
            );
        }
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
            bail!(
                "{}: sweep.{axis} has a 0; give positive values",
                at_in("sweep", 0, axis)
            );
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, t) in s.targets.iter().enumerate() {
        let at = |_: &str| at_in("target", i, "target");
        let mut spec: TargetSpec = t
            .target
            .parse()
            .map_err(|e| anyhow!("{}: {e}", at(&t.target)))?;
        spec.schema.table_engine = t.table_engine.clone();
        spec.schema.unlogged = t.unlogged;
        t.apply_request_options(&mut spec);
        spec.check_schema()
            .map_err(|e| anyhow!("{}: {}", at(&t.target), study_words(&e.to_string())))?;
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
    if let Some(b) = s
        .baseline
        .iter()
        .chain(s.targets.iter().filter_map(|t| t.baseline.as_ref()))
        .find(|b| !names.contains(*b))
    {
        bail!(
            "{origin}: baseline = \"{b}\" names no target; use one of {}",
            names.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    // Every point must make a valid plan: expand once to surface errors early,
    // at the line that sets the key the error names, if one does.
    expand(s).map_err(|e| {
        let msg = study_words(&format!("{e:#}"));
        let key = msg.split_once(':').map_or("", |(k, _)| k.trim());
        let name = key.rsplit('.').next().unwrap_or(key);
        let line = ["workload", "load", "sweep"]
            .iter()
            .find_map(|t| locate(text, t, 0, name).0)
            .filter(|_| {
                key.chars()
                    .all(|c| c.is_ascii_lowercase() || "_.".contains(c))
            })
            .map(|l| format!(":{l}"))
            .unwrap_or_default();
        anyhow!("{origin}{line}: {msg}")
    })?;
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
        ("--table-engine", "table_engine"),
        ("--unlogged", "unlogged"),
        ("--consistency", "consistency"),
        ("--query-mode", "query_mode"),
        ("--pooler-opt", "pooler_opts"),
        ("--pooler", "pooler"),
        ("--target", "target"),
        ("--cache", "cache"),
        ("--ratio", "workload.ratio"),
        ("--key-distribution", "workload.distribution"),
        ("--key-prefix", "workload.key_prefix"),
        ("--value-size", "workload.value_size"),
        ("--keys", "workload.keys"),
    ]
    .iter()
    .fold(msg.to_string(), |m, (flag, key)| m.replace(flag, key))
}
