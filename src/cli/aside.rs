//! The cache-aside flags (`--cache`, `--cache-opt`, `--write-policy`,
//! `--cache-ttl`, `--cache-start`, `--cache-query-mode`) and `--event`,
//! checked into the plan.

use clap::Args;

use super::parse_opt;
use crate::error::UsageError;
use crate::plan::events::ServerEvent;
use crate::plan::{CacheAside, RunPlan, Stop, TargetKind, TargetSpec};
use crate::products;

/// Cache-aside in front of the target.
#[derive(Clone, Debug, Args, serde::Serialize, serde::Deserialize)]
pub struct AsideArgs {
    /// Cache-aside: put this cache in front of --target (a database): reads try
    /// the cache, misses read the database and fill the cache, writes update the
    /// database then the cache. A cache of the registry or a URL.
    #[arg(long, value_name = "CACHE", help = format!("Cache-aside: put this cache in front of --target (a database): reads try the cache, misses read the database and fill the cache, writes update the database then the cache. {} or a URL", products::aside_caches().join(" | ")))]
    pub cache: Option<String>,
    /// Setting for a managed cache, KEY=VALUE (repeatable).
    #[arg(long = "cache-opt", value_name = "KEY=VALUE", value_parser = parse_opt)]
    pub cache_opt: Vec<(String, String)>,
    /// Cache-aside: after a write, invalidate (delete) or update the cache entry.
    #[arg(long, default_value = "invalidate", value_name = "POLICY")]
    pub write_policy: String,
    /// Cache-aside: expiry of cache entries in seconds (0: never) [default:
    /// 0, or the TTL of --profile's preset].
    #[arg(long, value_name = "SECS")]
    pub cache_ttl: Option<u32>,
    /// Cache-aside: what the cache holds when the load starts: warm (every
    /// key loaded first; the cache must hold all the data), cold (empty), or
    /// settle (empty, warmed by the workload until its hit ratio settles, then
    /// measured).
    #[arg(long, default_value = "warm", value_name = "START")]
    pub cache_start: String,
    /// Cache-aside: the protocol the cache speaks, where it has several
    /// (the registry's caches with modes, and their modes).
    #[arg(long, value_name = "MODE", help = cache_query_mode_help())]
    pub cache_query_mode: Option<String>,
}

/// The `--cache-query-mode` help: the caches that speak several protocols,
/// with them (`memcached: text or meta`).
fn cache_query_mode_help() -> String {
    let modes: Vec<String> = products::kinds(true)
        .map(|k| (k.name(), k.product().facts().query_modes))
        .filter(|(_, modes)| !modes.is_empty())
        .map(|(name, modes)| format!("{name}: {}", products::or_list(modes)))
        .collect();
    format!(
        "Cache-aside: the protocol the cache speaks, where it has several ({})",
        modes.join("; ")
    )
}

impl AsideArgs {
    /// The cache-aside part of the plan, checked against the rest of the flags.
    pub(super) fn cache_aside(&self) -> Result<Option<CacheAside>, UsageError> {
        let Some(c) = &self.cache else {
            if !self.cache_opt.is_empty()
                || self.cache_ttl.is_some()
                || self.write_policy != "invalidate"
                || self.cache_start != "warm"
                || self.cache_query_mode.is_some()
            {
                return Err(UsageError::bad(
                    "--cache-opt/--cache-ttl/--write-policy/--cache-start/--cache-query-mode",
                    "apply only to a cache-aside run",
                    format!(
                        "add --cache {} (or a URL) in front of the database",
                        products::aside_caches().join("|")
                    ),
                ));
            }
            return Ok(None);
        };
        let mut cache: TargetSpec = c.parse().map_err(|e| match e {
            UsageError::BadValue { problem, .. } => UsageError::bad(
                "--cache",
                problem,
                format!(
                    "use {} or a URL such as {}",
                    products::or_list(&products::aside_caches()),
                    TargetKind::ALL[0].product().facts().example_url
                ),
            ),
            other => other,
        })?;
        if cache.external.is_some() && !self.cache_opt.is_empty() {
            return Err(UsageError::bad(
                "--cache-opt",
                "settings apply only to a cache kvlab starts",
                format!(
                    "drop --cache-opt or use --cache {}",
                    products::aside_caches().join("|")
                ),
            ));
        }
        cache.server_opts = self.cache_opt.iter().cloned().collect();
        if let Some(m) = &self.cache_query_mode {
            cache.query_mode = Some(crate::plan::query_mode_of(
                cache.kind,
                m,
                "--cache-query-mode",
            )?);
        }
        Ok(Some(
            CacheAside {
                cache,
                policy: self.write_policy.parse()?,
                ttl_s: self.cache_ttl.unwrap_or(0),
                start: self.cache_start.parse()?,
            }
            .evict_by_default(),
        ))
    }
}

/// `--event` values, parsed and checked against `plan`.
pub(super) fn events(given: &[String], plan: &RunPlan) -> Result<Vec<ServerEvent>, UsageError> {
    let window = match plan.load.stop {
        Stop::Duration(d) => Some(d),
        Stop::Requests(_) => None,
    };
    given
        .iter()
        .map(|e| {
            let e: ServerEvent = e.parse()?;
            e.check(plan, window)?;
            Ok(e)
        })
        .collect()
}
