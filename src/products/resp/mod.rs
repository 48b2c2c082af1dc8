//! Redis and Valkey: one product family over RESP. Everything kvlab knows of
//! them lives here: URL schemes, the codec, AUTH and the probe, the managed
//! server's settings, the server's own counters (`INFO commandstats`) and its
//! memory (`INFO memory`, for items per GiB). Compatible servers (KeyDB,
//! Dragonfly, ...) are reached by a `redis://` URL.
//!
//! # Layout
//! - [`codec`]: the sans-IO RESP codec and blocking helpers (command, INFO).
//! - [`server`]: `--server-opt` → `redis-server`/`valkey-server` command line.
//! - [`cluster`]: Redis/Valkey Cluster: the slot map, counters summed over the
//!   primaries.
//! - [`cluster_server`]: a managed cluster: N nodes joined, slots assigned.
//! - [`observe`]: watching a server read-only (`kvlab observe`).

pub mod cluster;
pub mod cluster_server;
pub mod codec;
mod frame;
mod mget;
pub mod observe;
mod push;
pub mod server;

use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use anyhow::Result;

pub use cluster::{REDIS_CLUSTER, VALKEY_CLUSTER};
pub use codec::{Resp, bulk_payload, command, encode_command, frame_len, hash_slot, info_field};

use crate::driver::product::declares;
use crate::driver::wire::Session;
use crate::driver::{
    Cache, CacheMemory, Connector, Facts, OwnKeys, Product, ReportedUsage, Server, ServerCounters,
    ServerFacts, ServerInfo, Tracking, UsageReport,
};
use crate::transport::Stream;

/// A RESP server product: Redis or Valkey.
pub struct RespProduct {
    facts: &'static Facts,
}

/// What every RESP server declares; each product names its own.
const RESP: Facts = Facts {
    batch_reads: Some(
        "MGET of the keys: the server counts one command, a keyspace hit or miss per key",
    ),
    title: "Redis/Valkey",
    default_port: 6379,
    password_env: Some("REDISCLI_AUTH"),
    client_tracking: true,
    usage_report: Some(USAGE_REPORT),
    server: ServerFacts {
        thread_settings: &["io-threads"],
        ..ServerFacts::DEFAULTS
    },
    ..Facts::DEFAULTS
};

/// What Redis declares.
pub(super) const REDIS_FACTS: Facts = Facts {
    name: "redis",
    schemes: &["redis"],
    tls_schemes: &["rediss"],
    example_url: "redis://127.0.0.1:6379",
    unix_url_example: Some("redis+unix:///path/to.sock"),
    server: ServerFacts {
        binary: "redis-server",
        package: "redis-server",
        ..RESP.server
    },
    ..RESP
};

/// What Valkey declares.
pub(super) const VALKEY_FACTS: Facts = Facts {
    name: "valkey",
    schemes: &["valkey"],
    tls_schemes: &["valkeys"],
    example_url: "valkey://127.0.0.1:6379",
    unix_url_example: Some("valkey+unix:///path/to.sock"),
    server: ServerFacts {
        binary: "valkey-server",
        package: "valkey-server from bookworm-backports",
        ..RESP.server
    },
    ..RESP
};

/// Redis (`redis-server`).
pub static REDIS: RespProduct = RespProduct {
    facts: &REDIS_FACTS,
};

/// Valkey (`valkey-server`, Debian's bookworm-backports).
pub static VALKEY: RespProduct = RespProduct {
    facts: &VALKEY_FACTS,
};

impl Product for RespProduct {
    declares!(self.facts, Cache);

    fn connect(&self, c: &Connector, timeout: Duration) -> io::Result<(Stream, Session)> {
        let mut s = open(c, timeout)?;
        if let Some(t) = &c.tracking {
            s.set_timeout(Some(timeout))?;
            track(&mut s, t)?;
            s.set_timeout(None)?;
        }
        Ok((s, Session::Plain))
    }

