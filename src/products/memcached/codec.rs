//! Memcached codec: `get`/`set` encoding and reply decoding over byte buffers
//! in the text protocol, or the meta protocol's (`meta`), plus blocking
//! helpers for probing and reading `stats`.

use std::io::{Read, Write};

use anyhow::{Result, bail};

use crate::driver::ServerInfo;
use crate::driver::wire::{
    Batch, CacheCodec, Codec, Decoded, Key, Malformed, Reply, line_end, parse_usize, reply_line,
};
use crate::workload::OpKind;

/// The memcached codec (stateless): the text protocol, or the meta one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memcache {
    /// Speaks the meta protocol (`mg`, `ms`, `md`).
    pub meta: bool,
}

/// The protocols requests may speak (`--query-mode`), the default first.
pub const MODES: [&str; 2] = ["text", "meta"];

impl Memcache {
    /// The codec for `c`'s query mode.
    pub fn for_connector(c: &crate::driver::Connector) -> Memcache {
        Memcache {
            meta: c.query_mode.is_some_and(|m| m.name() == "meta"),
        }
    }
}

impl Codec for Memcache {
    #[inline]
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>) {
        if self.meta {
            return super::meta::encode_get(key.name, out);
        }
        let key = key.name;
        out.extend_from_slice(b"get ");
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    }

    #[inline]
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>) {
        self.encode_set_ttl(key, value, 0, out);
    }

    #[inline]
    fn encode_set_ttl(&self, key: Key<'_>, value: &[u8], ttl_s: u32, out: &mut Vec<u8>) {
        if self.meta {
            return super::meta::encode_set(key.name, value, ttl_s, out);
        }
        let key = key.name;
        let mut b = itoa::Buffer::new();
        out.extend_from_slice(b"set ");
        out.extend_from_slice(key);
        out.extend_from_slice(b" 0 ");
        out.extend_from_slice(b.format(ttl_s).as_bytes());
        out.push(b' ');
        out.extend_from_slice(b.format(value.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }

    #[inline]
    fn decode(&self, op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
        if self.meta {
            return super::meta::decode(op, buf);
        }
        let Some(eol) = reply_line(buf, 0, 2048, "reply line longer than 2 KiB")? else {
            return Ok(Decoded::Incomplete);
        };
        let line = &buf[..eol - 2];
        let frame = |reply| Ok(Decoded::Frame { len: eol, reply });
        if super::is_error(line) {
            return frame(Reply::ServerError);
        }
        match op {
            OpKind::Set => match line {
                b"STORED" => frame(Reply::Stored),
                b"NOT_STORED" => frame(Reply::ServerError),
                _ => Err(Malformed("unexpected reply to set")),
            },
            OpKind::Get => {
                if line == b"END" {
                    return frame(Reply::Nil);
                }
                let Some(rest) = line.strip_prefix(b"VALUE ") else {
                    return Err(Malformed("unexpected reply to get"));
                };
                // VALUE <key> <flags> <bytes> [<cas>]
                let mut fields = rest.split(|&b| b == b' ');
                let (_key, _flags) = (fields.next(), fields.next());
                let n = fields
                    .next()
                    .and_then(parse_usize)
                    .ok_or(Malformed("bad VALUE line"))?;
                let data_end = eol + n;
                let end = data_end + 7; // "\r\nEND\r\n"
                if buf.len() < end {
                    return Ok(Decoded::Incomplete);
                }
                if &buf[data_end..end] != b"\r\nEND\r\n" {
                    return Err(Malformed("value not followed by CRLF END"));
                }
                Ok(Decoded::Frame {
                    len: end,
                    reply: Reply::Value(eol..data_end),
                })
            }
        }
    }

    #[inline]
    fn declared_len(&self, buf: &[u8]) -> Option<usize> {
        declared(self.meta, buf)
    }

    #[inline]
    fn encode_get_many(&self, b: &Batch<'_>, out: &mut Vec<u8>) {
        super::multi::encode(self.meta, b, out);
    }

    #[inline]
    fn decode_many(
        &self,
        prefix: &[u8],
        _ids: &[u64],
        buf: &[u8],
        found: &mut Vec<(u64, std::ops::Range<usize>)>,
    ) -> Result<Decoded, Malformed> {
        super::multi::decode(self.meta, prefix, buf, found)
    }
}

/// [`Codec::declared_len`] for memcached: walks the reply lines buffered; a
/// value's line (`VALUE <key> <flags> <bytes>`, in meta `VA <bytes>`)
/// declares its data block.
pub fn declared(meta: bool, buf: &[u8]) -> Option<usize> {
    let (prefix, field): (&[u8], usize) = match meta {
        true => (b"VA ", 0),
        false => (b"VALUE ", 2),
    };
    let mut at = 0;
    while let Some(eol) = line_end(buf, at) {
        let line = &buf[at..eol];
        at = eol;
        if let Some(rest) = line.strip_prefix(prefix) {
            let n = rest
                .split(|b| b" \r\n".contains(b))
                .filter(|f| !f.is_empty())
                .nth(field)
                .and_then(parse_usize)?;
            at = eol.saturating_add(n).saturating_add(2);
            if at > buf.len() {
                return Some(at);
            }
        }
    }
    None
}

impl CacheCodec for Memcache {
    #[inline]
    fn encode_delete(&self, key: Key<'_>, out: &mut Vec<u8>) {
        if self.meta {
            return super::meta::encode_delete(key.name, out);
        }
        out.extend_from_slice(b"delete ");
        out.extend_from_slice(key.name);
        out.extend_from_slice(b"\r\n");
    }

    #[inline]
    fn decode_delete(&self, buf: &[u8]) -> Result<Decoded, Malformed> {
        if self.meta {
            return super::meta::decode_delete(buf);
        }
        let Some(eol) = reply_line(buf, 0, 2048, "reply line longer than 2 KiB")? else {
            return Ok(Decoded::Incomplete);
        };
        let reply = match &buf[..eol - 2] {
            b"DELETED" | b"NOT_FOUND" => Reply::Stored,
            l if super::is_error(l) => Reply::ServerError,
            _ => return Err(Malformed("unexpected reply to delete")),
        };
        Ok(Decoded::Frame { len: eol, reply })
    }
}

/// Length of a whole `stats` or `version` reply at the front of `buf`.
pub fn stats_frame_len(buf: &[u8]) -> Result<Option<usize>, Malformed> {
    let mut pos = 0;
    while let Some(eol) = line_end(buf, pos) {
        let line = &buf[pos..eol];
        if line == b"END\r\n" || line.starts_with(b"VERSION ") {
            return Ok(Some(eol));
        }
        if super::is_error(line.strip_suffix(b"\r\n").unwrap_or(line)) {
            return Ok(Some(eol));
        }
        if !line.starts_with(b"STAT ") {
            return Err(Malformed("not a memcached reply"));
        }
        pos = eol;
    }
    Ok(None)
}

/// Checks the peer speaks memcached (`version`) and returns its version.
pub fn probe<S: Read + Write>(s: &mut S) -> Result<ServerInfo> {
    let reply = crate::driver::wire::roundtrip(s, b"version\r\n", stats_frame_len)?;
    let line = String::from_utf8_lossy(&reply);
    match line.trim().strip_prefix("VERSION ") {
        Some(v) => Ok(ServerInfo {
            product: "memcached".into(),
            version: v.to_string(),
        }),
        None => bail!("'version' answered {:?}", line.trim()),
    }
}

/// `stats` as (name, value) pairs (blocking).
pub fn stats<S: Read + Write>(s: &mut S) -> Result<Vec<(String, String)>> {
    stats_of(s, b"stats\r\n")
}

/// The (name, value) pairs a `stats` command (`command`, with its line end)
/// answers (blocking): `stats`, `stats settings`.
pub fn stats_of<S: Read + Write>(s: &mut S, command: &[u8]) -> Result<Vec<(String, String)>> {
    let reply = crate::driver::wire::roundtrip(s, command, stats_frame_len)?;
    Ok(String::from_utf8_lossy(&reply)
        .lines()
        .filter_map(|l| {
            let mut f = l.strip_prefix("STAT ")?.splitn(2, ' ');
            Some((f.next()?.to_string(), f.next()?.trim().to_string()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::{assert_incomplete, encoded, frame, key};

    fn dec(op: OpKind, b: &[u8]) -> Result<Decoded, Malformed> {
        Memcache::default().decode(op, b)
    }

    #[test]
    fn value_lines_declare_their_data() {
        let huge = b"VALUE k 0 2147483647\r\n";
        assert_eq!(declared(false, huge), Some(huge.len() + 2147483647 + 2));
        assert_eq!(
            declared(false, b"VALUE k 0 3\r\nabc\r\nVALUE j 0 9 77\r\n"),
            Some(45)
        );
        assert_eq!(declared(true, b"VA 100 v\r\n"), Some(112));
        assert_eq!(declared(true, b"EN\r\nVA 2 t\r\nab\r\n"), None);
        assert_eq!(declared(false, b"VALUE k 0 x\r\n"), None);
        assert_eq!(declared(false, b"VALUE k 0 3"), None);
    }

    #[test]
    fn encodes_and_decodes_cache_aside_commands() {
        let k = key(1, b"k1");
        let mut out = Vec::new();
        Memcache::default().encode_set_ttl(k, b"vv", 30, &mut out);
        assert_eq!(out, b"set k1 0 30 2\r\nvv\r\n");
        out.clear();
        Memcache::default().encode_delete(k, &mut out);
        assert_eq!(out, b"delete k1\r\n");
        assert_eq!(
            Memcache::default().decode_delete(b"DELETED\r\n"),
            frame(9, Reply::Stored)
        );
        assert_eq!(
            Memcache::default().decode_delete(b"NOT_FOUND\r\n"),
            frame(11, Reply::Stored)
        );
        assert_eq!(
            Memcache::default().decode_delete(b"DELE"),
            Ok(Decoded::Incomplete)
        );
        assert!(Memcache::default().decode_delete(b"STORED\r\n").is_err());
    }

    #[test]
    fn encodes_commands() {
        let (get, set) = encoded(&Memcache::default(), key(1, b"k:1"), b"vv");
        assert_eq!(get, b"get k:1\r\n");
        assert_eq!(set, b"set k:1 0 0 2\r\nvv\r\n");
    }

    #[test]
    fn decodes_replies() {
        let get = |b: &[u8]| dec(OpKind::Get, b);
        assert_eq!(
            get(b"VALUE k 0 3\r\nabc\r\nEND\r\n"),
            frame(23, Reply::Value(13..16))
        );
        assert_eq!(
            get(b"VALUE k 0 3 99\r\nabc\r\nEND\r\n"),
            frame(26, Reply::Value(16..19))
        );
        assert_eq!(get(b"END\r\nEND\r\n"), frame(5, Reply::Nil));
        assert_eq!(dec(OpKind::Set, b"STORED\r\n"), frame(8, Reply::Stored));
        let oom = b"SERVER_ERROR out of memory storing object\r\n";
        assert_eq!(dec(OpKind::Set, oom), frame(43, Reply::ServerError));
        // What memcached sends a connection over its `-c` limit before closing it.
        let full = b"ERROR Too many open connections\r\n";
        assert_eq!(get(full), frame(33, Reply::ServerError));
        assert!(get(b"ERRORS\r\n").is_err());
        assert_eq!(stats_frame_len(full), Ok(Some(33)));
    }

    #[test]
    fn partial_replies_are_incomplete() {
        assert_incomplete(
            &Memcache::default(),
            OpKind::Get,
            b"VALUE k 0 3\r\nabc\r\nEND\r\n",
        );
        assert_eq!(dec(OpKind::Set, b"STOR"), Ok(Decoded::Incomplete));
    }

    #[test]
    fn malformed_replies_are_errors() {
        assert!(dec(OpKind::Get, b"$3\r\nabc\r\n").is_err());
        assert!(dec(OpKind::Get, b"VALUE k 0 x\r\nabc\r\nEND\r\n").is_err());
        assert!(dec(OpKind::Get, b"VALUE k 0 3\r\nabcdEND\r\nxx").is_err());
        assert!(dec(OpKind::Set, b"+OK\r\n").is_err());
        assert!(dec(OpKind::Set, b"STORED\n").is_err());
        assert_eq!(
            stats_frame_len(b"STAT pid 1\r\nSTAT x 2\r\nEND\r\n"),
            Ok(Some(27))
        );
        assert_eq!(stats_frame_len(b"STAT pid 1\r\n"), Ok(None));
        assert!(stats_frame_len(b"+PONG\r\n").is_err());
    }
}
