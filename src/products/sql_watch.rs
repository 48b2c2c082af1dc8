//! Watching a SQL database read-only (`kvlab observe`), what PostgreSQL and
//! MariaDB share: the statement counters every second (each dialect's
//! [`Dialect::reading`]); the user tables' reads at the first reading and at
//! the end, so the table read most in the window is known; its rows (counted
//! where the server's estimate is at most [`COUNT_UP_TO`]) and the size of the
//! largest column of a sample of at most [`SAMPLE`] rows. Only `SELECT` and
//! `SHOW`.

use std::time::Duration;

use anyhow::Result;

use super::sql::SqlConn;
use crate::driver::Connector;
use crate::driver::observe::{Holding, KeysLike, Notes, Reading, Watch};

/// Rows whose values are sized.
pub const SAMPLE: u64 = 1000;
/// A table of at most this many rows (by the server's estimate) is counted.
pub const COUNT_UP_TO: u64 = 5_000_000;

/// One user table and how much was read of it so far.
#[derive(Clone, Debug)]
pub struct TableRead {
    /// Its name as SQL takes it (quoted).
    pub quoted: String,
    /// Its name as shown, `schema.table`.
    pub name: String,
    /// Rows read so far (the server's own statistics; 0 where it keeps none).
    pub read: u64,
    /// Rows by the server's estimate.
    pub rows: u64,
}

/// What a SQL product says in its own dialect.
pub trait Dialect: Send + 'static {
    /// Its set-up session.
    type Conn: SqlConn + Send;
    /// The statement counters now.
    fn reading(&mut self, c: &mut Self::Conn, notes: &mut Notes) -> Result<Reading>;
    /// Every user table with its reads so far.
    fn tables(&mut self, c: &mut Self::Conn) -> Result<Vec<TableRead>>;
    /// An expression over one row of `t`: the bytes of its largest column.
    fn largest_column(&mut self, c: &mut Self::Conn, t: &TableRead) -> Result<String>;
    /// A query of `expr` over a sample of at most [`SAMPLE`] rows of `t`.
    fn sample(&self, t: &TableRead, expr: &str) -> String;
    /// Where the tables' reads come from, for the note on the table chosen.
    fn reads_from(&self) -> &'static str;
}

/// A watch of one SQL database over one session.
pub struct SqlWatch<D: Dialect> {
    dialect: D,
    conn: D::Conn,
    sent: u64,
    /// The tables at the first reading.
    first: Option<Vec<TableRead>>,
}

impl<D: Dialect> SqlWatch<D> {
    /// A watch of `c` in `dialect`.
    pub fn open(c: &Connector, dialect: D) -> Result<SqlWatch<D>> {
        use crate::driver::SetupConn;
        let conn = D::Conn::open(c, Duration::from_secs(5))?;
        // A count of a table's rows may take seconds; a reading, milliseconds.
        conn.set_timeout(Some(Duration::from_secs(30)))?;
        Ok(SqlWatch {
            dialect,
            conn,
            sent: 0,
            first: None,
        })
    }

    /// The table read most since the first reading (else the largest), and
    /// how it was chosen.
    fn table(&mut self, notes: &mut Notes) -> Option<TableRead> {
        self.sent += 1;
        let now = self.dialect.tables(&mut self.conn);
        let now = notes.or_unknown(now, "the table read most", "its table statistics")?;
        let before = self.first.clone().unwrap_or_default();
        let delta = |t: &TableRead| {
            let was = before
                .iter()
                .find(|b| b.name == t.name)
                .map_or(0, |b| b.read);
            t.read.saturating_sub(was)
        };
        let most = now.iter().filter(|t| delta(t) > 0).max_by_key(|t| delta(t));
        match most {
            Some(t) => Some(t.clone()),
            None => {
                notes.say(format!(
                    "keys: the largest table, as no table's reads were seen in the window ({})",
                    self.dialect.reads_from()
                ));
                now.into_iter().max_by_key(|t| t.rows)
            }
        }
    }

    /// Rows of `t`: counted where its estimate is small, else the estimate.
    fn rows(&mut self, t: &TableRead) -> (Option<u64>, String) {
        if t.rows > COUNT_UP_TO {
            return (
                Some(t.rows),
                format!("the server's estimate of {}'s rows", t.name),
            );
        }
        self.sent += 1;
        let counted = self
            .conn
            .query_one(&format!("SELECT count(*) FROM {}", t.quoted))
            .ok()
            .flatten()
            .and_then(|v| v.parse().ok());
        match counted {
            Some(n) => (Some(n), format!("SELECT count(*) FROM {}", t.name)),
            None => (
                Some(t.rows),
                format!("the server's estimate of {}'s rows", t.name),
            ),
        }
    }

    /// The largest column's bytes of a sample of `t`'s rows.
    fn sizes(&mut self, t: &TableRead) -> Result<Vec<u64>> {
        self.sent += 2;
        let expr = self.dialect.largest_column(&mut self.conn, t)?;
        let rows = self.conn.query(&self.dialect.sample(t, &expr))?;
        Ok(rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten()?.parse().ok())
            .collect())
    }
}

impl<D: Dialect> Watch for SqlWatch<D> {
    fn read(&mut self, notes: &mut Notes) -> Result<Reading> {
        if self.first.is_none() {
            self.sent += 1;
            let t = self.dialect.tables(&mut self.conn);
            self.first = Some(
                notes
                    .or_unknown(t, "the table read most", "its table statistics")
                    .unwrap_or_default(),
            );
        }
        self.sent += 1;
        self.dialect.reading(&mut self.conn, notes)
    }

    fn holding(&mut self, notes: &mut Notes, like: Option<&KeysLike>) -> Holding {
        let mut h = Holding::default();
        if let Some(l) = like {
            notes.say(format!(
                "--keys-like {:?}: a cache's keys; the database's figures are its table read most, whole",
                l.said()
            ));
        }
        let Some(t) = self.table(notes) else {
            return h;
        };
        (h.keys, h.keys_from) = self.rows(&t);
        h.table = Some(t.name.clone());
        let sizes = self.sizes(&t);
        if let Some(sizes) = notes.or_unknown(sizes, "value sizes", "a sample of the table's rows")
        {
            h.sizes_from = format!(
                "the largest column of {} sampled rows of {}",
                sizes.len(),
                t.name
            );
            h.value_sizes = sizes;
        }
        h
    }

    fn sent(&self) -> u64 {
        self.sent
    }
}

/// A number of a text row's column `i` (0 where NULL or not a number).
pub fn col(row: &[Option<String>], i: usize) -> u64 {
    row.get(i)
        .cloned()
        .flatten()
        .and_then(|v| v.split('.').next()?.parse().ok())
        .unwrap_or(0)
}
