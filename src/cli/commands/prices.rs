//! `kvlab prices`: the price catalogs `kvlab decide` prices deployments
//! from — each with its date, its prices' dates and what it lacks — or one
//! catalog in full, every price with its source; `--json` too.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{Say, check_writable, write_json};
use crate::pricing::catalog::{Catalog, Loaded};
use crate::pricing::days;
use crate::pricing::listed::{Listed, full, summary};

/// Flags of `kvlab prices`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  kvlab prices                       every built-in catalog, its date and what it lacks
  kvlab prices aws-us-east-1         one catalog: every shape and price with its source
  kvlab prices our-prices.toml       a catalog of your own, checked (kvlab decide --prices FILE)")]
pub struct PricesArgs {
    /// One catalog to show in full: a built-in one's name, or a FILE in the
    /// catalog format.
    #[arg(value_name = "CATALOG")]
    pub catalog: Option<String>,
    /// Write the catalogs as JSON to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `kvlab prices`.
pub fn exec(args: &PricesArgs) -> Result<()> {
    if let Some(p) = &args.json {
        check_writable(p)?;
    }
    let today = days::today();
    let loaded = match &args.catalog {
        None => Catalog::all_built_in()?,
        Some(c) => vec![one(c)?],
    };
    let listed: Vec<Listed> = loaded.iter().map(|l| Listed::of(l, &today)).collect();
    let say = Say::beside(args.json.as_deref());
    say.text(&match args.catalog {
        None => summary(&listed, &today),
        Some(_) => full(&listed[0], &today),
    });
    match &args.json {
        Some(p) => write_json(p, &listed),
        None => Ok(()),
    }
}

/// The catalog `name` names: a built-in one, or a file.
fn one(name: &str) -> Result<Loaded> {
    if crate::pricing::catalog::BUILT_IN
        .iter()
        .any(|(n, _)| *n == name)
    {
        return Catalog::built_in(name);
    }
    let path = std::path::Path::new(name);
    if !path.exists() {
        return Err(crate::error::UsageError::bad(
            "CATALOG",
            format!("{name} is neither a built-in catalog nor a file"),
            format!(
                "give one of {}, or a catalog file",
                crate::pricing::catalog::BUILT_IN.map(|(n, _)| n).join(", ")
            ),
        )
        .into());
    }
    Catalog::read(path)
}
