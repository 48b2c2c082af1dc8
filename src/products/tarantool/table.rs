//! Tarantool's side of kvlab's table, the space `kvlab_kv` (`k` unsigned, `v`
//! scalar; a TREE primary key), marked as kvlab's by a tuple in kvlab's own
//! space `kvlab_meta`: reused when it holds the right data, else created (memtx
//! or vinyl) and loaded by pipelined REPLACEs; versions reset for cache-aside;
//! its size.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use rmpv::Value;

use super::conn::{TtConn, open};
use super::{FACTS, Tarantool, space_id};
use crate::driver::setup::{table_session, untimed};
use crate::driver::table::{MARK, VALUES_MARK, parallel_load};
use crate::driver::{Connector, DataSpec, Database, Existing, Figures, TableJob, TableSteps};
use crate::system::progress::RunOptions;

/// What kvlab's space looks like: whether it exists, its marker, engine, rows,
/// smallest and largest key, and the engine the managed server was told to use.
const INSPECT: &str = r#"
local s, m = box.space.kvlab_kv, box.space.kvlab_meta
local default = rawget(_G, 'kvlab_engine') or ''
if s == nil then return false, '', '', 0, -1, -1, default end
local mark = m and m:get{'kvlab_kv'}
mark = mark and mark[2] or ''
local n = s.engine == 'memtx' and s:len() or s:count()
local lo, hi = -1, -1
if n > 0 then lo = s.index[0]:min()[1]; hi = s.index[0]:max()[1] end
return true, mark, s.engine, n, lo, hi, default
"#;

/// Creates kvlab's space with engine `...[1]` and marks it with `...[2]`.
const CREATE: &str = r#"
local engine, mark = ...
local s = box.schema.space.create('kvlab_kv', {engine = engine,
    format = {{name = 'k', type = 'unsigned'}, {name = 'v', type = 'scalar'}}})
s:create_index('primary', {type = 'tree', parts = {1, 'unsigned'}})
local m = box.schema.space.create('kvlab_meta', {if_not_exists = true,
    format = {{name = 'name', type = 'string'}, {name = 'mark', type = 'string'}}})
m:create_index('primary', {if_not_exists = true, parts = {1, 'string'}})
m:replace{'kvlab_kv', mark}
return s.id
"#;

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_string()
}

fn int(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(-2)
}

/// kvlab's space over one Tarantool set-up session.
struct TtTable<'a> {
    c: TtConn,
    connector: &'a Connector,
    data: &'a DataSpec,
    /// The engine asked for (else the managed server's, else memtx), known
    /// once inspected.
    engine: String,
    /// The figures [`INSPECT`] read.
    figures: Figures,
    /// The space's id, once created.
    space: u32,
}

impl TtTable<'_> {
    /// The marker of a space holding values of this run's size.
    fn mark(&self) -> String {
        format!(
            "{MARK} (value_size={}, {VALUES_MARK})",
            self.data.values.label()
        )
    }
}

