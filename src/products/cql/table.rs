//! kvlab's table on a CQL store: keyspace `kvlab` (or the URL's; created with
//! SimpleStrategy, RF 1, when absent, never dropped) and table
//! `kvlab_kv (k bigint PRIMARY KEY, v blob)`, marked as kvlab's by its comment,
//! which also records a finished load. Reused when the comment says it holds
//! the right data, else dropped (only kvlab's) and loaded by pipelined
//! prepared INSERTs on parallel connections; versions reset by loading again;
//! its size on disk after a flush.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::conn::{CqlConn, Row, bigint, open, text};
use super::{Cassandra, CqlCodec, keyspace};
use crate::driver::SetupConn;
use crate::driver::table::{MARK, VALUES_MARK, parallel_load};
use crate::driver::wire::Codec;
use crate::driver::{Connector, DataSpec, Database, Existing, Figures, TableJob, TableSteps};
use crate::system::progress::{RunOptions, note};
use crate::workload::Values;

/// A set-up session with no timeout (schema changes and flushes take a while).
fn session(c: &Connector) -> Result<CqlConn> {
    let conn =
        open(c, Duration::from_secs(10)).map_err(|e| anyhow::anyhow!("{}: {e}", c.display))?;
    conn.set_timeout(Some(Duration::from_secs(120)))?;
    Ok(conn)
}

/// Loads keys `0..keys` with pipelined INSERTs on `loaders` connections.
fn load(c: &Connector, data: &DataSpec, opts: RunOptions, shutdown: &AtomicBool) -> Result<()> {
    let loaders = (data.threads * 2)
        .clamp(2, 8)
        .min(data.keys.max(1) as usize);
    // The load writes at ONE whatever level the run asks for.
    let c = &c.clone().with_consistency(None);
    parallel_load(data, loaders, opts, shutdown, |slice| {
        let (stream, session) = c.connect(Duration::from_secs(10))?;
        let codec = CqlCodec::default().bind(&session);
        Ok(CqlConn::resume(stream).insert_rows(&codec, slice)?)
    })
    .context("loading kvlab_kv with INSERT failed")
}

/// kvlab's table over one CQL set-up session, in keyspace `ks`.
struct CqlTable<'a> {
    c: CqlConn,
    connector: &'a Connector,
    data: &'a DataSpec,
    ks: String,
    /// The comment of a table for values of this run's size.
    mark: String,
    /// The comment of such a table once loaded with this run's keys.
    loaded: String,
    /// The comment found, once inspected.
    comment: String,
}

impl CqlTable<'_> {
    /// Runs `cql`; a failure names the statement.
    fn q(&mut self, cql: &str) -> Result<Vec<Row>> {
        self.c
            .query(cql)
            .with_context(|| format!("{}: `{cql}` failed", self.connector.display))
    }
}

impl TableSteps for CqlTable<'_> {
    fn noun(&self) -> String {
        format!("table {}.kvlab_kv", self.ks)
    }
    fn unmarked(&self) -> (String, &'static str) {
        (
            "its comment lacks kvlab's mark".into(),
            "name another keyspace in the URL (cql://host:port/KEYSPACE)",
        )
    }

    /// The comment is the marker; the layout is right when it is for values
    /// of this size.
    fn inspect(&mut self) -> Result<Option<Existing>> {
        let table = self.q(&format!(
            "SELECT comment FROM system_schema.tables WHERE keyspace_name = '{}' AND table_name = 'kvlab_kv'",
            self.ks
        ))?;
        Ok(table.first().map(|row| {
            self.comment = text(row.first());
            Existing {
                marker: self.comment.clone(),
                layout_ok: self.comment.starts_with(&self.mark),
            }
        }))
    }

    /// The comment records a finished load: all keys when it says this many,
    /// else only the value size.
    fn figures(&mut self) -> Result<Figures> {
        let keys = self.data.keys;
        let (lo, hi) = (self.data.values.min(), self.data.values.size());
        let (n, lo_key, hi_key) = match self.comment == self.loaded {
            true => (
                Some(keys.to_string()),
                Some("0".into()),
                Some((keys as i64 - 1).to_string()),
            ),
            false => (None, None, None),
        };
        Ok(vec![
            n,
            lo_key,
            hi_key,
            Some(lo.to_string()),
            Some(hi.to_string()),
        ])
    }

    fn drop_table(&mut self) -> Result<()> {
        self.q(&format!("DROP TABLE {}.kvlab_kv", self.ks))?;
        Ok(())
    }

    fn create(&mut self) -> Result<()> {
        let (ks, mark) = (&self.ks, &self.mark);
        // Uncompressed: kvlab's synthetic values compress far better than
        // real data would, and no other target compresses them.
        let cql = format!(
            "CREATE TABLE {ks}.kvlab_kv (k bigint PRIMARY KEY, v blob) WITH comment = '{mark}' AND compression = {{'enabled': 'false'}}"
        );
        self.q(&cql)?;
        Ok(())
    }

    fn loading(&self) -> String {
        format!("{}.kvlab_kv with pipelined prepared INSERTs", self.ks)
    }

    fn load(&mut self, opts: RunOptions, shutdown: &AtomicBool) -> Result<()> {
        load(self.connector, self.data, opts, shutdown)
    }

    /// Records the finished load in the comment.
    fn loaded(&mut self) -> Result<()> {
        let cql = format!(
            "ALTER TABLE {}.kvlab_kv WITH comment = '{}'",
            self.ks, self.loaded
        );
        self.q(&cql)?;
        Ok(())
    }
}

