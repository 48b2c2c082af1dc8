//! Reading a study file: parse the TOML, then check it, with errors that name
//! the file, the line and the fix.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use super::builtin::{builtin, names};
use super::expand::expand;
use super::lines::Lines;
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
    let lines = Lines::new(text, scale == Scale::Original);
    let mut study: StudyFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
        // The parser's span is the offending key's (or value's) own.
        let line = e.span().map(|s| lines.line(s.start));
        let fix = if msg.contains("unknown field") {
            "; check the spelling against the annotated examples in studies/"
        } else if msg.contains("missing field") {
            "; add it (see studies/ for examples)"
        } else {
            ""
        };
        anyhow!("{}: {msg}{fix}", lines.at(origin, line))
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
            let msg = e.message().trim().replace('\n', " ");
            // No spans here: the key the message names, within [original].
            let named = msg.split('`').nth(1).unwrap_or_default();
            let line = lines
                .named_under("original", named)
                .or_else(|| lines.walk(&["original"]).map(|(l, _)| l));
            anyhow!("{}: [original]: {msg}", lines.at(origin, line))
        })?;
        study.scale = Some("original".into());
    } else {
        study.original = original;
    }
    name_by_stem(&mut study, origin)?;
    check(&mut study, &lines, origin)?;
    Ok(study)
}

/// A study without `name` is named by its file's stem (`origin` is its
/// path), which must then be a name.
fn name_by_stem(s: &mut StudyFile, origin: &str) -> Result<()> {
    if !s.name.is_empty() {
        return Ok(());
    }
    let stem = Path::new(origin)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !is_name(&stem) {
        bail!(
            "{origin}: the study has no name, and its file's name '{stem}' cannot be one (letters, digits, - or _: it names files); add e.g. name = \"my-study\" at the top"
        );
    }
    s.name = stem;
    Ok(())
}

/// Whether `name` can name a study's files: letters, digits, - or _.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
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

/// Checks a parsed study; errors point at the offending line of `text`.
fn check(s: &mut StudyFile, lines: &Lines, origin: &str) -> Result<()> {
    if s.decide.is_some() {
        return check_decide(s, lines, origin);
    }
    if s.targets.is_empty() {
        bail!(
            "{origin}: no [[target]]; add at least one, e.g. [[target]] target = \"{}\"",
            crate::products::DEFAULT_TARGET
        );
    }
    check_run(s, lines, origin)?;
    check_limits(s, lines, origin)?;
    check_shape(s, lines, origin)?;
    let names = check_targets(s, lines, origin)?;
    check_baselines(s, lines, origin, &names)?;
    // Every point must make a valid plan: expand once to surface errors early,
    // at the line that sets the key the error names.
    expand(s).map_err(|e| {
        let msg = study_words(&format!("{e:#}"));
        anyhow!("{}: {msg}", lines.at(origin, lines.blame(s, &msg)))
    })?;
    Ok(())
}

/// Checks each point's window, warm-up and timeline, and the goal.
fn check_run(s: &StudyFile, lines: &Lines, origin: &str) -> Result<()> {
    let at = |path: &[&str]| lines.at(origin, lines.of(path));
    if !(s.duration.is_finite() && s.duration > 0.0) {
        bail!(
            "{}: duration must be a positive number of seconds",
            at(&["duration"])
        );
    }
    if !(s.warmup.is_finite() && s.warmup >= 0.0) {
        bail!("{}: warmup must be 0 or more seconds", at(&["warmup"]));
    }
    if s.load.timeline_seconds == 0 {
        bail!(
            "{}: load.timeline_seconds = 0 would keep no per-second figures; give at least 1, e.g. 600",
            at(&["load", "timeline_seconds"])
        );
    }
    if s.goal.capacity && s.goal.p99_ms.is_none() {
        bail!(
            "{}: goal.capacity needs goal.p99_ms, the latency limit to search within",
            at(&["goal", "capacity"])
        );
    }
    if let Some(ms) = s.goal.p99_ms
        && !(ms.is_finite() && ms > 0.0)
    {
        bail!(
            "{}: goal.p99_ms = {ms}: give a positive number of milliseconds, e.g. p99_ms = 2",
            at(&["goal", "p99_ms"])
        );
    }
    if let Some(rps) = s.goal.rps
        && !(rps.is_finite() && rps > 0.0)
    {
        bail!(
            "{}: goal.rps = {rps}: give a positive number of requests per second",
            at(&["goal", "rps"])
        );
    }
    Ok(())
}

