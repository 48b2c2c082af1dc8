//! `kvlab decide`: the answer for a stated load — keep the cache or not, what
//! each way costs, and what a cache loss does — on stdout, as JSON and as an
//! HTML page; `--from` recomputes a saved one, `--check` (`decide/check.rs`)
//! checks one by a run of what it sized.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::{check_writable, say, write_json};
use crate::cli::DecideArgs;
use crate::error::UsageError;
use crate::modes::decide::{self, Ask};
use crate::plan::{CacheAside, RunPlan};
use crate::results::decide::assumptions::EXAMPLE_CURRENCY;
use crate::results::decide::{Assumptions, KVLAB, StatedLoad};
use crate::runner::RunOptions;
use crate::workload::LinkDelay;

/// Runs `kvlab decide`: measures and decides (each step saved under
/// `--out`, or reused from `--resume DIR`), or with `--from DIR` recomputes
/// a saved decision without running anything.
pub fn exec(args: &DecideArgs, shutdown: &AtomicBool) -> Result<()> {
    let json = args.run.json.as_deref();
    if let Some(p) = json {
        check_writable(p)?;
    }
    if let Some(dir) = &args.from {
        return from(args, dir);
    }
    if let Some(dir) = &args.check {
        return check::exec(args, dir, shutdown);
    }
    let watched;
    let args = match args.observe {
        true => {
            watched = observed::stated(args, shutdown)?;
            &watched
        }
        false => args,
    };
    let ask = ask_of(args, shutdown)?;
    if let Some(dir) = &args.resume {
        decide::saved::resumable(dir)?;
    }
    let out = args
        .resume
        .clone()
        .or_else(|| args.out.clone())
        .unwrap_or_else(|| "results/decide".into());
    make_dir(&out)?;
    let copy = decide::scaled_keys(&ask);
    let mut ask = ask;
    ask.plan.workload.keys = copy.keys;
    if let Some(line) = decide::beside::cache_by_url(&mut ask)? {
        say(json, &line);
    }
    if let Some(limit) = args.observed_cache_limit {
        let mb = decide::beside::carried_mb(&ask, limit);
        ask.team_cache_mb = Some(mb);
        say(
            json,
            &format!(
                "kvlab decide: the cache observed holds {:.1} MiB at most: a point of the curve at its size carried to the copy ({mb} MiB)\n",
                limit as f64 / crate::runner::foreign::MIB
            ),
        );
    }
    let opts = RunOptions {
        progress: true,
        notes: true,
    };
    let resume = args.resume.is_some();
    let d = decide::decide(&ask, (&copy, &out, resume), opts, shutdown, &mut |l| {
        say(json, l)
    })?;
    write_out(&d, &out, json)
}

/// `--from DIR`: the saved decision recomputed with what the flags change.
fn from(args: &DecideArgs, dir: &std::path::Path) -> Result<()> {
    let json = args.run.json.as_deref();
    let (mut ask, mut measured) = decide::saved::load(dir)?;
    let change = again::change(args, &ask)?;
    decide::again::apply(&mut ask, &mut measured, change)?;
    if args.keep_saving.is_some() {
        ask.assumed.policy = assumed(args)?.policy;
    }
    let out = args.out.clone().unwrap_or_else(|| dir.to_path_buf());
    make_dir(&out)?;
    let d = decide::decision::decision(&ask, &measured);
    say(
        json,
        &format!(
            "kvlab decide: recomputed from the measurements saved in {} (nothing run): --from may change the load and the policy (prices, machines, --keep-saving), not how kvlab measured (decision.json's assumptions.method)\n",
            dir.display()
        ),
    );
    write_out(&d, &out, json)
}

/// `dir` made (with its parents), or a usage error naming `--out`.
fn make_dir(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        UsageError::bad(
            "--out",
            format!("cannot create {}: {e}", dir.display()),
            "give a directory you can write",
        )
        .into()
    })
}

/// The decision as text on stdout, decision.json and report.html in `out`
/// (and `--json`); a check of the decision there before is removed.
fn write_out(
    d: &crate::results::decide::Decision,
    out: &std::path::Path,
    json: Option<&std::path::Path>,
) -> Result<()> {
    say(json, &format!("\n{}", crate::report::decide::text(d)));
    write_json(&out.join("decision.json"), d)?;
    let stale = out.join("check.json");
    if stale.exists() {
        std::fs::remove_file(&stale)?;
        say(
            json,
            &format!(
                "kvlab: removed {}: it checked the decision written there before\n",
                stale.display()
            ),
        );
    }
    std::fs::write(
        out.join("report.html"),
        crate::report::decide::html(d, None),
    )?;
    say(
        json,
        &format!("kvlab: wrote {}\n", out.join("report.html").display()),
    );
    if let Some(p) = json {
        write_json(p, d)?;
    }
    Ok(())
}

