//! kvlab: one tool that drives caches and databases with the same key-value
//! workload and measures them the same way.
//!
//! # Layout (in the order a run flows)
//! - [`cli`]: the command line (clap) → a [`plan::RunPlan`]; [`cli::commands`]:
//!   one file per subcommand.
//! - [`plan`]: what a run is: target, workload, load shape, a client's share of a
//!   sharded run, the study file (serde).
//! - [`error`]: mistakes a user can fix, each naming the flag and the fix.
//! - [`driver`]: what generic code drives a product through: the product traits
//!   and facts, the connector, the codec interface, counters, kvlab's table policy.
//! - [`products`]: the registry (one list) and one folder per product family.
//! - [`servers`]: the server processes kvlab starts, and the pooler in front.
//! - [`system`]: child processes, /proc, installed programs, the progress line.
//! - [`transport`]: TCP or unix sockets, plain or TLS (rustls), throwaway certificates.
//! - [`workload`]: keys, GET/SET mix, verifiable values, versions and stale reads.
//! - [`engine`]: runs one point on T threads: the one [`engine::request_loop`]
//!   over a client ([`engine::plain`] or [`engine::aside`]).
//! - [`runner`]: one run from plan to [`results::RunResult`]: servers, load, engine,
//!   counters, the cache of a cache-aside run; [`runner::metrics`], the live
//!   `--metrics` endpoint (OpenMetrics for Prometheus), fed by the run's
//!   per-second ticks.
//! - [`modes`]: runs repeated: studies, the capacity search, the fill.
//! - [`pricing`]: what a decision's servers cost: the dated, sourced price
//!   catalogs (`prices/*.toml`), a `--deploy` resolved once, each server on
//!   the cheapest shape that holds it.
//! - [`results`]: every result type kvlab writes (JSON), counters and histograms,
//!   and the exact merge of a sharded run.
//! - [`report`]: results → the summary, the verdict, tables and SVG charts as
//!   Markdown and HTML.

pub mod cli;
pub mod driver;
pub mod engine;
pub mod error;
pub mod modes;
pub mod plan;
pub mod pricing;
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