impl Database for Cassandra {
    /// A set-up session, with kvlab's keyspace created when absent.
    fn table<'a>(&self, job: TableJob<'a>) -> Result<Box<dyn TableSteps + 'a>> {
        let TableJob {
            connector,
            data,
            opts,
        } = job;
        let (keys, vsize) = (data.keys, data.values.label());
        let ks = keyspace(connector)?;
        let mark = format!("{MARK} (value_size={vsize}, {VALUES_MARK})");
        let mut t = CqlTable {
            c: session(connector)?,
            connector,
            data,
            loaded: format!("{mark} keys={keys}"),
            mark,
            ks,
            comment: String::new(),
        };
        let ks = t.ks.clone();
        let found = t.q(&format!(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = '{ks}'"
        ))?;
        if found.is_empty() {
            note(
                opts,
                format!("kvlab: creating keyspace {ks} (SimpleStrategy, replication_factor 1)"),
            );
            t.q(&format!(
                "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
            ))?;
        }
        Ok(Box::new(t))
    }

    /// Writes every row again at version 0 (a CQL store has no cheap scan for
    /// the rows that changed).
    fn reset_versions(&self, c: &Connector) -> Result<()> {
        let mut s = session(c)?;
        let ks = keyspace(c)?;
        let rows = s.query(&format!(
            "SELECT comment FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name = 'kvlab_kv'"
        ))?;
        let comment = text(rows.first().and_then(|r| r.first()));
        let keys: u64 = comment
            .rsplit_once(" keys=")
            .and_then(|(_, k)| k.parse().ok())
            .context("kvlab_kv's comment does not say how many keys it holds; load it again")?;
        let values = Values::new(
            comment
                .split_once("value_size=")
                .and_then(|(_, r)| r.split(',').next()?.parse().ok())
                .context("kvlab_kv's comment does not give the value size")?,
        );
        let data = DataSpec {
            keys,
            values,
            threads: 2,
            schema: Default::default(),
            load: true,
            managed: false,
        };
        let quiet = RunOptions {
            progress: false,
            notes: false,
        };
        load(c, &data, quiet, &AtomicBool::new(false))
    }

    /// Bytes of kvlab's table on disk once its memtables are flushed: CQL has
    /// no FLUSH, so kvlab sets the table's `memtable_flush_period_in_ms` for a
    /// moment and waits until `system_views.disk_usage` (whole MiB) settles.
    fn table_size(&self, c: &Connector) -> Result<(u64, &'static str)> {
        let mut s = session(c)?;
        let ks = keyspace(c)?;
        s.query(&format!(
            "ALTER TABLE {ks}.kvlab_kv WITH memtable_flush_period_in_ms = 1000"
        ))?;
        let usage = format!(
            "SELECT mebibytes FROM system_views.disk_usage WHERE keyspace_name = '{ks}' AND table_name = 'kvlab_kv'"
        );
        let deadline = Instant::now() + Duration::from_secs(90);
        let (mut last, mut same) = (0, 0);
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            let rows = s
                .query(&usage)
                .context("cannot read system_views.disk_usage")?;
            let mib = bigint(rows.first().and_then(|r| r.first())).unwrap_or(0);
            same = if mib > 0 && mib == last { same + 1 } else { 0 };
            last = mib;
            if same >= 4 {
                break;
            }
        }
        s.query(&format!(
            "ALTER TABLE {ks}.kvlab_kv WITH memtable_flush_period_in_ms = 0"
        ))?;
        if same < 4 {
            bail!(
                "{}: kvlab_kv's size on disk did not settle within 90 s of a flush",
                c.display
            );
        }
        Ok((
            (last as u64) << 20,
            "uncompressed SSTables on disk after a flush (whole MiB)",
        ))
    }
}
