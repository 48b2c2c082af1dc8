//! Watching a memcached server read-only (`kvlab observe`): `stats` every
//! second; once the window is over `stats` again (items, bytes, the limit)
//! and a sample of value sizes: the first [`SAMPLE`] keys `lru_crawler
//! metadump all` lists, each asked `mg KEY s t` (its value's size and the
//! TTL it has left, no value sent); where the crawler is refused, the mean
//! item of `stats slabs`.
//! Never a write.

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::codec::stats;
use super::stat;
use crate::driver::Connector;
use crate::driver::Observe;
use crate::driver::observe::{Holding, KeysLike, Listed, Notes, Reading, Watch};
use crate::transport::Stream;

/// The most keys whose values are sized.
pub const SAMPLE: usize = 1000;

/// Every command a watch of memcached may send.
pub const COMMANDS: &[&str] = &[
    "stats",
    "stats slabs",
    "lru_crawler metadump all (the first 1,000 keys read, then the connection closed)",
    "mg KEY s t (the value's size and the TTL left only)",
    "stats settings (lru_segmented, evictions), once, on a connection of its own",
];

/// How a memcached server is watched.
pub struct MemcachedObserve;

impl Observe for MemcachedObserve {
    fn watch(&self, c: &Connector) -> Result<Box<dyn Watch>> {
        let s = open(c)?;
        Ok(Box::new(McWatch {
            c: c.clone(),
            s,
            sent: 0,
        }))
    }

    fn commands(&self) -> &'static [&'static str] {
        COMMANDS
    }
}

/// A connection for the watch, with the counters' timeout.
fn open(c: &Connector) -> Result<Stream> {
    let s = c
        .open(crate::driver::COUNTERS_TIMEOUT)
        .with_context(|| format!("cannot connect to {}", c.display))?;
    s.set_timeout(Some(crate::driver::COUNTERS_TIMEOUT))?;
    Ok(s)
}

/// A watch of one memcached server.
struct McWatch {
    c: Connector,
    s: Stream,
    sent: u64,
}

impl McWatch {
    /// `stats`, counted.
    fn stats(&mut self) -> Result<Vec<(String, String)>> {
        self.sent += 1;
        stats(&mut self.s)
    }

    /// Up to [`SAMPLE`] keys (those `like` matches, with it, counted on to
    /// the end of the listing or 100 times as many keys: the crawler lists
    /// by slab class, so its first keys are no sample of the sizes) from
    /// the LRU crawler, on a connection of their own (closed after, so the
    /// crawler stops): the keys, how many of those listed matched, and
    /// whether the listing reached its end.
    fn keys(&mut self, like: Option<&KeysLike>) -> Result<Listed<String>> {
        let mut s = open(&self.c)?;
        self.sent += 1;
        s.write_all(b"lru_crawler metadump all\r\n")?;
        let (mut keys, mut matched, mut listed) = (Vec::new(), 0, 0);
        let mut lines = Lines::default();
        let enough = |kept: usize| like.is_none() && kept >= SAMPLE;
        while !enough(keys.len()) && listed < 100 * SAMPLE as u64 {
            let line = lines.next(&mut s)?;
            if line == "END" {
                return Ok(Listed {
                    keys,
                    matched,
                    listed,
                    whole: true,
                });
            }
            let Some(rest) = line.strip_prefix("key=") else {
                bail!("{line}");
            };
            listed += 1;
            let Some(key) = unescape(rest.split(' ').next().unwrap_or("")) else {
                continue;
            };
            if like.is_none_or(|l| l.matches(key.as_bytes())) {
                matched += 1;
                if keys.len() < SAMPLE {
                    keys.push(key);
                }
            }
        }
        Ok(Listed {
            keys,
            matched,
            listed,
            whole: false,
        })
    }

