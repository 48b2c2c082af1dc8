//! Settings of managed servers in general: what a server is sized for, the
//! `--server-opt KEY=VALUE` syntax, and the checks every product's settings
//! share (kvlab's own keys refused, secrets masked, numbers checked). Each
//! product maps its keys to its command line in its own folder.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use crate::driver::endpoint::is_secret_key;

/// What a managed server must be sized for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sizing {
    /// Bytes of data the run will store (keys, values, overhead).
    pub data_bytes: u64,
    /// Connections the run will open.
    pub connections: usize,
}

#[cfg(test)]
impl Sizing {
    /// Sized for `data_bytes` of data and 50 connections (products' unit tests).
    pub fn test(data_bytes: u64) -> Sizing {
        Sizing {
            data_bytes,
            connections: 50,
        }
    }
}

/// A managed server's settings, as command-line arguments and as recorded.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Arguments after the binary.
    pub args: Vec<String>,
    /// Settings as recorded in results (secrets masked).
    pub settings: BTreeMap<String, String>,
    /// A password the settings set for clients (e.g. `requirepass`).
    pub password: Option<String>,
    /// Settings for a configuration file the product writes (unmasked, never
    /// recorded; `settings` holds what results show).
    pub entries: BTreeMap<String, String>,
}

/// MiB for 1.5x `data_bytes`, at least `floor`.
pub fn mib_for(data_bytes: u64, floor: u64) -> u64 {
    (((data_bytes as f64 * 1.5) / (1 << 20) as f64).ceil() as u64).max(floor)
}

/// `opts` with kvlab's `defaults` added for the keys they do not set.
pub fn with_defaults<const N: usize>(
    opts: &BTreeMap<String, String>,
    defaults: [(&str, String); N],
) -> BTreeMap<String, String> {
    let mut given = opts.clone();
    for (key, value) in defaults {
        given.entry(key.to_string()).or_insert(value);
    }
    given
}

/// The error for a setting that should be a whole number.
pub fn bad_number(k: &str, v: &str) -> anyhow::Error {
    anyhow::anyhow!("--server-opt {k}={v}: '{v}' is not a whole number; give e.g. {k}=4")
}

/// Settings kvlab itself sets on a managed database (not overridable).
pub const DATABASE_OWN: &[&str] = &[
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

/// Fails when `key` (given as `k`) is one kvlab sets itself.
pub fn refuse_own(k: &str, key: &str, own: &[&str]) -> Result<()> {
    if own.contains(&key) {
        bail!(
            "--server-opt {k}: kvlab sets '{key}' itself for a managed server; remove this option"
        );
    }
    Ok(())
}

/// `value` as recorded in results: `***` when `key` holds a secret.
pub fn shown(key: &str, value: &str) -> String {
    if is_secret_key(key) {
        "***".to_string()
    } else {
        value.to_string()
    }
}

/// A database's settings: each of `given` (kvlab's defaults already added)
/// renamed by `key_of`, refused when in `own`, and turned into arguments by
/// `arg`; recorded by its normalised name.
pub fn database_config(
    given: &BTreeMap<String, String>,
    own: &[&str],
    key_of: impl Fn(&str) -> String,
    arg: impl Fn(&str, &str) -> Vec<String>,
) -> Result<Config> {
    let mut config = Config::default();
    for (k, v) in given {
        let key = key_of(k.trim_start_matches("--"));
        refuse_own(k, &key, own)?;
        config.args.extend(arg(&key, v));
        config.settings.insert(key.clone(), shown(&key, v));
    }
    Ok(config)
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
    fn parses_options() {
        assert!(parse_opt("a=b").is_ok() && parse_opt("ab").is_err() && parse_opt("=b").is_err());
    }
}
