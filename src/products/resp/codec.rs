//! RESP (Redis/Valkey) codec: GET/SET encoding and reply decoding over byte
//! buffers, plus blocking helpers for probing and reading server counters.

use std::io::{self, Read, Write};

use anyhow::{Result, bail};

use crate::driver::ServerInfo;
use crate::driver::wire::{
    Batch, CacheCodec, Codec, Decoded, Key, Malformed, Reply, line_end, parse_usize, reply_line,
};
use crate::workload::OpKind;

pub use super::frame::{declared, frame_len};
pub use crate::driver::topology::{SLOTS, hash_slot};

/// The RESP codec (stateless).
#[derive(Clone, Copy, Debug, Default)]
pub struct Resp;

/// A `-MOVED slot host:port` or `-ASK slot host:port` error line (without
/// `-` and CRLF), starting at offset 1 of the reply.
fn redirect(line: &[u8]) -> Option<Reply> {
    let (ask, rest) = if let Some(r) = line.strip_prefix(b"MOVED ") {
        (false, r)
    } else {
        (true, line.strip_prefix(b"ASK ")?)
    };
    let sp = rest.iter().position(|&b| b == b' ')?;
    let slot = u16::try_from(parse_usize(&rest[..sp])?).ok()?;
    let start = 1 + (line.len() - rest.len()) + sp + 1;
    Some(Reply::Redirect {
        slot,
        to: start..1 + line.len(),
        ask,
    })
}

#[inline]
fn push_bulk(out: &mut Vec<u8>, data: &[u8]) {
    let mut b = itoa::Buffer::new();
    out.push(b'$');
    out.extend_from_slice(b.format(data.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends a RESP array command made of `args` to `out`.
pub fn encode_command(args: &[&[u8]], out: &mut Vec<u8>) {
    let mut b = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(b.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        push_bulk(out, a);
    }
}

impl Codec for Resp {
    #[inline]
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>) {
        let key = key.name;
        out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
        push_bulk(out, key);
    }

    #[inline]
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>) {
        let key = key.name;
        out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
        push_bulk(out, key);
        push_bulk(out, value);
    }

    #[inline]
    fn encode_set_ttl(&self, key: Key<'_>, value: &[u8], ttl_s: u32, out: &mut Vec<u8>) {
        if ttl_s == 0 {
            return self.encode_set(key, value, out);
        }
        out.extend_from_slice(b"*5\r\n$3\r\nSET\r\n");
        push_bulk(out, key.name);
        push_bulk(out, value);
        out.extend_from_slice(b"$2\r\nEX\r\n");
        let mut b = itoa::Buffer::new();
        push_bulk(out, b.format(ttl_s).as_bytes());
    }

    #[inline]
    fn decode(&self, op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
        let Some(&first) = buf.first() else {
            return Ok(Decoded::Incomplete);
        };
        let Some(eol) = reply_line(buf, 1, 64 * 1024, "reply line longer than 64 KiB")? else {
            return Ok(Decoded::Incomplete);
        };
        let line = &buf[1..eol - 2];
        let frame = |reply| Ok(Decoded::Frame { len: eol, reply });
        match (first, op) {
            (b'-', _) => frame(redirect(line).unwrap_or(Reply::ServerError)),
            (b'+', OpKind::Set) if line == b"OK" => frame(Reply::Stored),
            (b'_', OpKind::Get) if line.is_empty() => frame(Reply::Nil),
            (b'$', OpKind::Get) => {
                if line == b"-1" {
                    return frame(Reply::Nil);
                }
                let n = parse_usize(line).ok_or(Malformed("bad bulk string length"))?;
                let end = eol + n + 2;
                if buf.len() < end {
                    return Ok(Decoded::Incomplete);
                }
                if &buf[end - 2..end] != b"\r\n" {
                    return Err(Malformed("bulk string not ended by CRLF"));
                }
                Ok(Decoded::Frame {
                    len: end,
                    reply: Reply::Value(eol..eol + n),
                })
            }
            (b'+' | b'$' | b'_' | b':' | b'*' | b'%' | b'~' | b'>' | b'#' | b',', _) => {
                Err(Malformed("unexpected RESP reply type for this command"))
            }
            _ => Err(Malformed("not a RESP reply")),
        }
    }

    #[inline]
    fn declared_len(&self, buf: &[u8]) -> Option<usize> {
        declared(buf)
    }

    #[inline]
    fn unasked(
        &self,
        buf: &[u8],
        keys: &mut Vec<std::ops::Range<usize>>,
    ) -> Option<Result<crate::driver::wire::Unasked, Malformed>> {
        super::push::unasked(buf, keys)
    }

    #[inline]
    fn encode_get_many(&self, b: &Batch<'_>, out: &mut Vec<u8>) {
        super::mget::encode(b, out);
    }

    #[inline]
    fn decode_many(
        &self,
        _prefix: &[u8],
        ids: &[u64],
        buf: &[u8],
        found: &mut Vec<(u64, std::ops::Range<usize>)>,
    ) -> Result<Decoded, Malformed> {
        super::mget::decode(ids, buf, found)
    }

    #[inline]
    fn slot(&self, name: &[u8]) -> u16 {
        hash_slot(name)
    }

    fn encode_asking(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"*1\r\n$6\r\nASKING\r\n");
    }
}

