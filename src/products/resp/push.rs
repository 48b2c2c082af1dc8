//! RESP3 push messages (`>`): what a connection with client tracking hears
//! unasked, between replies — `>2 $10 invalidate *N <keys>` for keys that
//! changed, `>2 $10 invalidate _` when the server flushed.

use std::ops::Range;

use super::frame::frame_len;
use crate::driver::wire::{Malformed, Unasked, line_end, parse_usize};

/// [`crate::driver::wire::Codec::unasked`] for RESP.
#[inline]
pub fn unasked(buf: &[u8], keys: &mut Vec<Range<usize>>) -> Option<Result<Unasked, Malformed>> {
    (buf.first() == Some(&b'>')).then(|| parse(buf, keys))
}

/// The push message at the front of `buf`.
fn parse(buf: &[u8], keys: &mut Vec<Range<usize>>) -> Result<Unasked, Malformed> {
    keys.clear();
    let Some(len) = frame_len(buf)? else {
        return Ok(Unasked::Incomplete);
    };
    // The whole frame is buffered and well formed: walk its elements.
    let (count, mut at) = header(buf, 0)?;
    let other = Ok(Unasked::Other { len });
    if count != 2 {
        return other;
    }
    let Some(kind) = bulk(buf, &mut at)? else {
        return other;
    };
    if &buf[kind] != b"invalidate" {
        return other;
    }
    match buf[at] {
        b'_' => Ok(Unasked::InvalidateAll { len }),
        b'*' => {
            let (n, mut pos) = header(buf, at)?;
            for _ in 0..n {
                match bulk(buf, &mut pos)? {
                    Some(k) => keys.push(k),
                    None => return Err(Malformed("an invalidated key that is no string")),
                }
            }
            Ok(Unasked::Invalidate { len })
        }
        _ => Err(Malformed("an invalidation naming no keys")),
    }
}

/// The count of the aggregate whose header starts at `at`, and where its
/// elements start (`*-1` counts none).
fn header(buf: &[u8], at: usize) -> Result<(usize, usize), Malformed> {
    let eol = line_end(buf, at + 1).ok_or(Malformed("push header not whole"))?;
    let line = &buf[at + 1..eol - 2];
    match line {
        b"-1" => Ok((0, eol)),
        _ => Ok((parse_usize(line).ok_or(Malformed("bad push length"))?, eol)),
    }
}

/// The bulk string at `*at` as a range of `buf` (`None`: another type,
/// skipped), moving `*at` past the element.
fn bulk(buf: &[u8], at: &mut usize) -> Result<Option<Range<usize>>, Malformed> {
    let start = *at;
    let end = frame_len(&buf[start..])?.ok_or(Malformed("push element not whole"))? + start;
    *at = end;
    if buf[start] != b'$' {
        return Ok(None);
    }
    let eol = line_end(buf, start + 1).ok_or(Malformed("bulk header not whole"))?;
    Ok(Some(eol..end - 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(bytes: &[u8]) -> (Option<Result<Unasked, Malformed>>, Vec<Vec<u8>>) {
        let mut keys = Vec::new();
        let r = unasked(bytes, &mut keys);
        let names = keys.iter().map(|k| bytes[k.clone()].to_vec()).collect();
        (r, names)
    }

    #[test]
    fn invalidations_name_their_keys() {
        let msg = b">2\r\n$10\r\ninvalidate\r\n*2\r\n$6\r\nkv:101\r\n$4\r\nkv:7\r\n+OK\r\n";
        let (r, names) = of(msg);
        assert_eq!(r, Some(Ok(Unasked::Invalidate { len: msg.len() - 5 })));
        assert_eq!(names, vec![b"kv:101".to_vec(), b"kv:7".to_vec()]);
        let flush = b">2\r\n$10\r\ninvalidate\r\n_\r\n";
        assert_eq!(
            of(flush).0,
            Some(Ok(Unasked::InvalidateAll { len: flush.len() }))
        );
    }

    #[test]
    fn replies_other_pushes_and_partial_ones() {
        assert_eq!(of(b"$3\r\nabc\r\n").0, None);
        let msg = b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n";
        assert_eq!(of(msg).0, Some(Ok(Unasked::Other { len: msg.len() })));
        let whole = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nkv:7\r\n";
        for cut in 1..whole.len() {
            assert_eq!(of(&whole[..cut]).0, Some(Ok(Unasked::Incomplete)), "{cut}");
        }
        assert!(matches!(
            of(b">2\r\n$10\r\ninvalidate\r\n*1\r\n:7\r\n").0,
            Some(Err(_))
        ));
        assert!(matches!(of(b">x\r\n").0, Some(Err(_))));
    }
}
