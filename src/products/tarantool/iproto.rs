//! IPROTO framing and the MessagePack it is written in, shared by the codec,
//! the batch read and the set-up session: the request types kvlab sends, a
//! request's header and length, the whole reply frame at the front of a
//! buffer, and the cursor over its MessagePack.

use std::ops::Range;

use crate::driver::wire::Malformed;

/// The IPROTO request types kvlab sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Request {
    /// SELECT by primary key (a GET).
    Select = 0x01,
    /// REPLACE of a tuple (a SET).
    Replace = 0x03,
    /// DELETE by primary key (an invalidation).
    Delete = 0x05,
    /// AUTH (CHAP-SHA1).
    Auth = 0x07,
    /// EVAL of Lua (set-up).
    Eval = 0x08,
    /// EXECUTE of SQL (the batch read).
    Execute = 0x0b,
}

/// Header key: request type / reply code.
const KEY_CODE: u64 = 0x00;
/// Header key: sync id.
const KEY_SYNC: u64 = 0x01;
/// Body key: data (tuples) of a reply.
pub(super) const KEY_DATA: u64 = 0x30;

/// Bytes of a request's length prefix (`0xce` + u32).
pub(super) const PREFIX: usize = 5;

/// A request header: length (patched later), type, sync (patched per request).
pub(super) fn header(code: Request, out: &mut Vec<u8>) {
    out.extend_from_slice(&[0xce, 0, 0, 0, 0]);
    out.extend_from_slice(&[
        0x82,
        KEY_CODE as u8,
        code as u8,
        KEY_SYNC as u8,
        0xce,
        0,
        0,
        0,
        0,
    ]);
}

/// Writes the length of the request that starts at `at` (the rest of `out`).
#[inline]
pub(super) fn patch_len(out: &mut [u8], at: usize) {
    let len = (out.len() - at - PREFIX) as u32;
    out[at + 1..at + 5].copy_from_slice(&len.to_be_bytes());
}

