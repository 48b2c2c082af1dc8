//! Measuring beside servers kvlab must not load: a cache given by URL that
//! cannot hold the measured copy beside what it holds (kvlab measures on a
//! cache of the same product it starts, with a point of the curve at the URL
//! cache's size carried to the copy, and writes nothing into it), and the
//! servers `decide --observe` watched (measured on servers of the same
//! products kvlab starts, their versions compared and the settings that shape
//! the answer copied, read-only).

use anyhow::Result;

use super::ask::Asked;
use crate::driver::{Connector, Role};
use crate::modes::watched::ToWatch;
use crate::plan::{CacheAside, RunPlan, TargetSpec};
use crate::results::decide::DataCopy;
use crate::results::stats::num;
use crate::results::usage::Role as ServerRole;
use crate::runner::foreign::{MIB, bytes_needed, overflow};
use crate::servers::installed::{installed_version, major};

/// A cache given by URL measured beside: the cache kvlab starts instead, the
/// URL cache's memory carried to the copy, and the line that says so.
#[derive(Debug)]
pub struct Beside {
    /// The cache-aside with a cache of the same product kvlab starts (the
    /// policy the URL cache evicts by).
    pub cache: CacheAside,
    /// The URL cache's memory carried to the copy, MiB: a point of the curve.
    pub team_cache_mb: u64,
    /// What kvlab measures beside it, and why.
    pub line: String,
}

/// `ask`'s cache given by URL measured beside, where the copy would not fit
/// in it beside the keys it holds (unless `--allow-evictions`); `None` where
/// it is measured in place.
pub fn cache_by_url(ask: &Asked, copy: &DataCopy) -> Result<Option<Beside>> {
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
    let copy_mb = carried_mb(ask, copy, m.limit);
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
    let mut server_opts = spec.server_opts.clone();
    if let Some(e) = &ask.load.eviction {
        server_opts.extend(e.policy.redis_settings());
    }
    let cache = CacheAside {
        cache: TargetSpec {
            external: None,
            server_opts,
            ..spec.clone()
        },
        ..ask.cache.clone()
    };
    Ok(Some(Beside {
        cache,
        team_cache_mb: copy_mb,
        line,
    }))
}

/// `ask`'s plan with the load on the servers kvlab did not start held, where
/// the user gave no bound: at most the method's multiple of the stated rate
/// (`--max-rps`), and the client connections each serves now plus the
/// method's few (`--max-connections`; the fewest where two are read, the
/// few alone where none says); and the line that says so. `None` where no
/// server is another's or both bounds were given.
pub fn capped(ask: &Asked) -> Result<Option<(RunPlan, String)>> {
    // With the cache in the plan, so that a cache of another's counts.
    let mut plan = ask.plan.clone();
    plan.cache = Some(ask.cache.clone());
    let foreign = plan.foreign();
    let (m, s) = (ask.assumed.method, plan.shared);
    if foreign.is_empty() || (s.max_rps.is_some() && s.max_connections.is_some()) {
        return Ok(None);
    }
    let mut said = Vec::new();
    if s.max_rps.is_none() {
        let cap = (ask.load.rps * m.foreign_rate_factor).ceil();
        plan.shared.max_rps = Some(cap);
        said.push(format!(
            "at most {} req/s ({}x the stated rate; a capacity found there is a lower bound)",
            num(cap),
            m.foreign_rate_factor
        ));
    }
    if s.max_connections.is_none() {
        let served = [&ask.plan.target, &ask.cache.cache]
            .into_iter()
            .filter_map(|t| Connector::new(t.kind, t.external.as_ref()?).ok())
            .filter_map(|c| c.product.clients(&c).ok().flatten())
            .min();
        let cap = served.unwrap_or(0) as usize + m.foreign_more_connections;
        plan.shared.max_connections = Some(cap);
        said.push(match served {
            Some(n) => format!(
                "at most {cap} connection(s) (the {n} it serves now plus {})",
                m.foreign_more_connections
            ),
            None => format!("at most {cap} connection(s) (it does not say how many it serves)"),
        });
    }
    plan.hold_to_shared()?;
    plan.cache = None;
    let names: Vec<String> = foreign.iter().map(|(f, e)| format!("{f} {e}")).collect();
    let line = format!(
        "kvlab decide: {} (not kvlab's) driven {}; --max-rps and --max-connections raise the bounds\n",
        names.join(" and "),
        said.join(", ")
    );
    Ok(Some((plan, line)))
}

