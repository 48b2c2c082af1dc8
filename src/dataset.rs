//! The data set: makes sure the target holds every key with its value before a
//! run. Caches get pipelined SETs through the engine; databases get kvlab's own
//! table (created, checked, reused or reloaded) and a bulk load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::driver::Protocol;
use crate::driver::postgres::{MARK, PgConn};
use crate::engine::{self, Observer, Spec};
use crate::output::Progress;
use crate::plan::{KeyDistribution, Ratio, RunPlan, Stop};
use crate::results::LoadResult;
use crate::runner::{RunOptions, note};
use crate::stats::ErrorKind;
use crate::workload::{OpMix, slice_of};

/// Marks a table whose values have kvlab's current layout (key, version, body);
/// tables without it are reloaded.
const VALUES_MARK: &str = "values=v2";

/// Prepares the data set for `plan`: loads it unless `--no-load` (databases
/// then still get an empty table, so reads miss rather than fail). `managed`:
/// kvlab started the server.
pub fn prepare(
    base: &Spec,
    plan: &RunPlan,
    managed: bool,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Option<LoadResult>> {
    match base.connector.protocol {
        Protocol::Resp | Protocol::Memcache => {
            if plan.workload.load {
                load_cache(base, opts, shutdown).map(Some)
            } else {
                Ok(None)
            }
        }
        Protocol::Postgres => prepare_postgres(base, plan, managed, opts, shutdown),
        Protocol::Mysql => prepare_mysql(base, plan, opts, shutdown),
    }
}

/// Writes every key once (version 0), pipelined, into the cache `base` names;
/// fails unless every write was stored.
pub fn load_cache(base: &Spec, opts: RunOptions, shutdown: &AtomicBool) -> Result<LoadResult> {
    let keys = base.keys;
    let pipeline = (1_048_576 / (base.values.size() + 64)).clamp(1, 128);
    let spec = Spec {
        distribution: KeyDistribution::Sequential,
        mix: OpMix::new(Ratio { set: 1, get: 0 }),
        connections: base
            .connections
            .min(base.threads * 4)
            .min(keys as usize)
            .max(1),
        pipeline,
        warmup: Duration::ZERO,
        stop: Stop::Requests(keys),
        rate: None,
        board: None,
        aside: None,
        ..base.clone()
    };
    note(
        opts,
        format!("kvlab: loading {keys} keys of {} B", base.values.size()),
    );
    let mut obs = LoadObserver {
        progress: Progress::counter("load", keys, opts.progress),
        done: 0,
    };
    let started = Instant::now();
    let r = engine::execute(&spec, shutdown, &mut obs)?;
    obs.progress.finish();
    let seconds = started.elapsed().as_secs_f64();
    if r.interrupted {
        bail!("interrupted while loading the data; nothing was measured");
    }
    let c = &r.measured.counts;
    if c.stored != keys {
        let kinds: Vec<String> = ErrorKind::ALL
            .iter()
            .filter(|k| c.error(**k) > 0)
            .map(|k| format!("{} {}", k.name(), c.error(*k)))
            .collect();
        let hint = if base.connector.protocol == Protocol::Memcache
            && base.values.size() > 1_000_000
        {
            "memcached stores items of at most 1 MiB by default: raise it with --server-opt item-size-max=4m or lower --value-size"
        } else {
            "is the server's memory limit large enough (--server-opt memory-mb=…)?"
        };
        bail!(
            "loading the data failed: {} of {keys} keys stored ({}){}; {hint}",
            c.stored,
            if kinds.is_empty() {
                "no errors counted".to_string()
            } else {
                kinds.join(", ")
            },
            r.last_connect_error
                .map(|e| format!("; last connection error: {e}"))
                .unwrap_or_default()
        );
    }
    Ok(LoadResult {
        keys,
        seconds,
        keys_per_s: keys as f64 / seconds.max(1e-9),
    })
}

struct LoadObserver {
    progress: Progress,
    done: u64,
}

impl Observer for LoadObserver {
    fn second(&mut self, _e: Duration, requests: u64, _p99: f64, _errors: u64) {
        self.done += requests;
        self.progress.inc(requests);
    }
}

/// Rows loaded so far by the loader threads, shown as progress until they end.
fn watch(progress: &Progress, done: &AtomicU64, finished: &AtomicBool) {
    let mut shown = 0;
    while !finished.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        let now = done.load(Ordering::Relaxed);
        progress.inc(now - shown);
        shown = now;
    }
}

