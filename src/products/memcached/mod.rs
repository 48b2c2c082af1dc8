//! Memcached over its text protocol, or its meta protocol (`--query-mode
//! meta`). Everything kvlab knows of it lives here: the `memcached://` scheme,
//! the codec, the probe (`version`), the managed server's settings, its
//! counters and memory (`stats`), and its key rules.
//!
//! # Layout
//! - [`codec`]: the sans-IO codec and blocking helpers (`version`, `stats`).
//! - `meta`: the meta protocol's frames (`mg`, `ms`, `md`).
//! - [`server`]: `--server-opt` → `memcached` flags.
//! - [`observe`]: watching a server read-only (`kvlab observe`).

pub mod codec;
mod meta;
mod multi;
pub mod observe;
pub mod server;

use std::io;
use std::time::Duration;

use anyhow::{Context, Result, bail};

pub use codec::{Memcache, stats};

use crate::driver::product::declares;
use crate::driver::wire::Session;
use crate::driver::{
    Cache, CacheMemory, Connector, Facts, OwnKeys, Product, ReportedUsage, Server, ServerCounters,
    ServerFacts, ServerInfo, UsageReport,
};
use crate::transport::Stream;

/// Memcached (`memcached`).
pub struct Memcached;

/// The memcached product.
pub static MEMCACHED: Memcached = Memcached;

/// What memcached declares.
static FACTS: Facts = Facts {
    name: "memcached",
    title: "memcached",
    aliases: &["memcache"],
    schemes: &["memcached", "memcache"],
    default_port: 11211,
    refuses_login: Some("SASL is not supported"),
    unix_url_example: Some("memcached+unix:///path/to.sock"),
    example_url: "memcached://127.0.0.1:11211",
    query_modes: &codec::MODES,
    batch_reads: Some(
        "get of the keys (text), or a quiet mg per key then mn (meta): the server counts each key (cmd_get)",
    ),
    usage_report: Some(UsageReport {
        cpu: "stats rusage_user + rusage_system",
        memory: Some("stats bytes, the items' memory"),
        resident: false,
    }),
    server: ServerFacts {
        binary: "memcached",
        package: "memcached",
        thread_settings: &["threads"],
        ..ServerFacts::DEFAULTS
    },
    ..Facts::DEFAULTS
};

impl Product for Memcached {
    declares!(&FACTS, Cache);

    fn check_prefix(&self, prefix: &str) -> Result<()> {
        if prefix.len() > 200 || prefix.bytes().any(|b| b <= b' ' || b == 0x7f) {
            bail!(
                "--key-prefix: memcached keys cannot contain spaces or control characters and must stay under 250 bytes; choose a prefix such as 'kvlab:'"
            );
        }
        Ok(())
    }

    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)> {
        let s = c.open(timeout)?;
        s.set_timeout(None)?;
        Ok((s, Session::Plain))
    }

    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo> {
        c.probe_with(timeout, codec::probe)
    }

    fn counters(&self, c: &Connector) -> Result<ServerCounters> {
        let st = read_stats(c).context("cannot read its counters")?;
        Ok(ServerCounters {
            gets: num(&st, "cmd_get"),
            sets: num(&st, "cmd_set"),
            hits: num(&st, "get_hits"),
            misses: num(&st, "get_misses"),
            exact: true,
            per_key: true,
        })
    }

    fn clients(&self, c: &Connector) -> Result<Option<u64>> {
        let st = read_stats(c).context("cannot read its stats")?;
        let n = st.iter().find(|(k, _)| k == "curr_connections");
        // memcached counts its listening sockets among them, and this one.
        Ok(n.and_then(|(_, v)| v.parse::<u64>().ok())
            .map(|n| n.saturating_sub(2)))
    }

    fn reported_usage(&self, c: &Connector) -> Result<ReportedUsage> {
        let st = read_stats(c).context("cannot read its stats")?;
        let f = |k: &str| {
            st.iter()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.parse::<f64>().ok())
        };
        let (Some(user), Some(sys)) = (f("rusage_user"), f("rusage_system")) else {
            anyhow::bail!("{}: stats has no rusage_user/rusage_system", c.display);
        };
        Ok(ReportedUsage {
            cpu_s: user + sys,
            memory_bytes: Some(num(&st, "bytes")),
        })
    }

    fn server(&self) -> &dyn Server {
        self
    }

    fn observe(&self) -> Option<&dyn crate::driver::Observe> {
        Some(&observe::MemcachedObserve)
    }
}