    /// Each key's value size and TTL left (`mg KEY s t`), paced; keys gone
    /// since are skipped: (sizes, the seconds left of those with a TTL).
    fn sizes(&mut self, keys: &[String]) -> Result<(Vec<u64>, Vec<f64>)> {
        let (mut out, mut ttls) = (Vec::new(), Vec::new());
        let mut lines = Lines::default();
        for (i, k) in keys.iter().enumerate() {
            self.sent += 1;
            self.s.write_all(format!("mg {k} s t\r\n").as_bytes())?;
            let line = lines.next(&mut self.s)?;
            if line == "EN" {
                continue;
            }
            let flag = |f: char| -> Option<i64> {
                line.strip_prefix("HD")?
                    .split(' ')
                    .find_map(|t| t.strip_prefix(f)?.parse().ok())
            };
            match flag('s') {
                Some(n) => out.push(n.max(0) as u64),
                None => bail!("{line}"),
            }
            // -1: no TTL.
            if let Some(t) = flag('t').filter(|t| *t >= 0) {
                ttls.push(t as f64);
            }
            if i % 20 == 19 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok((out, ttls))
    }

    /// The mean chunk of `stats slabs` (chunk size over chunks used: at most
    /// a class's step above the item), less memcached's item header (about
    /// 50 bytes).
    fn slab_mean(&mut self) -> Result<u64> {
        self.sent += 1;
        let reply = crate::driver::wire::roundtrip(
            &mut self.s,
            b"stats slabs\r\n",
            super::codec::stats_frame_len,
        )?;
        let text = String::from_utf8_lossy(&reply);
        // Per class: (chunk size, chunks used).
        let mut classes: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
        for l in text.lines() {
            let Some((k, v)) = l.strip_prefix("STAT ").and_then(|l| l.split_once(' ')) else {
                continue;
            };
            let (Some((class, field)), Ok(v)) = (k.split_once(':'), v.trim().parse::<u64>()) else {
                continue;
            };
            let e = classes.entry(class).or_default();
            match field {
                "chunk_size" => e.0 = v,
                "used_chunks" => e.1 = v,
                _ => {}
            }
        }
        let items: u64 = classes.values().map(|c| c.1).sum();
        let bytes: u64 = classes.values().map(|c| c.0 * c.1).sum();
        if items == 0 || bytes / items <= 50 {
            bail!("no items");
        }
        Ok(bytes / items - 50)
    }
}

impl Watch for McWatch {
    fn read(&mut self, _notes: &mut Notes) -> Result<Reading> {
        let st = self.stats()?;
        let n = |k: &str| stat(&st, k);
        let writes = [
            "cmd_set",
            "delete_hits",
            "delete_misses",
            "incr_hits",
            "incr_misses",
        ]
        .iter()
        .chain(&[
            "decr_hits",
            "decr_misses",
            "cas_hits",
            "cas_misses",
            "cas_badval",
        ])
        .map(|k| n(k).unwrap_or(0))
        .sum();
        Ok(Reading {
            reads: n("cmd_get"),
            writes: Some(writes),
            hits: n("get_hits"),
            misses: n("get_misses"),
            evictions: n("evictions"),
            expired: n("expired_unfetched"),
            commands: None,
        })
    }

    fn holding(&mut self, notes: &mut Notes, like: Option<&KeysLike>) -> Holding {
        let mut h = Holding::default();
        if let Some(st) = notes.or_unknown(self.stats(), "keys", "stats") {
            h.keys = stat(&st, "curr_items");
            h.keys_from = "stats curr_items".into();
            h.memory_bytes = stat(&st, "bytes");
            h.memory_limit = stat(&st, "limit_maxbytes");
        }
        let keys = self.keys(like);
        match notes.or_unknown(keys, "value sizes by key", "lru_crawler metadump") {
            Some(found) => {
                if let Some(l) = like {
                    (h.keys, h.keys_from) = l.count(&found, h.keys);
                }
                let keys = found.keys;
                let sizes = self.sizes(&keys);
                if let Some((sizes, ttls)) = notes.or_unknown(sizes, "value sizes", "mg KEY s t") {
                    h.sizes_from = format!(
                        "mg KEY s of {} keys{} lru_crawler metadump listed first",
                        sizes.len(),
                        like.map(|l| format!(" matching {:?}", l.said()))
                            .unwrap_or_default()
                    );
                    h.ttl_asked = sizes.len() as u64;
                    h.ttls_left_s = ttls;
                    h.value_sizes = sizes;
                }
            }
            None => {
                let mean = self.slab_mean();
                if let Some(m) = notes.or_unknown(mean, "value sizes", "stats slabs") {
                    h.value_sizes = vec![m];
                    h.sizes_from =
                        "stats slabs: the mean chunk less its header (about 50 bytes; an upper bound)".into();
                }
            }
        }
        h
    }

    fn sent(&self) -> u64 {
        self.sent
    }
}

/// A key of `metadump` (URL-encoded) as `mg` takes it; `None` for a key
/// `mg` could not be sent in text (spaces, control bytes).
fn unescape(k: &str) -> Option<String> {
    let mut out = Vec::new();
    let b = k.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() + 1 {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let s = String::from_utf8(out).ok()?;
    (!s.is_empty() && s.bytes().all(|c| c.is_ascii_graphic())).then_some(s)
}

/// Lines read from a stream, LF or CRLF ended.
#[derive(Default)]
struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    /// The next line, without its CRLF; an error line as an error.
    fn next(&mut self, s: &mut impl Read) -> Result<String> {
        loop {
            // `metadump` ends its lines with LF alone, replies with CRLF.
            if let Some(p) = self.buf.iter().position(|&b| b == b'\n') {
                let line = String::from_utf8_lossy(&self.buf[..p]);
                let line = line.trim_end_matches('\r').to_string();
                self.buf.drain(..p + 1);
                if super::is_error(line.as_bytes()) || line == "BUSY" || line.starts_with("BUSY ") {
                    bail!("{line}");
                }
                return Ok(line);
            }
            let mut chunk = [0u8; 8192];
            let n = s.read(&mut chunk)?;
            if n == 0 {
                bail!("the server closed the connection");
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadump_keys_are_unescaped_for_mg() {
        assert_eq!(unescape("kvlab%3A12").as_deref(), Some("kvlab:12"));
        assert_eq!(unescape("a%20b"), None);
        let mut lines = Lines::default();
        let mut input: &[u8] = b"key=k%3A1 exp=-1 la=1 cas=2 fetch=no cls=1 size=70\nEND\r\n";
        assert!(lines.next(&mut input).unwrap().starts_with("key=k%3A1"));
        assert_eq!(lines.next(&mut input).unwrap(), "END");
        let mut refused: &[u8] = b"ERROR\r\n";
        assert!(lines.next(&mut refused).is_err());
    }
}