/// A cache of `limit` bytes at the stated keys carried to `ask`'s copy, MiB:
/// the same share of the keys (at least what the cache needs for itself).
pub fn carried_mb(ask: &Asked, copy: &DataCopy, limit: u64) -> u64 {
    let share = copy.factor(ask.load.keys);
    ((limit as f64 / MIB * share).ceil() as u64).max(ask.assumed.method.cache_base_mb + 1)
}

/// What kvlab measures beside the servers observed.
#[derive(Debug, Default)]
pub struct Observed {
    /// The cache's product, started here (`None`: no cache observed).
    pub cache: Option<&'static str>,
    /// The observed cache's memory limit, bytes (a point of the curve).
    pub cache_limit: Option<u64>,
    /// The database's product, started here.
    pub target: Option<&'static str>,
    /// The observed database's settings that shape the answer, read-only.
    pub settings: Vec<(String, String)>,
    /// What was observed and what is measured instead, line by line.
    pub said: Vec<String>,
}

/// The `servers` observed as the servers kvlab starts beside them: each
/// one's product, version compared, and (a cache) its memory limit or (a
/// database) the settings `given` does not name, copied; said.
pub fn of_observed(servers: &[ToWatch], given: &[(String, String)]) -> Observed {
    let mut o = Observed::default();
    let mut started = Vec::new();
    for s in servers {
        let name = s.connector.product.name();
        o.said.push(format!(
            "observed: {} ({}, {name} {})",
            s.connector.display, s.role, s.version
        ));
        o.said.push(versions(s));
        match s.role {
            ServerRole::Cache => {
                o.cache = Some(name);
                // Its memory limit, read-only: a point of the curve at its size.
                if let Role::Cache(c) = s.connector.product.role() {
                    o.cache_limit = c
                        .memory(&s.connector)
                        .ok()
                        .map(|m| m.limit)
                        .filter(|l| *l > 0);
                }
            }
            _ => {
                o.target = Some(name);
                let (settings, said) = copy_settings(given, s);
                o.settings = settings;
                o.said.extend(said);
            }
        }
        started.push(format!("a {name}"));
    }
    o.said.push(format!(
        "measured on: {} kvlab starts on this machine, beside the servers observed (nothing written to them, no load put on them; --on-observed measures on them instead)",
        started.join(" and ")
    ));
    o
}

/// The version observed beside the one kvlab starts here, and whether their
/// major versions agree.
fn versions(s: &ToWatch) -> String {
    let product = s.connector.product;
    let name = product.name();
    let Some(here) = installed_version(product) else {
        return format!(
            "version: {name} {} observed; the {name} installed here did not say its version",
            s.version
        );
    };
    match (major(product, &s.version), major(product, &here)) {
        (Some(seen), Some(mine)) if seen == mine => format!(
            "version: {name} {here} measured here, {} observed: the same major version ({mine})",
            s.version
        ),
        (seen, mine) => format!(
            "version: {name} {here} measured here, {} observed: major version {} here, {} observed; the figures are {here}'s (install {name} {} here to measure it, or --on-observed)",
            s.version,
            mine.as_deref().unwrap_or("not known"),
            seen.as_deref().unwrap_or("not known"),
            seen.as_deref().unwrap_or(&s.version),
        ),
    }
}

/// The observed database's settings that shape the answer (how a commit
/// waits), read-only, where `given` names none; and the line that says so
/// (`None`: nothing to copy).
fn copy_settings(
    given: &[(String, String)],
    s: &ToWatch,
) -> (Vec<(String, String)>, Option<String>) {
    let product = s.connector.product;
    let keys: Vec<String> = product
        .facts()
        .server
        .copied_beside
        .iter()
        .filter(|k| !given.iter().any(|(g, _)| g == *k))
        .map(|k| k.to_string())
        .collect();
    if keys.is_empty() {
        return (Vec::new(), None);
    }
    let read = product.server().effective_settings(&s.connector, &keys);
    let line = match read.is_empty() {
        true => format!(
            "settings: none of {} could be read from the {} observed; kvlab's defaults",
            keys.join(", "),
            product.name()
        ),
        false => format!(
            "settings: {}, copied from the {} observed",
            read.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "),
            product.name()
        ),
    };
    (read, Some(line))
}
