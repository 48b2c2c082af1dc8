//! kvlab's own table on a database, in general: the policy every database
//! shares ([`prepare`]: is kvlab's table there and right? reuse, recreate or
//! load; never touch a table kvlab's marker does not mark) over the narrow
//! [`TableSteps`](crate::driver::TableSteps) each database implements with
//! only its own steps, and a parallel loader with progress. The products'
//! folders hold the SQL.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::driver::product::{Connector, Database, TableJob};
use crate::driver::table_steps::DataSpec;
use crate::driver::wire::{Codec, Decoded, Key, Reply, tag_of};
use crate::system::progress::{Progress, RunOptions, note};
use crate::workload::{OpKind, Values, slice_of};

/// The name of kvlab's table on every database.
pub const TABLE: &str = "kvlab_kv";

/// The start of the comment that marks a table as kvlab's own.
pub const MARK: &str = "kvlab key-value table";

/// Marks a table whose values have kvlab's current layout (key, version, body);
/// tables without it are reloaded.
pub const VALUES_MARK: &str = "values=v2";

/// The load phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadResult {
    /// Keys written.
    pub keys: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Keys written per second.
    pub keys_per_s: f64,
}

impl LoadResult {
    /// `keys` loaded in `seconds`.
    pub fn of(keys: u64, seconds: f64) -> LoadResult {
        LoadResult {
            keys,
            seconds,
            keys_per_s: keys as f64 / seconds.max(1e-9),
        }
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

/// One loader's part of a load: keys `start..end` with their `values`, the
/// count of rows done it adds to, and the flag that stops it.
#[derive(Clone, Copy)]
pub struct LoadSlice<'a> {
    /// The first key.
    pub start: u64,
    /// Past the last key.
    pub end: u64,
    /// The values to write.
    pub values: &'a Values,
    /// Rows loaded so far, by every loader.
    pub done: &'a AtomicU64,
    /// Set when the load must stop (interrupted).
    pub stop: &'a AtomicBool,
}

/// Loads keys `0..data.keys` on `loaders` threads, each running `load` on its
/// own slice, with progress; fails on the first loader error and when
/// interrupted.
pub fn parallel_load(
    data: &DataSpec,
    loaders: usize,
    opts: RunOptions,
    shutdown: &AtomicBool,
    load: impl Fn(LoadSlice<'_>) -> Result<()> + Sync,
) -> Result<()> {
    let keys = data.keys;
    let done = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let progress = Progress::counter("load", keys, opts.progress);
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..loaders)
            .map(|i| {
                let (done, load) = (&done, &load);
                scope.spawn(move || {
                    let (start, end) = slice_of(keys, i, loaders);
                    load(LoadSlice {
                        start,
                        end,
                        values: &data.values,
                        done,
                        stop: shutdown,
                    })
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

/// SETs the keys of `slice` (version 0) over `stream` with `codec`, 256 in
/// flight, for protocols that pipeline their writes; counts each batch done.
/// The first refused write fails the load with `refused(its reply)`.
pub fn load_pipelined<C: Codec, S: Read + Write>(
    stream: &mut S,
    codec: &C,
    slice: LoadSlice<'_>,
    refused: impl Fn(&[u8]) -> String,
) -> io::Result<()> {
    const BATCH: u64 = 256;
    let (end, values) = (slice.end, slice.values);
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_string());
    let (mut out, mut value) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 1 << 20];
    let mut k = slice.start;
    while k < end {
        if slice.stop.load(Ordering::Relaxed) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        let n = BATCH.min(end - k);
        out.clear();
        for (i, key) in (k..k + n).enumerate() {
            value.clear();
            values.write_version(key, 0, &mut value);
            let tag = tag_of(i as u32, OpKind::Set);
            let key = Key {
                id: key,
                name: b"",
                tag,
            };
            codec.encode_set(key, &value, &mut out);
        }
        stream.write_all(&out)?;
        let (mut filled, mut replies) = (0usize, 0u64);
        while replies < n {
            let mut at = 0;
            while at < filled {
                let bytes = &buf[at..filled];
                match codec.decode(OpKind::Set, bytes).map_err(|m| invalid(m.0))? {
                    Decoded::Incomplete => break,
                    Decoded::Tagged { len, reply, .. } | Decoded::Frame { len, reply } => {
                        if reply != Reply::Stored {
                            return Err(io::Error::other(refused(bytes)));
                        }
                        at += len;
                        replies += 1;
                    }
                }
            }
            buf.copy_within(at..filled, 0);
            filled -= at;
            if replies == n {
                break;
            }
            if filled == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            let r = stream.read(&mut buf[filled..])?;
            if r == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection while loading",
                ));
            }
            filled += r;
        }
        slice.done.fetch_add(n, Ordering::Relaxed);
        k += n;
    }
    Ok(())
}

/// Says what is about to happen to kvlab's table, and returns that state.
fn announce(
    state: TableState,
    opts: RunOptions,
    display: &str,
    keys: u64,
    vsize: &str,
) -> TableState {
    match state {
        TableState::Reusable => note(
            opts,
            format!("kvlab: reusing {TABLE} in {display} ({keys} rows of {vsize} B)"),
        ),
        TableState::Reload => note(
            opts,
            format!("kvlab: dropping kvlab's own table {TABLE} in {display} to reload it"),
        ),
        TableState::Absent => {}
    }
    state
}

/// Reuse or reload, from `count, min(k), max(k), min(len(v)), max(len(v))` of
/// kvlab's table: reused when it holds exactly keys `0..keys` whose values
/// run from `min` to `max` bytes (or, without loading, any rows of the right
/// smallest size).
fn figures_state(
    rows: &[Vec<Option<String>>],
    keys: u64,
    (min, max): (usize, usize),
    load: bool,
) -> TableState {
    let n = |i: usize| {
        rows.first()
            .and_then(|r| r.get(i).cloned().flatten())
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(-2)
    };
    let (k, lo, hi) = (keys as i64, min as i64, max as i64);
    let full = n(0) == k && n(1) == 0 && n(2) == k - 1 && n(3) == lo && n(4) == hi;
    if full || (!load && n(3) == lo) {
        TableState::Reusable
    } else {
        TableState::Reload
    }
}

/// The state of kvlab's table on a database target.
#[derive(Clone, Copy)]
enum TableState {
    /// No table.
    Absent,
    /// kvlab's table with the right data.
    Reusable,
    /// kvlab's table, to be dropped and loaded again.
    Reload,
}

/// Makes sure kvlab's table on `db` at `c` holds `data`: reused when it is
/// kvlab's and right, else dropped (only a table kvlab's marker marks) and
/// created, then loaded when `data.load`; returns the load's figures when it
/// loaded. A table kvlab did not create is never touched.
pub fn prepare(
    db: &dyn Database,
    c: &Connector,
    data: &DataSpec,
    opts: RunOptions,
    shutdown: &AtomicBool,
) -> Result<Option<LoadResult>> {
    let (keys, vsize) = (data.keys, data.values.label());
    let mut t = db.table(TableJob {
        connector: c,
        data,
        opts,
    })?;
    let state = match t.inspect()? {
        None => TableState::Absent,
        Some(found) => {
            if !found.marker.starts_with(MARK) {
                let (why, fix) = t.unmarked();
                bail!(
                    "{} in {} exists but is not kvlab's ({why}); kvlab will not touch it: {fix}",
                    t.noun(),
                    c.display
                );
            }
            // The marker names the sizes: a table of other sizes is reloaded.
            let sizes = format!("value_size={}, ", data.values.label());
            if data.schema.recreate
                || !found.marker.contains(VALUES_MARK)
                || !found.marker.contains(&sizes)
                || !found.layout_ok
            {
                TableState::Reload
            } else {
                let span = (data.values.min(), data.values.size());
                figures_state(&[t.figures()?], keys, span, data.load)
            }
        }
    };
    match announce(state, opts, &c.display, keys, vsize) {
        TableState::Reusable => return Ok(None),
        TableState::Reload => t.drop_table()?,
        TableState::Absent => {}
    }
    t.create()?;
    if !data.load {
        return Ok(None);
    }
    note(
        opts,
        format!(
            "kvlab: loading {keys} rows of {vsize} B into {}",
            t.loading()
        ),
    );
    let started = Instant::now();
    t.load(opts, shutdown)?;
    let took = started.elapsed().as_secs_f64();
    t.loaded()?;
    note(opts, format!("kvlab: loaded {keys} rows in {took:.1} s"));
    Ok(Some(LoadResult::of(keys, took)))
}

/// Drops kvlab's table on `db` at `c` if it is there and marked kvlab's (a
/// server kvlab did not start, at the end of its work): the bytes it held,
/// or `None` when there was none of kvlab's to drop.
pub fn remove(
    db: &dyn Database,
    c: &Connector,
    data: &DataSpec,
    opts: RunOptions,
) -> Result<Option<u64>> {
    let mut t = db.table(TableJob {
        connector: c,
        data,
        opts,
    })?;
    match t.inspect()? {
        Some(found) if found.marker.starts_with(MARK) => {
            let bytes = db.table_size(c).map_or(0, |(b, _)| b);
            t.drop_table()?;
            Ok(Some(bytes))
        }
        _ => Ok(None),
    }
}
