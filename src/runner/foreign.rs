//! What kvlab does with a server it did not start (a team's own): it says the
//! load it puts there, refuses a write that would make a full cache evict keys
//! that are not kvlab's, and removes its keys and table when its work ends
//! (after an error or Ctrl-C too) unless `--keep-data`.

use anyhow::{Result, bail};

use crate::driver::{Cache, CacheMemory, Connector, DataSpec, OwnKeys, Role, table};
use crate::plan::RunPlan;
use crate::plan::shared::Shared;
use crate::results::cleanup::Cleaned;
use crate::system::progress::RunOptions;
use crate::workload::{KEY_OVERHEAD_BYTES, bytes_per_key};

/// Bytes in a MiB.
pub const MIB: f64 = (1u64 << 20) as f64;

/// The servers kvlab did not start that a run of this process reached (by
/// URL), with a cache's own keys when kvlab first made room there: a guard
/// cleans only a server kvlab reached, so an unreachable one costs no wait
/// and no second error. Never on the hot path.
static REACHED: std::sync::Mutex<Vec<(String, Option<u64>)>> = std::sync::Mutex::new(Vec::new());

/// Notes that a run reached `display`, a server kvlab did not start (with
/// the cache's own keys then, where known).
pub fn reached(display: &str, items: Option<u64>) {
    let mut r = REACHED.lock().unwrap_or_else(|e| e.into_inner());
    match r.iter_mut().find(|(d, _)| d == display) {
        Some((_, before)) => *before = before.or(items),
        None => r.push((display.to_string(), items)),
    }
}

/// Whether a run reached `display`, and the cache's own keys it first saw.
fn reached_before(display: &str) -> Option<Option<u64>> {
    let r = REACHED.lock().unwrap_or_else(|e| e.into_inner());
    r.iter().find(|(d, _)| d == display).map(|(_, b)| *b)
}

/// The load a run of `plan` puts on a server it did not start, said before
/// the first request (with the flags that bound it where none does).
pub fn load_note(plan: &RunPlan) -> String {
    let l = &plan.load;
    let pace = match l.rate {
        Some(r) => format!("at {r:.0} req/s"),
        None => "closed loop (each connection as fast as it answers)".to_string(),
    };
    let bound = match plan.shared.capped() {
        true => "",
        false => "; --max-rps and --max-connections bound that",
    };
    format!(
        "{} connection(s), {pace}{}{bound}",
        l.connections,
        match plan.cache.is_some() {
            true => " (the database gets the cache's misses and the writes)",
            false => "",
        }
    )
}

/// Before kvlab writes `keys` keys of `value_size` bytes (a mean) under
/// `prefix` into the cache `c` it did not start: kvlab's own keys
/// from before deleted, then the rest checked to fit beside the server's own
/// keys. Refused, with the figures, when it would make the cache evict them
/// (unless `--allow-evictions`).
pub fn make_room(
    cache: &dyn Cache,
    c: &Connector,
    (prefix, keys, value_size): (&[u8], u64, usize),
    shared: Shared,
) -> Result<()> {
    // A cluster's memory is its primaries' summed: kvlab's keys spread
    // over them by hash slot.
    let numbers = &mut (0..keys);
    cache.delete_keys(c, OwnKeys { prefix, numbers })?;
    let m = cache.memory(c)?;
    reached(&c.display, Some(m.items));
    let need = bytes_needed(keys, value_size, prefix.len(), m.limit);
    // An empty cache evicts only kvlab's own keys.
    let Some(over) = overflow(&m, need).filter(|_| m.items > 0 && !shared.allow_evictions) else {
        return Ok(());
    };
    let per_item = (m.used / m.items).max(1);
    let evicts = over.div_ceil(per_item).min(m.items);
    bail!(
        "the cache {} has too little room beside keys that are not kvlab's ({} keys, {:.1} of {:.1} MiB in use): kvlab's {keys} keys (about {:.1} MiB) would make it evict about {evicts} of them; measure beside on a cache kvlab starts (give {} instead of its URL, with --server-opt or --cache-opt memory-mb of its size), give fewer --keys, or --allow-evictions to let kvlab evict them",
        c.display,
        m.items,
        m.used as f64 / MIB,
        m.limit as f64 / MIB,
        need as f64 / MIB,
        c.product.name(),
    )
}

/// The bytes `keys` keys of `value_size` bytes under a prefix of
/// `prefix_len` take in a cache of `limit` bytes: what a key takes beside
/// its value ([`KEY_OVERHEAD_BYTES`]) with its value's allocation rounded up
/// by 15% (room to spare where the cost of too little is another's keys
/// evicted), and the server's own buffers for kvlab's connections.
pub fn bytes_needed(keys: u64, value_size: usize, prefix_len: usize, limit: u64) -> u64 {
    let rounded_up = (value_size as f64 * 1.15) as u64;
    let per_key = bytes_per_key(rounded_up, prefix_len as u64, KEY_OVERHEAD_BYTES);
    keys.saturating_mul(per_key) + (limit / 50).max(1 << 20)
}

/// The bytes `need` more would take the cache past its limit (`m`: its
/// memory now), or `None` where they fit or it has no limit.
pub fn overflow(m: &CacheMemory, need: u64) -> Option<u64> {
    let total = m.used.saturating_add(need);
    (m.limit > 0 && total > m.limit).then(|| total - m.limit)
}

/// One server kvlab did not start and what it writes there.
struct Written {
    connector: Connector,
    what: What,
}

