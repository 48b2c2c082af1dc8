//! memcached's batch read: `get k1 k2 …` in the text protocol (a `VALUE`
//! block per key found, in the keys' order, then `END`); in the meta
//! protocol a quiet `mg <key> v k q` per key (misses say nothing) then `mn`,
//! answered by `MN`. memcached counts each key (`cmd_get`, `get_hits`,
//! `get_misses`).

use std::ops::Range;

use crate::driver::wire::{Batch, Decoded, Malformed, Reply, id_of_name, parse_usize, reply_line};

/// Appends the batch read of `b`'s keys.
pub fn encode(meta: bool, b: &Batch<'_>, out: &mut Vec<u8>) {
    if meta {
        for name in b.names() {
            out.extend_from_slice(b"mg ");
            out.extend_from_slice(name);
            out.extend_from_slice(b" v k q\r\n");
        }
        out.extend_from_slice(b"mn\r\n");
        return;
    }
    out.extend_from_slice(b"get");
    for name in b.names() {
        out.push(b' ');
        out.extend_from_slice(name);
    }
    out.extend_from_slice(b"\r\n");
}

/// Decodes the reply to a batch read of keys named `prefix` + id.
pub fn decode(
    meta: bool,
    prefix: &[u8],
    buf: &[u8],
    found: &mut Vec<(u64, Range<usize>)>,
) -> Result<Decoded, Malformed> {
    let (head, end): (&[u8], &[u8]) = match meta {
        true => (b"VA ", b"MN"),
        false => (b"VALUE ", b"END"),
    };
    let mut at = 0;
    loop {
        let Some(eol) = reply_line(&buf[at..], 0, 2048, "reply line longer than 2 KiB")? else {
            return Ok(Decoded::Incomplete);
        };
        let line = &buf[at..at + eol - 2];
        if line == end {
            return Ok(Decoded::Frame {
                len: at + eol,
                reply: Reply::Batch,
            });
        }
        if super::is_error(line) {
            // The rest of the batch's reply may follow: the stream cannot
            // be trusted to be in step any more.
            return Err(Malformed("an error in the middle of a batch read"));
        }
        let rest = line
            .strip_prefix(head)
            .ok_or(Malformed("unexpected reply to a batch read"))?;
        let mut fields = rest.split(|&b| b == b' ');
        // Text: VALUE <key> <flags> <bytes>; meta: VA <bytes> k<key>.
        let (name, n) = match meta {
            false => {
                let name = fields.next();
                let _flags = fields.next();
                (name, fields.next().and_then(parse_usize))
            }
            true => {
                let n = fields.next().and_then(parse_usize);
                (fields.find_map(|f| f.strip_prefix(b"k")), n)
            }
        };
        let (Some(name), Some(n)) = (name, n) else {
            return Err(Malformed("bad value line in a batch read"));
        };
        let id =
            id_of_name(prefix, name).ok_or(Malformed("a value of a key kvlab did not ask for"))?;
        let start = at + eol;
        if buf.len() < start + n + 2 {
            return Ok(Decoded::Incomplete);
        }
        if &buf[start + n..start + n + 2] != b"\r\n" {
            return Err(Malformed("value not followed by CRLF"));
        }
        found.push((id, start..start + n));
        at = start + n + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch<'a>(names: &'a [u8], ends: &'a [u32]) -> Batch<'a> {
        Batch {
            ids: &[1, 22],
            names,
            ends,
            tag: 0,
        }
    }

    #[test]
    fn text_and_meta_batches_encode_and_decode_in_pieces() {
        let (names, ends) = (b"k:1k:22".to_vec(), [3u32, 7]);
        let mut out = Vec::new();
        encode(false, &batch(&names, &ends), &mut out);
        assert_eq!(out, b"get k:1 k:22\r\n");
        out.clear();
        encode(true, &batch(&names, &ends), &mut out);
        assert_eq!(out, b"mg k:1 v k q\r\nmg k:22 v k q\r\nmn\r\n");
        for (meta, reply) in [
            (false, &b"VALUE k:22 0 3\r\nabc\r\nEND\r\n"[..]),
            (true, &b"VA 3 kk:22\r\nabc\r\nMN\r\n"[..]),
        ] {
            for cut in 0..reply.len() {
                let mut f = Vec::new();
                assert_eq!(
                    decode(meta, b"k:", &reply[..cut], &mut f),
                    Ok(Decoded::Incomplete)
                );
            }
            let mut f = Vec::new();
            let d = decode(meta, b"k:", reply, &mut f).unwrap();
            assert_eq!(
                d,
                Decoded::Frame {
                    len: reply.len(),
                    reply: Reply::Batch
                }
            );
            assert_eq!(f.len(), 1);
            assert_eq!((f[0].0, &reply[f[0].1.clone()]), (22, &b"abc"[..]));
            assert!(decode(meta, b"x:", reply, &mut f).is_err());
        }
        let mut f = Vec::new();
        assert!(decode(false, b"k:", b"SERVER_ERROR x\r\n", &mut f).is_err());
        let d = decode(false, b"k:", b"END\r\n", &mut f).unwrap();
        assert_eq!(
            d,
            Decoded::Frame {
                len: 5,
                reply: Reply::Batch
            }
        );
    }
}