impl CacheCodec for Resp {
    #[inline]
    fn encode_delete(&self, key: Key<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(b"*2\r\n$3\r\nDEL\r\n");
        push_bulk(out, key.name);
    }

    #[inline]
    fn decode_delete(&self, buf: &[u8]) -> Result<Decoded, Malformed> {
        if buf.is_empty() {
            return Ok(Decoded::Incomplete);
        }
        let Some(eol) = reply_line(buf, 1, 1024, "reply line longer than 1 KiB")? else {
            return Ok(Decoded::Incomplete);
        };
        let reply = match (buf[0], &buf[1..eol - 2]) {
            (b':', n) if parse_usize(n).is_some() => Reply::Stored,
            (b'-', _) => Reply::ServerError,
            _ => return Err(Malformed("unexpected reply to DEL")),
        };
        Ok(Decoded::Frame { len: eol, reply })
    }
}

/// Sends one command and returns its raw reply frame (blocking).
pub fn command<S: Read + Write>(s: &mut S, args: &[&[u8]]) -> io::Result<Vec<u8>> {
    let mut req = Vec::new();
    encode_command(args, &mut req);
    crate::driver::wire::roundtrip(s, &req, frame_len)
}

/// The payload of a bulk-string reply, or an error naming the reply.
pub fn bulk_payload(frame: &[u8]) -> Result<&[u8]> {
    if frame.first() == Some(&b'-') {
        bail!(
            "server error: {}",
            String::from_utf8_lossy(frame[1..].trim_ascii())
        );
    }
    if frame.first() != Some(&b'$') {
        bail!(
            "expected a bulk string, got {:?}",
            String::from_utf8_lossy(&frame[..frame.len().min(40)])
        );
    }
    let eol = line_end(frame, 1).unwrap_or(frame.len());
    match frame.get(eol..frame.len().saturating_sub(2)) {
        Some(payload) => Ok(payload),
        None => bail!("expected a bulk string, got nil"),
    }
}

/// Checks that the peer speaks RESP (PING) and reads product and version (INFO server).
pub fn probe<S: Read + Write>(s: &mut S) -> Result<ServerInfo> {
    let pong = command(s, &[b"PING"])?;
    if pong.starts_with(b"-") {
        bail!(
            "PING answered {}",
            String::from_utf8_lossy(pong.trim_ascii())
        );
    }
    if !pong.starts_with(b"+PONG") {
        bail!(
            "PING answered {:?}",
            String::from_utf8_lossy(pong.trim_ascii())
        );
    }
    let info = command(s, &[b"INFO", b"server"])?;
    let info = String::from_utf8_lossy(bulk_payload(&info)?).into_owned();
    let field = |name: &str| info_field(&info, name);
    Ok(match field("valkey_version") {
        Some(v) => ServerInfo {
            product: "valkey".into(),
            version: v,
        },
        None => ServerInfo {
            product: "redis".into(),
            version: field("redis_version").unwrap_or_else(|| "unknown".into()),
        },
    })
}

