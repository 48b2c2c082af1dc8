//! `kvlab decide`'s flags ([`DecideArgs`]) and their one check of what goes
//! together, the command line's and a study's `[decide]` (which maps its
//! keys onto these same fields, `commands/decide/study.rs`).

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::RunArgs;
use crate::error::UsageError;
use crate::results::decide::KVLAB;

/// `kvlab decide`'s flags as shown and parsed: those it refuses hidden,
/// the target postgres unless given (also a study's `[decide]`).
pub fn decide_flags(c: clap::Command) -> clap::Command {
    ["rate", "shard", "start_at", "events"]
        .into_iter()
        .fold(c, |c, id| c.mut_arg(id, |a| a.hide(true)))
        .mut_arg("target", |a| a.default_value("postgres"))
        .mut_arg("rate_shape", |a| a.help(DECIDE_SHAPE_HELP))
}

/// `--rate-shape` as `kvlab decide` takes it.
const DECIDE_SHAPE_HELP: &str = "How the stated load moves over a day, --rps being its peak: sine (one cycle a day), step (the peak from noon) or ramp (up over the day), e.g. sine:ratio=3 (peak over trough, default 2). Every architecture is sized, and the cache lost, at the peak; the day's mean is said beside it";

/// Flags of `kvlab decide`: the load as stated, the machines and prices to
/// size with, and the data, workload, database and cache as for `kvlab run`.
#[derive(Clone, Debug, Args, Serialize, Deserialize)]
#[command(after_help = "Example:
  kvlab decide --target postgres --cache redis --rps 5000 --p99-ms 5 \\
    --keys 100000 --value-size 1024 --ratio 1:19 --key-distribution zipf")]