impl TableSteps for TtTable<'_> {
    fn noun(&self) -> String {
        "space kvlab_kv".into()
    }
    fn unmarked(&self) -> (String, &'static str) {
        ("kvlab_meta does not mark it".into(), "use another server")
    }

    fn inspect(&mut self) -> Result<Option<Existing>> {
        let display = &self.connector.display;
        let r = self
            .c
            .eval(INSPECT, vec![])
            .with_context(|| format!("{display}: cannot inspect kvlab's space (the user needs read, write and execute on the universe)"))?;
        self.engine = self.data.schema.table_engine.clone().unwrap_or_else(|| {
            // The managed server's `engine=`, else the default engine.
            Some(text(r.get(6)))
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| FACTS.table.engines[0].into())
        });
        if !r.first().and_then(Value::as_bool).unwrap_or(false) {
            return Ok(None);
        }
        // Rows, smallest and largest key; the marker vouches for the size.
        let values = &self.data.values;
        self.figures = vec![
            Some(int(r.get(3)).to_string()),
            Some(int(r.get(4)).to_string()),
            Some(int(r.get(5)).to_string()),
            Some(values.min().to_string()),
            Some(values.size().to_string()),
        ];
        let marker = text(r.get(1));
        Ok(Some(Existing {
            layout_ok: marker == self.mark() && text(r.get(2)) == self.engine,
            marker,
        }))
    }

    fn figures(&mut self) -> Result<Figures> {
        Ok(self.figures.clone())
    }

    fn drop_table(&mut self) -> Result<()> {
        self.c.eval("box.space.kvlab_kv:drop()", vec![])?;
        Ok(())
    }

    fn create(&mut self) -> Result<()> {
        let display = &self.connector.display;
        self.c
            .eval(
                CREATE,
                vec![Value::from(self.engine.as_str()), Value::from(self.mark())],
            )
            .with_context(|| format!("{display}: cannot create kvlab's space"))?;
        self.space =
            space_id(&mut self.c)?.context("kvlab's space vanished after it was created")?;
        Ok(())
    }

    fn loading(&self) -> String {
        format!("space kvlab_kv ({}) with pipelined REPLACEs", self.engine)
    }

    fn load(&mut self, opts: RunOptions, shutdown: &AtomicBool) -> Result<()> {
        let (connector, data, space) = (self.connector, self.data, self.space);
        let loaders = (data.threads * 2).clamp(2, 4).min(data.keys as usize);
        parallel_load(data, loaders, opts, shutdown, |slice| {
            Ok(untimed::<TtConn>(connector)?.replace_rows(space, slice)?)
        })
        .context("loading kvlab_kv with REPLACE failed")
    }
}

impl Database for Tarantool {
    fn table<'a>(&self, job: TableJob<'a>) -> Result<Box<dyn TableSteps + 'a>> {
        let TableJob {
            connector, data, ..
        } = job;
        Ok(Box::new(TtTable {
            c: table_session(connector)?,
            connector,
            data,
            engine: String::new(),
            figures: Vec::new(),
            space: 0,
        }))
    }

    /// Sets every value of kvlab's space back to version 0 (only rows that differ).
    fn reset_versions(&self, db: &Connector) -> Result<()> {
        untimed::<TtConn>(db)?.eval(
            r#"
    local s, zero, keys = box.space.kvlab_kv, string.rep('0', 16), {}
    for _, t in s:pairs() do
        local v = t[2]
        if #v >= 32 and v:sub(17, 32) ~= zero then table.insert(keys, t[1]) end
    end
    for _, k in ipairs(keys) do
        local v = s:get{k}[2]
        s:replace{k, v:sub(1, 16) .. zero .. v:sub(33)}
    end
    return #keys
    "#,
            vec![],
        )?;
        Ok(())
    }

    /// Bytes of memtx memory kvlab's space takes: the arena in use
    /// (`box.slab.info().arena_used`: tuples and indexes with the allocator's
    /// overhead) when no other user space holds data; else, and for vinyl, the
    /// space's and its index's own bytes.
    fn table_size(&self, db: &Connector) -> Result<(u64, &'static str)> {
        let r = open(db, Duration::from_secs(5))?.eval(
            r#"
    local s = box.space.kvlab_kv
    local own = s:bsize() + s.index[0]:bsize()
    if s.engine ~= 'memtx' then return own, 'vinyl space + index bytes' end
    for _, o in box.space._space:pairs(512, {iterator = 'GE'}) do
        local name = o[3]
        if name ~= 'kvlab_kv' and name ~= 'kvlab_meta' and box.space[name]
            and box.space[name].engine == 'memtx' and box.space[name]:bsize() > 0 then
            return own, 'memtx space + index bytes'
        end
    end
    return box.slab.info().arena_used, 'memtx arena in use (box.slab.info)'
    "#,
            vec![],
        )?;
        let bytes = r
            .first()
            .and_then(Value::as_u64)
            .context("cannot read the size of kvlab_kv")?;
        let basis = match r.get(1).and_then(Value::as_str) {
            Some("vinyl space + index bytes") => "vinyl space + index bytes",
            Some("memtx space + index bytes") => "memtx space + index bytes",
            _ => "memtx arena in use (box.slab.info)",
        };
        Ok((bytes, basis))
    }
}
