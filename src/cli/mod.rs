//! The command line (clap lives only here): parses flags and builds a [`RunPlan`].
//!
//! # Layout
//! - this file: the commands and the flags of those without their own file.
//! - `run`: [`RunArgs`], `kvlab run`'s flags; `plan`: them checked into a [`RunPlan`].
//! - `aside`: the cache-aside flags and `--event`; `near`: `--near-cache`;
//!   `tls`: the `--tls*` flags;
//!   [`metrics`]: `--metrics*`; `help`: help texts from the registry.
//! - [`commands`]: one file per subcommand.
//!
//! [`RunPlan`]: crate::plan::RunPlan

mod aside;
pub mod commands;
mod help;
pub mod metrics;
mod near;
mod plan;
mod run;
mod shared;
mod tls;
pub use run::RunArgs;
pub use tls::TlsArgs;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::driver::parse_opt;
use crate::error::UsageError;
use crate::plan::TargetSpec;
use crate::products;
use crate::results::decide::KVLAB;

/// kvlab: do you still need a cache in front of your database? Measure it.
#[derive(Debug, Parser)]
#[command(name = "kvlab", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the process's arguments. `kvlab capacity` shares `kvlab run`'s
    /// flags but does not list those it refuses: `--rate` (it chooses the
    /// rates itself), `--shard` and `--start-at` (it is one client).
    pub fn parse_args() -> Result<Cli, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let hide = |c: clap::Command, ids: &mut dyn Iterator<Item = &'static str>| {
            ids.fold(c, |c, id| c.mut_arg(id, |a| a.hide(true)))
        };
        let refused = commands::replay::REFUSED.iter().map(|(id, _, _)| *id);
        let cmd = Cli::command()
            .mut_subcommand("capacity", |c| {
                hide(
                    c,
                    &mut ["rate", "rate_shape", "shard", "start_at"].into_iter(),
                )
            })
            .mut_subcommand("decide", decide_flags)
            .mut_subcommand("replay", |c| {
                hide(c, &mut refused.clone())
                    .mut_arg("duration", |a| a.help(commands::replay::DURATION_HELP))
                    .mut_arg("warmup", |a| a.help(commands::replay::WARMUP_HELP))
            });
        let matches = cmd.try_get_matches()?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        if let (Command::Decide(d), Some(m)) =
            (&mut cli.command, matches.subcommand_matches("decide"))
        {
            d.given = given(m);
        }
        Ok(cli)
    }
}

/// The ids of the flags `m` was given on its command line.
pub fn given(m: &clap::ArgMatches) -> Vec<String> {
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.as_str().to_string())
        .collect()
}

/// A command-line error in one line: clap's first line, with the list it
/// introduces (e.g. the required flags missing) joined onto it.
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut line = first.trim_start_matches("error: ").trim_end().to_string();
    if line.ends_with(':') {
        let listed: Vec<&str> = lines
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        line = format!("{} {}", line, listed.join(", "));
    }
    line
}

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

/// kvlab's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One measured run of one workload against one target.
    Run(Box<RunArgs>),
    /// Drive a target from a trace (the public cache-trace CSV format, plain
    /// or zstd), open loop at the trace's own times.
    Replay(Box<commands::replay::ReplayArgs>),
    /// Start a managed server, print its URL, and keep it until Ctrl-C (for
    /// driving it with other tools beside kvlab).
    Serve(ServeArgs),
    /// Run a study file (targets x sweep), save results, write the report.
    Study(StudyArgs),
    /// Write report.html and report.md from study results files.
    Report(commands::report::ReportArgs),
    #[command(about = commands::demo::about())]
    Demo(DemoArgs),
    /// Find the highest rate a target sustains within latency limits (p99,
    /// and p50 or p99.9 if given), with its bracket and headroom.
    Capacity(Box<CapacityArgs>),
    /// The answer for a stated load: keep the cache in front of the database
    /// or not, what each way costs, and what a cache loss does — measured.
    Decide(Box<DecideArgs>),
    /// Watch running servers (a cache, a database) read-only and state the
    /// load they serve as `kvlab decide`'s flags.
    Observe(Box<commands::observe::ObserveArgs>),
    /// Merge the results of the clients of one sharded run (`kvlab run
    /// --shard I/N`) into one result, exactly (histograms merged, never averaged).
    Merge(commands::merge::MergeArgs),
    /// Compare two results (runs or studies): each figure better, worse, below
    /// threshold or within noise, with its significance.
    Compare(commands::compare::CompareArgs),
}

/// Flags of `kvlab capacity`: those of `kvlab run` (but `--rate`) and the goal.
#[derive(Debug, Args)]
#[command(after_help = format!("Example:\n  {}", products::CAPACITY_EXAMPLE))]
pub struct CapacityArgs {
    /// The latency limits.
    #[command(flatten)]
    pub goal: GoalArgs,
    /// Most rates tried after the closed-loop run (a failing rate is run twice).
    #[arg(long, default_value_t = 7)]
    pub steps: usize,
    /// The workload and target, as for `kvlab run`.
    #[command(flatten)]
    pub run: RunArgs,
}

