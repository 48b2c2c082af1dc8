//! Trace replay's input, the public cache-trace CSV format (Twitter's
//! `twitter/cache-trace`): one request a line, in time order,
//! `timestamp,key,key size,value size,client id,operation,TTL` (timestamp in
//! seconds). Pure functions over lines: parsing, what kvlab sends for each
//! operation, where a trace key lands in kvlab's key space, and the
//! [`Scan`] of a whole trace. The file and the thread that streams it to the
//! workers are [`feed`].
//!
//! # Layout
//! - this file: [`Line`], [`parse`], [`OPS`], [`key_id`], [`Scan`].
//! - [`feed`]: opening a trace (plain or zstd), the reader thread, the
//!   workers' [`feed::Cursor`].
//! - [`mrc`]: the trace's miss-ratio curve and skew, for `kvlab decide`.
//! - [`by_policy`]: the trace's curve under another eviction policy.
//! - [`policy`]: the eviction policies simulated; [`model`]: the popularity
//!   model (Che's approximation for LRU, the other policies carried by it).

pub mod by_policy;
pub mod feed;
pub mod model;
pub mod mrc;
pub mod policy;

use super::OpKind;
use crate::workload::SizeDist;

/// What kvlab sends for one of the format's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modelled {
    /// A read: kvlab's GET of the key.
    Get,
    /// A write of a whole value: kvlab's SET of the key.
    Set,
    /// Not modelled (counted, never sent): a delete, an increment, an append.
    Not,
}

/// The format's operations, in the order [`Scan::ops`] counts them, and what
/// kvlab sends for each. `add`, `replace` and `cas` write a whole value and
/// are sent as SETs (their conditions are not reproduced).
pub const OPS: [(&str, Modelled); 11] = [
    ("get", Modelled::Get),
    ("gets", Modelled::Get),
    ("set", Modelled::Set),
    ("add", Modelled::Set),
    ("replace", Modelled::Set),
    ("cas", Modelled::Set),
    ("append", Modelled::Not),
    ("prepend", Modelled::Not),
    ("delete", Modelled::Not),
    ("incr", Modelled::Not),
    ("decr", Modelled::Not),
];

/// The index in [`OPS`] counting operations the format does not name.
pub const OTHER_OP: usize = OPS.len();

/// One parsed line of a trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line<'a> {
    /// Seconds (the traces' own clock; only differences matter).
    pub ts: f64,
    /// The (anonymised) key.
    pub key: &'a [u8],
    /// Bytes of the value (0 for a read that missed).
    pub value_size: u32,
    /// The operation's index in [`OPS`] ([`OTHER_OP`] for another name).
    pub op: usize,
    /// Seconds to live (0: none).
    pub ttl: u32,
}

impl Line<'_> {
    /// What kvlab sends for this line.
    #[inline]
    pub fn modelled(&self) -> Modelled {
        OPS.get(self.op).map_or(Modelled::Not, |o| o.1)
    }
}

/// Parses one line (without its newline). The key may itself hold commas:
/// the five fields after it are taken from the right.
pub fn parse(line: &[u8]) -> Result<Line<'_>, &'static str> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let first = memchr(b',', line).ok_or("not 7 comma-separated fields")?;
    let mut right = [0usize; 5];
    let mut end = line.len();
    for slot in right.iter_mut().rev() {
        let at = line[..end]
            .iter()
            .rposition(|&b| b == b',')
            .filter(|&p| p > first)
            .ok_or("not 7 comma-separated fields")?;
        *slot = at;
        end = at;
    }
    let field = |i: usize| -> &[u8] {
        let start = right[i] + 1;
        let end = right.get(i + 1).copied().unwrap_or(line.len());
        &line[start..end]
    };
    let ts: f64 = std::str::from_utf8(&line[..first])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|t: &f64| t.is_finite() && *t >= 0.0)
        .ok_or("the timestamp is not a number of seconds")?;
    let key = &line[first + 1..right[0]];
    if key.is_empty() {
        return Err("the key is empty");
    }
    let value_size = number(field(1)).ok_or("the value size is not a number")?;
    number(field(0)).ok_or("the key size is not a number")?;
    let op = op_index(field(3));
    let ttl = number(field(4)).ok_or("the TTL is not a number")?;
    Ok(Line {
        ts,
        key,
        value_size,
        op,
        ttl,
    })
}