/// A study file's `[decide]` (see `kvlab study`): `kvlab decide` with its
/// keys as the flags, into `out` unless the table names one; with `dry_run`,
/// only the command it stands for.
pub fn exec_study(
    s: &crate::plan::study::StudyFile,
    out: &std::path::Path,
    dry_run: bool,
    shutdown: &AtomicBool,
) -> Result<()> {
    let argv = file::argv_of(s, out)?;
    let args = file::parse(s, &argv)?;
    println!(
        "kvlab study {}: a decision ([decide]), as `kvlab decide {}`",
        s.name,
        file::shown(&argv)
    );
    if dry_run {
        println!(
            "runs: the database alone and the cache alone (capacity searches within the goal), the cache's miss-ratio curve, cache-aside at the smallest cache that serves the load, a cache loss, and beside them the database with a read replica and near caches{}",
            if args.quick {
                " (--quick: shorter runs)"
            } else {
                ""
            }
        );
        return Ok(());
    }
    exec(&args, shutdown).map_err(|e| file::in_file(s, e))
}

/// With neither `--rtt` nor `--cache-rtt`, each managed server is put one
/// same-zone hop away (a server given by URL has its real network); says
/// whether it did. `--rtt 0` asks for loopback: no link at all.
fn assume_round_trips(plan: &mut RunPlan, cache: &CacheAside) -> bool {
    let zero = |d: &Option<LinkDelay>| d.is_some_and(|d| d.rtt_ms == 0.0 && d.jitter_ms == 0.0);
    let assumed = plan.load.rtt.is_none() && plan.load.cache_rtt.is_none();
    if assumed {
        let hop = LinkDelay {
            rtt_ms: KVLAB.policy.same_zone_rtt_ms,
            jitter_ms: 0.0,
        };
        plan.load.rtt = plan.target.external.is_none().then_some(hop);
        plan.load.cache_rtt = cache.cache.external.is_none().then_some(hop);
    }
    if zero(&plan.load.rtt) {
        plan.load.rtt = None;
    }
    if zero(&plan.load.cache_rtt) {
        plan.load.cache_rtt = None;
    }
    assumed
}

/// Refuses the flags `kvlab decide` sets itself or cannot combine.
fn refuse(args: &DecideArgs) -> Result<(), UsageError> {
    let r = &args.run;
    for (given, flag, why) in [
        (
            r.rate.is_some(),
            "--rate",
            "kvlab decide chooses its rates from --rps",
        ),
        (
            r.shard.is_some() || r.start_at.is_some(),
            "--shard/--start-at",
            "kvlab decide runs one client",
        ),
        (
            !r.events.is_empty(),
            "--event",
            "kvlab decide makes its own cache loss",
        ),
        (
            args.trace.is_some() && r.profile.is_some(),
            "--profile",
            "--trace gives the workload",
        ),
    ] {
        if given {
            return Err(UsageError::conflict(flag, why, "drop it"));
        }
    }
    Ok(())
}

/// `--trace`: the workload's settings no flag gave, from the trace.
fn traced(
    args: &DecideArgs,
    plan: &mut RunPlan,
    shutdown: &AtomicBool,
) -> Result<Option<decide::trace::Traced>, UsageError> {
    let r = &args.run;
    let given = decide::trace::Given {
        keys: r.keys.is_some(),
        ratio: r.ratio.is_some(),
        sizes: r.value_size.is_some(),
        distribution: r.key_distribution.is_some(),
    };
    args.trace
        .as_deref()
        .map(|path| decide::trace::apply(path, &mut plan.workload, given, shutdown))
        .transpose()
}

/// The prices a decision sizes with, checked.
pub(super) struct Prices {
    core_hour: f64,
    gib_hour: f64,
    machine_month: f64,
    currency: String,
    /// kvlab's examples: no price was given.
    examples: bool,
}

/// The prices and the stated cores of `args`, each checked.
pub(super) fn prices(args: &DecideArgs) -> Result<Prices, UsageError> {
    for (flag, v) in [
        ("--target-cores", args.target_cores),
        ("--cache-cores", args.cache_cores),
        ("--price-machine-month", args.price_machine_month),
    ] {
        if let Some(v) = v {
            crate::error::positive(flag, v, "give a positive number")?;
        }
    }
    if args.app_instances == 0 {
        return Err(UsageError::bad(
            "--app-instances",
            "0 instances",
            "give the application's instances, e.g. --app-instances 4",
        ));
    }
    let (core_hour, gib_hour) = (
        args.price_core_hour
            .unwrap_or(KVLAB.policy.example_core_hour),
        args.price_gib_hour.unwrap_or(KVLAB.policy.example_gib_hour),
    );
    Ok(Prices {
        core_hour,
        gib_hour,
        machine_month: args.price_machine_month.unwrap_or_else(|| {
            KVLAB
                .policy
                .machine_month(args.machine_cores, args.machine_gib, core_hour, gib_hour)
        }),
        currency: args
            .currency
            .clone()
            .unwrap_or_else(|| EXAMPLE_CURRENCY.into()),
        examples: args.price_core_hour.is_none()
            && args.price_gib_hour.is_none()
            && args.price_machine_month.is_none(),
    })
}

