//! MySQL/MariaDB's batch read: `SELECT k, v FROM kvlab_kv WHERE k IN (…)` as
//! a text query (`COM_QUERY`, the keys written into it; a statement
//! prepared per batch size would not be reused across sizes), answered by a
//! text result set with a row per key found. The server counts one
//! `Com_select` per request.

use std::ops::Range;

use super::packet::{is_eof, lenenc_str, next_packet};
use crate::driver::wire::{Batch, Decoded, Malformed, Reply};

/// The batch read, before its keys and `)`.
pub const BATCH_SQL: &str = "SELECT k, v FROM kvlab_kv WHERE k IN (";

/// Appends the batch read of `b`'s keys as one `COM_QUERY` packet.
pub fn encode(b: &Batch<'_>, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, 0x03]);
    out.extend_from_slice(BATCH_SQL.as_bytes());
    let mut n = itoa::Buffer::new();
    for (i, &id) in b.ids.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(n.format(id).as_bytes());
    }
    out.push(b')');
    let len = (out.len() - at - 4) as u32;
    out[at..at + 3].copy_from_slice(&len.to_le_bytes()[..3]);
}

/// Decodes the text result set of a batch read from the front of `buf`.
pub fn decode(buf: &[u8], found: &mut Vec<(u64, Range<usize>)>) -> Result<Decoded, Malformed> {
    let next = |pos: usize| next_packet(buf, pos);
    let Some((mut pos, first)) = next(0) else {
        return Ok(Decoded::Incomplete);
    };
    match first {
        [0xff, ..] => {
            return Ok(Decoded::Frame {
                len: pos,
                reply: Reply::ServerError,
            });
        }
        [2] => {}
        _ => return Err(Malformed("a batch read's result set has not two columns")),
    }
    // Two column definitions, then EOF.
    for _ in 0..3 {
        let Some((p, _)) = next(pos) else {
            return Ok(Decoded::Incomplete);
        };
        pos = p;
    }
    loop {
        let Some((p, row)) = next(pos) else {
            return Ok(Decoded::Incomplete);
        };
        let start = pos + 4;
        pos = p;
        if is_eof(row) {
            return Ok(Decoded::Frame {
                len: pos,
                reply: Reply::Batch,
            });
        }
        if row.first() == Some(&0xff) {
            return Ok(Decoded::Frame {
                len: pos,
                reply: Reply::ServerError,
            });
        }
        let bad = Malformed("a batch read's row is not (key, value)");
        let k = lenenc_str(row).ok_or(bad)?;
        let id = crate::driver::wire::parse_usize(&row[k.clone()]).ok_or(bad)? as u64;
        let v = lenenc_str(&row[k.end..]).ok_or(bad)?;
        if k.end + v.end != row.len() {
            return Err(bad);
        }
        found.push((id, start + k.end + v.start..start + k.end + v.end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::{TWO_KEYS, assert_found_22, frame};
    use crate::products::mysql::packet::packet;

    #[test]
    fn a_batch_read_encodes_and_decodes_in_pieces() {
        let mut out = Vec::new();
        encode(&TWO_KEYS, &mut out);
        let sql = b"SELECT k, v FROM kvlab_kv WHERE k IN (1,22)";
        assert_eq!(out, packet(0, &[&[0x03][..], sql].concat()));
        let reply = [
            packet(1, &[2]),
            packet(2, b"coldef k"),
            packet(3, b"coldef v"),
            packet(4, &[0xfe, 0, 0, 2, 0]),
            packet(5, b"\x0222\x03abc"),
            packet(6, &[0xfe, 0, 0, 2, 0]),
        ]
        .concat();
        assert_found_22(decode, &reply);
        let err = packet(1, &[0xff, 0x10, 0x04]);
        let got = decode(&err, &mut Vec::new());
        assert_eq!(got, frame(err.len(), Reply::ServerError));
    }
}
