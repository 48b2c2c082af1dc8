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
use crate::cli::commands::{Say, observe};
use crate::error::UsageError;
use crate::modes::decide;
use crate::modes::watched::ToWatch;
use crate::results::observe::ObservedLoad;

/// The file, in a decision's directory, of the load its `--observe` saw:
/// `--resume` takes it instead of watching again.
const SAVED: &str = "observed.json";

/// The load the servers serve: watched (and saved in the decision's
/// directory), or with `--resume` the one saved there (unless
/// `--observe-again`).
fn seen(
    args: &DecideArgs,
    servers: &[ToWatch],
    say: Say,
    shutdown: &AtomicBool,
) -> Result<ObservedLoad> {
    let dir = args
        .resume
        .clone()
        .or_else(|| args.out.clone())
        .unwrap_or_else(|| "results/decide".into());
    let path = dir.join(SAVED);
    if args.resume.is_some() && !args.observe_again && path.is_file() {
        let text = std::fs::read_to_string(&path)?;
        let l: ObservedLoad = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "--resume: {} is not an observation kvlab decide saved ({e}); give --observe-again to watch again",
                path.display()
            )
        })?;
        say.text(&format!(
            "kvlab decide: the observation saved in {} reused, not watched again (--observe-again watches again)\n",
            path.display()
        ));
        return Ok(l);
    }
    let like = args
        .keys_like
        .as_deref()
        .map(crate::driver::observe::KeysLike::new)
        .transpose()?;
    let o = observe::watch(
        servers,
        (args.observe_seconds, like.as_ref()),
        say,
        shutdown,
    )?;
    if shutdown.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(crate::error::Stopped(
            "kvlab decide: stopped while observing; nothing measured".into(),
        )
        .into());
    }
    std::fs::create_dir_all(&dir)?;
    crate::results::write_json_atomic(&o.load, &path)?;
    Ok(o.load)
}

/// `args` with the observed load in the flags the user left out.
pub fn stated(args: &DecideArgs, shutdown: &AtomicBool) -> Result<DecideArgs> {
    let r = &args.run;
    let say = Say::beside(r.json.as_deref());
    observe::window(args.observe_seconds, "--observe-seconds")?;
    let servers = observe::servers(r.aside.cache.as_deref(), Some(&r.target), &r.tls)?;
    let l = &seen(args, &servers, say, shutdown)?;
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
    say.text(&format!(
        "kvlab decide: from observation:\n{}",
        said.iter().map(|s| format!("  {s}\n")).collect::<String>()
    ));
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
    let b = decide::beside::of_observed(servers, &a.run.server_opt);
    if let Some(cache) = b.cache {
        a.run.aside.cache = Some(cache.into());
        a.observed_cache_limit = b.cache_limit;
    }
    if let Some(target) = b.target {
        a.run.target = target.into();
    }
    a.run.server_opt.extend(b.settings);
    said.extend(b.said);
    // The URLs' TLS and stated cores were of the servers observed.
    a.run.tls = Default::default();
    a.target_cores = None;
    a.cache_cores = None;
}