mod again;
mod check;
mod observed;

/// kvlab's assumptions with the policy `args` state (`--keep-saving`).
fn assumed(args: &DecideArgs) -> Result<Assumptions, UsageError> {
    let mut a = KVLAB;
    if let Some(pct) = args.keep_saving {
        if !(0.0..100.0).contains(&pct) {
            return Err(UsageError::bad(
                "--keep-saving",
                format!("{pct}%"),
                "give the share of the database's cost a cache must save to be kept, from 0 to under 100, e.g. --keep-saving 10",
            ));
        }
        a.policy.keep_saving = pct / 100.0;
    }
    Ok(a)
}

/// What `args` ask: the database (not a cache) and the cache in front of it
/// (redis unless `--cache`), the load as stated.
fn ask_of(args: &DecideArgs, shutdown: &AtomicBool) -> Result<Ask> {
    let r = &args.run;
    refuse(args)?;
    let (rps, p99_ms) = again::stated(args)?;
    let mut plan: RunPlan = r.to_plan()?;
    if !plan.target.kind.is_sql() {
        return Err(UsageError::bad(
            "--target",
            format!("{} is no database", plan.target.kind.name()),
            "name the database the cache stands in front of, e.g. --target postgres (the cache is --cache, redis unless given)",
        )
        .into());
    }
    let cache = match plan.cache.take() {
        Some(c) => c,
        None => CacheAside {
            cache: "redis".parse()?,
            policy: crate::plan::WritePolicy::Invalidate,
            ttl_s: 0,
            start: Default::default(),
        },
    };
    let traced = traced(args, &mut plan, shutdown)?;
    let rtt_assumed = assume_round_trips(&mut plan, &cache);
    let w = &plan.workload;
    let prices = prices(args)?;
    let load = StatedLoad {
        rps,
        p99_ms,
        p50_ms: args.p50_ms,
        p999_ms: args.p999_ms,
        keys: w.keys,
        value_size: w.value_size,
        ratio: w.ratio.to_string(),
        distribution: w.distribution.to_string(),
        write_share: w.ratio.set as f64 / (w.ratio.set + w.ratio.get).max(1) as f64,
        machine_cores: args.machine_cores,
        machine_gib: args.machine_gib,
        price_core_hour: prices.core_hour,
        price_gib_hour: prices.gib_hour,
        currency: prices.currency,
        example_prices: prices.examples,
        price_machine_month: prices.machine_month,
        shared: args.shared,
        target_cores: args.target_cores,
        cache_cores: args.cache_cores,
        app_instances: args.app_instances,
        rtt_ms: plan.load.rtt.map(|d| d.rtt_ms),
        cache_rtt_ms: plan.load.cache_rtt.map(|d| d.rtt_ms),
        rtt_assumed,
        trace: traced.as_ref().map(|t| t.summary.clone()),
        observed: args.observed.clone(),
    };
    Ok(Ask {
        plan,
        cache,
        load,
        quick: args.quick,
        run_secs: r.duration,
        trace: traced,
        team_cache_mb: None,
        assumed: assumed(args)?,
    })
}

/// A `[decide]` table as `kvlab decide`'s flags, errors at their lines.
mod file {
    use anyhow::{Result, anyhow};
    use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

    use crate::cli::DecideArgs;
    use crate::plan::study::StudyFile;

    /// `kvlab decide`'s flags, parsed on their own.
    #[derive(Parser)]
    #[command(name = "kvlab decide")]
    struct Flags {
        #[command(flatten)]
        args: DecideArgs,
    }

