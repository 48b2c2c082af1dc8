//! RESP's batch read: `MGET k1 k2 …`, answered by an array of bulk strings
//! (nil for a missing key) in the keys' order. Redis counts one command
//! (`cmdstat_mget`) and a keyspace hit or miss per key.

use std::ops::Range;

use crate::driver::wire::{Batch, Decoded, Malformed, Reply, parse_usize, reply_line};

/// Appends `MGET` of `b`'s keys to `out`.
pub fn encode(b: &Batch<'_>, out: &mut Vec<u8>) {
    let mut n = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(n.format(b.ids.len() + 1).as_bytes());
    out.extend_from_slice(b"\r\n$4\r\nMGET\r\n");
    for name in b.names() {
        out.push(b'$');
        out.extend_from_slice(n.format(name.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(name);
        out.extend_from_slice(b"\r\n");
    }
}

/// Decodes the reply to `MGET` of `ids` from the front of `buf`.
pub fn decode(
    ids: &[u64],
    buf: &[u8],
    found: &mut Vec<(u64, Range<usize>)>,
) -> Result<Decoded, Malformed> {
    let Some(&first) = buf.first() else {
        return Ok(Decoded::Incomplete);
    };
    let Some(eol) = reply_line(buf, 1, 64 * 1024, "reply line longer than 64 KiB")? else {
        return Ok(Decoded::Incomplete);
    };
    match first {
        b'-' => {
            return Ok(Decoded::Frame {
                len: eol,
                reply: Reply::ServerError,
            });
        }
        b'*' => {}
        _ => return Err(Malformed("MGET answered by something other than an array")),
    }
    if parse_usize(&buf[1..eol - 2]) != Some(ids.len()) {
        return Err(Malformed("MGET answered with another number of values"));
    }
    let mut at = eol;
    for &id in ids {
        let Some(&kind) = buf.get(at) else {
            return Ok(Decoded::Incomplete);
        };
        let Some(end) = reply_line(&buf[at..], 1, 64, "element line longer than 64 bytes")? else {
            return Ok(Decoded::Incomplete);
        };
        let line = &buf[at + 1..at + end - 2];
        match kind {
            b'_' if line.is_empty() => at += end,
            b'$' if line == b"-1" => at += end,
            b'$' => {
                let n = parse_usize(line).ok_or(Malformed("bad bulk string length"))?;
                let start = at + end;
                if buf.len() < start + n + 2 {
                    return Ok(Decoded::Incomplete);
                }
                if &buf[start + n..start + n + 2] != b"\r\n" {
                    return Err(Malformed("bulk string not ended by CRLF"));
                }
                found.push((id, start..start + n));
                at = start + n + 2;
            }
            _ => return Err(Malformed("MGET's array holds something other than strings")),
        }
    }
    Ok(Decoded::Frame {
        len: at,
        reply: Reply::Batch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::{TWO_KEYS, assert_found_22, frame};

    #[test]
    fn mget_encodes_and_decodes_whole_or_in_pieces() {
        let mut out = Vec::new();
        encode(&TWO_KEYS, &mut out);
        assert_eq!(out, b"*3\r\n$4\r\nMGET\r\n$3\r\nk:1\r\n$4\r\nk:22\r\n");
        let reply = b"*2\r\n$-1\r\n$3\r\nabc\r\n";
        assert_found_22(|b, f| decode(&[1, 22], b, f), reply);
        let mut f = Vec::new();
        assert!(decode(&[1], reply, &mut f).is_err());
        assert!(decode(&[1, 22], b"+OK\r\n", &mut f).is_err());
        let e = decode(&[1], b"-ERR x\r\n", &mut f);
        assert_eq!(e, frame(8, Reply::ServerError));
    }
}