/// Checks the limits of `[thresholds]`: each a positive number; refuses
/// `[sizing]`, pointing at `[decide]`.
fn check_limits(s: &StudyFile, lines: &Lines, origin: &str) -> Result<()> {
    if s.sizing.is_some() {
        bail!(
            "{}: [sizing] was removed: a study's [decide] states the load and prices it on a deployment's shapes from a dated catalog (see studies/decide.toml and docs/DECIDE.md); move rps, keys, value_size and p99_ms into [decide]",
            lines.at(origin, lines.of(&["sizing"]))
        );
    }
    let t = &s.thresholds;
    let positive = [
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
                lines.at(origin, lines.of(&[table, key]))
            );
        }
    }
    Ok(())
}

/// Checks the mode, the repetitions, the name and the swept counts.
fn check_shape(s: &StudyFile, lines: &Lines, origin: &str) -> Result<()> {
    let at = |path: &[&str]| lines.at(origin, lines.of(path));
    if !matches!(s.mode.as_deref(), None | Some("measure") | Some("fill")) {
        bail!("{}: mode must be \"measure\" or \"fill\"", at(&["mode"]));
    }
    if s.repetitions == 0 {
        bail!("{}: repetitions must be at least 1", at(&["repetitions"]));
    }
    if !is_name(&s.name) {
        bail!(
            "{}: name must be letters, digits, - or _ (it names files)",
            at(&["name"])
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
                at(&["sweep", axis])
            );
        }
    }
    if let Some(r) = s
        .sweep
        .rtt
        .iter()
        .find(|r| !(r.is_finite() && (0.0..=10_000.0).contains(*r)))
    {
        bail!(
            "{}: sweep.rtt has {r}; give round trips in milliseconds from 0 to 10000",
            at(&["sweep", "rtt"])
        );
    }
    Ok(())
}

/// Checks each target (its URL or kind, table and request options, server
/// settings, cache in front, name); the targets' names.
fn check_targets(s: &StudyFile, lines: &Lines, origin: &str) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for (i, t) in s.targets.iter().enumerate() {
        let n = i.to_string();
        let target_line = || lines.at(origin, lines.of(&["target", &n, "target"]));
        // Each error at the line of the target's key it names, else of `target`.
        let at = |msg: &str| {
            let key = lines.in_table(&["target", &n], msg);
            lines.at(origin, key.or_else(|| lines.of(&["target", &n, "target"])))
        };
        let mut spec: TargetSpec = t
            .target
            .parse()
            .map_err(|e| anyhow!("{}: {e}", target_line()))?;
        spec.schema.table_engine = t.table_engine.clone();
        spec.schema.unlogged = t.unlogged;
        t.apply_request_options(&mut spec)
            .and_then(|()| spec.check_schema())
            .map_err(|e| {
                let msg = study_words(&e.to_string());
                anyhow!("{}: {msg}", at(&msg))
            })?;
        if spec.external.is_some() && !t.server_opts.is_empty() {
            bail!(
                "{}: server settings apply only to servers kvlab starts; drop them or use a bare kind",
                at("server_opts")
            );
        }
        if spec.external.is_some() && !s.sweep.server.is_empty() {
            bail!(
                "{}: target {} is a URL, and server settings apply only to servers kvlab starts; drop [sweep.server] or use a bare kind",
                lines.at(origin, lines.of(&["sweep", "server"])),
                label(t)
            );
        }
        t.cache_aside().map_err(|e| {
            let msg = study_words(&format!("{e:#}"));
            anyhow!("{}: {msg}", at(&msg))
        })?;
        if !names.insert(label(t)) {
            bail!(
                "{}: two targets are named '{}'; give each a distinct name",
                at("name"),
                label(t)
            );
        }
    }
    Ok(names)
}