/// The first `b` in `s`.
fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&c| c == b)
}

/// A decimal number of at most 32 bits.
fn number(s: &[u8]) -> Option<u32> {
    let s = s.trim_ascii();
    if s.is_empty() || s.len() > 10 {
        return None;
    }
    let mut n: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(c - b'0');
    }
    u32::try_from(n).ok()
}

/// The index of operation `name` in [`OPS`] (any case), else [`OTHER_OP`].
fn op_index(name: &[u8]) -> usize {
    let name = name.trim_ascii();
    OPS.iter()
        .position(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
        .unwrap_or(OTHER_OP)
}

/// Where a trace key lands in kvlab's key space `0..keys`: a 64-bit hash
/// (FNV-1a, then a finaliser that spreads its bits) modulo `keys`. Distinct
/// trace keys share an id when the trace has more keys than `keys`.
#[inline]
pub fn key_id(key: &[u8], keys: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h % keys.max(1)
}

/// Value sizes kept from the start of a trace to size kvlab's values.
pub const SIZE_SAMPLE: usize = 100_000;

/// What a pass over a trace saw: lines, operations, the time span, value
/// sizes. The same sums serve the scan before a run and the reader during it.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Lines read (blank lines excluded).
    pub lines: u64,
    /// Lines that did not parse.
    pub malformed: u64,
    /// The first line that did not parse: its number and why.
    pub first_malformed: Option<(u64, &'static str)>,
    /// Lines per operation, as [`OPS`], then the others.
    pub ops: [u64; OPS.len() + 1],
    /// Lines whose timestamp was before the one above them (replayed at it).
    pub out_of_order: u64,
    /// Lines with a TTL.
    pub with_ttl: u64,
    /// First and last timestamp.
    pub first_ts: Option<f64>,
    /// The latest timestamp seen.
    pub last_ts: f64,
    /// The gap between the last two distinct timestamps, at most a second
    /// (the last timestamp's lines are spread over it).
    pub last_gap: Option<f64>,
    /// Value sizes of the first [`SIZE_SAMPLE`] modelled lines that carry one.
    pub sizes: Vec<u32>,
}

impl Scan {
    /// Counts line number `n` (from 1), parsed as `parsed`.
    pub fn count(&mut self, n: u64, parsed: &Result<Line<'_>, &'static str>) {
        self.lines += 1;
        let l = match parsed {
            Ok(l) => l,
            Err(why) => {
                self.malformed += 1;
                self.first_malformed.get_or_insert((n, why));
                return;
            }
        };
        self.ops[l.op] += 1;
        if l.ttl > 0 {
            self.with_ttl += 1;
        }
        match self.first_ts {
            None => {
                self.first_ts = Some(l.ts);
                self.last_ts = l.ts;
            }
            Some(_) if l.ts < self.last_ts => self.out_of_order += 1,
            Some(_) => {
                if l.ts > self.last_ts {
                    self.last_gap = Some((l.ts - self.last_ts).min(1.0));
                }
                self.last_ts = l.ts;
            }
        }
        if l.value_size > 0 && l.modelled() != Modelled::Not && self.sizes.len() < SIZE_SAMPLE {
            self.sizes.push(l.value_size);
        }
    }

    /// Lines kvlab sends as `m`.
    pub fn modelled(&self, m: Modelled) -> u64 {
        OPS.iter()
            .zip(self.ops)
            .filter(|((_, k), _)| *k == m)
            .map(|(_, n)| n)
            .sum()
    }

    /// Seconds from the first timestamp to the end of the last one's lines
    /// (the last timestamp lasts as long as the gap before it; a second
    /// when there is one timestamp, as in whole-second traces).
    pub fn span_s(&self) -> f64 {
        self.first_ts
            .map_or(0.0, |f| self.last_ts - f + self.last_gap.unwrap_or(1.0))
    }

    /// Requests kvlab sends per second of the trace at `speed`.
    pub fn rate(&self, speed: f64) -> f64 {
        let n = self.modelled(Modelled::Get) + self.modelled(Modelled::Set);
        n as f64 * speed / self.span_s().max(1e-9)
    }

    /// The value sizes of the sample as a distribution of 64 quantiles
    /// (`None` when no line carried a size).
    pub fn size_dist(&self) -> Option<SizeDist> {
        let mut s = self.sizes.clone();
        if s.is_empty() {
            return None;
        }
        s.sort_unstable();
        const Q: usize = 64;
        let mut sizes: Vec<(usize, u32)> = Vec::new();
        for i in 0..Q {
            let v = s[(i * s.len() + s.len() / 2) / Q].min(crate::workload::sizes::MAX_VALUE as u32)
                as usize;
            match sizes.last_mut() {
                Some(last) if last.0 == v => last.1 += 1,
                _ => sizes.push((v, 1)),
            }
        }
        Some(match sizes.len() {
            1 => SizeDist::Fixed { size: sizes[0].0 },
            _ => SizeDist::Weighted { sizes },
        })
    }
}

/// What kvlab sends for a line it parsed: the key's id and GET or SET
/// (`None`: not modelled).
#[inline]
pub fn request_of(l: &Line<'_>, keys: u64) -> Option<(u64, OpKind)> {
    let op = match l.modelled() {
        Modelled::Get => OpKind::Get,
        Modelled::Set => OpKind::Set,
        Modelled::Not => return None,
    };
    Some((key_id(l.key, keys), op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_commas_in_keys_and_bad_ones_say_why() {
        let l = parse(b"12,user:1,6,300,7,get,0").unwrap();
        assert_eq!(
            (l.ts, l.key, l.value_size, l.op, l.ttl),
            (12.0, &b"user:1"[..], 300, 0, 0)
        );
        let l = parse(b"0.25,a,b,c,3,10,1,SET,3600\r").unwrap();
        assert_eq!(
            (l.key, l.value_size, l.modelled(), l.ttl),
            (&b"a,b,c"[..], 10, Modelled::Set, 3600)
        );
        assert_eq!(parse(b"1,k,1,1,1,frobnicate,0").unwrap().op, OTHER_OP);
        assert_eq!(
            parse(b"1,k,1,1,1,delete,0").unwrap().modelled(),
            Modelled::Not
        );
        for (bad, why) in [
            (&b""[..], "not 7"),
            (b"1,k,1,1,get,0", "not 7"),
            (b"x,k,1,1,1,get,0", "timestamp"),
            (b"-1,k,1,1,1,get,0", "timestamp"),
            (b"1,,1,1,1,get,0", "key is empty"),
            (b"1,k,1,big,1,get,0", "value size"),
            (b"1,k,1,1,1,get,99999999999", "TTL"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn keys_spread_over_the_key_space_and_stay_put() {
        let n = 1000;
        let mut seen = vec![0u32; n as usize];
        for i in 0..100_000 {
            let k = format!("key-{i}");
            let id = key_id(k.as_bytes(), n);
            assert_eq!(id, key_id(k.as_bytes(), n));
            seen[id as usize] += 1;
        }
        assert!(
            seen.iter().all(|&c| (50..160).contains(&c)),
            "{:?}",
            seen.iter().max()
        );
    }

    #[test]
    fn a_scan_counts_ops_span_order_and_sizes() {
        let mut s = Scan::default();
        let lines: [&[u8]; 6] = [
            b"10,a,1,100,1,get,0",
            b"10,b,1,200,1,set,60",
            b"oops",
            b"9,c,1,0,1,get,0",
            b"12,d,1,100,1,incr,0",
            b"12,e,1,100,1,gets,0",
        ];
        for (i, l) in lines.iter().enumerate() {
            s.count(i as u64 + 1, &parse(l));
        }
        assert_eq!(
            (s.lines, s.malformed, s.first_malformed),
            (6, 1, Some((3, "not 7 comma-separated fields")))
        );
        assert_eq!(
            (
                s.modelled(Modelled::Get),
                s.modelled(Modelled::Set),
                s.modelled(Modelled::Not)
            ),
            (3, 1, 1)
        );
        assert_eq!((s.out_of_order, s.with_ttl, s.span_s()), (1, 1, 3.0));
        assert_eq!(s.sizes, [100, 200, 100]);
        let d = s.size_dist().unwrap();
        let t = d.table();
        let small = t.iter().filter(|&&x| x == 100).count() as f64 / t.len() as f64;
        assert!((small - 2.0 / 3.0).abs() < 0.03, "{small}");
    }
}
