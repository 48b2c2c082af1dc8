//! A cache given by URL that cannot hold the measured copy beside what it
//! holds: kvlab measures beside it, on a cache of the same product it starts,
//! with a point of the curve at the URL cache's size carried to the copy, and
//! writes nothing into it.

use anyhow::Result;

use super::Ask;
use crate::driver::{Connector, Role};
use crate::results::stats::num;
use crate::runner::foreign::{MIB, bytes_needed, overflow};

/// Moves `ask`'s cache given by URL beside, where the copy would not fit
/// in it beside the keys it holds (unless `--allow-evictions`): the line that
/// says so, or `None` where it is measured in place.
pub fn cache_by_url(ask: &mut Ask) -> Result<Option<String>> {
    let spec = &ask.cache.cache;
    let Some(e) = &spec.external else {
        return Ok(None);
    };
    if ask.plan.shared.allow_evictions {
        return Ok(None);
    }
    let c = Connector::new(spec.kind, e)?;
    let Role::Cache(cache) = c.product.role() else {
        return Ok(None);
    };
    let m = cache.memory(&c)?;
    let w = &ask.plan.workload;
    let need = bytes_needed(w.keys, w.value_size, w.key_prefix.len(), m.limit);
    if overflow(&m, need).is_none() {
        return Ok(None);
    }
    let limit_mb = m.limit as f64 / MIB;
    let copy_mb = carried_mb(ask, m.limit);
    let line = format!(
        "kvlab decide: the cache {} holds {} keys in {:.1} of {:.1} MiB; the copy's {} keys (about {:.1} MiB) do not fit beside them, so kvlab measures beside it on a {} it starts, with a point of the curve at its size carried to the copy ({copy_mb} MiB for {} of the {} keys), and writes nothing into it (--allow-evictions measures in it)\n",
        c.display,
        num(m.items as f64),
        m.used as f64 / MIB,
        limit_mb,
        num(w.keys as f64),
        need as f64 / MIB,
        spec.kind.name(),
        num(w.keys as f64),
        num(ask.load.keys as f64),
    );
    // The policy settled from the cache's own settings (read once, when
    // the ask was made): the cache beside it evicts the same way.
    if let Some(e) = &ask.load.eviction {
        ask.cache
            .cache
            .server_opts
            .extend(e.policy.redis_settings());
    }
    ask.cache.cache.external = None;
    ask.load.cache_cores = None;
    ask.team_cache_mb = Some(copy_mb);
    Ok(Some(line))
}

/// A cache of `limit` bytes at the stated keys carried to `ask`'s copy, MiB:
/// the same share of the keys (at least what the cache needs for itself).
pub fn carried_mb(ask: &Ask, limit: u64) -> u64 {
    let share = ask.plan.workload.keys as f64 / ask.load.keys.max(1) as f64;
    ((limit as f64 / MIB * share).ceil() as u64).max(ask.assumed.method.cache_base_mb + 1)
}