    fn probe(&self, c: &Connector, timeout: Duration) -> Result<ServerInfo> {
        probe(c, timeout, false, self.facts.name)
    }

    fn counters(&self, c: &Connector) -> Result<ServerCounters> {
        node_counters(c)
    }

    fn reported_usage(&self, c: &Connector) -> Result<ReportedUsage> {
        node_usage(c)
    }

    fn clients(&self, c: &Connector) -> Result<Option<u64>> {
        let text = Info::open(c)?.section(b"clients")?;
        let n = info_field(&text, "connected_clients").and_then(|v| v.parse::<u64>().ok());
        Ok(n.map(|n| n.saturating_sub(1)))
    }

    fn server(&self) -> &dyn Server {
        self
    }

    fn observe(&self) -> Option<&dyn crate::driver::Observe> {
        Some(&observe::RespObserve)
    }
}

impl Cache for RespProduct {
    fn memory(&self, c: &Connector) -> Result<CacheMemory> {
        node_memory(c)
    }
    fn flush(&self, c: &Connector) -> Result<()> {
        RespProduct::flush_node(c)
    }
    fn delete_keys(&self, c: &Connector, keys: OwnKeys<'_>) -> Result<u64> {
        let OwnKeys {
            prefix,
            numbers: keys,
        } = keys;
        let mut s = open(c, Duration::from_secs(5))?;
        s.set_timeout(Some(Duration::from_secs(10)))?;
        let mut deleted = 0;
        loop {
            let names: Vec<Vec<u8>> = (&mut *keys)
                .take(500)
                .map(|k| {
                    let mut n = Vec::new();
                    crate::workload::write_key(prefix, k, &mut n);
                    n
                })
                .collect();
            if names.is_empty() {
                break;
            }
            deleted += del(&mut s, &names)?;
        }
        Ok(deleted)
    }
    fn evicting(&self) -> &'static [(&'static str, &'static str)] {
        &[("maxmemory-policy", "allkeys-lru")]
    }
    fn eviction_defaults(&self) -> &'static [(&'static str, &'static str)] {
        &EVICTION_DEFAULTS
    }
    fn eviction_settings(&self, c: &Connector) -> Option<BTreeMap<String, String>> {
        eviction_settings(c)
    }
    fn load_hint(&self, value_size: usize, managed: bool) -> String {
        load_hint(value_size, managed)
    }
}

/// The eviction settings of the server at `c` ([`EVICTION_DEFAULTS`]'s
/// names), by `CONFIG GET`, else the policy from `INFO memory`.
pub(crate) fn eviction_settings(c: &Connector) -> Option<BTreeMap<String, String>> {
    let mut info = Info::open(c).ok()?;
    let names = EVICTION_DEFAULTS.map(|(k, _)| k);
    if let Ok(all) = codec::config_get(&mut info.0, &names)
        && all.contains_key(names[0])
    {
        return Some(all);
    }
    // `CONFIG` refused (a managed service): the policy from `INFO`, the
    // rest at their defaults.
    let memory = info.section(b"memory").ok()?;
    let policy = info_field(&memory, "maxmemory_policy")?;
    Some(BTreeMap::from([(names[0].to_string(), policy)]))
}

/// `DEL` of `names` on `s`: how many it deleted.
pub(crate) fn del(s: &mut Stream, names: &[Vec<u8>]) -> Result<u64> {
    let mut args: Vec<&[u8]> = vec![b"DEL"];
    args.extend(names.iter().map(Vec::as_slice));
    let reply = command(s, &args)?;
    // `:N\r\n`: the keys deleted.
    match reply.first() {
        Some(b':') => Ok(std::str::from_utf8(&reply[1..])
            .ok()
            .and_then(|t| t.trim_end().parse::<u64>().ok())
            .unwrap_or(0)),
        _ => anyhow::bail!(
            "DEL answered {}",
            String::from_utf8_lossy(&reply).trim_end()
        ),
    }
}