    /// Where `key` (of `[decide]`; "" the table) is written.
    fn at<'s>(s: &'s StudyFile, key: &str) -> &'s str {
        s.decide_at
            .get(key)
            .or_else(|| s.decide_at.get(""))
            .map_or(s.name.as_str(), String::as_str)
    }

    /// The flags `[decide]` stands for, `--out` last unless it gives one (or
    /// `resume`, whose directory is the out).
    pub fn argv_of(s: &StudyFile, out: &std::path::Path) -> Result<Vec<String>> {
        let cmd = crate::cli::decide_flags(Flags::command());
        let table = s.decide.clone().unwrap_or_default();
        let mut argv = vec!["decide".to_string()];
        for (key, value) in &table {
            let long = key.replace('_', "-");
            let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(&long)) else {
                return Err(anyhow!(
                    "{}: [decide] has no key {key}; its keys are kvlab decide's flags without the dashes (see kvlab decide --help), e.g. rps = 20000, p99_ms = 5",
                    at(s, key)
                ));
            };
            let flag = format!("--{long}");
            let switch = matches!(arg.get_action(), ArgAction::SetTrue);
            let values = match value {
                toml::Value::Array(a) => a.clone(),
                v => vec![v.clone()],
            };
            for v in values {
                match (v, switch) {
                    (toml::Value::Boolean(b), true) => {
                        if b {
                            argv.push(flag.clone());
                        }
                    }
                    (toml::Value::String(t), false) => argv.extend([flag.clone(), t]),
                    (v @ (toml::Value::Integer(_) | toml::Value::Float(_)), false) => {
                        argv.extend([flag.clone(), v.to_string()])
                    }
                    (_, true) => {
                        return Err(anyhow!(
                            "{}: [decide] {key} is a switch; write {key} = true or drop it",
                            at(s, key)
                        ));
                    }
                    (_, false) => {
                        return Err(anyhow!(
                            "{}: [decide] {key} takes a string or a number (or a list of them, where the flag repeats), as --{long} would",
                            at(s, key)
                        ));
                    }
                }
            }
        }
        if !table.contains_key("out") && !table.contains_key("resume") {
            argv.extend(["--out".into(), out.display().to_string()]);
        }
        Ok(argv)
    }

    /// `argv` parsed as `kvlab decide`'s flags; an error names the key and
    /// its line.
    pub fn parse(s: &StudyFile, argv: &[String]) -> Result<DecideArgs> {
        let parsed = crate::cli::decide_flags(Flags::command())
            .try_get_matches_from(argv)
            .and_then(|m| {
                let mut f = Flags::from_arg_matches(&m)?;
                f.args.given = crate::cli::given(&m);
                Ok(f)
            });
        match parsed {
            Ok(f) => Ok(f.args),
            Err(e) if e.kind() == clap::error::ErrorKind::MissingRequiredArgument => {
                let missing: Vec<String> = match e.get(clap::error::ContextKind::InvalidArg) {
                    Some(clap::error::ContextValue::Strings(v)) => v
                        .iter()
                        .map(|a| keyed(a.split(' ').next().unwrap_or_default()))
                        .collect(),
                    _ => vec![],
                };
                Err(anyhow!(
                    "{}: [decide] needs {}; add it, e.g. rps = 20000 and p99_ms = 5",
                    at(s, ""),
                    missing.join(" and ")
                ))
            }
            Err(e) => {
                let arg = e
                    .get(clap::error::ContextKind::InvalidArg)
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let long = arg
                    .trim_start_matches("--")
                    .split([' ', '='])
                    .next()
                    .unwrap_or_default()
                    .replace('-', "_");
                let msg = e.to_string();
                let first = msg.lines().next().unwrap_or_default();
                let first = first.trim_start_matches("error: ");
                let first = first.replace(&arg, &long);
                Err(anyhow!(
                    "{}: [decide]: {}; its keys are kvlab decide's flags without the dashes (see kvlab decide --help)",
                    at(s, &long),
                    first.replace("--", "")
                ))
            }
        }
    }

    /// `text` in the file's words: each `--flag-name` as its key, `flag_name`.
    fn keyed(text: &str) -> String {
        text.split(' ')
            .map(|w| match w.strip_prefix("--") {
                Some(f) if f.starts_with(|c: char| c.is_ascii_lowercase()) => f.replace('-', "_"),
                _ => w.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A usage error of `kvlab decide` at the line of the key it names.
    pub fn in_file(s: &StudyFile, e: anyhow::Error) -> anyhow::Error {
        let Some(u) = e.downcast_ref::<crate::error::UsageError>() else {
            return e;
        };
        let flag = match u {
            crate::error::UsageError::BadValue { flag, .. } => *flag,
            crate::error::UsageError::Conflict { flags, .. } => *flags,
        };
        let key = keyed(flag.split('/').next().unwrap_or_default());
        anyhow!("{}: [decide] {}", at(s, &key), keyed(&u.to_string()))
    }

    /// `argv` (past "decide") to show: a URL's password masked.
    pub fn shown(argv: &[String]) -> String {
        let mask = |a: &String| match (a.find("://"), a.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                let user = &a[scheme + 3..at];
                match user.find(':') {
                    Some(c) => format!("{}{}:***{}", &a[..scheme + 3], &user[..c], &a[at..]),
                    None => a.clone(),
                }
            }
            _ => a.clone(),
        };
        argv[1..].iter().map(mask).collect::<Vec<_>>().join(" ")
    }
}
