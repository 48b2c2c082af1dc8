//! The flags that bound what kvlab does to a server it did not start.

use clap::Args;

use crate::error::UsageError;
use crate::plan::shared::Shared;

/// What kvlab may do to a server given by URL.
#[derive(Clone, Debug, Args, serde::Serialize, serde::Deserialize)]
pub struct SharedArgs {
    /// Leave kvlab's keys and table in a server it did not start (default:
    /// removed at the end, also after an error or Ctrl-C).
    #[arg(long)]
    pub keep_data: bool,
    /// Let kvlab's writes make a full cache given by URL evict keys that are
    /// not kvlab's (default: refused before the first write).
    #[arg(long)]
    pub allow_evictions: bool,
    /// The most requests per second kvlab sends a server it did not start
    /// (a capacity found there is a lower bound).
    #[arg(long, value_name = "RPS")]
    pub max_rps: Option<f64>,
    /// The most connections kvlab opens to a server it did not start.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
}

impl SharedArgs {
    /// The bounds, checked.
    pub fn shared(&self) -> Result<Shared, UsageError> {
        let s = Shared {
            keep_data: self.keep_data,
            allow_evictions: self.allow_evictions,
            max_rps: self.max_rps,
            max_connections: self.max_connections,
        };
        s.check()?;
        Ok(s)
    }
}