impl RespProduct {
    /// `FLUSHALL` on one server.
    pub(crate) fn flush_node(c: &Connector) -> Result<()> {
        let mut s = open(c, Duration::from_secs(5))?;
        s.set_timeout(Some(Duration::from_secs(10)))?;
        command(&mut s, &[b"FLUSHALL"])?;
        Ok(())
    }
}

/// What to change when a load was refused (`-OOM`) or evicted.
pub(crate) fn load_hint(_value_size: usize, managed: bool) -> String {
    match managed {
        true => "raise the server's maxmemory (--server-opt memory-mb=…) or load fewer --keys",
        false => "raise the server's maxmemory (CONFIG SET maxmemory …, or maxmemory in its redis.conf) or load fewer --keys",
    }
    .into()
}

/// Probes a RESP server: its version, and whether it runs in cluster mode as
/// the scheme said (`cluster`); a server that wants a password says how to
/// give one. `family`: `redis` or `valkey`, for the scheme in messages.
pub(crate) fn probe(
    c: &Connector,
    timeout: Duration,
    cluster: bool,
    family: &str,
) -> Result<ServerInfo> {
    let r = c.probe_with(timeout, |s| {
        let info = codec::probe(s)?;
        match (cluster::cluster_enabled(s)?, cluster) {
            (true, false) => anyhow::bail!(
                "it is a cluster node (cluster_enabled:1); use {family}-cluster://HOST:PORT to run against the whole cluster"
            ),
            (false, true) => anyhow::bail!(
                "it is not in cluster mode (cluster_enabled:0); use {family}:// for a single server"
            ),
            _ => Ok(info),
        }
    });
    r.map_err(|e| {
        if format!("{e:#}").contains("NOAUTH") {
            let scheme = c.product.facts().schemes[0];
            anyhow::anyhow!(
                "{} needs a password: give it in the URL, {scheme}://:PASSWORD@{} (or {scheme}://USER:PASSWORD@… for an ACL user), or set {} (read for a URL without one)",
                c.display,
                c.addr,
                c.product.facts().password_env.unwrap_or("REDISCLI_AUTH")
            )
        } else {
            e
        }
    })
}

/// A connection to the server `c` names (TLS if it uses TLS), authenticated
/// when `c` has a password (`AUTH [user] password`).
pub(crate) fn open(c: &Connector, timeout: Duration) -> io::Result<Stream> {
    let mut s = c.open(timeout)?;
    if let Some(pass) = &c.password {
        let mut args: Vec<&[u8]> = vec![b"AUTH"];
        if let Some(u) = &c.user {
            args.push(u.as_bytes());
        }
        args.push(pass.as_bytes());
        let reply = command(&mut s, &args)?;
        if !reply.starts_with(b"+OK") {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "authentication failed: {}",
                    String::from_utf8_lossy(reply.trim_ascii())
                ),
            ));
        }
    }
    s.set_timeout(None)?;
    Ok(s)
}

/// Turns the connection to RESP3 (`HELLO 3`) and client tracking on, so
/// that invalidations come as push messages between its replies.
fn track(s: &mut Stream, t: &Tracking) -> io::Result<()> {
    let refused = |what: &str, reply: &[u8]| {
        io::Error::other(format!(
            "{what} refused (a near cache's tracking needs Redis or Valkey 6 or later): {}",
            String::from_utf8_lossy(reply.trim_ascii())
        ))
    };
    let hello = command(s, &[b"HELLO", b"3"])?;
    if hello.first() == Some(&b'-') {
        return Err(refused("HELLO 3", &hello));
    }
    let mut args: Vec<&[u8]> = vec![b"CLIENT", b"TRACKING", b"ON"];
    if let Tracking::Prefix(p) = t {
        args.extend([&b"BCAST"[..], b"PREFIX", p]);
    }
    let on = command(s, &args)?;
    if !on.starts_with(b"+OK") {
        return Err(refused("CLIENT TRACKING ON", &on));
    }
    Ok(())
}

