//! RESP framing every reader shares: the length of a whole frame of any
//! type (set-up replies, pushes) and the least an incomplete one declares.

use crate::driver::wire::{Malformed, line_end, parse_usize};
use crate::transport::MAX_SETUP_REPLY;

/// Length of the whole RESP frame (any type, nested) at the front of `buf`;
/// a set-up reply that declares more than [`MAX_SETUP_REPLY`] is refused
/// at once.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, Malformed> {
    let len = frame_len_at(buf, 0, 0)?;
    if len.is_none() && declared(buf).is_some_and(|n| n > MAX_SETUP_REPLY) {
        return Err(Malformed(
            "a reply declaring over 16 MiB: no request kvlab sends at set-up is answered with that much",
        ));
    }
    Ok(len)
}

fn frame_len_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<usize>, Malformed> {
    if depth > 16 {
        return Err(Malformed("RESP nesting too deep"));
    }
    let Some(&first) = buf.get(at) else {
        return Ok(None);
    };
    let Some(eol) = line_end(buf, at + 1) else {
        return Ok(None);
    };
    // The type byte is no part of the line: `\r\n` alone is no frame.
    if eol < at + 3 || buf[eol - 2] != b'\r' {
        return Err(Malformed("reply line not ended by CRLF"));
    }
    let line = &buf[at + 1..eol - 2];
    match first {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(eol)),
        b'$' | b'=' | b'!' => {
            if line == b"-1" {
                return Ok(Some(eol));
            }
            let n = parse_usize(line).ok_or(Malformed("bad bulk string length"))?;
            let end = eol + n + 2;
            Ok((buf.len() >= end).then_some(end))
        }
        b'*' | b'%' | b'~' | b'>' => {
            if line == b"-1" {
                return Ok(Some(eol));
            }
            let n = parse_usize(line).ok_or(Malformed("bad aggregate length"))?;
            let n = if first == b'%' { n * 2 } else { n };
            let mut pos = eol;
            for _ in 0..n {
                match frame_len_at(buf, pos, depth + 1)? {
                    Some(p) => pos = p,
                    None => return Ok(None),
                }
            }
            Ok(Some(pos))
        }
        _ => Err(Malformed("not a RESP reply")),
    }
}

/// [`Codec::declared_len`] for RESP: walks the headers buffered (a bulk
/// string declares its length, an aggregate its count of elements, each of
/// which takes at least 3 bytes, `+\r\n`).
pub fn declared(buf: &[u8]) -> Option<usize> {
    let (mut at, mut left) = (0usize, 1usize);
    while left > 0 {
        let Some(eol) = line_end(buf, at) else {
            return Some(at.saturating_add(left.saturating_mul(3)));
        };
        left -= 1;
        let n = buf.get(at + 1..eol.saturating_sub(2)).and_then(parse_usize);
        at = match (buf[at], n) {
            (b'$' | b'=' | b'!', Some(n)) => eol.saturating_add(n).saturating_add(2),
            (b'*' | b'~' | b'>', Some(n)) => {
                left = left.saturating_add(n);
                eol
            }
            (b'%', Some(n)) => {
                left = left.saturating_add(n.saturating_mul(2));
                eol
            }
            _ => eol,
        };
        if at > buf.len() {
            return Some(at.saturating_add(left.saturating_mul(3)));
        }
    }
    None
}
