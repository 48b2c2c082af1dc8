//! The command line (clap lives only here): parses flags and builds a [`RunPlan`].
//!
//! # Layout
//! - this file: the commands and the flags of those without their own file.
//! - `decide`: [`DecideArgs`], `kvlab decide`'s flags, and their one check
//!   of what goes together (the command line's and a study's `[decide]`).
//! - `run`: [`RunArgs`], `kvlab run`'s flags; `plan`: them checked into a [`RunPlan`].
//! - `aside`: the cache-aside flags and `--event`; `near`: `--near-cache`;
//!   `tls`: the `--tls*` flags;
//!   [`metrics`]: `--metrics*`; `help`: help texts from the registry.
//! - [`commands`]: one file per subcommand.
//!
//! [`RunPlan`]: crate::plan::RunPlan

mod aside;
pub mod commands;
mod decide;
mod help;
pub mod metrics;
mod near;
mod plan;
mod run;
mod shared;
mod tls;
pub use decide::{DecideArgs, decide_command, decide_flags, missing};
pub use run::RunArgs;
pub use tls::TlsArgs;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::driver::parse_opt;
use crate::error::UsageError;
use crate::plan::TargetSpec;
use crate::products;

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

/// The ids of `kvlab decide`'s flags `m` was given on its command line
/// (not the groups clap makes of their structs).
pub fn given(m: &clap::ArgMatches) -> Vec<String> {
    let cmd = decide_command();
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .filter(|id| cmd.get_arguments().any(|a| a.get_id() == *id))
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
    /// List the price catalogs `kvlab decide --deploy` prices from (each
    /// with its date and what it lacks), or one in full with every source.
    Prices(commands::prices::PricesArgs),
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
