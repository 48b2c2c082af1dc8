//! PostgreSQL's side of kvlab's table: checked against kvlab's marker, reused
//! when it holds the right data, else created and loaded with parallel COPYs
//! (index built after the load); versions reset for cache-aside; its size.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::Postgres;
use super::conn::PgConn;
use super::conn::open;
use crate::progress::{RunOptions, note};
use crate::target::table::{MARK, TableState, VALUES_MARK, announce, figures_state, parallel_load};
use crate::target::{Connector, DataSpec, Database, LoadResult};

impl Database for Postgres {
    fn schema_options(&self) -> &'static [&'static str] {
        &["unlogged"]
    }

    /// Makes sure kvlab's table holds the data: checked, reused, created or
    /// reloaded with parallel COPYs.
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
        let managed = data.managed;
        let mut c = open(connector, Duration::from_secs(10))
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
                if schema.recreate
                    || !comment.contains(VALUES_MARK)
                    || !columns_ok
                    || !persistence_ok
                {
                    TableState::Reload
                } else {
                    let q = c.query("SELECT count(*), coalesce(min(k), -1), coalesce(max(k), -1), coalesce(min(length(v)), -1), coalesce(max(length(v)), -1) FROM kvlab_kv")?;
                    figures_state(&q, keys, vsize, data.load)
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
        if !data.load {
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
        let loaders = data.threads.clamp(1, 4).min(keys as usize);
        parallel_load(keys, loaders, opts, shutdown, |start, end, done| {
            let mut lc = open(connector, Duration::from_secs(10))?;
            lc.set_timeout(None)?;
            lc.copy_in(&data.values, start, end, done, shutdown)?;
            Ok(())
        })
        .context("loading kvlab_kv with COPY failed")?;
        c.query("ALTER TABLE kvlab_kv ADD PRIMARY KEY (k)")
            .context("indexing kvlab_kv failed")?;
        c.query("ANALYZE kvlab_kv")?;
        Ok(Some(LoadResult::of(keys, started.elapsed().as_secs_f64())))
    }

    /// Sets every value of kvlab's table back to version 0 (only rows that differ:
    /// one scan, few writes).
    fn reset_versions(&self, db: &Connector) -> Result<()> {
        let mut c = open(db, Duration::from_secs(10))?;
        c.set_timeout(None)?;
        c.query(
            "UPDATE kvlab_kv SET v = overlay(v placing '0000000000000000'::bytea from 17 for 16) \
             WHERE substring(v from 17 for 16) <> '0000000000000000'::bytea",
        )?;
        Ok(())
    }

    /// Bytes of kvlab's table with its index.
    fn table_size(&self, db: &Connector) -> Result<(u64, &'static str)> {
        open(db, Duration::from_secs(5))?
            .query_one("SELECT pg_total_relation_size('kvlab_kv')")?
            .and_then(|v| v.parse().ok())
            .context("cannot read the size of kvlab_kv")
            .map(|b| (b, "table + indexes"))
    }
}
