//! Watching a Redis or Valkey server read-only (`kvlab observe`): `INFO
//! stats` and `INFO commandstats` every second; once the window is over
//! `INFO keyspace`, `INFO memory`, `DBSIZE`, and a paced sample of string
//! values (`SCAN … COUNT 100 TYPE string`, then `STRLEN` and `MEMORY USAGE`
//! of each key, at most [`SAMPLE`] keys, and `PTTL` of the first
//! [`TTL_SAMPLE`]). Never a write, `MONITOR` or `KEYS`.

use std::time::Duration;

use anyhow::{Result, bail};

use super::{Info, command, info_field};
use crate::driver::Connector;
use crate::driver::Observe;
use crate::driver::observe::{Holding, KeysLike, Listed, Notes, Reading, Watch};
use crate::driver::wire::parse_usize;
use crate::transport::Stream;

/// The most keys whose values are sized.
pub const SAMPLE: usize = 1000;

/// The most keys whose TTL is asked.
pub const TTL_SAMPLE: usize = 200;

/// Every command a watch of a RESP server may send.
pub const COMMANDS: &[&str] = &[
    "INFO stats",
    "INFO commandstats",
    "INFO keyspace",
    "INFO memory",
    "DBSIZE",
    "SCAN cursor COUNT 100 TYPE string",
    "STRLEN key",
    "MEMORY USAGE key",
    "PTTL key",
    "CONFIG GET maxmemory-policy maxmemory-samples lfu-log-factor lfu-decay-time (else INFO memory), once, on a connection of its own",
];

/// Commands that read keys (their calls are the server's reads).
const READS: &[&str] = &[
    "get",
    "mget",
    "getrange",
    "substr",
    "exists",
    "hget",
    "hmget",
    "hgetall",
    "hexists",
    "hstrlen",
    "hkeys",
    "hvals",
    "hlen",
    "lrange",
    "lindex",
    "llen",
    "smembers",
    "sismember",
    "smismember",
    "scard",
    "zrange",
    "zrangebyscore",
    "zrevrange",
    "zrevrangebyscore",
    "zscore",
    "zmscore",
    "zcard",
    "zrank",
    "zcount",
    "json.get",
];

/// Commands that write keys.
const WRITES: &[&str] = &[
    "set",
    "setex",
    "psetex",
    "setnx",
    "mset",
    "msetnx",
    "getset",
    "getdel",
    "getex",
    "del",
    "unlink",
    "incr",
    "incrby",
    "incrbyfloat",
    "decr",
    "decrby",
    "append",
    "setrange",
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "persist",
    "hset",
    "hmset",
    "hsetnx",
    "hdel",
    "hincrby",
    "hincrbyfloat",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "lset",
    "ltrim",
    "lrem",
    "sadd",
    "srem",
    "spop",
    "zadd",
    "zrem",
    "zincrby",
    "zpopmin",
    "zpopmax",
    "copy",
    "rename",
    "json.set",
    "json.del",
];

/// How a RESP server is watched.
pub struct RespObserve;

impl Observe for RespObserve {
    fn watch(&self, c: &Connector) -> Result<Box<dyn Watch>> {
        let info = Info::open(c)?;
        Ok(Box::new(RespWatch { info, sent: 0 }))
    }

    fn commands(&self) -> &'static [&'static str] {
        COMMANDS
    }
}

/// A watch of one RESP server over one connection.
struct RespWatch {
    info: Info,
    sent: u64,
}

impl RespWatch {
    /// `INFO name`, counted.
    fn section(&mut self, name: &[u8]) -> Result<String> {
        self.sent += 1;
        self.info.section(name)
    }

    /// One command's raw reply, counted; a server error as an error.
    fn ask(&mut self, args: &[&[u8]]) -> Result<Vec<u8>> {
        self.sent += 1;
        let reply = command(self.stream(), args)?;
        if reply.first() == Some(&b'-') {
            bail!("{}", String::from_utf8_lossy(reply[1..].trim_ascii()));
        }
        Ok(reply)
    }

    fn stream(&mut self) -> &mut Stream {
        &mut self.info.0
    }