/// Loads keys `0..keys` on `loaders` threads, each running `load(start, end,
/// done)` on its own slice, with progress; fails on the first loader error and
/// when interrupted.
fn parallel_load(
    keys: u64,
    loaders: usize,
    opts: RunOptions,
    shutdown: &AtomicBool,
    load: impl Fn(u64, u64, &AtomicU64) -> Result<()> + Sync,
) -> Result<()> {
    let done = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let progress = Progress::counter("load", keys, opts.progress);
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..loaders)
            .map(|i| {
                let (done, load) = (&done, &load);
                scope.spawn(move || {
                    let (start, end) = slice_of(keys, i, loaders);
                    load(start, end, done)
                })
            })
            .collect();
        let watcher = scope.spawn(|| watch(&progress, &done, &finished));
        let r = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a loader thread panicked")))
            })
            .collect();
        finished.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        r
    });
    progress.finish();
    if shutdown.load(Ordering::SeqCst) {
        bail!("interrupted while loading the data; nothing was measured");
    }
    results.into_iter().collect()
}

/// Says what is about to happen to kvlab's table, and returns that state.
fn announce(
    state: TableState,
    opts: RunOptions,
    display: &str,
    keys: u64,
    vsize: usize,
) -> TableState {
    match state {
        TableState::Reusable => note(
            opts,
            format!("kvlab: reusing kvlab_kv in {display} ({keys} rows of {vsize} B)"),
        ),
        TableState::Reload => note(
            opts,
            format!("kvlab: dropping kvlab's own table kvlab_kv in {display} to reload it"),
        ),
        TableState::Absent => {}
    }
    state
}

/// Reuse or reload, from `count, min(k), max(k), min(len(v)), max(len(v))` of
/// kvlab's table: reused when it holds exactly keys `0..keys` of `vsize` bytes
/// (or, without loading, any rows of the right size).
fn figures_state(rows: &[Vec<Option<String>>], keys: u64, vsize: usize, load: bool) -> TableState {
    let n = |i: usize| {
        rows.first()
            .and_then(|r| r.get(i).cloned().flatten())
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(-2)
    };
    let (k, v) = (keys as i64, vsize as i64);
    let full = n(0) == k && n(1) == 0 && n(2) == k - 1 && n(3) == v && n(4) == v;
    if full || (!load && n(3) == v) {
        TableState::Reusable
    } else {
        TableState::Reload
    }
}

/// The state of kvlab's table on a database target.
#[derive(Clone, Copy)]
enum TableState {
    Absent,
    Reusable,
    Reload,
}

fn prepare_postgres(
    base: &Spec,
    plan: &RunPlan,
    managed: bool,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Option<LoadResult>> {
    let connector = &base.connector;
    let keys = base.keys;
    let vsize = base.values.size();
    let schema = &plan.target.schema;
    let mut c = connector
        .open_pg(Duration::from_secs(10))
        .map_err(|e| anyhow::anyhow!("{}: {e}", connector.display))?;
    c.set_timeout(None)?;
    if managed {
        // Exact per-statement counters when the library is loaded (tests do).
        let _ = c.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    }
    let row = c.query(
        "SELECT obj_description(c.oid, 'pg_class'), c.relpersistence::text, \
         (SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attnum) \
          FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) \
         FROM pg_class c WHERE c.oid = to_regclass('kvlab_kv')",
    )?;
    let state = match row.first() {
        None => TableState::Absent,
        Some(r) => {
            let comment = r[0].clone().unwrap_or_default();
            if !comment.starts_with(MARK) {
                bail!(
                    "table kvlab_kv in {} exists but is not kvlab's (its comment does not start with '{MARK}'); kvlab will not touch it: use another database or schema",
                    connector.display
                );
            }
            let columns_ok = r[2].as_deref() == Some("k:bigint,v:bytea");
            let persistence_ok = (r[1].as_deref() == Some("u")) == schema.unlogged;
            if schema.recreate || !comment.contains(VALUES_MARK) || !columns_ok || !persistence_ok {
                TableState::Reload
            } else {
                let q = c.query("SELECT count(*), coalesce(min(k), -1), coalesce(max(k), -1), coalesce(min(length(v)), -1), coalesce(max(length(v)), -1) FROM kvlab_kv")?;
                figures_state(&q, keys, vsize, plan.workload.load)
            }
        }
    };
    let create = |c: &mut PgConn, with_pk: bool| -> Result<()> {
        let unlogged = if schema.unlogged { "UNLOGGED " } else { "" };
        let pk = if with_pk { " PRIMARY KEY" } else { "" };
        c.query(&format!(
            "CREATE {unlogged}TABLE kvlab_kv (k bigint{pk}, v bytea NOT NULL)"
        ))?;
        c.query(&format!(
            "COMMENT ON TABLE kvlab_kv IS '{MARK} (value_size={vsize}, {VALUES_MARK})'"
        ))?;
        Ok(())
    };
    match announce(state, opts, &connector.display, keys, vsize) {
        TableState::Reusable => return Ok(None),
        TableState::Reload => {
            c.query("DROP TABLE kvlab_kv")?;
        }
        TableState::Absent => {}
    }
    if !plan.workload.load {
        create(&mut c, true)?;
        return Ok(None);
    }
    // A fresh table without its key, filled by parallel COPYs, then indexed:
    // faster than maintaining the index row by row.
    create(&mut c, false)?;
    note(
        opts,
        format!("kvlab: loading {keys} rows of {vsize} B into kvlab_kv with COPY"),
    );
    let started = Instant::now();
    let loaders = base.threads.clamp(1, 4).min(keys as usize);
    parallel_load(keys, loaders, opts, shutdown, |start, end, done| {
        let mut lc = connector.open_pg(Duration::from_secs(10))?;
        lc.set_timeout(None)?;
        lc.copy_in(&base.values, start, end, done, shutdown)?;
        Ok(())
    })
    .context("loading kvlab_kv with COPY failed")?;
    c.query("ALTER TABLE kvlab_kv ADD PRIMARY KEY (k)")
        .context("indexing kvlab_kv failed")?;
    c.query("ANALYZE kvlab_kv")?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Some(LoadResult {
        keys,
        seconds,
        keys_per_s: keys as f64 / seconds.max(1e-9),
    }))
}

