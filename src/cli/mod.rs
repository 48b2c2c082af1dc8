//! The command line (clap lives only here): parses flags and builds a [`RunPlan`].

mod aside;
pub mod commands;
mod help;
pub mod metrics;
mod tls;
pub use tls::TlsArgs;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::driver::parse_opt;
use crate::error::UsageError;
use crate::plan::{KeyDistribution, LoadShape, Ratio, RunPlan, Stop, TargetSpec, Workload};
use crate::products;
use help::{consistency_help, query_mode_help, schema_help};

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
        let hide = |ids: &'static [&'static str]| {
            move |c: clap::Command| ids.iter().fold(c, |c, id| c.mut_arg(*id, |a| a.hide(true)))
        };
        let cmd = Cli::command()
            .mut_subcommand("capacity", hide(&["rate", "shard", "start_at"]))
            .mut_subcommand("replay", |c| {
                hide(&commands::replay::REFUSED)(c)
                    .mut_arg("duration", |a| a.help(commands::replay::DURATION_HELP))
                    .mut_arg("warmup", |a| a.help(commands::replay::WARMUP_HELP))
            });
        Cli::from_arg_matches(&cmd.try_get_matches()?)
    }
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
    #[command(about = DEMO_ABOUT)]
    Demo(DemoArgs),
    /// Find the highest rate a target sustains within latency limits (p99,
    /// and p50 or p99.9 if given), with its bracket and headroom.
    Capacity(Box<CapacityArgs>),
    /// Merge the results of the clients of one sharded run (`kvlab run
    /// --shard I/N`) into one result, exactly (histograms merged, never averaged).
    Merge(commands::merge::MergeArgs),
    /// Compare two results (runs or studies): each figure better, worse, below
    /// threshold or within noise, with its significance.
    Compare(commands::compare::CompareArgs),
}

/// What `kvlab demo` does, for its help (a unit test keeps the target list
/// equal to the demo study's).
pub const DEMO_ABOUT: &str = "A quick study (studies/demo.toml): read-only point reads against managed redis, valkey, memcached, postgres and mariadb";

