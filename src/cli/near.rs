//! `--near-cache` and `--near-invalidation`: a cache in the application's
//! process in front of the target (or of a cache-aside run's cache).

use clap::Args;

use crate::error::UsageError;
use crate::plan::near::{Invalidation, NearCache};

/// The near cache's flags.
#[derive(Clone, Debug, Args, serde::Serialize, serde::Deserialize)]
pub struct NearArgs {
    /// A near cache in each client thread, in front of the remote cache:
    /// ITEMS (e.g. 10000) or a size (e.g. 64MiB); an LRU, read first, filled
    /// by the remote cache's hits.
    #[arg(long, value_name = "ITEMS|SIZE")]
    pub near_cache: Option<String>,
    /// How the near cache hears of writes: tracking (RESP3 CLIENT TRACKING,
    /// invalidations on the same connection), bcast (every change under the
    /// key prefix) or ttl=SECONDS (none: entries expire) [default: tracking].
    #[arg(long, value_name = "HOW")]
    pub near_invalidation: Option<String>,
}

impl NearArgs {
    /// The near cache asked for, checked on its own.
    pub fn near_cache(&self) -> Result<Option<NearCache>, UsageError> {
        let Some(bound) = &self.near_cache else {
            return match self.near_invalidation {
                Some(_) => Err(UsageError::bad(
                    "--near-invalidation",
                    "it is how a near cache hears of writes, and --near-cache is not given",
                    "give --near-cache ITEMS|SIZE, or drop it",
                )),
                None => Ok(None),
            };
        };
        Ok(Some(NearCache {
            bound: bound.parse()?,
            invalidation: match &self.near_invalidation {
                Some(i) => i.parse()?,
                None => Invalidation::Tracking,
            },
        }))
    }
}
