//! `kvlab merge`: one exact result from the results of a sharded run's clients.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{check_valid, check_writable, show_result};
use crate::results::{self, merge};

/// Flags of `kvlab merge`.
#[derive(Debug, Args)]
#[command(after_help = "Example:
  kvlab merge shard-0.json shard-1.json --json all.json")]
pub struct MergeArgs {
    /// The clients' result files (`kvlab run --shard I/N --json FILE`).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Write the merged result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `kvlab merge`.
pub fn exec(args: &MergeArgs) -> Result<()> {
    if let Some(path) = &args.json {
        check_writable(path)?;
    }
    merged(&merge::merge_files(&args.results)?, args.json.as_deref())
}

/// Prints (and writes, with `json`) a merged result; an invalid one is an error.
pub fn merged(result: &results::RunResult, json: Option<&std::path::Path>) -> Result<()> {
    show_result(result, json)?;
    check_valid(result, "the merged run")
}