/// One server's GET and SET calls, hits and misses (`INFO commandstats`, `INFO stats`).
pub(crate) fn node_counters(c: &Connector) -> Result<ServerCounters> {
    {
        let mut info = Info::open(c)?;
        let cmd = info.section(b"commandstats")?;
        let st = info.section(b"stats")?;
        let calls = |name: &str| -> u64 {
            info_field(&cmd, name)
                .and_then(|v| {
                    v.split(',')
                        .find_map(|kv| kv.strip_prefix("calls=")?.parse().ok())
                })
                .unwrap_or(0)
        };
        let num = |name: &str| {
            info_field(&st, name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        Ok(ServerCounters {
            // A batch read is one MGET command.
            gets: calls("cmdstat_get") + calls("cmdstat_mget"),
            sets: calls("cmdstat_set"),
            hits: num("keyspace_hits"),
            misses: num("keyspace_misses"),
            exact: true,
            per_key: false,
        })
    }
}

/// Where a RESP server reports its CPU and memory.
pub(crate) const USAGE_REPORT: UsageReport = UsageReport {
    cpu: "INFO cpu used_cpu_user + used_cpu_sys",
    memory: Some("INFO memory used_memory_rss"),
    resident: true,
};

/// One server's CPU seconds and resident memory, as it reports them.
pub(crate) fn node_usage(c: &Connector) -> Result<ReportedUsage> {
    let mut info = Info::open(c)?;
    let (cpu, mem) = (info.section(b"cpu")?, info.section(b"memory")?);
    let f = |t: &str, k: &str| info_field(t, k).and_then(|v| v.parse::<f64>().ok());
    let (Some(user), Some(sys)) = (f(&cpu, "used_cpu_user"), f(&cpu, "used_cpu_sys")) else {
        anyhow::bail!("{}: INFO cpu has no used_cpu_user/used_cpu_sys", c.display);
    };
    Ok(ReportedUsage {
        cpu_s: user + sys,
        memory_bytes: f(&mem, "used_memory_rss").map(|b| b as u64),
    })
}

/// One server's items, memory limit and evictions (`INFO`).
pub(crate) fn node_memory(c: &Connector) -> Result<CacheMemory> {
    {
        let mut info = Info::open(c)?;
        let (mem, stats, ks) = (
            info.section(b"memory")?,
            info.section(b"stats")?,
            info.section(b"keyspace")?,
        );
        let num = |t: &str, k: &str| {
            info_field(t, k)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let items = info_field(&ks, "db0")
            .and_then(|v| {
                v.split(',')
                    .find_map(|kv| kv.strip_prefix("keys=")?.parse().ok())
            })
            .unwrap_or(0);
        Ok(CacheMemory {
            items,
            limit: num(&mem, "maxmemory"),
            evictions: num(&stats, "evicted_keys"),
            used: num(&mem, "used_memory"),
        })
    }
}

/// Redis's (and Valkey's) eviction settings where none is given.
pub(crate) const EVICTION_DEFAULTS: [(&str, &str); 4] = [
    ("maxmemory-policy", "noeviction"),
    ("maxmemory-samples", "5"),
    ("lfu-log-factor", "10"),
    ("lfu-decay-time", "1"),
];

/// A set-up connection that reads `INFO` sections.
pub(crate) struct Info(Stream);

impl Info {
    /// Connects to the server `c` names, for its counters.
    pub(crate) fn open(c: &Connector) -> Result<Info> {
        let s = open(c, crate::driver::COUNTERS_TIMEOUT).map_err(|e| {
            anyhow::anyhow!("cannot connect to {} to read its counters: {e}", c.display)
        })?;
        s.set_timeout(Some(crate::driver::COUNTERS_TIMEOUT))?;
        Ok(Info(s))
    }

    /// `INFO name` as text.
    pub(crate) fn section(&mut self, name: &[u8]) -> Result<String> {
        let frame = command(&mut self.0, &[b"INFO", name])?;
        Ok(String::from_utf8_lossy(bulk_payload(&frame)?).into_owned())
    }
}
