//! Tarantool's side of kvlab's table, the space `kvlab_kv` (`k` unsigned, `v`
//! scalar; a TREE primary key), marked as kvlab's by a tuple in kvlab's own
//! space `kvlab_meta`: reused when it holds the right data, else created (memtx
//! or vinyl) and loaded by pipelined REPLACEs; versions reset for cache-aside;
//! its size.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rmpv::Value;

use super::Tarantool;
use super::conn::{TtConn, open};
use super::space_id;
use crate::progress::{RunOptions, note};
use crate::target::table::{MARK, TableState, VALUES_MARK, announce, figures_state, parallel_load};
use crate::target::{Connector, DataSpec, Database, LoadResult};

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

impl Database for Tarantool {
    fn schema_options(&self) -> &'static [&'static str] {
        &["table_engine"]
    }
    fn table_engines(&self) -> &'static [&'static str] {
        &["memtx", "vinyl"]
    }

    /// Makes sure kvlab's space holds the data: checked, reused, created or
    /// reloaded with pipelined REPLACEs on parallel connections.
    fn prepare(
        &self,
        connector: &Connector,
        data: &DataSpec,
        opts: RunOptions,
        shutdown: &AtomicBool,
    ) -> Result<Option<LoadResult>> {
        let keys = data.keys;
        let vsize = data.values.size();
        let mut c = open(connector, Duration::from_secs(10))
            .map_err(|e| anyhow::anyhow!("{}: {e}", connector.display))?;
        c.set_timeout(None)?;
        let r = c
            .eval(INSPECT, vec![])
            .with_context(|| format!("{}: cannot inspect kvlab's space (the user needs read, write and execute on the universe)", connector.display))?;
        let engine = data.schema.table_engine.clone().unwrap_or_else(|| {
            // The managed server's `engine=`, else the default engine.
            Some(text(r.get(6)))
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| self.table_engines()[0].into())
        });
        let exists = r.first().and_then(Value::as_bool).unwrap_or(false);
        let mark = format!("{MARK} (value_size={vsize}, {VALUES_MARK})");
        let state = if !exists {
            TableState::Absent
        } else {
            let found = text(r.get(1));
            if !found.starts_with(MARK) {
                bail!(
                    "space kvlab_kv in {} exists but is not kvlab's (kvlab_meta does not mark it); kvlab will not touch it: use another server",
                    connector.display
                );
            }
            if data.schema.recreate || found != mark || text(r.get(2)) != engine {
                TableState::Reload
            } else {
                // Rows, smallest and largest key; the marker vouches for the size.
                let v = vsize.to_string();
                let row = vec![
                    Some(int(r.get(3)).to_string()),
                    Some(int(r.get(4)).to_string()),
                    Some(int(r.get(5)).to_string()),
                    Some(v.clone()),
                    Some(v),
                ];
                figures_state(&[row], keys, vsize, data.load)
            }
        };
        match announce(state, opts, &connector.display, keys, vsize) {
            TableState::Reusable => return Ok(None),
            TableState::Reload => {
                c.eval("box.space.kvlab_kv:drop()", vec![])?;
            }
            TableState::Absent => {}
        }
        c.eval(
            CREATE,
            vec![Value::from(engine.as_str()), Value::from(mark)],
        )
        .with_context(|| format!("{}: cannot create kvlab's space", connector.display))?;
        let space = space_id(&mut c)?.context("kvlab's space vanished after it was created")?;
        if !data.load {
            return Ok(None);
        }
        note(
            opts,
            format!(
                "kvlab: loading {keys} rows of {vsize} B into space kvlab_kv ({engine}) with pipelined REPLACEs"
            ),
        );
        let started = Instant::now();
        let loaders = (data.threads * 2).clamp(2, 4).min(keys as usize);
        parallel_load(keys, loaders, opts, shutdown, |start, end, done| {
            let mut lc: TtConn = open(connector, Duration::from_secs(10))?;
            lc.set_timeout(None)?;
            lc.replace_rows(space, &data.values, start, end, done, shutdown)?;
            Ok(())
        })
        .context("loading kvlab_kv with REPLACE failed")?;
        Ok(Some(LoadResult::of(keys, started.elapsed().as_secs_f64())))
    }

    /// Sets every value of kvlab's space back to version 0 (only rows that differ).
    fn reset_versions(&self, db: &Connector) -> Result<()> {
        let mut c = open(db, Duration::from_secs(10))?;
        c.set_timeout(None)?;
        c.eval(
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