/// What kvlab writes into a server.
enum What {
    /// Keys `0..keys` under the prefix.
    Keys(Vec<u8>, u64),
    /// Its table, as the data spec names it.
    Table(Box<DataSpec>),
}

/// The servers of a plan kvlab did not start, to clean when its work ends.
pub struct Guard {
    written: Vec<Written>,
    keep: bool,
    opts: RunOptions,
    /// Cleaned already ([`Guard::finish`]): nothing left for `Drop`.
    done: bool,
}
impl Guard {
    /// The servers of `plans` kvlab did not start, each with the most keys
    /// (`plan`, keys) any plan writes into it; none is reached here.
    pub fn open(plans: &[(&RunPlan, u64)], opts: RunOptions) -> Result<Guard> {
        let mut written: Vec<Written> = Vec::new();
        let mut keep = false;
        for &(plan, keys) in plans {
            // A client of a sharded run cannot clean while the others run;
            // a --no-load run measures keys an earlier run left (loaded
            // none): each leaves them.
            keep |= plan.shared.keep_data || plan.load.shard.is_some() || !plan.workload.load;
            let cache = plan.cache.as_ref().map(|c| &c.cache);
            let servers = [(plan.target.kind, plan.target.external.as_ref())]
                .into_iter()
                .chain(cache.map(|c| (c.kind, c.external.as_ref())));
            for (kind, endpoint) in servers {
                let Some(e) = endpoint else { continue };
                let connector = Connector::new(kind, e)?;
                let prefix = plan.workload.key_prefix.as_bytes().to_vec();
                let what = match connector.product.role() {
                    Role::Cache(_) => What::Keys(prefix, keys),
                    Role::Database(_) => What::Table(Box::new(DataSpec {
                        keys,
                        values: plan.workload.values(),
                        threads: 1,
                        schema: plan.target.schema.clone(),
                        load: false,
                        managed: false,
                    })),
                };
                match written
                    .iter_mut()
                    .find(|w| w.connector.display == connector.display && w.what.same(&what))
                {
                    Some(w) => w.what.widen(keys),
                    None => written.push(Written { connector, what }),
                }
            }
        }
        Ok(Guard {
            written,
            keep,
            opts,
            done: false,
        })
    }

    /// Removes what kvlab wrote (or leaves it, `--keep-data`), said one line
    /// per server; a server it cannot clean is named with what to remove.
    pub fn finish(mut self) -> Vec<Cleaned> {
        self.tidy()
    }

    /// [`Guard::finish`]'s work, done once.
    fn tidy(&mut self) -> Vec<Cleaned> {
        self.done = true;
        let mut out = Vec::new();
        for w in &self.written {
            // A server no run reached: nothing written, nothing to clean.
            let Some(before) = reached_before(&w.connector.display) else {
                continue;
            };
            let mut c = Cleaned {
                server: w.connector.display.clone(),
                what: w.what.name(),
                kept: self.keep,
                ..Default::default()
            };
            if !self.keep
                && let Err(e) = w.clean(&mut c, before, self.opts)
            {
                c.error = Some(format!("{e:#}"));
            }
            // Said even where a mode keeps its notes quiet (a study).
            eprintln!("{}", c.line());
            out.push(c);
        }
        out
    }
}

impl Drop for Guard {
    /// [`Guard::finish`] when the work ended early (an error, or a panic
    /// unwinding past it).
    fn drop(&mut self) {
        if !self.done {
            self.tidy();
        }
    }
}

impl What {
    /// Whether `o` is the same kind of thing under the same name.
    fn same(&self, o: &What) -> bool {
        match (self, o) {
            (What::Keys(a, _), What::Keys(b, _)) => a == b,
            (What::Table(_), What::Table(_)) => true,
            _ => false,
        }
    }

    /// Covers `keys` keys too.
    fn widen(&mut self, keys: u64) {
        match self {
            What::Keys(_, k) => *k = (*k).max(keys),
            What::Table(d) => d.keys = d.keys.max(keys),
        }
    }

    /// What it is, in words.
    fn name(&self) -> String {
        match self {
            What::Keys(p, k) => format!(
                "kvlab's keys (ids 0..{k} under '{}')",
                String::from_utf8_lossy(p)
            ),
            What::Table(_) => format!("kvlab's table {}", table::TABLE),
        }
    }
}

impl Written {
    /// Removes kvlab's keys or table into `c`: what it removed, and the
    /// cache's own keys `before` (when kvlab first made room there) and after.
    fn clean(&self, c: &mut Cleaned, before: Option<u64>, opts: RunOptions) -> Result<()> {
        let at = &self.connector;
        match (&self.what, at.product.role()) {
            (What::Keys(p, k), Role::Cache(cache)) => {
                let own = OwnKeys {
                    prefix: p,
                    numbers: &mut (0..*k),
                };
                c.keys_removed = Some(cache.delete_keys(at, own)?);
                c.others_before = before;
                c.others_after = cache.memory(at).ok().map(|m| m.items);
            }
            (What::Table(data), Role::Database(db)) => {
                c.table_bytes = table::remove(db, at, data, opts)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Runs `body` with the servers of `plan` kvlab did not start guarded: what
/// it wrote into them removed afterwards whatever `body` returned; with what
/// was removed.
pub fn guarded<T>(
    plan: &RunPlan,
    keys: u64,
    opts: RunOptions,
    body: impl FnOnce() -> Result<T>,
) -> Result<(T, Vec<Cleaned>)> {
    let guard = Guard::open(&[(plan, keys)], opts)?;
    let out = body();
    let cleaned = guard.finish();
    Ok((out?, cleaned))
}
