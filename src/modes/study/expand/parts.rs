//! A point's plan at its place on the axes: its target and cache at their
//! settings, its workload (a profile laid over it) and load, the params it
//! is labelled by, and the checks its plan must pass.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};

use crate::plan::events::{EventAction, EventOn, ServerEvent};
use crate::plan::study::{StudyFile, TargetSection, label};
use crate::plan::{
    CacheAside, KeyDistribution, LoadShape, RunPlan, SchemaOptions, Stop, TargetSpec, Workload,
};
use crate::workload::profiles::Profile;
use crate::workload::{ConnLife, HotKeys, RateShape};

use super::{At, Axes, Settings};

/// Target `t` at server settings `server`.
pub(super) fn target_at(t: &TargetSection, base: &TargetSpec, server: &Settings) -> TargetSpec {
    let mut target = base.clone();
    target.server_opts = t.server_opts.clone();
    target.schema = SchemaOptions {
        table_engine: t.table_engine.clone(),
        unlogged: t.unlogged,
        recreate: false,
    };
    for (k, v) in server {
        target.server_opts.insert(k.clone(), v.clone());
    }
    target
}

/// The cache in front, if any, at cache settings `settings`.
pub(super) fn cache_at(cache: &Option<CacheAside>, settings: &Settings) -> Option<CacheAside> {
    let mut cache = cache.clone();
    if let Some(c) = cache.as_mut() {
        for (k, v) in settings {
            c.cache.server_opts.insert(k.clone(), v.clone());
        }
    }
    cache
}

/// The values of the axes at `at`, by axis name, as a point's params
/// (`cache.*` where there is a cache).
pub(super) fn params(s: &StudyFile, at: &At, cached: bool) -> BTreeMap<String, String> {
    let (w, l) = (at.workload, at.shape);
    let mut params = BTreeMap::new();
    for (k, v) in at.server {
        params.insert(format!("server.{k}"), v.clone());
    }
    params.insert("connections".into(), l.connections.to_string());
    let threads = l.threads.min(l.connections);
    params.insert("threads".into(), threads.to_string());
    params.insert("pipeline".into(), l.pipeline.to_string());
    params.insert("value_size".into(), l.value_size.to_string());
    params.insert("keys".into(), w.keys.to_string());
    params.insert("ratio".into(), w.ratio.to_string());
    if !w.distribution.0.is_empty() {
        params.insert("distribution".into(), w.distribution.0.clone());
    }
    for (k, v) in w.cache.iter().filter(|_| cached) {
        params.insert(format!("cache.{k}"), v.clone());
    }
    if let Some(r) = l.rate {
        params.insert("rate".into(), r.to_string());
    }
    if let Some(r) = l.rtt {
        params.insert("rtt".into(), r.to_string());
    }
    if let Some(p) = w.profile {
        // The profile's mix, sizes and keys, not the study's.
        for k in ["ratio", "value_size", "distribution"] {
            params.remove(k);
        }
        params.insert("profile".into(), p.name.into());
    } else if !s.sweep.profile.is_empty() {
        params.insert("profile".into(), "none".into());
    }
    params
}

/// The workload at `at` (before a profile is laid over it).
pub(super) fn workload_at(s: &StudyFile, axes: &Axes, at: &At) -> Result<Workload> {
    let w = at.workload;
    Ok(Workload {
        keys: w.keys,
        value_size: match &axes.sizes {
            Some(d) => crate::workload::Values::with(d).mean().round() as usize,
            None => at.shape.value_size,
        },
        value_sizes: axes.sizes.clone(),
        ratio: w.ratio,
        distribution: w.distribution.1,
        key_prefix: s.workload.key_prefix.clone(),
        load: s.workload.load,
        seed: 1,
        background_writes: s.workload.background_writes,
        ttl_s: s.workload.ttl.unwrap_or(0),
        profile: None,
        batch: crate::plan::parse_batch(s.workload.batch.as_deref())?,
        trace: None,
    })
}

