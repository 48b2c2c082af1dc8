//! Tarantool's batch read: an SQL `SELECT "k", "v" FROM "kvlab_kv" WHERE "k"
//! IN (?, …)` sent as IPROTO_EXECUTE with the keys bound, answered with a
//! row per key found (Tarantool's IPROTO has no multi-key SELECT; its SQL
//! reads kvlab's space by its format). `box.stat()` counts one EXECUTE per
//! request.

use std::ops::Range;

use super::iproto::{KEY_DATA, Reader, Request, frame, header, patch_len, put_uint};
use crate::driver::wire::{Batch, Decoded, Malformed, Reply};

/// Body keys: SQL text, SQL bind.
const SQL_TEXT: u8 = 0x40;
const SQL_BIND: u8 = 0x41;

/// The batch read, before its placeholders and `)`.
const BATCH_SQL: &[u8] = br#"SELECT "k", "v" FROM "kvlab_kv" WHERE "k" IN ("#;

/// Appends the batch read of `b`'s keys, tagged with `b.tag` as its sync id.
pub fn encode(b: &Batch<'_>, out: &mut Vec<u8>) {
    let at = out.len();
    header(Request::Execute, out);
    out[at + 10..at + 14].copy_from_slice(&b.tag.to_be_bytes());
    out.extend_from_slice(&[0x82, SQL_TEXT]);
    let n = b.ids.len();
    let text = BATCH_SQL.len() + 2 * n;
    out.push(0xdb);
    out.extend_from_slice(&(text as u32).to_be_bytes());
    out.extend_from_slice(BATCH_SQL);
    for i in 0..n {
        out.extend_from_slice(if i == 0 { b"?" } else { b",?" });
    }
    out.push(b')');
    out.push(SQL_BIND);
    out.push(0xdd);
    out.extend_from_slice(&(n as u32).to_be_bytes());
    for &id in b.ids {
        put_uint(id, out);
    }
    patch_len(out, at);
}

/// Decodes the reply to a batch read: each row's key and value onto `found`.
pub fn decode(buf: &[u8], found: &mut Vec<(u64, Range<usize>)>) -> Result<Decoded, Malformed> {
    const BAD: Malformed = Malformed("malformed reply to a batch read");
    let Some((len, code, sync, body)) = frame(buf)? else {
        return Ok(Decoded::Incomplete);
    };
    let tag = sync as u32;
    if code != 0 {
        return Ok(Decoded::Tagged {
            len,
            reply: Reply::ServerError,
            tag,
        });
    }
    let mut r = Reader {
        buf: &buf[..len],
        pos: body,
    };
    let pairs = r.map()?.ok_or(BAD)?;
    for _ in 0..pairs {
        if r.uint()?.ok_or(BAD)? != KEY_DATA {
            r.skip(0)?;
            continue;
        }
        let rows = r.array()?.ok_or(BAD)?;
        for _ in 0..rows {
            if r.array()?.ok_or(BAD)? != 2 {
                return Err(Malformed("a batch read's row is not (k, v)"));
            }
            let id = r.uint()?.ok_or(BAD)?;
            found.push((id, r.bytes()?));
        }
        return Ok(Decoded::Tagged {
            len,
            reply: Reply::Batch,
            tag,
        });
    }
    Err(Malformed("a batch read's reply without data"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::TWO_KEYS;

    #[test]
    fn a_batch_read_encodes_and_decodes() {
        let mut out = Vec::new();
        encode(&Batch { tag: 6, ..TWO_KEYS }, &mut out);
        assert!(out.windows(8).any(|w| w == b"IN (?,?)"));
        assert_eq!(&out[out.len() - 2..], &[1, 22]);
        // {code: 0, sync: 6} {DATA: [[22, "abc"]]}
        let body = [0x81, 0x30, 0x91, 0x92, 22, 0xa3, b'a', b'b', b'c'];
        let mut reply = vec![0xce, 0, 0, 0, 0, 0x82, 0x00, 0x00, 0x01, 0x06];
        reply.extend_from_slice(&body);
        let n = (reply.len() - 5) as u32;
        reply[1..5].copy_from_slice(&n.to_be_bytes());
        let sync = |b: &[u8]| frame(b).unwrap().map(|(_, _, sync, _)| sync);
        assert_eq!(sync(&reply), Some(6));
        assert_eq!(sync(&reply[..reply.len() - 1]), None);
        let mut f = Vec::new();
        let d = decode(&reply, &mut f).unwrap();
        assert_eq!(
            d,
            Decoded::Tagged {
                len: reply.len(),
                reply: Reply::Batch,
                tag: 6
            }
        );
        assert_eq!((f[0].0, &reply[f[0].1.clone()]), (22, &b"abc"[..]));
    }
}
