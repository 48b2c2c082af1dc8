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

/// What a managed server must be sized for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sizing {
    /// Bytes of data the run will store (keys, values, overhead).
    pub data_bytes: u64,
    /// Connections the run will open.
    pub connections: usize,
}

fn mib_for(data_bytes: u64, floor: u64) -> u64 {
    (((data_bytes as f64 * 1.5) / (1 << 20) as f64).ceil() as u64).max(floor)
}

/// Settings kvlab itself sets on a managed database (not overridable).
const SQL_OWN: &[&str] = &[
    "port",
    "listen_addresses",
    "unix_socket_directories",
    "data_directory",
    "datadir",
    "socket",
    "bind-address",
    "bind_address",
    "user",
    "pid-file",
];

/// The command-line arguments (after the binary) that apply `opts` for `kind`,
/// and the settings as recorded in results (secrets masked).
pub fn server_args(
    kind: TargetKind,
    opts: &BTreeMap<String, String>,
    sizing: Sizing,
) -> Result<(Vec<String>, BTreeMap<String, String>)> {
    let data_bytes = sizing.data_bytes;
    let mut args = Vec::new();
    let mut settings = BTreeMap::new();
    match kind {
        TargetKind::Postgres | TargetKind::Mariadb => {
            let pg = kind == TargetKind::Postgres;
            let mut given = opts.clone();
            let conns = (sizing.connections + 20).max(if pg { 100 } else { 151 });
            given
                .entry("max_connections".into())
                .or_insert_with(|| conns.to_string());
            let mem = format!("{}MB", mib_for(data_bytes, 128));
            let (mem_key, mem_value) = if pg {
                ("shared_buffers", mem)
            } else {
                ("innodb_buffer_pool_size", mem.replace("MB", "M"))
            };
            given.entry(mem_key.into()).or_insert(mem_value);
            if pg {
                // Exact per-statement counters to cross-check kvlab's counts (the
                // usual production setting; `shared_preload_libraries=` turns it off).
                given
                    .entry("shared_preload_libraries".into())
                    .or_insert_with(|| "pg_stat_statements".into());
            } else {
                // The MEMORY engine's table must fit too.
                given
                    .entry("max_heap_table_size".into())
                    .or_insert_with(|| format!("{}M", mib_for(data_bytes * 2, 64)));
            }
            for (k, v) in &given {
                let key = k.trim_start_matches("--");
                let key = if pg {
                    key.replace('-', "_")
                } else {
                    key.to_string()
                };
                if SQL_OWN.contains(&key.as_str()) {
                    bail!(
                        "--server-opt {k}: kvlab sets '{key}' itself for a managed server; remove this option"
                    );
                }
                if pg {
                    args.push("-c".to_string());
                    args.push(format!("{key}={v}"));
                } else {
                    args.push(format!("--{key}={v}"));
                }
                let shown = if crate::plan::is_secret_key(&key) {
                    "***".to_string()
                } else {
                    v.clone()
                };
                settings.insert(key, shown);
            }
        }
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
            given
                .entry("memory-mb".into())
                .or_insert_with(|| mib_for(data_bytes, 64).to_string());
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

    fn sz(data_bytes: u64) -> Sizing {
        Sizing {
            data_bytes,
            connections: 50,
        }
    }

    #[test]
    fn sizes_databases() {
        let mut o = BTreeMap::new();
        let sizing = Sizing {
            data_bytes: 1 << 30,
            connections: 1000,
        };
        let (args, settings) = server_args(TargetKind::Postgres, &o, sizing).unwrap();
        assert_eq!(settings["max_connections"], "1020");
        assert_eq!(settings["shared_buffers"], "1536MB");
        assert!(args.windows(2).any(|w| w == ["-c", "max_connections=1020"]));
        o.insert("query_cache_type".to_string(), "1".to_string());
        let (args, settings) = server_args(TargetKind::Mariadb, &o, sz(0)).unwrap();
        assert!(args.contains(&"--query_cache_type=1".to_string()));
        assert_eq!(settings["max_connections"], "151");
        o.insert("port".into(), "1".into());
        assert!(server_args(TargetKind::Mariadb, &o, sz(0)).is_err());
    }

    #[test]
    fn maps_memcached_settings() {
        let mut o = BTreeMap::new();
        o.insert("threads".to_string(), "2".to_string());
        let (args, settings) = server_args(TargetKind::Memcached, &o, sz(100 << 20)).unwrap();
        assert!(args.windows(2).any(|w| w == ["-t", "2"]));
        assert!(args.windows(2).any(|w| w == ["-m", "150"]));
        assert_eq!(settings["max-connections"], "4096");
        o.insert("bogus".into(), "1".into());
        let e = server_args(TargetKind::Memcached, &o, sz(0))
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
        let (args, settings) = server_args(TargetKind::Redis, &o, sz(0)).unwrap();
        assert!(args.windows(2).any(|w| w == ["--io-threads", "4"]));
        assert!(args.windows(2).any(|w| w == ["--maxmemory", "100mb"]));
        assert_eq!(settings["requirepass"], "***");
        o.insert("port".into(), "1".into());
        assert!(server_args(TargetKind::Redis, &o, sz(0)).is_err());
        assert!(parse_opt("a=b").is_ok() && parse_opt("ab").is_err() && parse_opt("=b").is_err());
    }
}