pub struct DecideArgs {
    /// Requests per second at peak.
    #[arg(long, value_name = "RPS")]
    pub rps: Option<f64>,
    /// Largest acceptable p99 latency, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p99_ms: Option<f64>,
    /// Also a largest p50, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p50_ms: Option<f64>,
    /// Also a largest p99.9, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p999_ms: Option<f64>,
    /// Recompute the decision saved in DIR (an earlier --out) without running
    /// anything: with another --rps, --keys, goal the saved runs cover,
    /// prices or machines.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Check the decision saved in DIR (an earlier --out): run cache-aside
    /// at the size it chose, at the stated keys (or the most this machine
    /// holds) and the rate its copy was measured at, on servers kvlab
    /// starts; print each figure predicted against measured, write
    /// DIR/check.json; exit non-zero when one is past its tolerance.
    #[arg(long, value_name = "DIR")]
    pub check: Option<PathBuf>,
    /// Watch the --target and --cache given by URL first (read-only, as
    /// `kvlab observe`) and take the load they serve (rate, mix, keys, value
    /// sizes, skew) for each of those flags not given.
    #[arg(long)]
    pub observe: bool,
    /// How long --observe watches, seconds.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub observe_seconds: f64,
    /// With --observe: the application's keys among the cache's, as a glob
    /// (`user:*`), as `kvlab observe --keys-like`.
    #[arg(long, value_name = "GLOB")]
    pub keys_like: Option<String>,
    /// Measure on the servers --observe watched, not beside them: kvlab then
    /// writes its copy into them and drives them to their capacity, under
    /// the team's own load. By default it measures on servers of the same
    /// products it starts itself.
    #[arg(long)]
    pub on_observed: bool,
    /// With --resume and --observe: watch the servers again, not the
    /// observation the decision saved (observed.json).
    #[arg(long)]
    pub observe_again: bool,
    /// The figures --observe stated, each with its source (filled by kvlab).
    #[arg(skip)]
    pub observed: Vec<String>,
    /// The memory limit of the cache --observe watched, bytes, when kvlab
    /// measures beside it (filled by kvlab): a point of the curve at its size.
    #[arg(skip)]
    pub observed_cache_limit: Option<u64>,
    /// Go on with the decision saved in DIR (cut short by Ctrl-C or an
    /// error): the finished steps whose plans match are reused, the rest
    /// measured; give the flags it was started with.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// The flags given on the command line (or in a study's `[decide]`), by
    /// id: what `--from` changes of the saved load.
    #[arg(skip)]
    pub given: Vec<String>,
    /// Where the servers run and how they are priced: aws-managed (RDS and
    /// ElastiCache), aws-vms (EC2), gcp-managed (Cloud SQL and Memorystore),
    /// gcp-vms, azure-vms, managed or vms (of the --prices catalog), or own
    /// (--machine-cores and --price-*, no catalog) [default: aws-managed;
    /// own where a --machine-* or --price-* flag is given].
    #[arg(long, value_name = "NAME")]
    pub deploy: Option<String>,
    /// A price catalog in kvlab's format (see `kvlab prices`): a team's
    /// negotiated prices or another region, for --deploy's shapes.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Price a managed database with a standby in another zone (Multi-AZ,
    /// Cloud SQL HA): its instance and storage times the catalog's factor.
    #[arg(long)]
    pub multi_az: bool,
    /// Weigh cache-aside with its database sized to carry the whole load
    /// while a lost cache warms (default: as sized for its steady load, the
    /// other said beside it).
    #[arg(long)]
    pub survive_cache_loss: bool,
    /// Cores of one production machine (--deploy own).
    #[arg(long, default_value_t = KVLAB.policy.machine_cores, value_name = "N")]
    pub machine_cores: f64,
    /// Memory of one production machine, GiB (--deploy own).
    #[arg(long, default_value_t = KVLAB.policy.machine_gib, value_name = "GIB")]
    pub machine_gib: f64,
    /// Keep the cache where both meet the goal only if it saves at least
    /// this share of the database alone's monthly cost, percent
    /// [default: 10].
    #[arg(long, value_name = "PCT")]
    pub keep_saving: Option<f64>,
    /// Keep the cache where both meet the goal only if it also saves at
    /// least this much a month, in the prices' currency [default: 0].
    #[arg(long, value_name = "AMOUNT")]
    pub keep_saving_month: Option<f64>,
    /// Price of a core for an hour [default: 0.04, an example].
    #[arg(long, value_name = "PRICE")]
    pub price_core_hour: Option<f64>,
    /// Price of a GiB of memory for an hour [default: 0.005, an example].
    #[arg(long, value_name = "PRICE")]
    pub price_gib_hour: Option<f64>,
    /// The prices' currency, as a label (e.g. EUR).
    #[arg(long, value_name = "LABEL")]
    pub currency: Option<String>,
    /// Price of one machine for a month [default: its cores and GiB at the
    /// hourly prices, 730 hours].
    #[arg(long, value_name = "PRICE")]
    pub price_machine_month: Option<f64>,
    /// The servers of an architecture share machines (packed together);
    /// default: each server on whole machines of its own.
    #[arg(long)]
    pub shared: bool,
    /// Cores of a database given by URL (whose CPU kvlab cannot read): its
    /// capacity is taken per these cores.
    #[arg(long, value_name = "N")]
    pub target_cores: Option<f64>,
    /// Cores of a cache given by URL whose CPU kvlab cannot read.
    #[arg(long, value_name = "N")]
    pub cache_cores: Option<f64>,
    /// Application instances, each with one near cache shared by its
    /// threads: the near-cache rows run one client thread per instance,
    /// whatever the measuring host.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub app_instances: u32,
    /// Shorter runs, fewer search steps, at most 100,000 keys measured (the demo).
    #[arg(long)]
    pub quick: bool,
    /// A trace (the cache-trace CSV format, plain or zstd) the keys, mix,
    /// value sizes and skew are taken from (flags given beside it win); its
    /// own miss-ratio curve is computed and held against the measured one.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Directory for decision.json, report.html and the measurements (each
    /// step saved as it finishes) [default: results/decide; with --from, DIR].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The data, workload, database (--target, postgres unless given) and
    /// cache (--cache, redis unless given), as for `kvlab run`.
    #[command(flatten)]
    #[serde(flatten)]
    pub run: RunArgs,
}

