//! A managed Cassandra node: a JVM started from the jars `make deps` fetched
//! (`scripts/cassandra-jars.sh`, into a cache outside the repository) with a
//! `cassandra.yaml` kvlab writes into its temporary directory: loopback ports,
//! data under the directory, one token, snapshots off. `memory-mb` sets the
//! heap; every other `--server-opt KEY=VALUE` is a `cassandra.yaml` key.
//! `authenticator=PasswordAuthenticator` makes kvlab log in as the default
//! superuser.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::Cassandra;
use super::conn::{open, text};
use crate::driver::settings::{bad_number, refuse_own, shown};
use crate::driver::{Config, Connector, Launch, Login, Server, Sizing};
use crate::servers::managed::free_port;

/// `cassandra.yaml` keys kvlab sets itself.
const OWN: &[&str] = &[
    "data_file_directories",
    "commitlog_directory",
    "saved_caches_directory",
    "hints_directory",
    "cdc_raw_directory",
    "native_transport_port",
    "storage_port",
    "ssl_storage_port",
    "listen_address",
    "rpc_address",
    "seed_provider",
];

/// kvlab's defaults for the other keys (a user's `--server-opt` wins).
const DEFAULTS: &[(&str, &str)] = &[
    ("cluster_name", "kvlab"),
    ("num_tokens", "1"),
    ("initial_token", "0"),
    ("partitioner", "org.apache.cassandra.dht.Murmur3Partitioner"),
    ("commitlog_sync", "periodic"),
    ("commitlog_sync_period", "10000ms"),
    ("endpoint_snitch", "SimpleSnitch"),
    ("authenticator", "AllowAllAuthenticator"),
    ("authorizer", "AllowAllAuthorizer"),
    ("start_native_transport", "true"),
    ("auto_snapshot", "false"),
    ("snapshot_before_compaction", "false"),
];

/// JVM options Cassandra 5.0 documents for Java 17 (`conf/jvm17-server.options`).
const JVM17: &[&str] = &[
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports=java.sql/java.sql=ALL-UNNAMED",
    "--add-exports=java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports=jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.attach.allowAttachSelf=true",
    "-Djava.net.preferIPv4Stack=true",
    "-XX:+PerfDisableSharedMem",
    "-XX:+ExitOnOutOfMemoryError",
    "-Xss256k",
];

/// Start-up shortcuts for a throwaway single node.
const FAST_START: &[&str] = &[
    "-Dcassandra-foreground=yes",
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    "-Dcassandra.ring_delay_ms=100",
    "-Dcassandra.superuser_setup_delay_ms=0",
    "-Dcassandra.unsafesystem=true",
];

/// Logs to the server's log file (stdout), INFO and up.
const LOGBACK: &str = r#"<configuration scan="false">
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level %date{ISO8601} %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="OUT"/></root>
</configuration>
"#;

/// The login of a node with `PasswordAuthenticator`: its default superuser.
const SUPERUSER: (&str, &str) = ("cassandra", "cassandra");

/// The directory holding Cassandra's jars (`lib/*.jar`, complete): the one
/// `KVLAB_CASSANDRA_HOME` names, else the newest `cassandra-*` that
/// `scripts/cassandra-jars.sh` fetched under `~/.cache/kvlab`.
pub fn home() -> Option<PathBuf> {
    let complete = |d: &Path| d.join("lib/.complete").is_file();
    if let Some(h) = std::env::var_os("KVLAB_CASSANDRA_HOME") {
        return Some(PathBuf::from(h)).filter(|d| complete(d));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.join("kvlab"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|d| {
            d.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("cassandra-"))
                && complete(d)
        })
        .collect();
    found.sort_by_key(|d| version_key(d));
    found.pop()
}

