//! Settings of managed servers: turns `--server-opt KEY=VALUE` pairs into each
//! product's command line, with kvlab's defaults, and rejects unknown keys.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use crate::plan::TargetKind;

/// Settings kvlab accepts for a managed memcached, with the flag each maps to.
pub const MEMCACHED_KEYS: &[(&str, &str, &str)] = &[
    ("threads", "-t", "worker threads (memcached default 4)"),
    (
        "memory-mb",
        "-m",
        "item memory in MiB (kvlab default: 1.5x the data set, at least 64)",
    ),
    (
        "max-connections",
        "-c",
        "simultaneous connections (kvlab default 4096)",
    ),
    ("item-size-max", "-I", "largest item, e.g. 1m or 4m"),
    ("backlog", "-b", "listen backlog"),
];

/// The command-line arguments (after the binary) that apply `opts` for `kind`,
/// and the settings as recorded in results (secrets masked).
pub fn server_args(
    kind: TargetKind,
    opts: &BTreeMap<String, String>,
    data_bytes: u64,
) -> Result<(Vec<String>, BTreeMap<String, String>)> {
    let mut args = Vec::new();
    let mut settings = BTreeMap::new();
    match kind {
        TargetKind::Redis | TargetKind::Valkey => {
            for (k, v) in opts {
                // kvlab's own name for the memory limit, shared with memcached.
                let (key, value) = if k == "memory-mb" {
                    let mb: u64 = v.parse().map_err(|_| bad_number(k, v))?;
                    ("maxmemory".to_string(), format!("{mb}mb"))
                } else {
                    (k.trim_start_matches("--").to_string(), v.clone())
                };
                if matches!(
                    key.as_str(),
                    "port" | "bind" | "dir" | "daemonize" | "logfile" | "unixsocket"
                ) {
                    bail!(
                        "--server-opt {k}: kvlab sets '{key}' itself for a managed server; remove this option"
                    );
                }
                args.push(format!("--{key}"));
                if value.trim().is_empty() {
                    args.push(String::new());
                } else {
                    args.extend(value.split_whitespace().map(str::to_string));
                }
                let shown = if crate::plan::is_secret_key(&key) {
                    "***".to_string()
                } else {
                    value
                };
                settings.insert(key, shown);
            }
        }
        TargetKind::Memcached => {
            let mut given = opts.clone();
            given
                .entry("max-connections".into())
                .or_insert_with(|| "4096".into());
            given.entry("memory-mb".into()).or_insert_with(|| {
                (((data_bytes as f64 * 1.5) / (1 << 20) as f64).ceil() as u64)
                    .max(64)
                    .to_string()
            });
            for (k, v) in &given {
                let Some((_, flag, _)) = MEMCACHED_KEYS.iter().find(|(name, _, _)| name == k)
                else {
                    let known: Vec<&str> = MEMCACHED_KEYS.iter().map(|(n, _, _)| *n).collect();
                    bail!(
                        "--server-opt {k}: unknown memcached setting; use one of {}",
                        known.join(", ")
                    );
                };
                if *flag != "-I" && v.parse::<u64>().is_err() {
                    return Err(bad_number(k, v));
                }
                args.push(flag.to_string());
                args.push(v.clone());
                settings.insert(k.clone(), v.clone());
            }
        }
    }
    Ok((args, settings))
}

fn bad_number(k: &str, v: &str) -> anyhow::Error {
    anyhow::anyhow!("--server-opt {k}={v}: '{v}' is not a whole number; give e.g. {k}=4")
}

/// Parses one `KEY=VALUE` of `--server-opt`.
pub fn parse_opt(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!(
            "'{s}' is not KEY=VALUE; write e.g. --server-opt io-threads=4"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_memcached_settings() {
        let mut o = BTreeMap::new();
        o.insert("threads".to_string(), "2".to_string());
        let (args, settings) = server_args(TargetKind::Memcached, &o, 100 << 20).unwrap();
        assert!(args.windows(2).any(|w| w == ["-t", "2"]));
        assert!(args.windows(2).any(|w| w == ["-m", "150"]));
        assert_eq!(settings["max-connections"], "4096");
        o.insert("bogus".into(), "1".into());
        let e = server_args(TargetKind::Memcached, &o, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus") && e.contains("threads"), "{e}");
    }

    #[test]
    fn passes_redis_settings_through() {
        let mut o = BTreeMap::new();
        o.insert("io-threads".to_string(), "4".to_string());
        o.insert("memory-mb".to_string(), "100".to_string());
        o.insert("requirepass".to_string(), "pw".to_string());
        let (args, settings) = server_args(TargetKind::Redis, &o, 0).unwrap();
        assert!(args.windows(2).any(|w| w == ["--io-threads", "4"]));
        assert!(args.windows(2).any(|w| w == ["--maxmemory", "100mb"]));
        assert_eq!(settings["requirepass"], "***");
        o.insert("port".into(), "1".into());
        assert!(server_args(TargetKind::Redis, &o, 0).is_err());
        assert!(parse_opt("a=b").is_ok() && parse_opt("ab").is_err() && parse_opt("=b").is_err());
    }
}