impl Cache for Memcached {
    /// memcached 1.5 on: the segmented LRU, evicting (unless `-M`).
    fn eviction_defaults(&self) -> &'static [(&'static str, &'static str)] {
        &[("lru_segmented", "yes"), ("evictions", "on")]
    }
    fn eviction_settings(
        &self,
        c: &Connector,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        let settings = read_stats_of(c, b"stats settings\r\n").ok()?;
        let wanted = ["lru_segmented", "evictions"];
        Some(
            settings
                .into_iter()
                .filter(|(k, _)| wanted.contains(&k.as_str()))
                .collect(),
        )
    }

    fn memory(&self, c: &Connector) -> Result<CacheMemory> {
        let st = read_stats(c)?;
        Ok(CacheMemory {
            items: num(&st, "curr_items"),
            limit: num(&st, "limit_maxbytes"),
            evictions: num(&st, "evictions"),
            used: num(&st, "bytes"),
        })
    }

    fn flush(&self, c: &Connector) -> Result<()> {
        let mut s = c
            .open(Duration::from_secs(5))
            .with_context(|| format!("cannot connect to {}", c.display))?;
        let reply = crate::driver::wire::roundtrip(&mut s, b"flush_all\r\n", |b| {
            Ok(crate::driver::wire::line_end(b, 0))
        })?;
        if !reply.starts_with(b"OK") {
            bail!("flush_all: {}", String::from_utf8_lossy(&reply).trim_end());
        }
        Ok(())
    }

    fn delete_keys(&self, c: &Connector, keys: OwnKeys<'_>) -> Result<u64> {
        let OwnKeys {
            prefix,
            numbers: keys,
        } = keys;
        let mut s = c
            .open(Duration::from_secs(5))
            .with_context(|| format!("cannot connect to {}", c.display))?;
        let mut deleted = 0;
        let (mut req, mut name) = (Vec::new(), Vec::new());
        loop {
            req.clear();
            let mut n = 0;
            for k in (&mut *keys).take(500) {
                req.extend_from_slice(b"delete ");
                crate::workload::write_key(prefix, k, &mut name);
                req.extend_from_slice(&name);
                req.extend_from_slice(b"\r\n");
                n += 1;
            }
            if n == 0 {
                break;
            }
            // One reply line per delete: DELETED or NOT_FOUND.
            let reply = crate::driver::wire::roundtrip(&mut s, &req, |b| {
                let mut at = 0;
                for _ in 0..n {
                    match crate::driver::wire::line_end(b, at) {
                        Some(end) => at = end,
                        None => return Ok(None),
                    }
                }
                Ok(Some(at))
            })?;
            deleted += reply
                .split(|&c| c == b'\n')
                .filter(|l| l.starts_with(b"DELETED"))
                .count() as u64;
        }
        Ok(deleted)
    }

    /// memcached 1.6's TLS stalls a connection whose requests in flight
    /// exceed its 16 KiB read buffer (what OpenSSL decrypted beyond it waits
    /// for more bytes on the socket): over TLS a load keeps under that.
    fn load_window(&self, tls: bool) -> usize {
        if tls { 8 << 10 } else { 1 << 20 }
    }

    fn load_hint(&self, value_size: usize, managed: bool) -> String {
        match (value_size > 1_000_000, managed) {
            (true, true) => "memcached stores items of at most 1 MiB by default: raise it with --server-opt item-size-max=4m or lower --value-size",
            (true, false) => "memcached stores items of at most 1 MiB by default: start it with -I 4m or lower --value-size",
            (false, true) => "raise memcached's memory limit (--server-opt memory-mb=…) or load fewer --keys",
            (false, false) => "raise memcached's memory limit (start it with -m MEGABYTES) or load fewer --keys",
        }
        .into()
    }
}

/// `stats` over a fresh connection.
fn read_stats(c: &Connector) -> Result<Vec<(String, String)>> {
    read_stats_of(c, b"stats\r\n")
}

/// The pairs the `stats` command `command` answers, over a fresh connection.
fn read_stats_of(c: &Connector, command: &[u8]) -> Result<Vec<(String, String)>> {
    let mut s = c
        .open(crate::driver::COUNTERS_TIMEOUT)
        .with_context(|| format!("cannot connect to {}", c.display))?;
    codec::stats_of(&mut s, command)
}

/// The number `name` of `stats` (0 when absent).
fn num(stats: &[(String, String)], name: &str) -> u64 {
    stat(stats, name).unwrap_or(0)
}

/// The number `name` of `stats`, if there.
fn stat(stats: &[(String, String)], name: &str) -> Option<u64> {
    stats
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
}

/// Whether a reply line is one of memcached's errors: `ERROR` (with a reason
/// when it refuses a connection over its `-c` limit, "ERROR Too many open
/// connections"), `CLIENT_ERROR ...` or `SERVER_ERROR ...`.
fn is_error(line: &[u8]) -> bool {
    line == b"ERROR"
        || line.starts_with(b"ERROR ")
        || line.starts_with(b"CLIENT_ERROR")
        || line.starts_with(b"SERVER_ERROR")
}
