//! A point of a study: the run it is, and how it reads (the settings that
//! shape it, those that tell points apart, its label).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::plan::{RunPlan, Stop, TargetSpec};

/// One measured point of a study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Point {
    /// Position in the plan.
    pub index: usize,
    /// Label of the target.
    pub target: String,
    /// Repetition number, from 1.
    pub repetition: usize,
    /// The values of the swept axes at this point, by axis name.
    pub params: BTreeMap<String, String>,
    /// The run this point is.
    pub plan: RunPlan,
}

impl Point {
    /// Every setting that shapes this point, as name and value (secrets
    /// masked), in a fixed order; swept ones named as in `params`
    /// (`connections`, `server.io-threads`, `cache.memory-mb`).
    pub fn settings(&self) -> Vec<(String, String)> {
        let p = self.plan.redacted();
        let mut out: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, v: String| out.push((k.to_string(), v));
        let t = &p.target;
        put("target", server_text(t));
        for (k, v) in &t.server_opts {
            put(&format!("server.{k}"), v.clone());
        }
        if let Some(e) = &t.schema.table_engine {
            put("table_engine", e.clone());
        }
        if t.schema.unlogged {
            put("unlogged", "true".into());
        }
        if let Some(c) = &t.consistency {
            put("consistency", c.to_string());
        }
        if let Some(m) = t.query_mode_used() {
            put("query_mode", m.to_string());
        }
        if let Some(pooler) = &t.pooler {
            put("pooler", pooler.clone());
            for (k, v) in &t.pooler_opts {
                put(&format!("pooler.{k}"), v.clone());
            }
        }
        if let Some(n) = &p.near {
            put("near_cache", n.describe());
        }
        if let Some(c) = &p.cache {
            put("cache", server_text(&c.cache));
            put("cache_start", c.start.name().into());
            put("write_policy", c.policy.name().into());
            put("cache_ttl", secs_or(c.ttl_s, "never"));
            if c.cache.external.is_none() && !c.cache.server_opts.contains_key("memory-mb") {
                put("cache.memory-mb", "no-limit".into());
            }
            for (k, v) in &c.cache.server_opts {
                put(&format!("cache.{k}"), v.clone());
            }
            if let Some(m) = c.cache.query_mode_used() {
                put("cache_query_mode", m.to_string());
            }
        }
        if !p.load.events.is_empty() {
            let e: Vec<String> = p.load.events.iter().map(|e| e.to_string()).collect();
            put("events", e.join(","));
        }
        let w = &p.workload;
        put("keys", w.keys.to_string());
        put("value_size", w.values().label().to_string());
        put("ratio", w.ratio.to_string());
        put("distribution", w.distribution.to_string());
        if let Some(pr) = &w.profile {
            put("profile", pr.clone());
        }
        put("key_prefix", w.key_prefix.clone());
        put("load", if w.load { "yes" } else { "no" }.into());
        if w.ttl_s > 0 {
            put("ttl", format!("{}s", w.ttl_s));
        }
        if let Some(b) = &w.batch {
            put("batch", b.to_string());
        }
        if let Some(b) = w.background_writes {
            put("background_writes", format!("{b}/s"));
        }
        let l = &p.load;
        put("connections", l.connections.to_string());
        put("threads", l.threads.to_string());
        put("pipeline", l.pipeline.to_string());
        put(
            "rate",
            l.rate.map_or("closed-loop".into(), |r| r.to_string()),
        );
        if l.rate.is_some() {
            put("arrivals", l.arrivals.name().into());
        }
        if !l.rate_shape.is_steady() {
            put("rate_shape", l.rate_shape.to_string());
        }
        if let Some(d) = l.rtt {
            put("rtt", d.to_string());
        }
        if let Some(d) = l.cache_rtt {
            put("cache_rtt", d.to_string());
        }
        put("warmup", format!("{}s", l.warmup_s));
        match l.stop {
            Stop::Duration(d) => put("duration", format!("{d}s")),
            Stop::Requests(n) => put("requests", n.to_string()),
        }
        put("timeout", format!("{}s", l.timeout_s));
        put("timeline_seconds", l.timeline_seconds.to_string());
        out
    }

    /// The settings that tell the points of a target apart (those that take more
    /// than one value among its points), in the order of [`Point::settings`]:
    /// every swept setting, the cache's memory or the key distribution included.
    pub fn varying(points: &[Point]) -> Vec<String> {
        let all: Vec<(&str, Vec<(String, String)>)> = points
            .iter()
            .map(|p| (p.target.as_str(), p.settings()))
            .collect();
        let mut names: Vec<String> = Vec::new();
        for (_, set) in &all {
            for (k, _) in set {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        let value = |set: &[(String, String)], k: &str| {
            set.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };
        // A setting varies when a point's value differs from its target's first.
        let mut first: BTreeMap<&str, &[(String, String)]> = BTreeMap::new();
        for (t, set) in &all {
            first.entry(t).or_insert(set);
        }
        names.retain(|k| {
            all.iter()
                .any(|(t, set)| first.get(t).is_some_and(|f| value(set, k) != value(f, k)))
        });
        names
    }

    /// The point as text: its target and its value of each setting in `axes`
    /// (see [`Point::varying`]), e.g. `pg+redis cache.memory-mb=4 distribution=zipf:0.8`.
    pub fn label(&self, axes: &[String]) -> String {
        let settings = self.settings();
        std::iter::once(self.target.clone())
            .chain(axes.iter().filter_map(|a| {
                settings
                    .iter()
                    .find(|(k, _)| k == a)
                    .map(|(k, v)| format!("{k}={v}"))
            }))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A server as text: its kind, and its URL (password masked) if not managed.
fn server_text(t: &TargetSpec) -> String {
    match &t.external {
        Some(e) => e.display_for(t.kind.product()),
        None => t.kind.name().to_string(),
    }
}

/// `n` seconds as `"{n}s"`, or `zero` for 0.
fn secs_or(n: u32, zero: &str) -> String {
    match n {
        0 => zero.to_string(),
        n => format!("{n}s"),
    }
}
