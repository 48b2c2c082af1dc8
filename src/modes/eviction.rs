//! The eviction policy a decision's curves are drawn for: what the cache
//! kvlab starts runs (its product's defaults, full and evicting as
//! [`crate::plan::CacheAside::evict_by_default`] makes it, then the settings
//! given), or what a cache given by URL runs, read without changing it.

use std::collections::BTreeMap;

use crate::driver::{Connector, Role};
use crate::error::UsageError;
use crate::plan::CacheAside;
use crate::results::decide::Eviction;
use crate::workload::trace::policy::Policy;

/// The eviction of `cache`; an error where the settings given make a full
/// cache refuse writes rather than evict (it has no curve).
pub fn of_cache(cache: &CacheAside) -> Result<Eviction, UsageError> {
    let spec = &cache.cache;
    let Role::Cache(product) = spec.kind.product().role() else {
        return Ok(not_read(spec.kind.name()));
    };
    let mut settings = defaults(product);
    let Some(e) = &spec.external else {
        // The settings given that change the defaults (the evicting one,
        // already in the plan's settings, is no choice of the user's).
        let given: Vec<(String, String)> = spec
            .server_opts
            .iter()
            .filter(|(k, v)| settings.get(*k).is_some_and(|d| d != *v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let said: Vec<String> = given.iter().map(|(k, v)| format!("{k}={v}")).collect();
        settings.extend(given);
        let policy = Policy::of_settings(&settings).map_err(|why| {
            UsageError::bad(
                "--cache-opt",
                why,
                "a cache in front of a database evicts: give maxmemory-policy=allkeys-lru or allkeys-lfu (or leave it out)",
            )
        })?;
        let source = match said.is_empty() {
            true => format!("the {} kvlab starts, full and evicting", spec.kind.name()),
            false => format!("as set ({})", said.join(", ")),
        };
        return Ok(Eviction { policy, source });
    };
    Ok(match Connector::new(spec.kind, e) {
        Ok(c) => read(&c),
        Err(_) => unread(&settings),
    })
}

/// How the cache at `c` (given by URL) evicts, read without changing
/// anything; where its settings cannot be read or make a full cache refuse
/// writes, what a cache kvlab started beside it would run, said.
pub fn read(c: &Connector) -> Eviction {
    let Role::Cache(product) = c.product.role() else {
        return not_read(c.product.name());
    };
    let mut settings = defaults(product);
    let Some(found) = product.eviction_settings(c) else {
        return unread(&settings);
    };
    // What a cache kvlab started beside it would run.
    let default = Policy::of_settings(&settings).unwrap_or(Policy::Lru);
    let at = &c.display;
    settings.extend(found);
    match Policy::of_settings(&settings) {
        Ok(policy) => Eviction {
            policy,
            source: format!("read from the cache at {at}"),
        },
        Err(why) => Eviction {
            policy: default,
            source: format!("the cache at {at} has {why}; drawn for {default} instead"),
        },
    }
}

/// The eviction settings a cache of `product` kvlab starts has, by the
/// server's names.
fn defaults(product: &dyn crate::driver::Cache) -> BTreeMap<String, String> {
    product
        .eviction_defaults()
        .iter()
        .chain(product.evicting())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A cache whose settings could not be read: what one kvlab started with
/// `settings` would run (exact LRU where the product has no evicting
/// default), said.
fn unread(settings: &BTreeMap<String, String>) -> Eviction {
    let default = Policy::of_settings(settings).unwrap_or(Policy::Lru);
    Eviction {
        policy: default,
        source: format!("taken as {default}: the cache's own settings could not be read"),
    }
}

/// A product whose eviction kvlab does not read, taken as exact LRU.
fn not_read(name: &str) -> Eviction {
    Eviction {
        policy: Policy::Lru,
        source: format!("taken as exact LRU: kvlab does not read how {name} evicts"),
    }
}
