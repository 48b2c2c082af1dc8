//! MariaDB/MySQL's side of kvlab's table: checked against kvlab's marker,
//! reused when it holds the right data, else created (InnoDB or MEMORY) and
//! loaded with parallel multi-row INSERTs; versions reset for cache-aside; size.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::Mariadb;
use super::codec::MAX_VALUE;
use super::conn::MyConn;
use super::conn::open;
use crate::progress::{RunOptions, note};
use crate::target::table::{MARK, TableState, VALUES_MARK, announce, figures_state, parallel_load};
use crate::target::{Connector, DataSpec, Database, LoadResult};

impl Database for Mariadb {
    fn schema_options(&self) -> &'static [&'static str] {
        &["table_engine"]
    }
    fn table_engines(&self) -> &'static [&'static str] {
        &["innodb", "memory"]
    }

    /// Makes sure kvlab's table holds the data: checked, reused, created or
    /// reloaded with parallel multi-row INSERTs.
    fn prepare(
        &self,
        connector: &Connector,
        data: &DataSpec,
        opts: RunOptions,
        shutdown: &AtomicBool,
    ) -> Result<Option<LoadResult>> {
        let keys = data.keys;
        let vsize = data.values.size();
        let schema = &data.schema;
        let engine = schema
            .table_engine
            .clone()
            .unwrap_or_else(|| self.table_engines()[0].into());
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
        let mut c = open(connector, Duration::from_secs(10))
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
                    figures_state(&q, keys, vsize, data.load)
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
        if !data.load {
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
        let loaders = (data.threads * 2).clamp(2, 4).min(keys as usize);
        parallel_load(keys, loaders, opts, shutdown, |start, end, done| {
            let mut lc: MyConn = open(connector, Duration::from_secs(10))?;
            lc.set_timeout(None)?;
            lc.insert_rows(&data.values, start, end, done, shutdown)?;
            Ok(())
        })
        .context("loading kvlab_kv with INSERT failed (for the MEMORY engine, is max_heap_table_size large enough?)")?;
        c.query("ANALYZE TABLE kvlab_kv")?;
        Ok(Some(LoadResult::of(keys, started.elapsed().as_secs_f64())))
    }

    /// Sets every value of kvlab's table back to version 0 (only rows that differ:
    /// one scan, few writes).
    fn reset_versions(&self, db: &Connector) -> Result<()> {
        let mut c = open(db, Duration::from_secs(10))?;
        c.set_timeout(None)?;
        c.query(
            "UPDATE kvlab_kv SET v = INSERT(v, 17, 16, '0000000000000000') \
             WHERE SUBSTRING(v, 17, 16) <> '0000000000000000'",
        )?;
        Ok(())
    }

    /// Bytes of kvlab's table with its indexes.
    fn table_size(&self, db: &Connector) -> Result<(u64, &'static str)> {
        open(db, Duration::from_secs(5))?
            .query_one("SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'kvlab_kv'")?
            .and_then(|v| v.parse().ok())
            .context("cannot read the size of kvlab_kv")
            .map(|b| (b, "table + indexes"))
    }
}
