//! Watching MariaDB or MySQL read-only (`kvlab observe`): `SHOW GLOBAL
//! STATUS` (`Com_select`, `Com_insert`, `Com_update`, `Com_delete`,
//! `Com_replace`, `Questions`); the table read most from
//! `information_schema.TABLE_STATISTICS` where MariaDB's `userstat` is on,
//! else the largest; see [`crate::products::sql_watch`].

use anyhow::Result;

use super::conn::MyConn;
use crate::driver::Connector;
use crate::driver::Observe;
use crate::driver::observe::{Notes, Reading, Watch};
use crate::products::sql_watch::{Dialect, SAMPLE, SqlWatch, TableRead, col};

/// Every statement a watch of MariaDB/MySQL may send.
pub const COMMANDS: &[&str] = &[
    "SHOW GLOBAL STATUS WHERE Variable_name IN (Com_select, Com_insert, …, Questions)",
    "SELECT … FROM information_schema.TABLES, TABLE_STATISTICS, COLUMNS",
    "SELECT count(*) FROM the table read most (at most 5,000,000 rows by the estimate)",
    "SELECT the largest column's bytes FROM that table WHERE RAND() < … LIMIT 1000",
];

/// The counters read, writes after the first.
const STATUS: &[&str] = &[
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_replace",
    "Com_insert_select",
    "Com_update_multi",
    "Com_delete_multi",
    "Com_replace_select",
];

/// Schemas of the server itself.
const SYSTEM: &str = "('mysql', 'information_schema', 'performance_schema', 'sys')";

/// How MariaDB/MySQL is watched.
pub struct MyObserve;

impl Observe for MyObserve {
    fn watch(&self, c: &Connector) -> Result<Box<dyn Watch>> {
        Ok(Box::new(SqlWatch::open(c, My)?))
    }

    fn commands(&self) -> &'static [&'static str] {
        COMMANDS
    }
}

/// MariaDB's dialect.
struct My;

/// `name` quoted for MariaDB.
fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `s` as a string literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

impl Dialect for My {
    type Conn = MyConn;

    fn reading(&mut self, c: &mut MyConn, _notes: &mut Notes) -> Result<Reading> {
        let names: Vec<String> = STATUS
            .iter()
            .chain(&["Questions"])
            .map(|n| literal(n))
            .collect();
        let rows = c.query(&format!(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ({})",
            names.join(", ")
        ))?;
        let get = |name: &str| -> u64 {
            rows.iter()
                .find(|r| r.first().and_then(|v| v.as_deref()) == Some(name))
                .map_or(0, |r| col(r, 1))
        };
        Ok(Reading {
            reads: Some(get(STATUS[0])),
            writes: Some(STATUS[1..].iter().map(|n| get(n)).sum()),
            commands: Some(get("Questions")),
            ..Reading::default()
        })
    }

    fn tables(&mut self, c: &mut MyConn) -> Result<Vec<TableRead>> {
        let rows = c.query(&format!(
            "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, coalesce(s.ROWS_READ, 0), coalesce(t.TABLE_ROWS, 0) FROM information_schema.TABLES t LEFT JOIN information_schema.TABLE_STATISTICS s ON s.TABLE_SCHEMA = t.TABLE_SCHEMA AND s.TABLE_NAME = t.TABLE_NAME WHERE t.TABLE_TYPE = 'BASE TABLE' AND t.TABLE_SCHEMA NOT IN {SYSTEM}"
        ))?;
        Ok(rows
            .iter()
            .map(|r| {
                let (schema, table) = (
                    r[0].clone().unwrap_or_default(),
                    r[1].clone().unwrap_or_default(),
                );
                TableRead {
                    quoted: format!("{}.{}", quote(&schema), quote(&table)),
                    name: format!("{schema}.{table}"),
                    read: col(r, 2),
                    rows: col(r, 3),
                }
            })
            .collect())
    }

    fn largest_column(&mut self, c: &mut MyConn, t: &TableRead) -> Result<String> {
        let (schema, table) = t.name.split_once('.').unwrap_or(("", &t.name));
        let rows = c.query(&format!(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            literal(schema),
            literal(table)
        ))?;
        let each: Vec<String> = rows
            .iter()
            .filter_map(|r| r[0].as_deref())
            .map(|n| format!("coalesce(length({}), 0)", quote(n)))
            .collect();
        anyhow::ensure!(!each.is_empty(), "{} has no columns", t.name);
        Ok(match each.len() {
            1 => each[0].clone(),
            _ => format!("greatest({})", each.join(", ")),
        })
    }

    fn sample(&self, t: &TableRead, expr: &str) -> String {
        match t.rows > 4 * SAMPLE && t.rows <= crate::products::sql_watch::COUNT_UP_TO {
            true => format!(
                "SELECT {expr} FROM {} WHERE RAND() < {:.6} LIMIT {SAMPLE}",
                t.quoted,
                2.0 * SAMPLE as f64 / t.rows as f64
            ),
            false => format!("SELECT {expr} FROM {} LIMIT {SAMPLE}", t.quoted),
        }
    }

    fn reads_from(&self) -> &'static str {
        "information_schema.TABLE_STATISTICS, kept only with MariaDB's userstat on"
    }
}