/// Checks that every `baseline` (the study's, a target's) names a target.
fn check_baselines(
    s: &StudyFile,
    lines: &Lines,
    origin: &str,
    names: &BTreeSet<String>,
) -> Result<()> {
    let Some(b) = s
        .baseline
        .iter()
        .chain(s.targets.iter().filter_map(|t| t.baseline.as_ref()))
        .find(|b| !names.contains(*b))
    else {
        return Ok(());
    };
    let line = match s.baseline.as_ref() == Some(b) {
        true => lines.of(&["baseline"]),
        false => s
            .targets
            .iter()
            .position(|t| t.baseline.as_ref() == Some(b))
            .and_then(|i| lines.of(&["target", &i.to_string(), "baseline"])),
    };
    bail!(
        "{}: baseline = \"{b}\" names no target; use one of {}",
        lines.at(origin, line),
        names.iter().cloned().collect::<Vec<_>>().join(", ")
    );
}

/// A message about command-line flags, in the words of a study file (a key
/// named twice in a row, `cache_start: cache_start: …`, once).
fn study_words(msg: &str) -> String {
    let words = [
        ("--write-policy", "write_policy"),
        ("--cache-ttl", "cache_ttl"),
        ("--cache-opt", "cache_opts"),
        ("--cache-start", "cache_start"),
        ("--cache-query-mode", "cache_query_mode"),
        ("--background-writes", "workload.background_writes"),
        ("--no-load", "workload.load = false"),
        ("--pipeline", "load.pipeline"),
        ("--timeline-seconds", "load.timeline_seconds"),
        ("--table-engine", "table_engine"),
        ("--unlogged", "unlogged"),
        ("--consistency", "consistency"),
        ("--query-mode", "query_mode"),
        ("--pooler-opt", "pooler_opts"),
        ("--pooler", "pooler"),
        ("--target", "target"),
        ("--cache", "cache"),
        ("--event:", "events:"),
        ("--ratio", "workload.ratio"),
        ("--key-distribution", "workload.distribution"),
        ("--key-prefix", "workload.key_prefix"),
        ("--value-size", "workload.value_size"),
        ("--keys", "workload.keys"),
        ("--ttl", "workload.ttl"),
        ("--batch", "workload.batch"),
        ("--profile", "workload.profile"),
    ]
    .iter()
    .fold(msg.to_string(), |m, (flag, key)| m.replace(flag, key));
    let mut parts = words.splitn(3, ": ");
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), Some(rest)) if a == b => format!("{a}: {rest}"),
        _ => words,
    }
}

/// Where a study's keys are set: the TOML parser's spans over its text, so
/// that every error points at the offending key's own line.
/// A `[decide]` study: a `kvlab decide` run and nothing else. Notes where
/// each of its keys is written, for the errors of its flags.
fn check_decide(s: &mut StudyFile, lines: &Lines, origin: &str) -> Result<()> {
    let at = |path: &[&str]| lines.at(origin, lines.of(path));
    let others = [
        ("[[target]]", !s.targets.is_empty(), "target"),
        ("[sweep]", s.sweep != Default::default(), "sweep"),
        ("[thresholds]", !s.thresholds.is_empty(), "thresholds"),
    ];
    if let Some((name, _, key)) = others.iter().find(|o| o.1) {
        bail!(
            "{}: a [decide] study measures its own runs, so {name} has no place in it; drop {name}, or put it in a study of its own",
            at(&[key])
        );
    }
    let table = s
        .decide
        .as_ref()
        .map(|t| t.keys().cloned().collect::<Vec<_>>());
    for key in table.unwrap_or_default() {
        let line = at(&["decide", &key]);
        s.decide_at.insert(key, line);
    }
    s.decide_at.insert(String::new(), at(&["decide"]));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_study_without_a_name_is_named_by_its_file() {
        let decide = "[decide]\nrps = 100\np99_ms = 5\n";
        let s = parse(decide, "some/dir/my-decision.toml").unwrap();
        assert_eq!(s.name, "my-decision");
        let named = parse(&format!("name = \"d\"\n{decide}"), "x/y.toml").unwrap();
        assert_eq!(named.name, "d");
        let runs = "[[target]]\ntarget = \"redis\"\n";
        assert_eq!(parse(runs, "sweep_1.toml").unwrap().name, "sweep_1");
        let e = parse(decide, "my decision.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("my decision.toml: the study has no name")
                && e.contains("add e.g. name = \"my-study\""),
            "{e}"
        );
    }
}
