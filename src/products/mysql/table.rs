//! MariaDB/MySQL's side of kvlab's table: checked against kvlab's marker,
//! reused when it holds the right data, else created (InnoDB or MEMORY) and
//! loaded with parallel multi-row INSERTs; versions reset for cache-aside; size.

use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};

use super::codec::MAX_VALUE;
use super::conn::MyConn;
use super::{FACTS, Mariadb};
use crate::driver::setup::{table_session, untimed};
use crate::driver::table::{MARK, VALUES_MARK, parallel_load};
use crate::driver::{Connector, DataSpec, Database, Existing, Figures, TableJob, TableSteps};
use crate::products::sql;
use crate::system::progress::RunOptions;

/// kvlab's table over one MariaDB/MySQL set-up session.
struct MyTable<'a> {
    c: MyConn,
    connector: &'a Connector,
    data: &'a DataSpec,
    /// The storage engine, in lower case.
    engine: String,
    /// The value column's type.
    column: String,
}

impl TableSteps for MyTable<'_> {
    fn noun(&self) -> String {
        "table kvlab_kv".into()
    }
    fn unmarked(&self) -> (String, &'static str) {
        (
            format!("its comment does not start with '{MARK}'"),
            "use another database",
        )
    }

    fn inspect(&mut self) -> Result<Option<Existing>> {
        let rows = self.c.query(
            "SELECT t.TABLE_COMMENT, LOWER(t.ENGINE), (SELECT GROUP_CONCAT(CONCAT(c.COLUMN_NAME, ':', c.COLUMN_TYPE) ORDER BY c.ORDINAL_POSITION) \
             FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME) \
             FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = 'kvlab_kv'",
        )?;
        Ok(rows.first().map(|r| {
            let cols = r[2].clone().unwrap_or_default();
            let columns_ok =
                cols.starts_with("k:bigint") && cols.ends_with(&format!(",v:{}", self.column));
            Existing {
                marker: r[0].clone().unwrap_or_default(),
                layout_ok: columns_ok && r[1].as_deref() == Some(self.engine.as_str()),
            }
        }))
    }

    fn figures(&mut self) -> Result<Figures> {
        sql::figures(&mut self.c)
    }

    fn drop_table(&mut self) -> Result<()> {
        sql::drop_table(&mut self.c)
    }

    fn create(&mut self) -> Result<()> {
        let (column, engine) = (&self.column, &self.engine);
        let vsize = self.data.values.label();
        self.c.query(&format!(
            "CREATE TABLE kvlab_kv (k BIGINT NOT NULL PRIMARY KEY, v {column} NOT NULL) ENGINE={engine} COMMENT='{MARK} (value_size={vsize}, {VALUES_MARK})'"
        ))?;
        Ok(())
    }

    fn loading(&self) -> String {
        format!("kvlab_kv ({}) with multi-row INSERTs", self.engine)
    }

    fn load(&mut self, opts: RunOptions, shutdown: &AtomicBool) -> Result<()> {
        let (connector, data) = (self.connector, self.data);
        // InnoDB takes parallel inserters well even on 2 cores (measured: 2 loaders 240-300k rows/s, 4 loaders 310k).
        let loaders = (data.threads * 2).clamp(2, 4).min(data.keys as usize);
        parallel_load(data, loaders, opts, shutdown, |slice| {
            Ok(untimed::<MyConn>(connector)?.insert_rows(slice)?)
        })
        .context("loading kvlab_kv with INSERT failed (for the MEMORY engine, is max_heap_table_size large enough?)")?;
        self.c.query("ANALYZE TABLE kvlab_kv")?;
        Ok(())
    }
}

impl Database for Mariadb {
    /// Checks that the engine can hold values of this size, then opens a
    /// set-up session.
    fn table<'a>(&self, job: TableJob<'a>) -> Result<Box<dyn TableSteps + 'a>> {
        let TableJob {
            connector, data, ..
        } = job;
        let vsize = data.values.size();
        let engine = data
            .schema
            .table_engine
            .clone()
            .unwrap_or_else(|| FACTS.table.engines[0].into());
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
        Ok(Box::new(MyTable {
            c: table_session(connector)?,
            connector,
            data,
            engine,
            column,
        }))
    }

    /// Sets every value of kvlab's table back to version 0 (only rows that differ:
    /// one scan, few writes).
    fn reset_versions(&self, db: &Connector) -> Result<()> {
        sql::run_long::<MyConn>(
            db,
            "UPDATE kvlab_kv SET v = INSERT(v, 17, 16, '0000000000000000') \
             WHERE SUBSTRING(v, 17, 16) <> '0000000000000000'",
        )
    }

    /// Bytes of kvlab's table with its indexes.
    fn table_size(&self, db: &Connector) -> Result<(u64, &'static str)> {
        sql::table_size::<MyConn>(
            db,
            "SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'kvlab_kv'",
        )
    }
}