/// Flags of `kvlab capacity`: those of `kvlab run` (but `--rate`) and the goal.
#[derive(Debug, Args)]
#[command(after_help = format!("Example:\n  {}", products::CAPACITY_EXAMPLE))]
pub struct CapacityArgs {
    /// Largest acceptable p99 latency, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p99_ms: f64,
    /// Also a largest p50, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p50_ms: Option<f64>,
    /// Also a largest p99.9, milliseconds.
    #[arg(long, value_name = "MS")]
    pub p999_ms: Option<f64>,
    /// Most rates tried after the closed-loop run (a failing rate is run twice).
    #[arg(long, default_value_t = 7)]
    pub steps: usize,
    /// The workload and target, as for `kvlab run`.
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
    /// of a built-in study (s0, s1, s2, s3, s3-read, s4, tarantool, cluster,
    /// pooler, cache-aside, demo, tls, socket, cache-size, cold-start,
    /// cache-failure, profiles, sizing).
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

/// Flags of `kvlab run`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true, args_override_self = true, after_help = products::RUN_EXAMPLES)]
pub struct RunArgs {
    /// The target: a product kvlab starts, or a URL of a running server (the
    /// help lists the registry's names and URL forms).
    #[arg(long, default_value = products::DEFAULT_TARGET, help = products::target_help())]
    pub target: String,
    /// Setting for a managed server, KEY=VALUE (repeatable), e.g. io-threads=4,
    /// threads=2, memory-mb=4096.
    #[arg(long = "server-opt", value_name = "KEY=VALUE", value_parser = parse_opt)]
    pub server_opt: Vec<(String, String)>,
    /// TLS to the target.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Number of distinct keys.
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    pub keys: u64,
    /// Value size in bytes (default 256), or sizes by key: a weighted list
    /// `100:80,1000:15,10000:5`, a range `64-4096`, `pareto:64-65536[:ALPHA]`.
    #[arg(long, value_name = "B|DIST")]
    pub value_size: Option<String>,
    /// SET:GET ratio, e.g. 0:1 (read-only, the default), 1:10.
    #[arg(long, value_name = "SET:GET")]
    pub ratio: Option<String>,
    /// uniform (the default) | zipf | zipf:THETA | sequential.
    #[arg(long, value_name = "DIST")]
    pub key_distribution: Option<String>,
    /// A production workload: value sizes, SET:GET, key popularity and TTL of
    /// a published cache cluster (twitter-c1, twitter-c4, twitter-c7,
    /// twitter-c19, twitter-c29); flags given beside it win.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Keys one GET reads, with the protocol's multi-key read (MGET, `get k1
    /// k2 …`, `= ANY($1)`, `IN (…)`): N, or a mix as KEYS:WEIGHT,…
    #[arg(long, value_name = "N|MIX")]
    pub batch: Option<String>,
    /// Prefix of every key kvlab reads or writes.
    #[arg(long, default_value = "kvlab:")]
    pub key_prefix: String,
    /// Total connections.
    #[arg(long, default_value_t = 50, value_name = "C")]
    pub connections: usize,
    /// Client threads [default: number of cores].
    #[arg(long, value_name = "T")]
    pub threads: Option<usize>,
    /// Requests in flight per connection.
    #[arg(long, default_value_t = 1, value_name = "P")]
    pub pipeline: usize,
    /// Seconds to measure [default: 10].
    #[arg(long, value_name = "SECS", conflicts_with = "requests")]
    pub duration: Option<f64>,
    /// Measure this many requests instead of a duration.
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// Seconds of load before measuring, excluded from the figures [default: 2;
    /// 0 with --cache-start cold, whose warm-up curve is the result].
    #[arg(long, value_name = "SECS")]
    pub warmup: Option<f64>,
    /// Open loop: total requests per second on a fixed schedule; latency is taken
    /// from each request's intended send time.
    #[arg(long, value_name = "RPS")]
    pub rate: Option<f64>,
    /// Seconds a request may wait for its reply before it counts as a timeout.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub timeout: f64,
    /// Keep per-second figures for the first N seconds of the window, per-minute
    /// ones after (bounds memory and JSON of long runs).
    #[arg(long, default_value_t = crate::plan::TIMELINE_SECONDS, value_name = "N")]
    pub timeline_seconds: u32,
    /// Do not load the keys before measuring.
    #[arg(long)]
    pub no_load: bool,
    /// This process is client I of N of one run (0 <= I < N): connections,
    /// --rate and --requests are the whole run's, split over the N clients;
    /// each loads its slice of the keys; key draws stay over all keys.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Start the measured phase at this wall-clock instant (Unix milliseconds
    /// or RFC 3339); connecting, loading and warm-up happen before it, and a
    /// client not ready in time fails rather than start late.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Storage engine of kvlab's table (databases that have engines).
    #[arg(long, value_name = "ENGINE", help = schema_help("table_engine", "storage engine of kvlab's table"))]
    pub table_engine: Option<String>,
    /// Create kvlab's table UNLOGGED (databases that have such tables).
    #[arg(long, help = schema_help("unlogged", "create kvlab's table UNLOGGED"))]
    pub unlogged: bool,
    /// Consistency level of every request (databases that have levels).
    #[arg(long, value_name = "LEVEL", help = consistency_help())]
    pub consistency: Option<String>,
    /// How requests are sent (databases that have modes).
    #[arg(long, value_name = "MODE", help = query_mode_help())]
    pub query_mode: Option<String>,
    /// A connection pooler kvlab starts in front of the managed database.
    #[arg(long, value_name = "POOLER", help = format!("A connection pooler kvlab starts in front of the managed database: {} (any other pooler: its URL as --target)", products::pooler_names(" | ")))]
    pub pooler: Option<String>,
    /// Setting for the pooler, KEY=VALUE (repeatable), e.g. pool_mode=transaction.
    #[arg(long = "pooler-opt", value_name = "KEY=VALUE", value_parser = parse_opt)]
    pub pooler_opt: Vec<(String, String)>,
    /// Databases: drop and reload kvlab's own table even if it looks right.
    #[arg(long)]
    pub recreate: bool,
    /// Write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Seed of the key and operation generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A separate writer doing this many SETs per second beside the measured
    /// load, reported on its own (e.g. 65, as in the query-cache study).
    #[arg(long, value_name = "N")]
    pub background_writes: Option<f64>,
    /// Loaded and written keys expire after this many seconds (caches; a
    /// cache-aside run's cache: --cache-ttl). Misses after a key's TTL are
    /// counted as expired.
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u32>,
    #[command(flatten)]
    pub aside: aside::AsideArgs,
    #[command(flatten)]
    pub metrics: metrics::MetricsArgs,
    /// What kvlab does to a server it started, at a second of the measured
    /// window (repeatable): SECOND:ACTION[:DOWN], e.g. 10:restart-cache:2.
    #[arg(long = "event", value_name = "SECOND:ACTION", help = format!("What kvlab does to a server it started, at a second of the measured window (repeatable): SECOND:ACTION[:DOWN], e.g. 10:restart-cache:2. Actions: {}", crate::plan::events::ACTIONS))]
    pub events: Vec<String>,
}

impl RunArgs {
    /// `--warmup`, or its default.
    fn warmup_s(&self) -> f64 {
        self.warmup.unwrap_or(2.0)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl RunArgs {
    /// `--shard` and `--start-at`, checked against the target and the load.
    fn sharding(
        &self,
        target: &TargetSpec,
        cache: bool,
        stop: Stop,
    ) -> Result<(Option<crate::plan::shard::Shard>, Option<u64>), UsageError> {
        let start_at = match &self.start_at {
            Some(s) => {
                let ms = crate::plan::shard::parse_start_at(s)?;
                crate::plan::shard::check_start_at(
                    ms,
                    self.warmup_s(),
                    std::time::SystemTime::now(),
                )?;
                Some(ms)
            }
            None => None,
        };
        let Some(s) = &self.shard else {
            return Ok((None, start_at));
        };
        let shard: crate::plan::shard::Shard = s.parse()?;
        if target.external.is_none() {
            return Err(UsageError::bad(
                "--shard",
                "the clients of one run must drive one server, and a managed target gives each its own",
                "start it once (kvlab serve --target NAME) and give its URL as --target",
            ));
        }
        if cache {
            return Err(UsageError::bad(
                "--shard",
                "cache-aside runs cannot be split over clients yet",
                "drop --shard or --cache",
            ));
        }
        if target.kind.is_sql() && !self.no_load {
            return Err(UsageError::bad(
                "--shard",
                "the clients of a database run cannot share the load of kvlab's table",
                "load it once with a run without --shard (e.g. --requests 1), then start the clients with --no-load",
            ));
        }
        let requests = match stop {
            Stop::Requests(n) => Some(n),
            Stop::Duration(_) => None,
        };
        shard.check(self.connections, requests)?;
        Ok((Some(shard), start_at))
    }

    /// Checks every flag and builds the plan.
    pub fn to_plan(&self) -> Result<RunPlan, UsageError> {
        let mut target: TargetSpec = self.target.parse()?;
        if target.external.is_some() && !self.server_opt.is_empty() {
            return Err(UsageError::bad(
                "--server-opt",
                "settings apply only to a server kvlab starts",
                format!(
                    "drop --server-opt or use --target {}",
                    products::all_names("|")
                ),
            ));
        }
        target.server_opts = self.server_opt.iter().cloned().collect();
        self.tls.apply(&mut target)?;
        target.schema.table_engine = self.table_engine.as_ref().map(|e| e.to_ascii_lowercase());
        target.schema.unlogged = self.unlogged;
        target.schema.recreate = self.recreate;
        target.consistency.clone_from(&self.consistency);
        target.query_mode = self.query_mode.as_ref().map(|m| m.to_ascii_lowercase());
        target.pooler.clone_from(&self.pooler);
        target.pooler_opts = self.pooler_opt.iter().cloned().collect();
        target.check_schema()?;
        let positive = |flag: &'static str, v: f64, fix: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(UsageError::bad(
                    flag,
                    format!("{v} is not a positive number"),
                    fix,
                ))
            }
        };
        if self.keys == 0 {
            return Err(UsageError::bad(
                "--keys",
                "0 keys",
                "give at least 1, e.g. --keys 100000",
            ));
        }
        if self.key_prefix.is_empty() {
            return Err(UsageError::bad(
                "--key-prefix",
                "an empty prefix would let kvlab write keys of other applications",
                "give a prefix such as kvlab:",
            ));
        }
        if self.connections == 0 || self.connections > 100_000 {
            return Err(UsageError::bad(
                "--connections",
                format!("{} is out of range", self.connections),
                "give 1 to 100000",
            ));
        }
        let threads = self.threads.unwrap_or_else(cores);
        if threads == 0 || threads > 1024 {
            return Err(UsageError::bad(
                "--threads",
                format!("{threads} is out of range"),
                "give 1 to 1024",
            ));
        }
        if self.pipeline == 0 || self.pipeline > 100_000 {
            return Err(UsageError::bad(
                "--pipeline",
                format!("{} is out of range", self.pipeline),
                "give 1 to 100000",
            ));
        }
        let stop = match (self.duration, self.requests) {
            (_, Some(0)) => {
                return Err(UsageError::bad(
                    "--requests",
                    "0 requests",
                    "give at least 1",
                ));
            }
            (_, Some(n)) => Stop::Requests(n),
            (Some(d), None) => Stop::Duration(positive(
                "--duration",
                d,
                "give seconds, e.g. --duration 10",
            )?),
            (None, None) => Stop::Duration(10.0),
        };
        let warmup = self.warmup_s();
        if !(warmup.is_finite() && warmup >= 0.0) {
            return Err(UsageError::bad(
                "--warmup",
                format!("{warmup} is not a number of seconds"),
                "give 0 or more, e.g. --warmup 2",
            ));
        }
        let rate = match self.rate {
            Some(r) => Some(positive(
                "--rate",
                r,
                "give requests per second, e.g. --rate 10000",
            )?),
            None => None,
        };
        if let Some(r) = rate
            && r < self.connections as f64 / 3600.0
        {
            return Err(UsageError::bad(
                "--rate",
                format!(
                    "{r} req/s over {} connections is below one request per connection per hour",
                    self.connections
                ),
                "raise --rate or lower --connections",
            ));
        }
        positive("--timeout", self.timeout, "give seconds, e.g. --timeout 5")?;
        let profile = match &self.profile {
            None => None,
            Some(n) => Some(crate::workload::profiles::profile(n).ok_or_else(|| {
                UsageError::bad(
                    "--profile",
                    format!("unknown profile '{n}'"),
                    format!("use {}", crate::workload::profiles::names()),
                )
            })?),
        };
        let ratio: Ratio = match (&self.ratio, profile) {
            (Some(r), _) => r.parse()?,
            (None, Some(p)) => p.ratio,
            (None, None) => Ratio { set: 0, get: 1 },
        };
        let sizes: crate::workload::SizeDist = match (&self.value_size, profile) {
            (Some(v), _) => v.parse()?,
            (None, Some(p)) => p.value_sizes.parse()?,
            (None, None) => crate::workload::SizeDist::Fixed { size: 256 },
        };
        let (value_size, value_sizes) = match sizes {
            crate::workload::SizeDist::Fixed { size } => (size, None),
            d => (
                crate::workload::Values::with(&d).mean().round() as usize,
                Some(d),
            ),
        };
        let distribution: KeyDistribution = match (&self.key_distribution, profile) {
            (Some(d), _) => d.parse()?,
            (None, Some(p)) => KeyDistribution::Zipf { theta: p.theta },
            (None, None) => KeyDistribution::Uniform,
        };
        // A profile's TTL where keys expire (a cache target, no cache in front).
        let ttl_s = match (self.ttl, profile) {
            (Some(t), _) => t,
            (None, Some(p)) if self.aside.cache.is_none() && target.kind.expires() => p.ttl_s,
            _ => 0,
        };
        let cache = self.aside.cache_aside()?;
        let (shard, start_at_ms) = self.sharding(&target, cache.is_some(), stop)?;
        let threads = threads.min(crate::plan::shard::local_connections(
            shard,
            self.connections,
        ));
        let plan = RunPlan {
            cache,
            target,
            workload: Workload {
                keys: self.keys,
                value_size,
                value_sizes,
                ratio,
                distribution,
                key_prefix: self.key_prefix.clone(),
                load: !self.no_load,
                seed: self.seed,
                background_writes: match self.background_writes {
                    Some(w) => Some(positive(
                        "--background-writes",
                        w,
                        "give writes per second, e.g. --background-writes 65",
                    )?),
                    None => None,
                },
                ttl_s,
                profile: profile.map(|p| p.name.to_string()),
                batch: crate::plan::parse_batch(self.batch.as_deref())?,
                trace: None,
            },
            load: LoadShape {
                connections: self.connections,
                threads: threads.min(self.connections),
                pipeline: self.pipeline,
                stop,
                warmup_s: warmup,
                rate,
                timeout_s: self.timeout,
                shard,
                start_at_ms,
                events: Vec::new(),
                timeline_seconds: crate::plan::check_timeline_seconds(self.timeline_seconds)?,
            },
        };
        plan.check_cache()?;
        plan.check_ttl()?;
        plan.check_batch()?;
        let mut plan = plan;
        plan.load.events = aside::events(&self.events, &plan)?;
        if plan
            .cache
            .as_ref()
            .is_some_and(|c| c.start == crate::plan::CacheStart::Cold)
            && self.warmup.is_none()
        {
            // A cold start is measured from the first request: the curve is the result.
            plan.load.warmup_s = 0.0;
        }
        Ok(plan)
    }
}