/// `kvlab decide`'s flags alone, to parse or to take the defaults of.
#[derive(clap::Parser)]
#[command(name = "kvlab decide")]
struct Flags {
    #[command(flatten)]
    args: DecideArgs,
}

/// `kvlab decide`'s flags as shown and parsed, by themselves.
pub fn decide_command() -> clap::Command {
    decide_flags(<Flags as clap::CommandFactory>::command())
}

impl DecideArgs {
    /// Every flag at its default, as `kvlab decide` with none given.
    pub fn defaults() -> anyhow::Result<DecideArgs> {
        use clap::FromArgMatches;
        let m = decide_command().try_get_matches_from(["decide"])?;
        Ok(Flags::from_arg_matches(&m)?.args)
    }

    /// What goes together, checked before anything runs: `--from`,
    /// `--check` and a measuring decision (`--resume`, `--observe`) are
    /// three forms that take each other's flags as a mistake; the watching
    /// flags need `--observe`; the flags decide sets itself are refused; a
    /// measuring decision needs its load and goal.
    pub fn check_combination(&self) -> Result<(), UsageError> {
        let observe_seconds = self.given.iter().any(|id| id == "observe_seconds");
        let (from, check, resume) = (
            self.from.is_some(),
            self.check.is_some(),
            self.resume.is_some(),
        );
        let (trace, out) = (self.trace.is_some(), self.out.is_some());
        let one = "drop one of them";
        let watch = "give --observe, or drop it";
        for (both, flags, why, fix) in [
            (
                from && resume,
                "--from/--resume",
                "--from recomputes a decision without running anything; --resume goes on measuring one",
                one,
            ),
            (
                from && trace,
                "--from/--trace",
                "--from recomputes from the runs saved, which a trace cannot change",
                one,
            ),
            (
                check && (from || resume || self.observe),
                "--check/--from/--resume/--observe",
                "--check runs what a saved decision sized, as it was decided",
                one,
            ),
            (
                check && (trace || out),
                "--check/--trace/--out",
                "--check runs what a saved decision sized and writes DIR/check.json",
                one,
            ),
            (
                self.observe && (from || trace),
                "--observe/--from/--trace",
                "--observe takes the load from the servers watched, not from saved runs or a trace",
                one,
            ),
            (
                resume && out,
                "--resume/--out",
                "--resume writes into the decision it goes on with",
                one,
            ),
            (
                observe_seconds && !self.observe,
                "--observe-seconds",
                "it is how long --observe watches, and --observe is not given",
                watch,
            ),
            (
                self.observe_again && !(self.observe && resume),
                "--observe-again",
                "it watches again a decision resumed with --observe (--resume DIR --observe)",
                "give --resume DIR and --observe with it, or drop it",
            ),
            (
                self.on_observed && !self.observe,
                "--on-observed",
                "it measures on the servers --observe watched, and --observe is not given",
                watch,
            ),
            (
                self.keys_like.is_some() && !self.observe,
                "--keys-like",
                "it names the application's keys --observe samples, and --observe is not given",
                watch,
            ),
        ] {
            if both {
                return Err(UsageError::conflict(flags, why, fix));
            }
        }
        refuse(self)?;
        match from || check {
            true => Ok(()),
            false => missing(self.rps.is_some() || self.observe, self.p99_ms.is_some()),
        }
    }
}

/// The error of a measuring decision without its rate (`rps`: given, or to
/// be observed) or its goal (`p99`).
pub fn missing(rps: bool, p99: bool) -> Result<(), UsageError> {
    let flags = match (rps, p99) {
        (true, true) => return Ok(()),
        (false, true) => "--rps",
        (true, false) => "--p99-ms",
        (false, false) => "--rps/--p99-ms",
    };
    Err(UsageError::bad(
        flags,
        "missing",
        "give the load at peak and its goal, e.g. --rps 20000 --p99-ms 5 (or --from DIR to recompute a saved decision)",
    ))
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
