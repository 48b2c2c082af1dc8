//! `kvlab decide --observe`: the servers given by URL watched first (as
//! `kvlab observe`), and the load they serve taken for each of `--rps`,
//! `--ratio`, `--keys`, `--value-size`, `--key-distribution` and
//! `--cache-ttl` not given;
//! which figures came from observation is said, and kept in the decision.
//! The decision is then measured beside the servers observed, on servers of
//! the same products kvlab starts, unless `--on-observed`.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::cli::DecideArgs;
use crate::cli::commands::{observe, say};
use crate::error::UsageError;
use crate::modes::observe::ToWatch;
use crate::servers::installed::{installed_version, major};

/// `args` with the observed load in the flags the user left out.
pub fn stated(args: &DecideArgs, shutdown: &AtomicBool) -> Result<DecideArgs> {
    let r = &args.run;
    let json = r.json.as_deref();
    observe::window(args.observe_seconds, "--observe-seconds")?;
    let servers = observe::servers(r.aside.cache.as_deref(), Some(&r.target), &r.tls)?;
    let o = observe::watch(&servers, args.observe_seconds, json, shutdown)?;
    if shutdown.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(crate::error::Stopped(
            "kvlab decide: stopped while observing; nothing measured".into(),
        )
        .into());
    }
    let l = &o.load;
    let mut a = args.clone();
    let mut said = Vec::new();
    let s = &mut said;
    fill(s, ("--rps", &mut a.rps), l.rps.map(f64::round), &l.rps_from);
    fill(
        s,
        ("--ratio", &mut a.run.ratio),
        l.ratio.clone(),
        &l.mix_from,
    );
    fill(s, ("--keys", &mut a.run.keys), l.keys, &l.keys_from);
    let size = l.value_size.as_ref().map(|v| v.flag.clone());
    let sizes = ("--value-size", &mut a.run.value_size);
    fill(s, sizes, size, &l.value_size_from);
    let zipf = l.zipf.map(|z| format!("zipf:{z}"));
    let skew = ("--key-distribution", &mut a.run.key_distribution);
    fill(s, skew, zipf, &l.skew_from);
    let ttl = ("--cache-ttl", &mut a.run.aside.cache_ttl);
    fill(s, ttl, l.cache_ttl_s, &l.ttl_from);
    if a.rps.is_none() {
        return Err(UsageError::bad(
            "--rps",
            format!("the servers' counters gave no rate ({})", l.rps_from),
            "give --rps",
        )
        .into());
    }
    match args.on_observed {
        true => said.push(
            "measured on: the servers observed themselves (--on-observed): kvlab writes its copy into them and drives them to their capacity".into(),
        ),
        false => beside(&mut a, &servers, &mut said),
    }
    say(
        json,
        &format!(
            "kvlab decide: from observation:\n{}",
            said.iter().map(|s| format!("  {s}\n")).collect::<String>()
        ),
    );
    a.observed = said;
    a.observe = false;
    Ok(a)
}

/// The figure of `flag` the user left out (`mine`) taken from what was
/// `seen` (said with where it came from, `from`), or said as kvlab's default
/// where nothing was seen; a figure given stays as given.
fn fill<T: std::fmt::Display>(
    said: &mut Vec<String>,
    (flag, mine): (&str, &mut Option<T>),
    seen: Option<T>,
    from: &str,
) {
    match (mine.is_some(), seen) {
        (true, _) => {}
        (false, Some(v)) => {
            said.push(format!("{flag} {v}: {from}"));
            *mine = Some(v);
        }
        (false, None) => said.push(format!("{flag}: not observed ({from}); kvlab's default")),
    }
}

/// `a` measured beside the `servers` observed: on servers of the same
/// products kvlab starts on this machine, never on the observed ones, with
/// the settings that shape the answer copied from them; said.
fn beside(a: &mut DecideArgs, servers: &[ToWatch], said: &mut Vec<String>) {
    let mut started = Vec::new();
    for s in servers {
        let name = s.connector.product.name();
        said.push(format!(
            "observed: {} ({}, {name} {})",
            s.connector.display, s.role, s.version
        ));
        said.push(versions(s));
        match s.role {
            crate::results::usage::Role::Cache => {
                a.run.aside.cache = Some(name.into());
                // Its memory limit, read-only: a point of the curve at its size.
                if let crate::driver::Role::Cache(c) = s.connector.product.role() {
                    a.observed_cache_limit = c
                        .memory(&s.connector)
                        .ok()
                        .map(|m| m.limit)
                        .filter(|l| *l > 0);
                }
            }
            _ => {
                a.run.target = name.into();
                said.extend(copy_settings(&mut a.run.server_opt, s));
            }
        }
        started.push(format!("a {name}"));
    }
    // The URLs' TLS and stated cores were of the servers observed.
    a.run.tls = Default::default();
    a.target_cores = None;
    a.cache_cores = None;
    said.push(format!(
        "measured on: {} kvlab starts on this machine, beside the servers observed (nothing written to them, no load put on them; --on-observed measures on them instead)",
        started.join(" and ")
    ));
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
/// waits), read-only, added to `opts` where the user gave none; said.
fn copy_settings(opts: &mut Vec<(String, String)>, s: &ToWatch) -> Option<String> {
    let product = s.connector.product;
    let keys: Vec<String> = product
        .facts()
        .server
        .copied_beside
        .iter()
        .filter(|k| !opts.iter().any(|(given, _)| given == *k))
        .map(|k| k.to_string())
        .collect();
    if keys.is_empty() {
        return None;
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
    opts.extend(read);
    Some(line)
}
