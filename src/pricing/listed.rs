//! Price catalogs as words (`kvlab prices`): one line each with its dates
//! and what it lacks, or one in full with every price's source. Pure.

use std::fmt::Write as _;

use serde::Serialize;

use super::catalog::{Catalog, Loaded, Rates, Row, Rules, ServerlessRow};
use super::days;
use crate::results::decide::bill::Deploy;

/// One catalog as `kvlab prices` lists it (and writes it as JSON).
#[derive(Clone, Debug, Serialize)]
pub struct Listed {
    /// Where it was read from.
    pub file: String,
    /// The deployments priced from it (built-in catalogs).
    pub deployments: Vec<String>,
    /// Its oldest price's date.
    pub oldest: String,
    /// Some price is over a year old today.
    pub old: bool,
    /// The catalog.
    pub catalog: Catalog,
}

impl Listed {
    /// `l` as listed on `today`.
    pub fn of(l: &Loaded, today: &str) -> Listed {
        let c = &l.catalog;
        let oldest = c.oldest();
        let mut deployments: Vec<String> = Deploy::ALL
            .into_iter()
            .filter(|d| d.catalog() == Some(c.name.as_str()))
            .map(|d| d.name().to_string())
            .collect();
        if deployments.is_empty() {
            deployments = match c.has_managed() {
                true => vec!["managed".into(), "vms".into()],
                false => vec!["vms".into()],
            };
        }
        Listed {
            file: l.file.clone(),
            deployments,
            old: days::old(&oldest, today),
            oldest,
            catalog: c.clone(),
        }
    }
}

/// Every catalog, one paragraph each.
pub fn summary(listed: &[Listed], today: &str) -> String {
    let mut s = format!("kvlab prices: {} catalog(s), on {today}\n", listed.len());
    for l in listed {
        let c = &l.catalog;
        let _ = writeln!(s, "\n{}  {}", c.name, head(l));
        let _ = writeln!(
            s,
            "  {} virtual machines, {} managed database shapes{}, {} managed cache nodes, {} serverless caches; --deploy {}",
            c.vm.len(),
            c.database.len(),
            match c.database_rates.is_empty() {
                true => String::new(),
                false => format!(" and {} priced per vCPU and GiB", c.database_rates.len()),
            },
            c.cache.len(),
            c.serverless_cache.len(),
            l.deployments.join(" or ")
        );
        let _ = writeln!(
            s,
            "  lacks {} item(s) (kvlab prices {} lists them); from {}",
            c.missing.len(),
            c.name,
            l.file
        );
    }
    s.push_str("\nA team's own prices: kvlab decide --prices FILE, in this format (kvlab prices FILE checks one).\n");
    s
}

/// One catalog in full: every price with its source, the rules, what it
/// lacks.
pub fn full(l: &Listed, today: &str) -> String {
    let c = &l.catalog;
    let mut s = format!("{} (on {today}): {}\n{}\n", c.name, head(l), c.note);
    for (kind, rows) in [
        ("virtual machines", &c.vm),
        ("managed databases", &c.database),
        ("managed caches", &c.cache),
    ] {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{kind}:");
        for r in rows {
            let _ = writeln!(s, "  {}", row(c, r));
        }
    }
    let priced = (c.database_rates.iter().map(|r| rates(c, r)))
        .chain(c.database_rules.iter().map(|r| rules(c, r)))
        .chain(c.serverless_cache.iter().map(|r| serverless(c, r)));
    for line in priced {
        let _ = writeln!(s, "\n{line}");
    }
    let _ = writeln!(s, "\nsources:");
    for (k, src) in &c.sources {
        let _ = writeln!(s, "  {k}: {} (valid {})", src.cites, src.date);
    }
    let _ = writeln!(s, "\nnot in this catalog:");
    for m in &c.missing {
        let _ = writeln!(s, "  - {m}");
    }
    s
}