fn prepare_mysql(
    base: &Spec,
    plan: &RunPlan,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Option<LoadResult>> {
    use crate::driver::mysql::{MAX_VALUE, MyConn};
    let connector = &base.connector;
    let keys = base.keys;
    let vsize = base.values.size();
    let schema = &plan.target.schema;
    let engine = schema
        .table_engine
        .clone()
        .unwrap_or_else(|| "innodb".into());
    if vsize > MAX_VALUE {
        bail!(
            "--value-size: MySQL targets take values up to {MAX_VALUE} bytes; choose a smaller value size"
        );
    }
    let column = if vsize <= 16_000 {
        format!("varbinary({vsize})")
    } else {
        "longblob".to_string()
    };
    if engine == "memory" && column == "longblob" {
        bail!(
            "--table-engine memory: the MEMORY engine stores no BLOBs; use values of at most 16000 bytes or --table-engine innodb"
        );
    }
    let mut c = connector
        .open_my(Duration::from_secs(10))
        .map_err(|e| anyhow::anyhow!("{}: {e}", connector.display))?;
    c.set_timeout(None)?;
    let rows = c.query(
        "SELECT t.TABLE_COMMENT, LOWER(t.ENGINE), (SELECT GROUP_CONCAT(CONCAT(c.COLUMN_NAME, ':', c.COLUMN_TYPE) ORDER BY c.ORDINAL_POSITION) \
         FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME) \
         FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = 'kvlab_kv'",
    )?;
    let state = match rows.first() {
        None => TableState::Absent,
        Some(r) => {
            let comment = r[0].clone().unwrap_or_default();
            if !comment.starts_with(MARK) {
                bail!(
                    "table kvlab_kv in {} exists but is not kvlab's (its comment does not start with '{MARK}'); kvlab will not touch it: use another database",
                    connector.display
                );
            }
            let cols = r[2].clone().unwrap_or_default();
            let columns_ok =
                cols.starts_with("k:bigint") && cols.ends_with(&format!(",v:{column}"));
            let engine_ok = r[1].as_deref() == Some(engine.as_str());
            if schema.recreate || !comment.contains(VALUES_MARK) || !columns_ok || !engine_ok {
                TableState::Reload
            } else {
                let q = c.query("SELECT COUNT(*), COALESCE(MIN(k), -1), COALESCE(MAX(k), -1), COALESCE(MIN(LENGTH(v)), -1), COALESCE(MAX(LENGTH(v)), -1) FROM kvlab_kv")?;
                figures_state(&q, keys, vsize, plan.workload.load)
            }
        }
    };
    match announce(state, opts, &connector.display, keys, vsize) {
        TableState::Reusable => return Ok(None),
        TableState::Reload => {
            c.query("DROP TABLE kvlab_kv")?;
        }
        TableState::Absent => {}
    }
    c.query(&format!(
        "CREATE TABLE kvlab_kv (k BIGINT NOT NULL PRIMARY KEY, v {column} NOT NULL) ENGINE={engine} COMMENT='{MARK} (value_size={vsize}, {VALUES_MARK})'"
    ))?;
    if !plan.workload.load {
        return Ok(None);
    }
    note(
        opts,
        format!(
            "kvlab: loading {keys} rows of {vsize} B into kvlab_kv ({engine}) with multi-row INSERTs"
        ),
    );
    let started = Instant::now();
    // InnoDB takes parallel inserters well even on 2 cores (measured: 2 loaders 240-300k rows/s, 4 loaders 310k).
    let loaders = (base.threads * 2).clamp(2, 4).min(keys as usize);
    parallel_load(keys, loaders, opts, shutdown, |start, end, done| {
        let mut lc: MyConn = connector.open_my(Duration::from_secs(10))?;
        lc.set_timeout(None)?;
        lc.insert_rows(&base.values, start, end, done, shutdown)?;
        Ok(())
    })
    .context("loading kvlab_kv with INSERT failed (for the MEMORY engine, is max_heap_table_size large enough?)")?;
    c.query("ANALYZE TABLE kvlab_kv")?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Some(LoadResult {
        keys,
        seconds,
        keys_per_s: keys as f64 / seconds.max(1e-9),
    }))
}
