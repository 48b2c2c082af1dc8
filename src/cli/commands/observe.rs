//! `kvlab observe`: watches running servers given by URL, read-only, and
//! states the load they serve as `kvlab decide`'s flags (and a `[decide]`
//! study file with `--write`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use clap::Args;

use super::{Say, check_writable, write_json};
use crate::cli::tls::TlsArgs;
use crate::driver::Connector;
use crate::driver::observe::KeysLike;
use crate::error::UsageError;
use crate::modes::observe;
use crate::modes::watched::ToWatch;
use crate::plan::TargetSpec;
use crate::results::observe::Observation;
use crate::results::usage::Role;

/// Flags of `kvlab observe`.
#[derive(Debug, Args)]
#[command(after_help = "Example:
  kvlab observe --cache redis://10.0.0.5:6379 --target postgres://app@10.0.0.6/app --seconds 60 --write observed.toml

Read-only: kvlab sends no command that writes, no MONITOR and no KEYS (the README lists every command).")]
pub struct ObserveArgs {
    /// The cache, as a URL (redis://, valkey://, memcached://).
    #[arg(long, value_name = "URL")]
    pub cache: Option<String>,
    /// The database, as a URL (postgres://, mysql://).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// How long to watch, seconds.
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    pub seconds: f64,
    /// The latency goal, ms, for the command line and study file (else left
    /// for you to state).
    #[arg(long, value_name = "MS")]
    pub p99_ms: Option<f64>,
    /// Write the load as a `[decide]` study file (`kvlab study FILE`).
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Write the observation as JSON to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The application's keys among the cache's, as a glob (`user:*`): its
    /// keys, value sizes, TTLs and the skew fit are taken from those only
    /// (hits, misses and memory stay the whole server's).
    #[arg(long, value_name = "GLOB")]
    pub keys_like: Option<String>,
    /// TLS to both servers, as for `kvlab run` (a TLS scheme or URL option
    /// alone also turns it on).
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// Runs `kvlab observe`.
pub fn exec(args: &ObserveArgs, shutdown: &AtomicBool) -> Result<()> {
    for p in [&args.json, &args.write].into_iter().flatten() {
        check_writable(p)?;
    }
    window(args.seconds, "--seconds")?;
    let like = args.keys_like.as_deref().map(KeysLike::new).transpose()?;
    let servers = servers(args.cache.as_deref(), args.target.as_deref(), &args.tls)?;
    let say = Say::beside(args.json.as_deref());
    let o = watch(&servers, (args.seconds, like.as_ref()), say, shutdown)?;
    let goal = args.p99_ms;
    say.text(&crate::report::observe::command(&o, goal));
    if let Some(p) = &args.write {
        std::fs::write(p, crate::report::observe::study_file(&o, goal))?;
        say.text(&format!("kvlab: wrote {}\n", p.display()));
    }
    if let Some(p) = &args.json {
        write_json(p, &o)?;
    }
    Ok(())
}

/// `seconds` (given as `flag`) as a window kvlab can watch, checked before
/// any server is reached.
pub fn window(seconds: f64, flag: &'static str) -> Result<()> {
    match (1.0..=86_400.0).contains(&seconds) {
        true => Ok(()),
        false => Err(UsageError::bad(
            flag,
            format!("{seconds} is not a window kvlab can watch"),
            format!("give 1 to 86400 seconds, e.g. {flag} 60"),
        )
        .into()),
    }
}

/// Watches `servers` for `seconds` (checked by [`window`]), a cache's keys
/// those `like` matches where given, saying what it does and what it saw.
pub fn watch(
    servers: &[ToWatch],
    (seconds, like): (f64, Option<&KeysLike>),
    say: Say,
    shutdown: &AtomicBool,
) -> Result<Observation> {
    let names: Vec<String> = servers
        .iter()
        .map(|s| format!("{} ({})", s.connector.display, s.role))
        .collect();
    say.text(&format!(
        "kvlab observe: watching {} for {seconds} s, read-only (its counters every second, then a sample of its keys)\n",
        names.join(" and ")
    ));
    let o = observe::observe(servers, (seconds, like), shutdown)?;
    say.text(&crate::report::observe::text(&o));
    Ok(o)
}

/// The servers `--cache` and `--target` name, each a URL of a running
/// server of the role its flag says.
pub fn servers(cache: Option<&str>, target: Option<&str>, tls: &TlsArgs) -> Result<Vec<ToWatch>> {
    let mut out = Vec::new();
    for (flag, url, role) in [
        ("--cache", cache, Role::Cache),
        ("--target", target, Role::Database),
    ] {
        let Some(url) = url else { continue };
        let mut spec: TargetSpec = url.parse().map_err(|e| match e {
            UsageError::BadValue { problem, fix, .. } => UsageError::bad(flag, problem, fix),
            other => other,
        })?;
        let Some(endpoint) = spec.external.clone() else {
            return Err(UsageError::bad(
                flag,
                format!(
                    "'{url}' names a server kvlab would start; observe watches one already running"
                ),
                format!(
                    "give its URL, e.g. {flag} {}",
                    spec.kind.product().facts().example_url
                ),
            )
            .into());
        };
        let product = spec.kind.product();
        let is_cache = matches!(product.role(), crate::driver::Role::Cache(_));
        if is_cache != (role == Role::Cache) || product.observe().is_none() {
            return Err(UsageError::bad(
                flag,
                format!("kvlab observe does not watch {} as the {role}", product.name()),
                "give --cache redis://|valkey://|memcached://… and --target postgres://|mysql://… (a cluster: one node's URL)",
            )
            .into());
        }
        tls.apply(&mut spec)?;
        let endpoint = spec.external.clone().unwrap_or(endpoint);
        if let Some(t) = &endpoint.tls {
            eprintln!("kvlab: {flag}: TLS, {}", t.verify.describe());
        }
        let connector = Connector::new(spec.kind, &endpoint)?;
        // The server answers in the protocol its URL names, or nothing is
        // watched: a Redis URL at PostgreSQL's port is an error, not a
        // window of figures not known.
        let info = connector
            .probe(std::time::Duration::from_secs(4))
            .map_err(|e| {
                anyhow::anyhow!("{flag}: {}", format!("{e:#}").replace("--target", flag))
            })?;
        out.push(ToWatch {
            role,
            connector,
            version: info.version,
        });
    }
    if out.is_empty() {
        return Err(UsageError::bad(
            "--cache/--target",
            "no server to watch",
            "give --cache URL, --target URL, or both (e.g. --cache redis://host:6379 --target postgres://user@host/db)",
        )
        .into());
    }
    Ok(out)
}
