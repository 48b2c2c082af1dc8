//! memcached's meta protocol (memcached 1.6 and later, `--query-mode meta`):
//! `mg <key> v` reads a value (`VA <bytes>` then the data, or `EN`),
//! `ms <key> <bytes> T<ttl>` stores one (`HD`, or `NS` when not stored),
//! `md <key>` deletes one (`HD`, or `NF` when absent).

use crate::driver::wire::{Decoded, Malformed, Reply, parse_usize, reply_line};
use crate::workload::OpKind;

/// Appends a read of `key`'s value.
#[inline]
pub(super) fn encode_get(key: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"mg ");
    out.extend_from_slice(key);
    out.extend_from_slice(b" v\r\n");
}

/// Appends a store of `value` under `key`, expiring after `ttl_s` (0: never).
#[inline]
pub(super) fn encode_set(key: &[u8], value: &[u8], ttl_s: u32, out: &mut Vec<u8>) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b"ms ");
    out.extend_from_slice(key);
    out.push(b' ');
    out.extend_from_slice(b.format(value.len()).as_bytes());
    if ttl_s > 0 {
        out.extend_from_slice(b" T");
        out.extend_from_slice(b.format(ttl_s).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends a delete of `key`.
#[inline]
pub(super) fn encode_delete(key: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"md ");
    out.extend_from_slice(key);
    out.extend_from_slice(b"\r\n");
}

/// The first reply line's end, or `None` while it is incomplete.
fn line(buf: &[u8]) -> Result<Option<usize>, Malformed> {
    reply_line(buf, 0, 2048, "reply line longer than 2 KiB")
}

/// Decodes the reply to a GET (`mg`) or SET (`ms`) at the front of `buf`.
#[inline]
pub(super) fn decode(op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
    let Some(eol) = line(buf)? else {
        return Ok(Decoded::Incomplete);
    };
    let l = &buf[..eol - 2];
    let frame = |reply| Ok(Decoded::Frame { len: eol, reply });
    if super::is_error(l) {
        return frame(Reply::ServerError);
    }
    match op {
        OpKind::Set => match l {
            b"HD" => frame(Reply::Stored),
            b"NS" => frame(Reply::ServerError),
            _ => Err(Malformed("unexpected reply to ms")),
        },
        OpKind::Get => {
            if l == b"EN" {
                return frame(Reply::Nil);
            }
            // VA <bytes> <flags>*
            let n = l
                .strip_prefix(b"VA ")
                .and_then(|rest| rest.split(|&b| b == b' ').next())
                .and_then(parse_usize)
                .ok_or(Malformed("unexpected reply to mg"))?;
            let data_end = eol + n;
            if buf.len() < data_end + 2 {
                return Ok(Decoded::Incomplete);
            }
            if &buf[data_end..data_end + 2] != b"\r\n" {
                return Err(Malformed("value not followed by CRLF"));
            }
            Ok(Decoded::Frame {
                len: data_end + 2,
                reply: Reply::Value(eol..data_end),
            })
        }
    }
}

/// Decodes the reply to a delete (`md`): deleted or absent alike.
#[inline]
pub(super) fn decode_delete(buf: &[u8]) -> Result<Decoded, Malformed> {
    let Some(eol) = line(buf)? else {
        return Ok(Decoded::Incomplete);
    };
    let reply = match &buf[..eol - 2] {
        b"HD" | b"NF" => Reply::Stored,
        l if super::is_error(l) => Reply::ServerError,
        _ => return Err(Malformed("unexpected reply to md")),
    };
    Ok(Decoded::Frame { len: eol, reply })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::frame;

    #[test]
    fn encodes_meta_commands() {
        let mut out = Vec::new();
        encode_get(b"k:1", &mut out);
        assert_eq!(out, b"mg k:1 v\r\n");
        out.clear();
        encode_set(b"k:1", b"vv", 30, &mut out);
        assert_eq!(out, b"ms k:1 2 T30\r\nvv\r\n");
        out.clear();
        encode_set(b"k:1", b"vv", 0, &mut out);
        assert_eq!(out, b"ms k:1 2\r\nvv\r\n");
        out.clear();
        encode_delete(b"k:1", &mut out);
        assert_eq!(out, b"md k:1\r\n");
    }

    #[test]
    fn decodes_meta_replies() {
        let get = |b: &[u8]| decode(OpKind::Get, b);
        assert_eq!(get(b"VA 3\r\nabc\r\n"), frame(11, Reply::Value(6..9)));
        assert_eq!(get(b"VA 3 f0\r\nabc\r\n"), frame(14, Reply::Value(9..12)));
        assert_eq!(get(b"EN\r\n"), frame(4, Reply::Nil));
        assert_eq!(get(b"VA 3\r\nab"), Ok(Decoded::Incomplete));
        assert_eq!(get(b"VA 3\r\nabc\r"), Ok(Decoded::Incomplete));
        assert!(get(b"VA 3\r\nabcd\r\n").is_err());
        assert!(get(b"VA x\r\n").is_err());
        assert!(get(b"HD\r\n").is_err());
        let set = |b: &[u8]| decode(OpKind::Set, b);
        assert_eq!(set(b"HD\r\n"), frame(4, Reply::Stored));
        assert_eq!(set(b"NS\r\n"), frame(4, Reply::ServerError));
        assert_eq!(
            set(b"SERVER_ERROR out of memory\r\n"),
            frame(28, Reply::ServerError)
        );
        assert_eq!(decode_delete(b"NF\r\n"), frame(4, Reply::Stored));
        assert_eq!(decode_delete(b"HD\r\n"), frame(4, Reply::Stored));
        assert!(decode_delete(b"EN\r\n").is_err());
    }
}
