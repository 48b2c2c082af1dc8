//! A managed Redis or Valkey: every `--server-opt KEY=VALUE` passes through as
//! `--KEY VALUE` (kvlab's `memory-mb` becomes `maxmemory`), no persistence, on
//! loopback in kvlab's temporary directory.

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::Result;

use super::RespProduct;
use crate::driver::settings::{bad_number, refuse_own, shown};
use crate::driver::{Config, Launch, Login, Server, Sizing};

/// Settings kvlab sets itself on a managed RESP server.
const OWN: &[&str] = &["port", "bind", "dir", "daemonize", "logfile", "unixsocket"];

/// Redis's and Valkey's own `maxclients`.
const DEFAULT_MAXCLIENTS: usize = 10_000;

/// Clients beyond the run's connections (kvlab's set-up and counters, replicas).
const MAXCLIENTS_SPARE: usize = 32;

impl Server for RespProduct {
    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config> {
        let mut config = Config {
            password: opts.get("requirepass").cloned(),
            ..Config::default()
        };
        for (k, v) in opts {
            // kvlab's own name for the memory limit, shared with memcached.
            let (key, value) = if k == "memory-mb" {
                let mb: u64 = v.parse().map_err(|_| bad_number(k, v))?;
                ("maxmemory".to_string(), format!("{mb}mb"))
            } else {
                (k.trim_start_matches("--").to_string(), v.clone())
            };
            refuse_own(k, &key, OWN)?;
            config.args.push(format!("--{key}"));
            if value.trim().is_empty() {
                config.args.push(String::new());
            } else {
                config
                    .args
                    .extend(value.split_whitespace().map(str::to_string));
            }
            config.settings.insert(key.clone(), shown(&key, &value));
        }
        // Room for every connection of the run (the server's default is
        // 10000), unless the user set it.
        let clients = sizing.connections + MAXCLIENTS_SPARE;
        if clients > DEFAULT_MAXCLIENTS && !config.settings.contains_key("maxclients") {
            config
                .args
                .extend(["--maxclients".into(), clients.to_string()]);
            config
                .settings
                .insert("maxclients".into(), clients.to_string());
        }
        Ok(config)
    }

    fn command(&self, l: &Launch<'_>) -> Result<(Command, Login)> {
        let mut cmd = Command::new(l.binary);
        match l.tls {
            // TLS only: the port speaks TLS, no plain port (cluster bus too).
            Some(f) => {
                cmd.arg("--tls-port").arg(l.port.to_string());
                cmd.args(["--port", "0", "--tls-auth-clients", "no"]);
                cmd.args(["--tls-cluster", "yes", "--tls-replication", "yes"]);
                cmd.arg("--tls-cert-file").arg(&f.cert);
                cmd.arg("--tls-key-file").arg(&f.key);
                cmd.arg("--tls-ca-cert-file").arg(&f.ca);
            }
            None => {
                cmd.arg("--port").arg(l.port.to_string());
            }
        }
        if let Some(path) = l.socket {
            cmd.arg("--unixsocket").arg(path);
            cmd.args(["--unixsocketperm", "700"]);
        }
        cmd.args([
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
        ])
        .args(["--protected-mode", "no", "--logfile", ""])
        .arg("--dir")
        .arg(l.dir);
        Ok((cmd, Login::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::REDIS;
    use super::*;

    #[test]
    fn passes_redis_settings_through() {
        let mut o = BTreeMap::new();
        o.insert("io-threads".to_string(), "4".to_string());
        o.insert("memory-mb".to_string(), "100".to_string());
        o.insert("requirepass".to_string(), "pw".to_string());
        let c = REDIS.configure(&o, Sizing::test(0)).unwrap();
        let (args, settings) = (c.args, c.settings);
        assert!(args.windows(2).any(|w| w == ["--io-threads", "4"]));
        assert!(args.windows(2).any(|w| w == ["--maxmemory", "100mb"]));
        assert_eq!(settings["requirepass"], "***");
        o.insert("port".into(), "1".into());
        assert!(REDIS.configure(&o, Sizing::test(0)).is_err());
    }

    #[test]
    fn maxclients_has_room_for_the_run_unless_the_user_set_it() {
        let none = BTreeMap::new();
        let c = REDIS.configure(&none, Sizing::test(0)).unwrap();
        assert!(!c.args.iter().any(|a| a == "--maxclients"), "{:?}", c.args);
        let many = Sizing {
            connections: 20_000,
            ..Sizing::test(0)
        };
        let c = REDIS.configure(&none, many).unwrap();
        assert!(c.args.windows(2).any(|w| w == ["--maxclients", "20032"]));
        let mut o = BTreeMap::new();
        o.insert("maxclients".to_string(), "500".to_string());
        let c = REDIS.configure(&o, many).unwrap();
        assert_eq!(c.args, ["--maxclients", "500"]);
    }
}
