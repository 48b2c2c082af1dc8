//! The cache of a cache-aside plan: which cache, what writes do to it, its
//! expiry, and what it holds when the load starts.

use serde::{Deserialize, Serialize};

use super::{TargetSpec, WritePolicy};
use crate::driver::Role;
use crate::error::UsageError;

/// Cache-aside in front of the run's target (the database): each read asks the
/// cache first and, on a miss, reads the database and fills the cache; each write
/// updates the database, then invalidates or updates the cache entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CacheAside {
    /// The cache (redis, valkey or memcached; managed or URL).
    pub cache: TargetSpec,
    /// What a write does to the cache after updating the database.
    pub policy: WritePolicy,
    /// Expiry of cache entries, seconds (0: never).
    pub ttl_s: u32,
    /// What the cache holds when the load starts.
    #[serde(default)]
    pub start: CacheStart,
}

impl CacheAside {
    /// The TTL of `profile`'s preset as the cache's, unless one was `given`
    /// (`--cache-ttl`, a target's `cache_ttl`; 0 there: never).
    pub fn profile_ttl(
        &mut self,
        given: Option<u32>,
        profile: Option<&crate::workload::profiles::Profile>,
    ) {
        if let (None, Some(p)) = (given, profile) {
            self.ttl_s = p.ttl_s;
        }
    }

    /// Makes a managed cache evict when full, as a deployed cache does: the
    /// product's eviction settings, unless given (e.g. Redis's
    /// `maxmemory-policy=allkeys-lru`; memcached evicts by default).
    pub fn evict_by_default(mut self) -> CacheAside {
        if self.cache.external.is_none()
            && let Role::Cache(c) = self.cache.kind.product().role()
        {
            for (k, v) in c.evicting() {
                self.cache
                    .server_opts
                    .entry((*k).to_string())
                    .or_insert_with(|| (*v).to_string());
            }
        }
        self
    }
}

/// What the cache of a cache-aside run holds when the load starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheStart {
    /// Every key loaded before the run (the cache must hold all the data).
    #[default]
    Warm,
    /// Empty: the run fills it through its misses.
    Cold,
    /// Empty, then warmed by the workload itself until the hit ratio settles
    /// (see `runner::cache`), and only then measured.
    Settle,
}

impl CacheStart {
    /// Its name in flags, plans and results.
    pub fn name(self) -> &'static str {
        match self {
            CacheStart::Warm => "warm",
            CacheStart::Cold => "cold",
            CacheStart::Settle => "settle",
        }
    }
}

impl std::str::FromStr for CacheStart {
    type Err = UsageError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "warm" => Ok(CacheStart::Warm),
            "cold" => Ok(CacheStart::Cold),
            "settle" | "settled" => Ok(CacheStart::Settle),
            other => Err(UsageError::bad(
                "--cache-start",
                format!("'{other}' is not a way to start the cache"),
                "use warm (every key loaded first), cold (empty) or settle (warmed by the workload until its hit ratio settles)",
            )),
        }
    }
}
