//! PostgreSQL's side of kvlab's table: checked against kvlab's marker, reused
//! when it holds the right data, else created and loaded with parallel COPYs
//! (index built after the load); versions reset for cache-aside; its size.

use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

use super::Postgres;
use super::conn::PgConn;
use crate::driver::setup::{table_session, untimed};
use crate::driver::table::{MARK, VALUES_MARK, parallel_load};
use crate::driver::{Connector, DataSpec, Database, Existing, Figures, TableJob, TableSteps};
use crate::products::sql;
use crate::system::progress::RunOptions;

/// kvlab's table over one PostgreSQL set-up session.
struct PgTable<'a> {
    c: PgConn,
    connector: &'a Connector,
    data: &'a DataSpec,
}

impl TableSteps for PgTable<'_> {
    fn noun(&self) -> String {
        "table kvlab_kv".into()
    }
    fn unmarked(&self) -> (String, &'static str) {
        (
            format!("its comment does not start with '{MARK}'"),
            "use another database or schema",
        )
    }

    fn inspect(&mut self) -> Result<Option<Existing>> {
        let row = self.c.query(
            "SELECT obj_description(c.oid, 'pg_class'), c.relpersistence::text, \
             (SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attnum) \
              FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) \
             FROM pg_class c WHERE c.oid = to_regclass('kvlab_kv')",
        )?;
        Ok(row.first().map(|r| Existing {
            marker: r[0].clone().unwrap_or_default(),
            layout_ok: r[2].as_deref() == Some("k:bigint,v:bytea")
                && (r[1].as_deref() == Some("u")) == self.data.schema.unlogged,
        }))
    }

    fn figures(&mut self) -> Result<Figures> {
        sql::figures(&mut self.c)
    }

    fn drop_table(&mut self) -> Result<()> {
        sql::drop_table(&mut self.c)
    }

    /// Without its key when it is to be loaded: filled by parallel COPYs, then
    /// indexed, faster than maintaining the index row by row.
    fn create(&mut self) -> Result<()> {
        let unlogged = if self.data.schema.unlogged {
            "UNLOGGED "
        } else {
            ""
        };
        let pk = if self.data.load { "" } else { " PRIMARY KEY" };
        let vsize = self.data.values.label();
        self.c.query(&format!(
            "CREATE {unlogged}TABLE kvlab_kv (k bigint{pk}, v bytea NOT NULL)"
        ))?;
        self.c.query(&format!(
            "COMMENT ON TABLE kvlab_kv IS '{MARK} (value_size={vsize}, {VALUES_MARK})'"
        ))?;
        Ok(())
    }

    fn loading(&self) -> String {
        "kvlab_kv with COPY".into()
    }

    fn load(&mut self, opts: RunOptions, shutdown: &AtomicBool) -> Result<()> {
        let (connector, data) = (self.connector, self.data);
        let loaders = data.threads.clamp(1, 4).min(data.keys as usize);
        parallel_load(data, loaders, opts, shutdown, |slice| {
            Ok(untimed::<PgConn>(connector)?.copy_in(slice)?)
        })
        .context("loading kvlab_kv with COPY failed")?;
        self.c
            .query("ALTER TABLE kvlab_kv ADD PRIMARY KEY (k)")
            .context("indexing kvlab_kv failed")?;
        self.c.query("ANALYZE kvlab_kv")?;
        Ok(())
    }
}

impl Database for Postgres {
    /// A set-up session (with `pg_stat_statements` created on a managed
    /// server, for exact per-statement counters when the library is loaded).
    fn table<'a>(&self, job: TableJob<'a>) -> Result<Box<dyn TableSteps + 'a>> {
        let TableJob {
            connector, data, ..
        } = job;
        let mut c: PgConn = table_session(connector)?;
        if data.managed {
            let _ = c.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
        }
        Ok(Box::new(PgTable { c, connector, data }))
    }

    /// Sets every value of kvlab's table back to version 0 (only rows that differ:
    /// one scan, few writes).
    fn reset_versions(&self, db: &Connector) -> Result<()> {
        sql::run_long::<PgConn>(
            db,
            "UPDATE kvlab_kv SET v = overlay(v placing '0000000000000000'::bytea from 17 for 16) \
             WHERE substring(v from 17 for 16) <> '0000000000000000'::bytea",
        )
    }

    /// Bytes of kvlab's table with its index.
    fn table_size(&self, db: &Connector) -> Result<(u64, &'static str)> {
        sql::table_size::<PgConn>(db, "SELECT pg_total_relation_size('kvlab_kv')")
    }
}
