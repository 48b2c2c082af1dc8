//! kvlab: one tool that drives caches and databases with the same key-value
//! workload and measures them the same way.
//!
//! # Layout
//! - [`cli`]: the command line (clap) → a [`plan::RunPlan`].
//! - [`plan`]: what one run is: target, workload, load shape (serde, reusable by study files).
//! - [`error`]: mistakes a user can fix, each naming the flag and the fix.
//! - [`workload`]: key choice, GET/SET mix, deterministic values and their verification.
//! - [`wire`]: the sans-IO codec interface every protocol implements.
//! - [`target`]: what every target shares: endpoint, connector, the product traits,
//!   managed server processes, /proc usage, counters, kvlab's table in general.
//! - [`transport`]: TCP or unix sockets, plain or TLS (rustls), and throwaway certificates.
//! - [`products`]: the registry and one folder per product family (codec, set-up,
//!   managed server, counters, data loading).
//! - [`engine`]: runs one point on T threads; [`engine::worker`] and [`engine::aside`] are the hot loops; [`engine::pacer`] the open-loop schedule.
//! - [`consistency`]: versions of written values and stale-read detection.
//! - [`stats`]: outcome counters and HDR histograms.
//! - [`progress`]: the progress line and notes on stderr.
//! - [`launch`]: starts the managed servers a plan asks for.
//! - [`dataset`]: loads the keys (caches: pipelined SETs; databases: their own table load).
//! - [`runner`]: one run from plan to [`results::RunResult`].
//! - [`cacheaside`]: the cache of a cache-aside run: set-up, consistent start, its report.
//! - [`capacity`]: the highest rate within a p99 limit, by bisection over `--rate`.
//! - [`fill`]: memory efficiency: items a cache holds per GiB, bytes per row of a database.
//! - [`study`]: study files, their expansion into points, and running them.
//! - [`shard`]: sharded runs: `--shard I/N` and `--start-at`, a client's part of the load.
//! - [`merge`]: one exact result from the results of a sharded run's clients.
//! - [`results`]: the result as data (JSON).
//! - [`output`]: progress display and the human summary.
//! - [`report`]: study results -> verdict, tables and SVG charts as Markdown and HTML.

pub mod cli;
pub mod driver;
pub mod engine;
pub mod error;
pub mod modes;
pub mod plan;
pub mod products;
pub mod report;
pub mod results;
pub mod runner;
pub mod servers;
pub mod system;
pub mod transport;
pub mod workload;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

/// Runs a parsed command line. `shutdown` is set by Ctrl-C (or a test) to stop
/// early; partial results are still reported.
pub fn run(cli: cli::Cli, shutdown: Arc<AtomicBool>) -> Result<()> {
    cli::commands::dispatch(cli, &shutdown)
}
