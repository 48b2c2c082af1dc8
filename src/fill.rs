//! Memory efficiency (study S3): fill a cache with new keys until it evicts or
//! refuses, then count the items it holds per GiB of its memory limit; for a
//! database, load the keys and divide its table plus index size by them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::driver::{Connector, Protocol, memcache, resp};
use crate::engine::{self, Quiet, Spec};
use crate::plan::{KeyDistribution, Ratio, RunPlan, Stop};
use crate::runner::{self, RunOptions};
use crate::server::ManagedServer;
use crate::workload::{OpMix, Values};

/// What a fill found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FillResult {
    /// Value size in bytes.
    pub value_size: usize,
    /// Keys kvlab wrote.
    pub written: u64,
    /// Items the server holds at the end.
    pub items: u64,
    /// The memory they are measured against, bytes: the cache's memory limit,
    /// or the database table plus its indexes.
    pub bytes: u64,
    /// What `bytes` is.
    pub basis: String,
    /// Items per GiB of `bytes`.
    pub items_per_gib: f64,
    /// Bytes per item, all overhead included.
    pub bytes_per_item: f64,
    /// Why the fill stopped.
    pub stopped_by: String,
}

struct Mem {
    items: u64,
    limit: u64,
    evictions: u64,
}

fn cache_memory(c: &Connector) -> Result<Mem> {
    let (s, _) = c.connect(Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut s = &s;
    match c.protocol {
        Protocol::Resp => {
            let mut text = |section: &[u8]| -> Result<String> {
                let frame = resp::command(&mut s, &[b"INFO", section])?;
                Ok(String::from_utf8_lossy(resp::bulk_payload(&frame)?).into_owned())
            };
            let (mem, stats, ks) = (text(b"memory")?, text(b"stats")?, text(b"keyspace")?);
            let num = |t: &str, k: &str| {
                resp::info_field(t, k)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let items = resp::info_field(&ks, "db0")
                .and_then(|v| {
                    v.split(',')
                        .find_map(|kv| kv.strip_prefix("keys=")?.parse().ok())
                })
                .unwrap_or(0);
            Ok(Mem {
                items,
                limit: num(&mem, "maxmemory"),
                evictions: num(&stats, "evicted_keys"),
            })
        }
        Protocol::Memcache => {
            let st = memcache::stats(&mut s)?;
            let num = |k: &str| {
                st.iter()
                    .find(|(n, _)| n == k)
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0)
            };
            Ok(Mem {
                items: num("curr_items"),
                limit: num("limit_maxbytes"),
                evictions: num("evictions"),
            })
        }
        _ => bail!("not a cache"),
    }
}

/// Fills the target of `plan` (its `keys` is the most kvlab writes) and
/// measures what it holds. `server` is kvlab's managed server, if any.
pub fn fill(
    plan: &RunPlan,
    server: Option<&ManagedServer>,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<FillResult> {
    let kind = plan.target.kind;
    let endpoint = match (&plan.target.external, server) {
        (Some(e), _) => e.clone(),
        (None, Some(s)) => s.endpoint(),
        (None, None) => bail!("no server to fill"),
    };
    let connector = Connector::new(kind, &endpoint)?;
    let vsize = plan.workload.value_size;
    if kind.is_sql() {
        // Load the keys through the normal path, then ask for the table's size.
        // At most 100,000 rows: enough to size the per-row overhead.
        let mut p = plan.clone();
        p.workload.keys = plan.workload.keys.min(100_000);
        p.load.stop = Stop::Requests(1);
        p.load.warmup_s = 0.0;
        runner::measure(&p, server, opts, shutdown)?;
        let keys = p.workload.keys;
        let size: u64 = match connector.protocol {
            Protocol::Postgres => connector.open_pg(Duration::from_secs(5))?.query_one("SELECT pg_total_relation_size('kvlab_kv')")?,
            _ => connector
                .open_my(Duration::from_secs(5))?
                .query_one("SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'kvlab_kv'")?,
        }
        .and_then(|v| v.parse().ok())
        .context("cannot read the size of kvlab_kv")?;
        return Ok(result(
            vsize,
            keys,
            keys,
            size,
            "table + indexes",
            "all keys loaded",
        ));
    }
    // Caches: batches of new keys (a new prefix per batch) until evictions start,
    // writes fail, or the cap is reached.
    let before = cache_memory(&connector)?;
    if before.limit == 0 {
        bail!(
            "{} has no memory limit; give one (--server-opt memory-mb=256) to measure items per GiB",
            connector.display
        );
    }
    let batch = (before.limit / (vsize as u64 + 64) / 20).clamp(1000, 200_000);
    let mut written = 0u64;
    let mut n = 0;
    let stopped_by = loop {
        if shutdown.load(Ordering::SeqCst) {
            break "interrupted".to_string();
        }
        if written >= plan.workload.keys {
            break format!("the cap of {} keys (workload.keys)", plan.workload.keys);
        }
        let spec = Spec {
            connector: connector.clone(),
            key_prefix: format!("{}f{n}:", plan.workload.key_prefix).into_bytes(),
            values: Values::new(vsize),
            keys: batch,
            distribution: KeyDistribution::Sequential,
            mix: OpMix::new(Ratio { set: 1, get: 0 }),
            connections: 8,
            threads: plan.load.threads.clamp(1, 2),
            pipeline: 32,
            warmup: Duration::ZERO,
            stop: Stop::Requests(batch),
            rate: None,
            timeout: Duration::from_secs_f64(plan.load.timeout_s),
            seed: 1,
            ttl_s: 0,
            board: None,
            aside: None,
        };
        let r = engine::execute(&spec, shutdown, &mut Quiet)?;
        written += r.measured.counts.stored;
        n += 1;
        let errors = r.measured.counts.error_total();
        let m = cache_memory(&connector)?;
        if m.evictions > before.evictions {
            break format!("evictions ({} so far)", m.evictions - before.evictions);
        }
        if errors > 0 {
            break format!("the server refused writes ({errors} errors)");
        }
    };
    let m = cache_memory(&connector)?;
    Ok(result(
        vsize,
        written,
        m.items,
        m.limit,
        "memory limit",
        &stopped_by,
    ))
}

fn result(
    value_size: usize,
    written: u64,
    items: u64,
    bytes: u64,
    basis: &str,
    stopped_by: &str,
) -> FillResult {
    FillResult {
        value_size,
        written,
        items,
        bytes,
        basis: basis.to_string(),
        items_per_gib: items as f64 / (bytes.max(1) as f64 / (1u64 << 30) as f64),
        bytes_per_item: bytes as f64 / items.max(1) as f64,
        stopped_by: stopped_by.to_string(),
    }
}