/// A catalog's provider, region, currency and dates: `aws us-east-1, USD,
/// put together 2026-12-07; prices valid 2021-08-03 to 2026-07-20`.
fn head(l: &Listed) -> String {
    let c = &l.catalog;
    format!(
        "{} {}, {}, put together {}; prices valid {} to {}{}",
        c.provider,
        c.region,
        c.currency,
        c.date,
        l.oldest,
        newest(c),
        old_said(l)
    )
}

/// A managed database priced per vCPU and GiB, as listed.
fn rates(c: &Catalog, r: &Rates) -> String {
    let [lo, hi] = r.gib_per_vcpu;
    let per = format!("{} a vCPU-hour, {} a GiB-hour", r.vcpu_hour, r.gib_hour);
    let shapes = format!(
        "{:?} vCPUs, {lo}–{hi} GiB per vCPU, at least {} GiB",
        r.vcpus, r.min_gib
    );
    let cited = short(c, &r.source, r.also.as_ref(), r.date.as_ref());
    offered(&r.service, &r.engine, &format!("{per}; {shapes}"), &cited)
}

/// A managed database's Multi-AZ factor and storage, as listed.
fn rules(c: &Catalog, r: &Rules) -> String {
    let az = short(c, &r.multi_az_source, None, None);
    let storage = short(c, &r.storage_source, r.storage_min_source.as_ref(), None);
    format!(
        "{}: Multi-AZ × {} ({az}); storage {} a GB-month, at least {} GB ({storage})",
        r.service, r.multi_az_factor, r.storage_gb_month, r.storage_min_gb
    )
}

/// A serverless cache, as listed.
fn serverless(c: &Catalog, r: &ServerlessRow) -> String {
    let data = format!("{} a GB-hour (at least {} GB)", r.gb_hour, r.min_gb);
    let requests = format!(
        "{} a million ECPUs ({} KB an ECPU)",
        r.per_million_ecpu, r.kb_per_ecpu
    );
    let cited = short(c, &r.source, r.also.as_ref(), r.date.as_ref());
    offered(
        &r.service,
        &r.engine,
        &format!("{data}, {requests}"),
        &cited,
    )
}

/// A service's prices for one engine, with their sources.
fn offered(service: &str, engine: &str, prices: &str, cited: &str) -> String {
    format!("{service} ({engine}): {prices} — {cited}")
}

/// One shape as listed.
fn row(c: &Catalog, r: &Row) -> String {
    format!(
        "{:<22} {:<26} {:>5} vCPU {:>7} GiB {:>9} /h{}{} — {}",
        r.name,
        match &r.engine {
            Some(e) => format!("{} ({e})", r.service),
            None => r.service.clone(),
        },
        r.vcpu.map_or("-".into(), |v| v.to_string()),
        r.gib,
        r.hour,
        r.baseline
            .map_or(String::new(), |b| format!(", baseline {:.0}%", b * 100.0)),
        r.reserve
            .filter(|x| *x > 0.0)
            .map_or(String::new(), |x| format!(", reserve {:.0}%", x * 100.0)),
        short(c, &r.source, r.also.as_ref(), r.date.as_ref())
    )
}

/// A price's sources by key, with its date: `KAWS, OPZ; 2026-07-20`.
fn short(c: &Catalog, source: &str, also: Option<&String>, date: Option<&String>) -> String {
    let keys = match also {
        Some(a) => format!("{source}, {a}"),
        None => source.to_string(),
    };
    format!("{keys}; {}", c.date_of(source, date))
}

/// The newest date of any price in `c`.
fn newest(c: &Catalog) -> String {
    let rows = c.vm.iter().chain(&c.database).chain(&c.cache);
    rows.map(|r| c.date_of(&r.source, r.date.as_ref()))
        .max()
        .unwrap_or_else(|| c.date.clone())
}

/// ` — OLD: ...` where some price is over a year old.
fn old_said(l: &Listed) -> String {
    match l.old {
        true => format!(
            " — OLD: its oldest prices ({}) are over a year old; a current list price may differ",
            l.oldest
        ),
        false => String::new(),
    }
}
