//! What the SQL databases (MariaDB/MySQL, PostgreSQL) share on their set-up
//! sessions: text queries ([`SqlConn`]), and the statements on kvlab's table
//! that read the same in both dialects (its figures, dropping it), its reset
//! and size by one statement each, and a managed server's settings read back.

use std::io;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::driver::setup::{SetupConn, untimed};
use crate::driver::{Connector, Figures};

/// Rows of a text query (`None`: NULL).
pub type Rows = Vec<Vec<Option<String>>>;

/// `count, min(k), max(k), min(len(v)), max(len(v))` of kvlab's table (-1
/// where it is empty), as [`crate::driver::table::prepare`] reads them.
const FIGURES_SQL: &str = "SELECT count(*), coalesce(min(k), -1), coalesce(max(k), -1), coalesce(min(length(v)), -1), coalesce(max(length(v)), -1) FROM kvlab_kv";

/// A set-up session that runs SQL text.
pub trait SqlConn: SetupConn {
    /// Runs `sql`; returns its rows as text.
    fn query(&mut self, sql: &str) -> io::Result<Rows>;
    /// The first column of the first row of `sql`.
    fn query_one(&mut self, sql: &str) -> io::Result<Option<String>> {
        let first = self.query(sql)?.into_iter().next();
        Ok(first.and_then(|r| r.into_iter().next().flatten()))
    }
}

/// The figures of kvlab's table on `c`.
pub fn figures(c: &mut impl SqlConn) -> Result<Figures> {
    Ok(c.query(FIGURES_SQL)?.into_iter().next().unwrap_or_default())
}

/// Drops kvlab's table on `c`.
pub fn drop_table(c: &mut impl SqlConn) -> Result<()> {
    c.query("DROP TABLE kvlab_kv")?;
    Ok(())
}

/// Runs the long statement `sql` (e.g. a reset of every row) on a session on
/// `db` without a timeout.
pub fn run_long<C: SqlConn>(db: &Connector, sql: &str) -> Result<()> {
    untimed::<C>(db)?.query(sql)?;
    Ok(())
}

/// Bytes of kvlab's table with its indexes on `db`, as `sql` reads them.
pub fn table_size<C: SqlConn>(db: &Connector, sql: &str) -> Result<(u64, &'static str)> {
    C::open(db, Duration::from_secs(5))?
        .query_one(sql)?
        .and_then(|v| v.parse().ok())
        .context("cannot read the size of kvlab_kv")
        .map(|b| (b, "table + indexes"))
}

/// The number `sql` counts on a session on `db`, less that session: the
/// client connections a database serves.
pub fn clients<C: SqlConn>(db: &Connector, sql: &str) -> Result<Option<u64>> {
    let n = C::open(db, Duration::from_secs(5))?.query_one(sql)?;
    Ok(n.and_then(|v| v.parse::<u64>().ok())
        .map(|n| n.saturating_sub(1)))
}

/// The values a server on `c` reports for `keys`, each read by the query
/// `sql(key)`; those it cannot read are left out (all when it cannot be
/// reached).
pub fn settings<C: SqlConn>(
    c: &Connector,
    keys: &[String],
    sql: impl Fn(&str) -> String,
) -> Vec<(String, String)> {
    let Ok(mut conn) = C::open(c, Duration::from_secs(5)) else {
        return Vec::new();
    };
    keys.iter()
        .filter_map(|key| Some((key.clone(), conn.query_one(&sql(key)).ok()??)))
        .collect()
}
