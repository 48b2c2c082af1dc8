//! CQL's batch read: the prepared `SELECT k, v FROM <ks>.kvlab_kv WHERE k IN
//! ?` executed with the keys as one `list<bigint>` value, answered with a row
//! per key found. Cassandra reads each key's partition: its
//! `local_read_latency` counts a read per key.

use std::ops::Range;

use super::frame::{ERROR, RESULT, Reader, frame, patch, skip_metadata};
use crate::driver::wire::{Batch, Decoded, Malformed, Reply};

/// The batch read, for keyspace `ks`.
pub fn cql(ks: &str) -> String {
    format!("SELECT k, v FROM {ks}.kvlab_kv WHERE k IN ?")
}

/// Appends the batch read of `b`'s keys after `template` (the EXECUTE of the
/// prepared statement up to its one value), tagged with `b.tag` as its stream.
pub fn encode(template: &[u8], b: &Batch<'_>, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(template);
    let n = b.ids.len() as i32;
    out.extend_from_slice(&(4 + 12 * n).to_be_bytes());
    out.extend_from_slice(&n.to_be_bytes());
    for &id in b.ids {
        out.extend_from_slice(&8i32.to_be_bytes());
        out.extend_from_slice(&(id as i64).to_be_bytes());
    }
    patch(out, at, (b.tag & 0x7fff) as u16);
}

/// Decodes the reply to a batch read: each row's key and value onto `found`.
pub fn decode(buf: &[u8], found: &mut Vec<(u64, Range<usize>)>) -> Result<Decoded, Malformed> {
    let Some(f) = frame(buf)? else {
        return Ok(Decoded::Incomplete);
    };
    let tag =
        u32::try_from(f.stream).map_err(|_| Malformed("an event frame kvlab did not ask for"))?;
    let reply = match f.opcode {
        ERROR => Reply::ServerError,
        RESULT => {
            let mut r = Reader {
                buf: &buf[..f.body.end],
                pos: f.body.start,
            };
            if r.int()? != 2 || skip_metadata(&mut r)? != 2 {
                return Err(Malformed("a batch read's result is not rows of (k, v)"));
            }
            let rows = r.int()?;
            for _ in 0..rows {
                let k = r.bytes()?.ok_or(Malformed("a row without its key"))?;
                let key: [u8; 8] = buf[k]
                    .try_into()
                    .map_err(|_| Malformed("a key that is not a bigint"))?;
                let v = r.bytes()?.unwrap_or(r.pos..r.pos);
                found.push((i64::from_be_bytes(key) as u64, v));
            }
            Reply::Batch
        }
        _ => return Err(Malformed("unexpected CQL opcode in a reply")),
    };
    Ok(Decoded::Tagged {
        len: f.len,
        reply,
        tag,
    })
}
