//! A database's side of kvlab's table: the data set it must hold
//! ([`DataSpec`]), what it finds there ([`Existing`], [`Figures`]) and the
//! narrow [`TableSteps`] each database implements with only its own steps;
//! the policy that runs them is `table::prepare`.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::driver::endpoint::SchemaOptions;
use crate::system::progress::RunOptions;
use crate::workload::Values;

/// What a database's data set must be.
#[derive(Clone, Debug)]
pub struct DataSpec {
    /// Keys `0..keys`.
    pub keys: u64,
    /// The values (their size and bytes).
    pub values: Values,
    /// Client threads of the run (loaders scale with them).
    pub threads: usize,
    /// How kvlab's table is made.
    pub schema: SchemaOptions,
    /// Load every key (else an empty table, so reads miss rather than fail).
    pub load: bool,
    /// Whether kvlab started the server.
    pub managed: bool,
}

/// A table found where kvlab's table belongs.
#[derive(Clone, Debug)]
pub struct Existing {
    /// Its marker (a comment, or kvlab's own record of it): kvlab touches it
    /// only when this starts with [`MARK`].
    pub marker: String,
    /// Whether its layout (columns, engine, persistence, value size) is the
    /// one `DataSpec` asks for; else it is reloaded.
    pub layout_ok: bool,
}

/// The figures of kvlab's table: `count, min(k), max(k), min(len(v)),
/// max(len(v))`, as text (a missing figure is `None`).
pub type Figures = Vec<Option<String>>;

/// One database's own steps on kvlab's table, for `table::prepare`; each
/// works over a set-up session opened by `Database::table`.
pub trait TableSteps {
    /// How messages name the table, e.g. `table kvlab_kv` or `space kvlab_kv`.
    fn noun(&self) -> String;
    /// Why a table without kvlab's marker is judged not kvlab's, and what to
    /// do instead: (why, fix).
    fn unmarked(&self) -> (String, &'static str);
    /// The table where kvlab's belongs, if there is one.
    fn inspect(&mut self) -> Result<Option<Existing>>;
    /// The figures of kvlab's table, asked only when its layout is right.
    fn figures(&mut self) -> Result<Figures>;
    /// Drops kvlab's own table (only ever called on a marked one).
    fn drop_table(&mut self) -> Result<()>;
    /// Creates kvlab's table, marked as kvlab's, empty.
    fn create(&mut self) -> Result<()>;
    /// Where and how it loads, for the note: `kvlab_kv with COPY`.
    fn loading(&self) -> String;
    /// Loads every key, with what makes the table ready (indexes, statistics).
    fn load(&mut self, opts: RunOptions, shutdown: &AtomicBool) -> Result<()>;
    /// Records a finished load, after the load's time is taken (by default
    /// nothing).
    fn loaded(&mut self) -> Result<()> {
        Ok(())
    }
}