/// The value of `name:value` in an INFO text, if present.
pub fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// `CONFIG GET` of `names` (blocking) as (name, value) pairs: the ones the
/// server has (an unknown name is left out); an error where it refuses
/// (e.g. `CONFIG` renamed away, as managed services do).
pub fn config_get<S: Read + Write>(
    s: &mut S,
    names: &[&str],
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut args: Vec<&[u8]> = vec![b"CONFIG", b"GET"];
    args.extend(names.iter().map(|n| n.as_bytes()));
    let reply = command(s, &args)?;
    if reply.first() == Some(&b'-') {
        bail!(
            "CONFIG GET: {}",
            String::from_utf8_lossy(reply[1..].trim_ascii())
        );
    }
    // `*N` then N bulk strings, name and value in turn (RESP2).
    let text = String::from_utf8_lossy(&reply);
    let mut lines = text.split("\r\n");
    let mut bulks = Vec::new();
    while let Some(l) = lines.next() {
        if l.starts_with('$') {
            bulks.push(lines.next().unwrap_or_default().to_string());
        }
    }
    let mut pairs = bulks.chunks_exact(2);
    Ok(pairs
        .by_ref()
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::{encoded, frame, key};

    fn dec(op: OpKind, b: &[u8]) -> Result<Decoded, Malformed> {
        Resp.decode(op, b)
    }

    #[test]
    fn headers_declare_the_least_a_reply_takes() {
        assert_eq!(declared(b"$2147483647\r\n"), Some(13 + 2147483647 + 2));
        // Two more elements to come, 3 bytes each at least.
        assert_eq!(declared(b"*3\r\n$1\r\na\r\n"), Some(17));
        assert!(declared(b"*2147483647\r\n").unwrap() > 6 << 30);
        assert_eq!(declared(b"*2\r\n$-1\r\n$10\r\nab"), Some(26));
        assert_eq!(declared(b"$3\r\nabc\r\n"), None);
        assert_eq!(declared(b"\n"), None);
        assert_eq!(declared(b"$"), Some(3));
        assert!(frame_len(b"$16777000\r\n").is_ok());
        assert!(frame_len(b"$16777217\r\n").is_err());
        assert!(frame_len(b"*9999999\r\n").is_err());
    }

    #[test]
    fn encodes_and_decodes_cache_aside_commands() {
        let k = key(1, b"k1");
        let mut out = Vec::new();
        Resp.encode_set_ttl(k, b"v", 30, &mut out);
        assert_eq!(
            out,
            b"*5\r\n$3\r\nSET\r\n$2\r\nk1\r\n$1\r\nv\r\n$2\r\nEX\r\n$2\r\n30\r\n"
        );
        out.clear();
        Resp.encode_set_ttl(k, b"v", 0, &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$1\r\nv\r\n");
        out.clear();
        Resp.encode_delete(k, &mut out);
        assert_eq!(out, b"*2\r\n$3\r\nDEL\r\n$2\r\nk1\r\n");
        for r in [&b":1\r\n"[..], b":0\r\n"] {
            assert_eq!(Resp.decode_delete(r), frame(4, Reply::Stored));
        }
        assert_eq!(Resp.decode_delete(b":1"), Ok(Decoded::Incomplete));
        assert_eq!(
            Resp.decode_delete(b"-ERR x\r\n"),
            frame(8, Reply::ServerError)
        );
        assert!(Resp.decode_delete(b"+OK\r\n").is_err());
        assert!(Resp.decode_delete(b":x\r\n").is_err());
        assert!(
            Resp.decode(OpKind::Get, b"\r\n").is_err(),
            "an empty line is no reply"
        );
    }

    #[test]
    fn routes_keys_to_cluster_slots() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(hash_slot(b"123456789"), 0x31c3);
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"{user1000}.following"), hash_slot(b"user1000"));
        assert_eq!(hash_slot(b"foo{}{bar}"), hash_slot(b"foo{}{bar}"));
        assert_ne!(hash_slot(b"foo{}{bar}"), hash_slot(b"bar"));
        assert_eq!(hash_slot(b"foo{{bar}}zap"), hash_slot(b"{bar"));
        let mut out = Vec::new();
        Resp.encode_asking(&mut out);
        assert_eq!(out, b"*1\r\n$6\r\nASKING\r\n");
    }

    #[test]
    fn decodes_redirects() {
        let b = b"-MOVED 3999 127.0.0.1:6381\r\n";
        let Ok(Decoded::Frame { len, reply }) = dec(OpKind::Get, b) else {
            panic!("not a frame")
        };
        assert_eq!(len, b.len());
        let Reply::Redirect { slot, to, ask } = reply else {
            panic!("not a redirect")
        };
        assert_eq!((slot, ask), (3999, false));
        assert_eq!(&b[to], b"127.0.0.1:6381");
        let b = b"-ASK 12 10.0.0.2:7000\r\n";
        let Ok(Decoded::Frame {
            reply: Reply::Redirect { slot, to, ask },
            ..
        }) = dec(OpKind::Set, b)
        else {
            panic!("not a redirect")
        };
        assert_eq!((slot, ask), (12, true));
        assert_eq!(&b[to], b"10.0.0.2:7000");
        assert_eq!(
            dec(OpKind::Get, b"-MOVED x\r\n"),
            frame(10, Reply::ServerError)
        );
    }

    #[test]
    fn encodes_commands() {
        let (get, set) = encoded(&Resp, key(1, b"k:1"), b"vv");
        assert_eq!(get, b"*2\r\n$3\r\nGET\r\n$3\r\nk:1\r\n");
        assert_eq!(set, b"*3\r\n$3\r\nSET\r\n$3\r\nk:1\r\n$2\r\nvv\r\n");
    }

    #[test]
    fn decodes_get_replies() {
        let get = |b: &[u8]| dec(OpKind::Get, b);
        assert_eq!(get(b"$3\r\nabc\r\n+OK"), frame(9, Reply::Value(4..7)));
        assert_eq!(get(b"$-1\r\n"), frame(5, Reply::Nil));
        assert_eq!(get(b"_\r\n"), frame(3, Reply::Nil));
        assert_eq!(get(b"-ERR wrong\r\n"), frame(12, Reply::ServerError));
        assert_eq!(get(b"$0\r\n\r\n"), frame(6, Reply::Value(4..4)));
    }

    #[test]
    fn partial_replies_are_incomplete() {
        for p in [
            &b""[..],
            b"$",
            b"$3",
            b"$3\r",
            b"$3\r\n",
            b"$3\r\nab",
            b"$3\r\nabc",
            b"$3\r\nabc\r",
            b"+O",
            b"+OK\r",
        ] {
            let op = if p.starts_with(b"+") {
                OpKind::Set
            } else {
                OpKind::Get
            };
            assert_eq!(
                dec(op, p),
                Ok(Decoded::Incomplete),
                "{:?}",
                String::from_utf8_lossy(p)
            );
        }
    }

    #[test]
    fn malformed_replies_are_errors() {
        assert!(dec(OpKind::Get, b"$x\r\nabc\r\n").is_err());
        assert!(dec(OpKind::Get, b"$3\r\nabcXY").is_err());
        assert!(dec(OpKind::Get, b"VALUE k 0 3\r\n").is_err());
        assert!(dec(OpKind::Get, b"+OK\r\n").is_err());
        assert!(dec(OpKind::Set, b"$3\r\nabc\r\n").is_err());
        assert!(dec(OpKind::Set, b"STORED\r\n").is_err());
        assert!(dec(OpKind::Get, b"$3\nabc\r\n").is_err());
        assert_eq!(dec(OpKind::Set, b"+OK\r\n"), frame(5, Reply::Stored));
    }

    #[test]
    fn frames_any_reply() {
        assert_eq!(frame_len(b"*2\r\n$1\r\na\r\n:5\r\n"), Ok(Some(15)));
        assert_eq!(frame_len(b"*2\r\n$1\r\na\r\n"), Ok(None));
        assert_eq!(frame_len(b"$-1\r\n"), Ok(Some(5)));
        assert!(frame_len(b"ERROR\r\n").is_err());
        // Found by fuzzing: a bare line end, alone or in an array, panicked.
        assert!(frame_len(b"\r\n").is_err());
        assert!(frame_len(b"*1\r\n\r\n").is_err());
        // Found by fuzzing: a nil bulk string (INFO answered `$-1`) panicked.
        assert!(bulk_payload(b"$-1\r\n").is_err());
        assert_eq!(bulk_payload(b"$3\r\nabc\r\n").unwrap(), b"abc");
        assert_eq!(
            info_field("# Server\r\nredis_version:7.0.15\r\n", "redis_version").as_deref(),
            Some("7.0.15")
        );
    }
}
