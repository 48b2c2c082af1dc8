//! A managed memcached: kvlab's names for its flags (`threads` → `-t`,
//! `memory-mb` → `-m`, ...), checked, with defaults sized for the data.

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Result, bail};

use super::Memcached;
use crate::driver::settings::{bad_number, mib_for, with_defaults};
use crate::driver::{Config, Launch, Login, Server, Sizing};
use crate::system::osuser::is_root;
use crate::system::process::open_files;

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
        "simultaneous connections (kvlab default 4096, or the run's connections + 32 when more; at most the open-file hard limit)",
    ),
    ("item-size-max", "-I", "largest item, e.g. 1m or 4m"),
    ("backlog", "-b", "listen backlog"),
];

/// The default `-c`: room for the run's connections, at least memcached's own
/// usual 4096, at most the open files memcached may set itself (it sets its
/// limit to `-c` and refuses to start where it cannot).
fn max_connections(sizing: Sizing) -> u64 {
    let (_, hard) = open_files();
    (sizing.connections as u64 + 32).max(4096).min(hard)
}

impl Server for Memcached {
    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config> {
        let given = with_defaults(
            opts,
            [
                ("max-connections", max_connections(sizing).to_string()),
                ("memory-mb", mib_for(sizing.data_bytes, 64).to_string()),
            ],
        );
        let mut config = Config::default();
        for (k, v) in &given {
            let Some((_, flag, _)) = MEMCACHED_KEYS.iter().find(|(name, _, _)| name == k) else {
                let known: Vec<&str> = MEMCACHED_KEYS.iter().map(|(n, _, _)| *n).collect();
                bail!(
                    "--server-opt {k}: unknown memcached setting; use one of {}",
                    known.join(", ")
                );
            };
            if *flag != "-I" && v.parse::<u64>().is_err() {
                return Err(bad_number(k, v));
            }
            config.args.push(flag.to_string());
            config.args.push(v.clone());
            config.settings.insert(k.clone(), v.clone());
        }
        Ok(config)
    }

    fn command(&self, l: &Launch<'_>) -> Result<(Command, Login)> {
        let mut cmd = Command::new(l.binary);
        match l.socket {
            // memcached on a unix socket listens on nothing else.
            Some(path) => cmd.arg("-s").arg(path).args(["-a", "0700"]),
            None => cmd
                .arg("-p")
                .arg(l.port.to_string())
                .args(["-l", "127.0.0.1"]),
        };
        cmd.args(["-U", "0"]);
        if let Some(f) = l.tls {
            cmd.arg("-Z").arg("-o").arg(format!(
                "ssl_chain_cert={},ssl_key={}",
                f.cert.display(),
                f.key.display()
            ));
        }
        if is_root() {
            cmd.args(["-u", "root"]);
        }
        Ok((cmd, Login::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::MEMCACHED;
    use super::*;

    #[test]
    fn maps_memcached_settings() {
        let mut o = BTreeMap::new();
        o.insert("threads".to_string(), "2".to_string());
        let (args, settings) = MEMCACHED
            .configure(&o, Sizing::test(100 << 20))
            .map(|c| (c.args, c.settings))
            .unwrap();
        assert!(args.windows(2).any(|w| w == ["-t", "2"]));
        assert!(args.windows(2).any(|w| w == ["-m", "150"]));
        let (_, hard) = open_files();
        assert_eq!(settings["max-connections"], 4096.min(hard).to_string());
        let many = Sizing {
            connections: 20_000,
            ..Sizing::test(0)
        };
        let c = MEMCACHED.configure(&BTreeMap::new(), many).unwrap();
        assert_eq!(c.settings["max-connections"], 20_032.min(hard).to_string());
        o.insert("bogus".into(), "1".into());
        let e = MEMCACHED
            .configure(&o, Sizing::test(0))
            .map(|c| c.args)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus") && e.contains("threads"), "{e}");
    }
}
