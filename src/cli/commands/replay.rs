//! `kvlab replay`: drives a target (plain or cache-aside) from a trace in the
//! public cache-trace CSV format, open loop at the trace's own times, and
//! reports it like `kvlab run`, with what the trace held and what was sent.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};
use clap::Args;

use super::{check_valid, check_writable, show_result};
use crate::cli::RunArgs;
use crate::error::UsageError;
use crate::plan::replay::TracePlan;
use crate::plan::{CacheStart, RunPlan, Stop};
use crate::runner;
use crate::workload::trace::feed;
use crate::workload::trace::{Modelled, Scan};

/// Flags of `kvlab replay`: the trace, its speed, and `kvlab run`'s target,
/// keys and load flags (those the trace decides are refused).
#[derive(Debug, Args)]
#[command(
    after_help = "The trace: one request a line, `timestamp,key,key size,value size,client id,operation,TTL`
(Twitter's cache-trace format; timestamps in seconds), plain text or zstd. get and gets are sent as
GETs; set, add, replace and cas as SETs; other operations are counted, not sent. Keys are hashed
onto --keys keys (loaded first); values are sized as the trace's first 100,000 value sizes.

Examples:
  kvlab replay cluster52.csv.zst --target redis --keys 1000000
  kvlab replay trace.csv --speed 2 --target postgres --cache redis --cache-start cold"
)]
pub struct ReplayArgs {
    /// The trace file (plain text or zstd).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Times the trace's own pace: 2 replays it twice as fast, 0.5 at half speed.
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    pub speed: f64,
    /// The target and load, as for `kvlab run`.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `--duration` as a replay reads it (no 10 s default: the trace's end).
pub const DURATION_HELP: &str =
    "Seconds to measure [default: to the trace's end, less the warm-up]";
/// `--warmup` as a replay reads it (no 2 s default).
pub const WARMUP_HELP: &str =
    "Seconds of the trace replayed before measuring, excluded from the figures [default: 0]";

/// `kvlab run` flags a replay does not take (the trace decides them), hidden
/// from its help: clap's id, the flag, and why.
pub const REFUSED: [(&str, &str, &str); 10] = [
    (
        "rate",
        "--rate",
        "the trace's timestamps set the rate; use --speed",
    ),
    (
        "rate_shape",
        "--rate-shape",
        "the trace's timestamps shape the rate",
    ),
    ("ratio", "--ratio", "the trace's operations set the mix"),
    (
        "key_distribution",
        "--key-distribution",
        "the trace's keys are replayed",
    ),
    ("profile", "--profile", "the trace is the workload"),
    ("batch", "--batch", "each trace line is one request"),
    (
        "requests",
        "--requests",
        "a replay runs to the trace's end, or for --duration",
    ),
    ("shard", "--shard", "a replay is one client"),
    ("start_at", "--start-at", "a replay is one client"),
    (
        "background_writes",
        "--background-writes",
        "the trace's writes are replayed",
    ),
];

/// Runs `kvlab replay`.
pub fn exec(args: &ReplayArgs, shutdown: &AtomicBool) -> Result<()> {
    let mut plan = checked_plan(args)?;
    let scan = scan_trace(&args.trace, shutdown)?;
    follow_trace(&mut plan, args, &scan)?;
    let opts = runner::RunOptions {
        progress: true,
        notes: true,
    };
    let keys = plan.workload.keys;
    let (mut result, cleaned) =
        runner::foreign::guarded(&plan, keys, opts, || runner::run(&plan, opts, shutdown))?;
    result.cleanup = cleaned;
    show_result(&result, args.run.json.as_deref())?;
    check_valid(&result, "the replay")
}

/// The flags checked and the plan of `kvlab run`'s, before the trace is read.
fn checked_plan(args: &ReplayArgs) -> Result<RunPlan> {
    refuse_flags(&args.run)?;
    if !(args.speed.is_finite() && args.speed > 0.0 && args.speed <= 1e6) {
        return Err(UsageError::bad(
            "--speed",
            format!("{} is not a positive factor", args.speed),
            "give e.g. --speed 1 (the trace's pace), 2 (twice as fast) or 0.5",
        )
        .into());
    }
    if !args.trace.is_file() {
        return Err(UsageError::bad(
            "TRACE",
            format!("'{}' is not a file", args.trace.display()),
            "give the path of a cache-trace CSV file (plain or .zst)",
        )
        .into());
    }
    let plan = args.run.to_plan()?;
    if let Some(p) = &args.run.json {
        check_writable(p)?;
    }
    if plan
        .cache
        .as_ref()
        .is_some_and(|c| c.start == CacheStart::Settle)
    {
        return Err(UsageError::conflict(
            "--cache-start",
            "settle warms the cache with kvlab's own workload, not the trace",
            "use --cache-start cold (the trace warms it, measured) or warm",
        )
        .into());
    }
    Ok(plan)
}

/// Refuses the `kvlab run` flags whose answer the trace gives.
fn refuse_flags(r: &RunArgs) -> Result<(), UsageError> {
    // In the order of REFUSED.
    let given = [
        r.rate.is_some(),
        r.rate_shape.is_some(),
        r.ratio.is_some(),
        r.key_distribution.is_some(),
        r.profile.is_some(),
        r.batch.is_some(),
        r.requests.is_some(),
        r.shard.is_some(),
        r.start_at.is_some(),
        r.background_writes.is_some(),
    ];
    match REFUSED.iter().zip(given).find(|(_, given)| *given) {
        Some(((_, flag, why), _)) => Err(UsageError::conflict(
            *flag,
            format!("kvlab replay does not take it: {why}"),
            format!("drop {flag}"),
        )),
        None => Ok(()),
    }
}

/// Reads the trace at `path` to its end: what it holds, checked.
fn scan_trace(path: &Path, shutdown: &AtomicBool) -> Result<Scan> {
    eprintln!("kvlab: reading the trace {} to its end", path.display());
    let input =
        feed::open(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let (scan, err) = feed::scan(input, shutdown);
    if let Some(e) = err {
        bail!("cannot read the trace {} {e}", path.display());
    }
    check_scan(&scan, path)?;
    Ok(scan)
}

/// Sets what the trace decides in `plan`: the value sizes (unless
/// `--value-size`), the window (to the trace's end, or `--duration`), the
/// rate, the mix, and the trace itself.
fn follow_trace(plan: &mut RunPlan, args: &ReplayArgs, scan: &Scan) -> Result<(), UsageError> {
    let warmup = args.run.warmup.unwrap_or(0.0);
    plan.load.warmup_s = warmup;
    if args.run.value_size.is_none()
        && let Some(d) = scan.size_dist()
    {
        plan.workload.set_sizes(d);
    }
    let path = &args.trace;
    let trace = TracePlan {
        path: path.clone(),
        speed: args.speed,
        compressed: feed::compressed(path),
        span_s: scan.span_s(),
        requests: scan.modelled(Modelled::Get) + scan.modelled(Modelled::Set),
        sizes_from_trace: args.run.value_size.is_none() && !scan.sizes.is_empty(),
    };
    let whole = trace.replay_s();
    if warmup >= whole {
        return Err(UsageError::bad(
            "--warmup",
            format!("{warmup} s is as long as the whole replay ({whole:.1} s)"),
            "give a shorter --warmup (a replay's default is 0)",
        ));
    }
    // The window lasts to the trace's end (the replay stops there), or --duration.
    let to_end = whole - warmup + 0.5;
    plan.load.stop = Stop::Duration(args.run.duration.map_or(to_end, |d| d.min(to_end)));
    plan.load.rate = Some(trace.rate());
    plan.workload.ratio = crate::workload::Ratio {
        set: u32::from(scan.modelled(Modelled::Set) > 0),
        get: 1,
    };
    plan.workload.trace = Some(trace);
    Ok(())
}

/// Fails on a file that is not a cache trace, or holds nothing to send.
fn check_scan(s: &Scan, path: &Path) -> Result<()> {
    let why = s
        .first_malformed
        .map(|(n, w)| format!(" (line {n}: {w})"))
        .unwrap_or_default();
    if s.lines > 0 && s.malformed * 2 > s.lines {
        bail!(
            "{}: {} of its {} lines are not in the cache-trace CSV format `timestamp,key,key size,value size,client id,operation,TTL`{why}",
            path.display(),
            s.malformed,
            s.lines
        );
    }
    if s.modelled(Modelled::Get) + s.modelled(Modelled::Set) == 0 {
        bail!(
            "{}: no GET or SET to replay in its {} lines{why}; kvlab sends get, gets, set, add, replace and cas",
            path.display(),
            s.lines
        );
    }
    Ok(())
}