/// Appends `v` as a MessagePack unsigned integer in its shortest form.
#[inline]
pub fn put_uint(v: u64, out: &mut Vec<u8>) {
    match v {
        0..=0x7f => out.push(v as u8),
        0x80..=0xff => out.extend_from_slice(&[0xcc, v as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(v as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(v as u32).to_be_bytes());
        }
        _ => {
            out.push(0xcf);
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
}

/// Appends the header of a MessagePack binary of `n` bytes, shortest form.
#[inline]
pub(super) fn put_bin_header(n: usize, out: &mut Vec<u8>) {
    if n <= 0xff {
        out.extend_from_slice(&[0xc4, n as u8]);
    } else if n <= 0xffff {
        out.push(0xc5);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xc6);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// The whole reply at the front of `buf`: (its length, reply code, sync id,
/// where its body starts); `None` while incomplete.
pub fn frame(buf: &[u8]) -> Result<Option<(usize, u64, u64, usize)>, Malformed> {
    // Tarantool frames every reply with a 5-byte length: 0xce + u32.
    match buf.first() {
        None => return Ok(None),
        Some(0xce) => {}
        Some(_) => return Err(Malformed("not an IPROTO reply")),
    }
    let Some(len) = buf.get(1..PREFIX) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
    if len > 1 << 30 {
        return Err(Malformed("reply length out of range"));
    }
    let total = PREFIX + len;
    if buf.len() < total {
        return Ok(None);
    }
    let mut r = Reader {
        buf: &buf[..total],
        pos: PREFIX,
    };
    let n = r.map()?.ok_or(Malformed("truncated IPROTO header"))?;
    let (mut code, mut sync) = (None, 0);
    for _ in 0..n {
        let k = r.uint()?.ok_or(Malformed("truncated IPROTO header"))?;
        match k {
            KEY_CODE => code = r.uint()?,
            KEY_SYNC => sync = r.uint()?.ok_or(Malformed("truncated IPROTO header"))?,
            _ => r.skip(0)?,
        }
    }
    let code = code.ok_or(Malformed("IPROTO reply without a code"))?;
    Ok(Some((total, code, sync, r.pos)))
}

/// A cursor over MessagePack bytes; `Ok(None)` means the bytes end early.
pub(super) struct Reader<'a> {
    /// The bytes.
    pub buf: &'a [u8],
    /// Where the next value starts.
    pub pos: usize,
}

impl Reader<'_> {
    #[inline]
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.buf.get(self.pos..self.pos + n)?;
        self.pos += n;
        Some(s)
    }

    #[inline]
    fn be(&mut self, n: usize) -> Option<u64> {
        Some(
            self.take(n)?
                .iter()
                .fold(0u64, |a, &b| (a << 8) | u64::from(b)),
        )
    }

    /// An unsigned integer.
    #[inline]
    pub(super) fn uint(&mut self) -> Result<Option<u64>, Malformed> {
        let Some(&b) = self.buf.get(self.pos) else {
            return Ok(None);
        };
        self.pos += 1;
        Ok(match b {
            0x00..=0x7f => Some(u64::from(b)),
            0xcc => self.be(1),
            0xcd => self.be(2),
            0xce => self.be(4),
            0xcf => self.be(8),
            _ => return Err(Malformed("not an IPROTO reply")),
        })
    }

    /// A map header: its number of pairs.
    #[inline]
    pub(super) fn map(&mut self) -> Result<Option<u64>, Malformed> {
        let Some(&b) = self.buf.get(self.pos) else {
            return Ok(None);
        };
        self.pos += 1;
        Ok(match b {
            0x80..=0x8f => Some(u64::from(b & 0x0f)),
            0xde => self.be(2),
            0xdf => self.be(4),
            _ => return Err(Malformed("not an IPROTO reply")),
        })
    }

    /// An array header: its number of elements.
    #[inline]
    pub(super) fn array(&mut self) -> Result<Option<u64>, Malformed> {
        let Some(&b) = self.buf.get(self.pos) else {
            return Ok(None);
        };
        self.pos += 1;
        Ok(match b {
            0x90..=0x9f => Some(u64::from(b & 0x0f)),
            0xdc => self.be(2),
            0xdd => self.be(4),
            _ => return Err(Malformed("expected an array")),
        })
    }

    /// A string or binary: the range of its bytes.
    #[inline]
    pub(super) fn bytes(&mut self) -> Result<Range<usize>, Malformed> {
        const SHORT: Malformed = Malformed("truncated IPROTO body");
        let b = *self.buf.get(self.pos).ok_or(SHORT)?;
        self.pos += 1;
        let n = match b {
            0xa0..=0xbf => u64::from(b & 0x1f),
            0xc4 | 0xd9 => self.be(1).ok_or(SHORT)?,
            0xc5 | 0xda => self.be(2).ok_or(SHORT)?,
            0xc6 | 0xdb => self.be(4).ok_or(SHORT)?,
            _ => return Err(Malformed("value is not a string or binary")),
        } as usize;
        let start = self.pos;
        self.take(n).ok_or(SHORT)?;
        Ok(start..start + n)
    }

    /// Skips one value of any type.
    pub(super) fn skip(&mut self, depth: usize) -> Result<(), Malformed> {
        const SHORT: Malformed = Malformed("truncated IPROTO reply");
        if depth > 32 {
            return Err(Malformed("IPROTO value nested too deep"));
        }
        let b = *self.buf.get(self.pos).ok_or(SHORT)?;
        let fixed = |n: usize| -> Option<usize> { Some(n) };
        let skip = match b {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => fixed(1),
            0xcc | 0xd0 => fixed(2),
            0xcd | 0xd1 => fixed(3),
            0xce | 0xd2 | 0xca => fixed(5),
            0xcf | 0xd3 | 0xcb => fixed(9),
            0xd4 => fixed(3),
            0xd5 => fixed(4),
            0xd6 => fixed(6),
            0xd7 => fixed(10),
            0xd8 => fixed(18),
            0xa0..=0xbf | 0xc4..=0xc6 | 0xd9..=0xdb => {
                self.bytes()?;
                None
            }
            0xc7..=0xc9 => {
                self.pos += 1;
                let n = self.be(1 << (b - 0xc7)).ok_or(SHORT)? as usize;
                self.take(n + 1).ok_or(SHORT)?;
                None
            }
            0x90..=0x9f | 0xdc | 0xdd => {
                let n = self.array()?.ok_or(SHORT)?;
                for _ in 0..n {
                    self.skip(depth + 1)?;
                }
                None
            }
            0x80..=0x8f | 0xde | 0xdf => {
                let n = self.map()?.ok_or(SHORT)?;
                for _ in 0..2 * n {
                    self.skip(depth + 1)?;
                }
                None
            }
            _ => return Err(Malformed("not MessagePack")),
        };
        if let Some(n) = skip {
            self.take(n).ok_or(SHORT)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_take_their_shortest_form() {
        for (v, want) in [
            (5u64, vec![5u8]),
            (200, vec![0xcc, 200]),
            (0x1234, vec![0xcd, 0x12, 0x34]),
            (0x12_3456, vec![0xce, 0, 0x12, 0x34, 0x56]),
            (1 << 40, vec![0xcf, 0, 0, 1, 0, 0, 0, 0, 0]),
        ] {
            let mut out = Vec::new();
            put_uint(v, &mut out);
            assert_eq!(out, want, "{v}");
        }
    }
}
