//! Watching PostgreSQL read-only (`kvlab observe`): statements by kind from
//! `pg_stat_statements` where it is installed (else scans and rows written
//! from `pg_stat_user_tables`), transactions from `pg_stat_database`, the
//! table read most from `pg_stat_user_tables`; see [`crate::products::sql_watch`].

use anyhow::Result;

use super::conn::{PgConn, literal};
use crate::driver::Connector;
use crate::driver::Observe;
use crate::driver::observe::{Notes, Reading, Watch};
use crate::products::sql::SqlConn;
use crate::products::sql_watch::{Dialect, SAMPLE, SqlWatch, TableRead, col};

/// Every statement a watch of PostgreSQL may send.
pub const COMMANDS: &[&str] = &[
    "SELECT … FROM pg_stat_database (this database's transactions)",
    "SELECT … FROM pg_stat_statements (calls by statement kind; where installed)",
    "SELECT … FROM pg_extension (whether pg_stat_statements is installed)",
    "SELECT … FROM pg_stat_user_tables (rows read per table; scans and rows written)",
    "SELECT … FROM pg_attribute (the columns of the table read most)",
    "SELECT count(*) FROM the table read most (at most 5,000,000 rows by the estimate)",
    "SELECT the largest column's bytes FROM that table TABLESAMPLE SYSTEM … LIMIT 1000",
];

/// Statements the watch itself sends (left out of the counts).
const OWN: &str = "pg_stat|pg_extension|pg_attribute|pg_database|pg_catalog";

/// How PostgreSQL is watched.
pub struct PgObserve;

impl Observe for PgObserve {
    fn watch(&self, c: &Connector) -> Result<Box<dyn Watch>> {
        Ok(Box::new(SqlWatch::open(c, Pg { statements: None })?))
    }

    fn commands(&self) -> &'static [&'static str] {
        COMMANDS
    }
}

/// PostgreSQL's dialect; `statements`: whether `pg_stat_statements` answers
/// (asked at the first reading).
struct Pg {
    statements: Option<bool>,
}

impl Pg {
    /// (reads, writes) by statement kind from `pg_stat_statements`.
    fn by_statement(c: &mut PgConn) -> Result<(u64, u64)> {
        let q = format!(
            "SELECT coalesce(sum(calls) FILTER (WHERE query ~* '^\\s*(select|with|table|values)'), 0), coalesce(sum(calls) FILTER (WHERE query ~* '^\\s*(insert|update|delete|merge)'), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query !~ {}",
            literal(OWN)
        );
        let rows = c.query(&q)?;
        let r = rows.first().cloned().unwrap_or_default();
        Ok((col(&r, 0), col(&r, 1)))
    }

    /// (reads, writes) as scans and rows written of every user table.
    fn by_table(c: &mut PgConn) -> Result<(u64, u64)> {
        let rows = c.query("SELECT coalesce(sum(coalesce(idx_scan, 0) + seq_scan), 0), coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables")?;
        let r = rows.first().cloned().unwrap_or_default();
        Ok((col(&r, 0), col(&r, 1)))
    }
}

impl Dialect for Pg {
    type Conn = PgConn;

    fn reading(&mut self, c: &mut PgConn, notes: &mut Notes) -> Result<Reading> {
        if self.statements.is_none() {
            let installed = c.query_one(
                "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'",
            )?;
            let ok = installed.as_deref() == Some("1") && Pg::by_statement(c).is_ok();
            if !ok {
                notes.say("reads and writes: from pg_stat_user_tables (scans, rows written; flushed about once a second), as pg_stat_statements is not installed".into());
            }
            self.statements = Some(ok);
        }
        let (reads, writes) = match self.statements {
            Some(true) => Pg::by_statement(c)?,
            _ => Pg::by_table(c)?,
        };
        let tx = c.query_one("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")?;
        Ok(Reading {
            reads: Some(reads),
            writes: Some(writes),
            commands: tx.and_then(|v| v.parse().ok()),
            ..Reading::default()
        })
    }

    fn tables(&mut self, c: &mut PgConn) -> Result<Vec<TableRead>> {
        let rows = c.query("SELECT quote_ident(schemaname) || '.' || quote_ident(relname), schemaname || '.' || relname, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0), n_live_tup FROM pg_stat_user_tables")?;
        Ok(rows
            .iter()
            .map(|r| TableRead {
                quoted: r[0].clone().unwrap_or_default(),
                name: r[1].clone().unwrap_or_default(),
                read: col(r, 2),
                rows: col(r, 3),
            })
            .collect())
    }

    fn largest_column(&mut self, c: &mut PgConn, t: &TableRead) -> Result<String> {
        let rows = c.query(&format!(
            "SELECT quote_ident(attname), format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = {}::regclass AND attnum > 0 AND NOT attisdropped",
            literal(&t.quoted)
        ))?;
        let each: Vec<String> = rows
            .iter()
            .map(|r| {
                let (name, ty) = (
                    r[0].clone().unwrap_or_default(),
                    r[1].clone().unwrap_or_default(),
                );
                match ty.as_str() {
                    "bytea" | "text" => format!("coalesce(octet_length({name}), 0)"),
                    t if t.starts_with("character") => format!("coalesce(octet_length({name}), 0)"),
                    "json" | "jsonb" => format!("coalesce(octet_length({name}::text), 0)"),
                    _ => format!("coalesce(pg_column_size({name}), 0)"),
                }
            })
            .collect();
        anyhow::ensure!(!each.is_empty(), "{} has no columns", t.name);
        Ok(format!("greatest({})", each.join(", ")))
    }

    fn sample(&self, t: &TableRead, expr: &str) -> String {
        match t.rows > 4 * SAMPLE {
            true => format!(
                "SELECT {expr} FROM {} TABLESAMPLE SYSTEM ({:.4}) LIMIT {SAMPLE}",
                t.quoted,
                (200.0 * SAMPLE as f64 / t.rows as f64).min(100.0)
            ),
            false => format!("SELECT {expr} FROM {} LIMIT {SAMPLE}", t.quoted),
        }
    }

    fn reads_from(&self) -> &'static str {
        "pg_stat_user_tables: seq_tup_read + idx_tup_fetch"
    }
}
