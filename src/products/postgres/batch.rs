//! PostgreSQL's batch read: `SELECT k, v FROM kvlab_kv WHERE k = ANY($1)`
//! with the keys as one binary `bigint[]` parameter, sent as the extended
//! protocol's unnamed statement (Parse, Bind, Execute, Sync) in every query
//! mode; a row per key found, in any order. pg_stat_statements counts one
//! statement per request.

use std::ops::Range;

use crate::driver::wire::{Batch, Decoded, Malformed, Reply};

/// The batch read.
pub const BATCH_SQL: &str = "SELECT k, v FROM kvlab_kv WHERE k = ANY($1)";

/// Type id of `bigint[]`.
const INT8_ARRAY_OID: u32 = 1016;

/// Starts a message of `tag`; returns where its length goes.
fn start(tag: u8, out: &mut Vec<u8>) -> usize {
    out.push(tag);
    out.extend_from_slice(&[0; 4]);
    out.len() - 4
}

/// Writes the length of the message whose length field is at `at`.
fn end(at: usize, out: &mut [u8]) {
    let len = (out.len() - at) as i32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// Appends Parse, Bind, Execute and Sync of the batch read of `b`'s keys.
pub fn encode(b: &Batch<'_>, out: &mut Vec<u8>) {
    let at = start(b'P', out);
    out.push(0); // the unnamed statement
    out.extend_from_slice(BATCH_SQL.as_bytes());
    out.push(0);
    out.extend_from_slice(&1i16.to_be_bytes());
    out.extend_from_slice(&INT8_ARRAY_OID.to_be_bytes());
    end(at, out);
    let at = start(b'B', out);
    out.extend_from_slice(&[0, 0]); // portal, statement: unnamed
    out.extend_from_slice(&1i16.to_be_bytes()); // one parameter format:
    out.extend_from_slice(&1i16.to_be_bytes()); // binary
    out.extend_from_slice(&1i16.to_be_bytes()); // one parameter
    let n = b.ids.len() as i32;
    out.extend_from_slice(&(20 + n * 12).to_be_bytes());
    // One dimension, no nulls, bigint, n elements from index 1.
    for f in [1, 0, 20, n, 1] {
        out.extend_from_slice(&f.to_be_bytes());
    }
    for &id in b.ids {
        out.extend_from_slice(&8i32.to_be_bytes());
        out.extend_from_slice(&(id as i64).to_be_bytes());
    }
    out.extend_from_slice(&1i16.to_be_bytes()); // one result format:
    out.extend_from_slice(&1i16.to_be_bytes()); // binary, both columns
    end(at, out);
    out.extend_from_slice(&[b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&[b'S', 0, 0, 0, 4]);
}

/// Decodes the reply to a batch read from the front of `buf`: each row's key
/// and value pushed onto `found`.
pub fn decode(buf: &[u8], found: &mut Vec<(u64, Range<usize>)>) -> Result<Decoded, Malformed> {
    let mut pos = 0;
    let mut error = false;
    loop {
        if buf.len() < pos + 5 {
            return Ok(Decoded::Incomplete);
        }
        let tag = buf[pos];
        let len = i32::from_be_bytes([buf[pos + 1], buf[pos + 2], buf[pos + 3], buf[pos + 4]]);
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l >= 4)
            .ok_or(Malformed("bad PostgreSQL message length"))?;
        let end = pos + 1 + len;
        if buf.len() < end {
            return Ok(Decoded::Incomplete);
        }
        let body = &buf[pos + 5..end];
        match tag {
            b'1' | b'2' | b'T' | b'C' | b'N' | b'S' | b'A' | b'n' => {}
            b'D' => {
                // Two columns: the key (8 bytes) and the value.
                if body.len() < 2 + 4 + 8 + 4 || body[..2] != [0, 2] || body[2..6] != [0, 0, 0, 8] {
                    return Err(Malformed("a batch read's row is not (bigint, bytea)"));
                }
                let id = i64::from_be_bytes(body[6..14].try_into().expect("8 bytes")) as u64;
                let vlen = i32::from_be_bytes(body[14..18].try_into().expect("4 bytes"));
                let vlen = usize::try_from(vlen).map_err(|_| Malformed("a NULL value"))?;
                let start = pos + 5 + 18;
                if start + vlen > end {
                    return Err(Malformed("DataRow value past its message"));
                }
                found.push((id, start..start + vlen));
            }
            b'E' => error = true,
            b'Z' => {
                let reply = if error {
                    Reply::ServerError
                } else {
                    Reply::Batch
                };
                return Ok(Decoded::Frame { len: end, reply });
            }
            _ => return Err(Malformed("unexpected PostgreSQL message")),
        }
        pos = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::{TWO_KEYS, assert_found_22, frame};

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_batch_read_encodes_and_decodes_in_pieces() {
        let mut out = Vec::new();
        encode(&TWO_KEYS, &mut out);
        assert_eq!(out[0], b'P');
        assert!(
            out.windows(BATCH_SQL.len())
                .any(|w| w == BATCH_SQL.as_bytes())
        );
        assert!(out.ends_with(&[b'S', 0, 0, 0, 4]));
        let mut row = vec![0, 2, 0, 0, 0, 8];
        row.extend_from_slice(&22i64.to_be_bytes());
        row.extend_from_slice(&3i32.to_be_bytes());
        row.extend_from_slice(b"abc");
        let reply = [
            msg(b'1', b""),
            msg(b'2', b""),
            msg(b'D', &row),
            msg(b'C', b"SELECT 1\0"),
            msg(b'Z', b"I"),
        ]
        .concat();
        assert_found_22(decode, &reply);
        let err = [msg(b'E', b"SERROR\0\0"), msg(b'Z', b"I")].concat();
        let got = decode(&err, &mut Vec::new());
        assert_eq!(got, frame(err.len(), Reply::ServerError));
    }
}