/// A latency goal: p99, and p50 or p99.9 if given (`kvlab capacity`,
/// `kvlab decide`).
#[derive(Debug, Args)]
pub struct GoalArgs {
    /// Largest acceptable p99 latency, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p99_ms: f64,
    /// Also a largest p50, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p50_ms: Option<f64>,
    /// Also a largest p99.9, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p999_ms: Option<f64>,
}

/// Flags of `kvlab decide`: the load as stated, the machines and prices to
/// size with, and the data, workload, database and cache as for `kvlab run`.
#[derive(Clone, Debug, Args)]
#[command(after_help = "Example:
  kvlab decide --target postgres --cache redis --rps 5000 --p99-ms 5 \\
    --keys 100000 --value-size 1024 --ratio 1:19 --key-distribution zipf")]
pub struct DecideArgs {
    /// Requests per second at peak.
    #[arg(long, value_name = "RPS", required_unless_present_any = ["from", "observe", "check"])]
    pub rps: Option<f64>,
    /// Largest acceptable p99 latency, milliseconds.
    #[arg(long, value_name = "MS", required_unless_present_any = ["from", "check"])]
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
    #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "trace"])]
    pub from: Option<PathBuf>,
    /// Check the decision saved in DIR (an earlier --out): run cache-aside
    /// at the size it chose, at the stated keys (or the most this machine
    /// holds) and the rate its copy was measured at, on servers kvlab
    /// starts; print each figure predicted against measured, write
    /// DIR/check.json; exit non-zero when one is past its tolerance.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["from", "resume", "observe", "trace", "out"])]
    pub check: Option<PathBuf>,
    /// Watch the --target and --cache given by URL first (read-only, as
    /// `kvlab observe`) and take the load they serve (rate, mix, keys, value
    /// sizes, skew) for each of those flags not given.
    #[arg(long, conflicts_with_all = ["from", "trace"])]
    pub observe: bool,
    /// How long --observe watches, seconds.
    #[arg(
        long,
        default_value_t = 60.0,
        value_name = "SECS",
        requires = "observe"
    )]
    pub observe_seconds: f64,
    /// Measure on the servers --observe watched, not beside them: kvlab then
    /// writes its copy into them and drives them to their capacity, under
    /// the team's own load. By default it measures on servers of the same
    /// products it starts itself.
    #[arg(long, requires = "observe")]
    pub on_observed: bool,
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
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub resume: Option<PathBuf>,
    /// The flags given on the command line (or in a study's `[decide]`), by
    /// id: what `--from` changes of the saved load.
    #[arg(skip)]
    pub given: Vec<String>,
    /// Cores of one production machine.
    #[arg(long, default_value_t = KVLAB.policy.machine_cores, value_name = "N")]
    pub machine_cores: f64,
    /// Memory of one production machine, GiB.
    #[arg(long, default_value_t = KVLAB.policy.machine_gib, value_name = "GIB")]
    pub machine_gib: f64,
    /// Keep the cache where both meet the goal only if it saves machines and
    /// at least this share of the database alone's monthly cost, percent
    /// [default: 10].
    #[arg(long, value_name = "PCT")]
    pub keep_saving: Option<f64>,
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
    pub run: RunArgs,
}

/// Flags of `kvlab study`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  kvlab study studies/s0.toml
  kvlab study s2 --out /tmp/s2             # a built-in study, by name
  kvlab study s0 --scale original --dry-run")]
pub struct StudyArgs {
    /// The study file (TOML; see studies/ for annotated examples), or the name
    /// of a built-in study.
    #[arg(help = format!("The study file (TOML; see studies/ for annotated examples), or the name of a built-in study ({})", crate::modes::study::builtin_names()))]
    pub file: PathBuf,
    /// `quick`: as written, scaled for a small machine; `original`: the
    /// published study's parameters (its `[original]` tables).
    #[arg(long, value_enum, default_value = "quick")]
    pub scale: crate::modes::study::Scale,
    /// Output directory [default: the study's `output`, else results/NAME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the plan and run nothing: the settings every point shares
    /// (cache start, memory, events, [sizing]...), each target's, each point's
    /// swept values, and how long the study takes (about, and at most).
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub metrics: metrics::MetricsArgs,
}

/// Flags of `kvlab demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output directory.
    #[arg(long, default_value = "results/demo")]
    pub out: PathBuf,
}

/// Flags of `kvlab serve`.
#[derive(Debug, Args)]
#[command(after_help = format!("Example:\n  {}", products::SERVE_EXAMPLE))]
pub struct ServeArgs {
    /// The product to start (the registry's names).
    #[arg(long, help = products::all_names(" | "))]
    pub target: String,
    /// Setting for the server, KEY=VALUE (repeatable).
    #[arg(long = "server-opt", value_name = "KEY=VALUE", value_parser = parse_opt)]
    pub server_opt: Vec<(String, String)>,
}

impl ServeArgs {
    /// The managed target to start.
    pub fn to_target(&self) -> Result<TargetSpec, UsageError> {
        let mut t: TargetSpec = self.target.parse()?;
        if t.external.is_some() {
            return Err(UsageError::bad(
                "--target",
                "kvlab serve starts a server; a URL names one that already runs",
                format!("give {}", products::all_names(", ")),
            ));
        }
        t.server_opts = self.server_opt.iter().cloned().collect();
        Ok(t)
    }
}