    /// Up to [`SAMPLE`] string keys (those `like` matches, with it), by a
    /// paced `SCAN`: the keys, how many of the string keys listed matched,
    /// and whether the scan reached every key.
    fn scan(&mut self, like: Option<&KeysLike>) -> Result<Listed<Vec<u8>>> {
        let (mut keys, mut matched, mut listed) = (Vec::new(), 0, 0);
        let mut cursor = b"0".to_vec();
        let rounds = match like {
            Some(_) => 1000,
            None => 200,
        };
        for _ in 0..rounds {
            let reply = self.ask(&[b"SCAN", &cursor, b"COUNT", b"100", b"TYPE", b"string"])?;
            let mut parts = bulks(&reply)?.into_iter();
            cursor = parts.next().unwrap_or_else(|| b"0".to_vec());
            let found: Vec<Vec<u8>> = parts.collect();
            listed += found.len() as u64;
            let mine: Vec<Vec<u8>> = found
                .into_iter()
                .filter(|k| like.is_none_or(|l| l.matches(k)))
                .collect();
            matched += mine.len() as u64;
            keys.extend(mine.into_iter().take(SAMPLE - keys.len()));
            if cursor == b"0" || keys.len() >= SAMPLE {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(Listed {
            keys,
            matched,
            listed,
            whole: cursor == b"0",
        })
    }

    /// Each key's value length and memory (`STRLEN`, `MEMORY USAGE`), paced.
    fn sizes(&mut self, keys: &[Vec<u8>], notes: &mut Notes) -> (Vec<u64>, Option<f64>) {
        let (mut sizes, mut memory) = (Vec::new(), Vec::new());
        let mut memory_refused = false;
        for (i, k) in keys.iter().enumerate() {
            match self.ask(&[b"STRLEN", k]).and_then(|r| integer(&r)) {
                Ok(n) if n > 0 => sizes.push(n),
                Ok(_) => {}
                Err(e) => {
                    notes.or_unknown::<()>(Err(e), "value sizes", "STRLEN");
                    break;
                }
            }
            if !memory_refused {
                match self.ask(&[b"MEMORY", b"USAGE", k]) {
                    // Gone since the scan (evicted, expired, deleted).
                    Ok(r) if r.starts_with(b"$-1") || r.starts_with(b"_") => {}
                    Ok(r) => memory.push(integer(&r).unwrap_or(0) as f64),
                    Err(e) => {
                        memory_refused = true;
                        notes.or_unknown::<()>(Err(e), "memory per key", "MEMORY USAGE");
                    }
                }
            }
            if i % 20 == 19 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let per_key =
            (!memory.is_empty()).then(|| memory.iter().sum::<f64>() / memory.len() as f64);
        (sizes, per_key)
    }

    /// The TTL left of the first [`TTL_SAMPLE`] of `keys` (`PTTL`, paced):
    /// (keys asked, seconds left of those that carry one).
    fn ttls(&mut self, keys: &[Vec<u8>], notes: &mut Notes) -> (u64, Vec<f64>) {
        let (mut asked, mut left) = (0, Vec::new());
        for (i, k) in keys.iter().take(TTL_SAMPLE).enumerate() {
            match self.ask(&[b"PTTL", k]).and_then(|r| signed(&r)) {
                // -2: gone since the scan; -1: no TTL.
                Ok(-2) => continue,
                Ok(ms) if ms >= 0 => left.push(ms as f64 / 1000.0),
                Ok(_) => {}
                Err(e) => {
                    notes.or_unknown::<()>(Err(e), "TTLs", "PTTL");
                    return (0, Vec::new());
                }
            }
            asked += 1;
            if i % 20 == 19 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        (asked, left)
    }
}

impl Watch for RespWatch {
    fn read(&mut self, notes: &mut Notes) -> Result<Reading> {
        let stats = self.section(b"stats")?;
        let cmd = self.section(b"commandstats");
        let cmd = notes.or_unknown(cmd, "reads and writes by command", "INFO commandstats");
        let num = |k: &str| info_field(&stats, k).and_then(|v| v.parse::<u64>().ok());
        let (reads, writes) = match &cmd {
            Some(text) => (Some(calls(text, READS)), Some(calls(text, WRITES))),
            None => {
                notes
                    .say("reads: taken as keyspace hits + misses (keys read, not commands)".into());
                (
                    num("keyspace_hits")
                        .zip(num("keyspace_misses"))
                        .map(|(h, m)| h + m),
                    None,
                )
            }
        };
        Ok(Reading {
            reads,
            writes,
            hits: num("keyspace_hits"),
            misses: num("keyspace_misses"),
            evictions: num("evicted_keys"),
            expired: num("expired_keys"),
            commands: num("total_commands_processed"),
        })
    }

    fn holding(&mut self, notes: &mut Notes, like: Option<&KeysLike>) -> Holding {
        let mut h = Holding::default();
        let dbsize = self.ask(&[b"DBSIZE"]).and_then(|r| integer(&r));
        match notes.or_unknown(dbsize, "keys", "DBSIZE") {
            Some(n) => (h.keys, h.keys_from) = (Some(n), "DBSIZE".into()),
            None => {
                let ks = self.section(b"keyspace");
                if let Some(ks) = notes.or_unknown(ks, "keys", "INFO keyspace") {
                    h.keys = Some(keyspace_keys(&ks));
                    h.keys_from = "INFO keyspace (every database)".into();
                }
            }
        }
        let mem = self.section(b"memory");
        if let Some(mem) = notes.or_unknown(mem, "memory", "INFO memory") {
            let num = |k: &str| info_field(&mem, k).and_then(|v| v.parse::<u64>().ok());
            h.memory_bytes = num("used_memory");
            h.resident_bytes = num("used_memory_rss");
            h.memory_limit = num("maxmemory");
        }
        let keys = self.scan(like);
        if let Some(found) = notes.or_unknown(keys, "value sizes", "SCAN") {
            if let Some(l) = like {
                (h.keys, h.keys_from) = l.count(&found, h.keys);
            }
            let keys = found.keys;
            let (sizes, per_key) = self.sizes(&keys, notes);
            (h.ttl_asked, h.ttls_left_s) = self.ttls(&keys, notes);
            h.sizes_from = format!(
                "STRLEN of {} string keys{} from SCAN (COUNT 100, paced)",
                sizes.len(),
                like.map(|l| format!(" matching {:?}", l.said()))
                    .unwrap_or_default()
            );
            h.value_sizes = sizes;
            h.memory_per_key = per_key;
        }
        h
    }

    fn sent(&self) -> u64 {
        self.sent
    }
}

/// The calls of the commands `names` in `INFO commandstats` text.
fn calls(text: &str, names: &[&str]) -> u64 {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            names
                .contains(&name.to_ascii_lowercase().as_str())
                .then_some(())?;
            rest.split(',')
                .find_map(|kv| kv.strip_prefix("calls=")?.parse::<u64>().ok())
        })
        .sum()
}

/// Keys over every database of `INFO keyspace` text.
fn keyspace_keys(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with("db"))
        .filter_map(|l| {
            l.split([':', ','])
                .find_map(|kv| kv.strip_prefix("keys=")?.parse::<u64>().ok())
        })
        .sum()
}

/// An integer reply (`:N`).
fn integer(frame: &[u8]) -> Result<u64> {
    frame
        .strip_prefix(b":")
        .and_then(|n| parse_usize(n.trim_ascii()))
        .map(|n| n as u64)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "expected an integer, got {:?}",
                String::from_utf8_lossy(frame)
            )
        })
}

