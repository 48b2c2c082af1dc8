//! Memory efficiency (study S3): fill a cache with new keys until it evicts or
//! refuses, then count the items it holds per GiB of its memory limit; for a
//! database, load the keys and divide its table plus index size by them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};

use crate::driver::{CacheMemory, Connector, Role};
use crate::engine::{Quiet, Spec};
use crate::plan::RunPlan;
pub use crate::results::fill::FillResult;
use crate::runner;
use crate::servers::ManagedServer;
use crate::system::progress::RunOptions;
use crate::workload::Stop;

/// Items, limit and evictions of the cache `c` names.
fn cache_memory(c: &Connector) -> Result<CacheMemory> {
    match c.product.role() {
        Role::Cache(cache) => cache.memory(c),
        Role::Database(_) => bail!("not a cache"),
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
    let connector = Connector::new(kind, &endpoint)?.with_consistency(plan.target.consistency);
    let vsize = plan.workload.value_size;
    let topology = connector.topology()?.map(std::sync::Arc::new);
    if kind.is_sql() {
        // Load the keys through the normal path, then ask for the table's size.
        // At most 100,000 rows: enough to size the per-row overhead.
        let mut p = plan.clone();
        p.workload.keys = plan.workload.keys.min(100_000);
        p.load.stop = Stop::Requests(1);
        p.load.warmup_s = 0.0;
        runner::measure(&p, server, opts, shutdown)?;
        let keys = p.workload.keys;
        let Role::Database(db) = connector.product.role() else {
            bail!("not a database");
        };
        let (size, basis) = db.table_size(&connector)?;
        return Ok(result(vsize, keys, keys, size, basis, "all keys loaded"));
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
            connections: 8,
            threads: plan.load.threads.clamp(1, 2),
            pipeline: 32,
            timeout: Duration::from_secs_f64(plan.load.timeout_s),
            topology: topology.clone(),
            share: crate::plan::shard::Share::all(8),
            ..Spec::writes(
                connector.clone(),
                format!("{}f{n}:", plan.workload.key_prefix).into_bytes(),
                plan.workload.values(),
                batch,
            )
        };
        let r = crate::engine::execute(&spec, shutdown, &mut Quiet)?;
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