/// The load at `at`, with `events`.
pub(super) fn load_at(
    s: &StudyFile,
    axes: &Axes,
    at: &At,
    events: Vec<ServerEvent>,
) -> Result<LoadShape> {
    let l = at.shape;
    let stop = match axes.requests {
        None => Stop::Duration(s.duration),
        Some(None) => Stop::Requests(at.workload.keys),
        Some(Some(n)) => Stop::Requests(n),
    };
    let window = axes.requests.is_none().then_some(s.duration);
    let rate_shape = match (&s.load.rate_shape, l.rate) {
        (None, _) => RateShape::Steady,
        (Some(_), None) => anyhow::bail!(
            "[load] rate_shape: a shape moves a fixed rate; give [load] rate or [sweep] rate"
        ),
        (Some(shape), Some(_)) => {
            RateShape::parse(shape, window).map_err(|e| anyhow::anyhow!("[load] {e}"))?
        }
    };
    Ok(LoadShape {
        connections: l.connections,
        threads: l.threads.min(l.connections),
        pipeline: l.pipeline,
        stop,
        warmup_s: s.warmup,
        rate: l.rate,
        arrivals: s.load.arrivals,
        rate_shape,
        send_slack: s.load.send_slack,
        conn_life: s
            .load
            .conn_life
            .as_deref()
            .map(ConnLife::parse)
            .transpose()
            .map_err(|e| anyhow!("[load] {e}"))?,
        hot_keys: match &s.load.hot_keys {
            Some(h) => {
                let w = &at.workload;
                let reads = l.rate.map(|r| r * (1.0 - w.ratio.set_fraction()));
                let hot = HotKeys::parse(h).and_then(|h| h.settled(reads, w.keys));
                Some(hot.map_err(|e| anyhow!("[load] {e}"))?)
            }
            None => None,
        },
        rtt: None,
        cache_rtt: None,
        timeout_s: s.load.timeout,
        io: s.load.io,
        shard: None,
        start_at_ms: None,
        events,
        timeline_seconds: s.load.timeline_seconds,
    })
}

/// Checks a point's plan as `kvlab run` would, and refuses events that would
/// leave its server unfit for the points after it; errors name target `t`.
pub(super) fn check_point(plan: &RunPlan, t: &TargetSection) -> Result<()> {
    let at_target = |e: crate::error::UsageError| anyhow!("target '{}': {e}", label(t));
    plan.check_ttl().map_err(at_target)?;
    plan.check_cache().map_err(at_target)?;
    plan.check_batch().map_err(at_target)?;
    plan.check_near().map_err(at_target)?;
    plan.check_io().map_err(at_target)?;
    let window = match plan.load.stop {
        Stop::Duration(d) => Some(d),
        Stop::Requests(_) => None,
    };
    for e in &plan.load.events {
        e.check(plan, window).map_err(at_target)?;
        if e.on == EventOn::Target && e.action == EventAction::Kill {
            bail!(
                "target '{}': events = \"{e}\" would leave the server down for the points after it; use restart-target",
                label(t)
            );
        }
        if matches!(
            e.action,
            EventAction::KillPrimary | EventAction::KillReplica
        ) {
            bail!(
                "target '{}': events = \"{e}\" would leave the cluster without a replica for the points after it; run it with `kvlab run --event`",
                label(t)
            );
        }
    }
    Ok(())
}

/// Replaces `w`'s value sizes, mix, key popularity and (where keys expire)
/// TTL with `p`'s.
pub(super) fn apply_profile(w: &mut Workload, p: &Profile, expires: bool) -> Result<()> {
    let sizes: crate::workload::SizeDist = p.value_sizes.parse()?;
    w.value_size = crate::workload::Values::with(&sizes).mean().round() as usize;
    w.value_sizes = Some(sizes);
    w.ratio = p.ratio;
    w.distribution = KeyDistribution::Zipf { theta: p.theta };
    if expires {
        w.ttl_s = p.ttl_s;
    }
    w.profile = Some(p.name.to_string());
    Ok(())
}