/// `cassandra-5.0.10` sorts after `cassandra-5.0.9`.
fn version_key(d: &Path) -> Vec<u64> {
    d.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .trim_start_matches("cassandra-")
        .split('.')
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

impl Server for Cassandra {
    /// Java, when Cassandra's jars are there too.
    fn find(&self, binary: &str) -> Option<PathBuf> {
        home()?;
        crate::system::osuser::find_binary(binary)
    }

    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config> {
        let mut config = Config::default();
        let mut heap = (sizing.data_bytes.saturating_mul(3) >> 20).clamp(1024, 8192);
        for (k, v) in DEFAULTS {
            config.entries.insert((*k).into(), (*v).into());
        }
        for (k, v) in opts {
            let key = k.trim_start_matches("--");
            refuse_own(k, key, OWN)?;
            if key == "memory-mb" {
                heap = v.parse().map_err(|_| bad_number(k, v))?;
                if heap < 256 {
                    anyhow::bail!(
                        "--server-opt {k}={v}: Cassandra needs a heap of at least 256 MiB; give e.g. {k}=1024"
                    );
                }
                continue;
            }
            config.entries.insert(key.to_string(), v.clone());
        }
        // Results show what was given, the heap and the commit log's sync mode.
        for (k, v) in &config.entries {
            if opts.contains_key(k) || k.starts_with("commitlog_sync") {
                config.settings.insert(k.clone(), shown(k, v));
            }
        }
        // The heap: a JVM flag, not a yaml key; results show it as memory-mb.
        config.settings.insert("memory-mb".into(), heap.to_string());
        Ok(config)
    }

    fn command(&self, l: &Launch<'_>) -> Result<(Command, Login)> {
        let home = home().context("Cassandra's jars are missing; run `make deps`")?;
        let dir = l.dir;
        let (storage, ssl_storage, jmx) = (free_port()?, free_port()?, free_port()?);
        let mut yaml = String::new();
        for sub in ["data", "commitlog", "saved_caches", "hints", "cdc_raw"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let _ = writeln!(
            yaml,
            "data_file_directories:\n  - {}",
            dir.join("data").display()
        );
        for sub in ["commitlog", "saved_caches", "hints", "cdc_raw"] {
            let _ = writeln!(yaml, "{sub}_directory: {}", dir.join(sub).display());
        }
        let _ = writeln!(
            yaml,
            "seed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"127.0.0.1:{storage}\""
        );
        let _ = writeln!(
            yaml,
            "listen_address: 127.0.0.1\nrpc_address: 127.0.0.1\nstorage_port: {storage}\nssl_storage_port: {ssl_storage}\nnative_transport_port: {}",
            l.port
        );
        let heap = l
            .config
            .settings
            .get("memory-mb")
            .map_or("1024", String::as_str);
        for (k, v) in &l.config.entries {
            let _ = writeln!(yaml, "{k}: {v}");
        }
        if let Some(f) = l.tls {
            // The native port takes TLS (and, `optional`, plain clients too:
            // Cassandra tells them apart by their first bytes).
            let _ = writeln!(
                yaml,
                "client_encryption_options:\n  enabled: true\n  optional: true\n  require_client_auth: false\n  ssl_context_factory:\n    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory\n  keystore: {}",
                f.combined.display()
            );
        }
        std::fs::write(dir.join("cassandra.yaml"), yaml).context("cannot write cassandra.yaml")?;
        std::fs::write(dir.join("logback.xml"), LOGBACK).context("cannot write logback.xml")?;
        let mut cmd = Command::new(l.binary);
        cmd.arg(format!("-Xms{heap}m"))
            .arg(format!("-Xmx{heap}m"))
            .arg("-XX:+UseG1GC")
            .args(JVM17)
            .args(FAST_START)
            .arg(format!(
                "-Dlogback.configurationFile=file://{}/logback.xml",
                dir.display()
            ))
            .arg(format!(
                "-Dcassandra.config=file://{}/cassandra.yaml",
                dir.display()
            ))
            .arg(format!("-Dcassandra.storagedir={}", dir.display()))
            .arg(format!("-Dcassandra.logdir={}", dir.display()))
            .arg(format!("-Dcassandra.jmx.local.port={jmx}"))
            .arg("-cp")
            .arg(format!("{}/lib/*", home.display()))
            .arg("org.apache.cassandra.service.CassandraDaemon");
        // Cassandra always calls mlockall(); as root that pins the whole heap.
        // Without CAP_IPC_LOCK and with a small RLIMIT_MEMLOCK it fails
        // harmlessly, as it does for any other user.
        // SAFETY: prctl and setrlimit are async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_CAPBSET_DROP, 14 /* CAP_IPC_LOCK */, 0, 0, 0);
                let lim = libc::rlimit {
                    rlim_cur: 64 << 10,
                    rlim_max: 64 << 10,
                };
                libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim);
                Ok(())
            });
        }
        let password = l
            .config
            .entries
            .get("authenticator")
            .is_some_and(|a| a.contains("PasswordAuthenticator"));
        let login = if password {
            Login {
                user: Some(SUPERUSER.0.into()),
                password: Some(SUPERUSER.1.into()),
                database: None,
            }
        } else {
            Login::default()
        };
        Ok((cmd, login))
    }

    /// The node's values of `keys` (`system_views.settings`).
    fn effective_settings(&self, c: &Connector, keys: &[String]) -> Vec<(String, String)> {
        let Ok(mut conn) = open(c, Duration::from_secs(5)) else {
            return Vec::new();
        };
        keys.iter()
            .filter(|k| k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            .filter_map(|k| {
                let rows = conn
                    .query(&format!(
                        "SELECT value FROM system_views.settings WHERE name = '{k}'"
                    ))
                    .ok()?;
                let v = text(rows.first()?.first());
                Some((k.clone(), v))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::CASSANDRA;
    use super::*;

    #[test]
    fn yaml_keys_heap_and_own_keys() {
        let mut o = BTreeMap::new();
        o.insert("memory-mb".to_string(), "768".to_string());
        o.insert("concurrent_reads".to_string(), "64".to_string());
        o.insert("num_tokens".to_string(), "4".to_string());
        let c = CASSANDRA.configure(&o, Sizing::default()).unwrap();
        assert_eq!(c.settings["memory-mb"], "768");
        assert!(!c.entries.contains_key("memory-mb"), "not a yaml key");
        assert_eq!(c.entries["concurrent_reads"], "64");
        assert_eq!(c.entries["num_tokens"], "4", "a user's value wins");
        assert_eq!(c.settings["memory-mb"], "768");
        assert!(c.args.is_empty(), "nothing after the main class");
        o.insert("native_transport_port".into(), "1".into());
        assert!(CASSANDRA.configure(&o, Sizing::default()).is_err());
        o.remove("native_transport_port");
        o.insert("memory-mb".into(), "lots".into());
        assert!(CASSANDRA.configure(&o, Sizing::default()).is_err());
    }

    #[test]
    fn newer_jars_sort_last() {
        let mut v = [
            PathBuf::from("/c/cassandra-5.0.10"),
            PathBuf::from("/c/cassandra-5.0.9"),
        ];
        v.sort_by_key(|d| version_key(d));
        assert_eq!(v[1], PathBuf::from("/c/cassandra-5.0.10"));
    }
}