/// A signed integer reply (`:-1`).
fn signed(frame: &[u8]) -> Result<i64> {
    std::str::from_utf8(frame)
        .ok()
        .and_then(|s| s.strip_prefix(':')?.trim().parse().ok())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "expected an integer, got {:?}",
                String::from_utf8_lossy(frame)
            )
        })
}

/// The bulk strings of a reply, nested arrays flattened (`SCAN`'s cursor,
/// then its keys).
fn bulks(frame: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < frame.len() {
        let eol = crate::driver::wire::line_end(frame, at)
            .ok_or_else(|| anyhow::anyhow!("a reply cut short"))?;
        let head = frame[at..eol].trim_ascii_end();
        at = eol;
        match (head.first(), head.get(1..).and_then(parse_usize)) {
            (Some(b'*'), Some(_)) => {}
            (Some(b'$'), Some(n)) => {
                let payload = frame
                    .get(at..at + n)
                    .ok_or_else(|| anyhow::anyhow!("a reply cut short"))?;
                out.push(payload.to_vec());
                at += n + 2;
            }
            _ => bail!("unexpected reply {:?}", String::from_utf8_lossy(head)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commandstats_split_into_reads_and_writes() {
        let text = "# Commandstats\r\ncmdstat_get:calls=90,usec=1\r\ncmdstat_mget:calls=5,usec=1\r\ncmdstat_set:calls=7,usec=1\r\ncmdstat_del:calls=3,usec=1\r\ncmdstat_info:calls=40,usec=1\r\n";
        assert_eq!(calls(text, READS), 95);
        assert_eq!(calls(text, WRITES), 10);
    }

    #[test]
    fn scan_replies_flatten_to_the_cursor_and_keys() {
        let r = b"*2\r\n$2\r\n17\r\n*2\r\n$3\r\nk:1\r\n$3\r\nk:2\r\n";
        assert_eq!(
            bulks(r).unwrap(),
            vec![b"17".to_vec(), b"k:1".to_vec(), b"k:2".to_vec()]
        );
        assert_eq!(integer(b":512\r\n").unwrap(), 512);
        assert_eq!(
            keyspace_keys("# Keyspace\r\ndb0:keys=10,expires=0\r\ndb3:keys=5,expires=1\r\n"),
            15
        );
    }
}
