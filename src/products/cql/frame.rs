//! CQL native protocol v4 framing, shared by the codec, the batch read and
//! the set-up session: opcodes, a request's frame header, the whole reply
//! frame at the front of a buffer, and the cursor over its body.

use std::ops::Range;

use crate::driver::wire::Malformed;

/// Protocol version of requests (v4).
pub const VERSION: u8 = 0x04;
/// Bytes of a frame header: version, flags, stream, opcode, length.
pub const HEADER: usize = 9;
/// Opcode ERROR.
pub const ERROR: u8 = 0x00;
/// Opcode STARTUP.
pub const STARTUP: u8 = 0x01;
/// Opcode READY.
pub const READY: u8 = 0x02;
/// Opcode AUTHENTICATE.
pub const AUTHENTICATE: u8 = 0x03;
/// Opcode QUERY.
pub const QUERY: u8 = 0x07;
/// Opcode RESULT.
pub const RESULT: u8 = 0x08;
/// Opcode PREPARE.
pub const PREPARE: u8 = 0x09;
/// Opcode EXECUTE.
pub const EXECUTE: u8 = 0x0A;
/// Opcode AUTH_RESPONSE.
pub const AUTH_RESPONSE: u8 = 0x0F;
/// Opcode AUTH_SUCCESS.
pub const AUTH_SUCCESS: u8 = 0x10;

/// Appends a frame header with `opcode`; stream and length are patched later.
pub fn header(opcode: u8, out: &mut Vec<u8>) {
    out.extend_from_slice(&[VERSION, 0, 0, 0, opcode, 0, 0, 0, 0]);
}

/// Writes the stream id and the body length of the frame that starts at `at`.
#[inline]
pub fn patch(out: &mut [u8], at: usize, stream: u16) {
    let len = (out.len() - at - HEADER) as u32;
    out[at + 2..at + 4].copy_from_slice(&stream.to_be_bytes());
    out[at + 5..at + HEADER].copy_from_slice(&len.to_be_bytes());
}

/// One whole frame at the front of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Bytes it occupies.
    pub len: usize,
    /// Its stream id.
    pub stream: i16,
    /// Its opcode.
    pub opcode: u8,
    /// Where its body starts (after tracing id, warnings and custom payload),
    /// up to `len`.
    pub body: Range<usize>,
}

/// The whole frame at the front of `buf`; `None` while incomplete.
pub fn frame(buf: &[u8]) -> Result<Option<Frame>, Malformed> {
    match buf.first() {
        None => return Ok(None),
        Some(0x84) => {}
        Some(v) if v & 0x80 != 0 && (0x81..=0x86).contains(v) => {
            return Err(Malformed("a CQL reply of another protocol version"));
        }
        Some(_) => return Err(Malformed("not a CQL reply")),
    }
    if buf.len() < HEADER {
        return Ok(None);
    }
    let flags = buf[1];
    let stream = i16::from_be_bytes([buf[2], buf[3]]);
    let opcode = buf[4];
    let len = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) as usize;
    if len > 256 << 20 {
        return Err(Malformed("CQL frame length out of range"));
    }
    if flags & 0x01 != 0 {
        return Err(Malformed("a compressed CQL frame kvlab did not ask for"));
    }
    let total = HEADER + len;
    if buf.len() < total {
        return Ok(None);
    }
    let mut r = Reader {
        buf: &buf[..total],
        pos: HEADER,
    };
    if flags & 0x02 != 0 {
        r.take(16)?; // tracing id
    }
    if flags & 0x08 != 0 {
        let n = r.short()?; // warnings
        for _ in 0..n {
            r.string()?;
        }
    }
    if flags & 0x04 != 0 {
        let n = r.short()?; // custom payload
        for _ in 0..n {
            r.string()?;
            r.bytes()?;
        }
    }
    Ok(Some(Frame {
        len: total,
        stream,
        opcode,
        body: r.pos..total,
    }))
}

/// Skips a Rows result's metadata; returns its number of columns.
pub(super) fn skip_metadata(r: &mut Reader<'_>) -> Result<usize, Malformed> {
    let flags = r.int()?;
    let columns = usize::try_from(r.int()?).map_err(|_| Malformed("negative column count"))?;
    if flags & 0x02 != 0 {
        r.bytes()?; // paging state
    }
    if flags & 0x04 == 0 {
        let global = flags & 0x01 != 0;
        if global {
            r.string()?;
            r.string()?;
        }
        for _ in 0..columns {
            if !global {
                r.string()?;
                r.string()?;
            }
            r.string()?;
            r.option()?;
        }
    }
    Ok(columns)
}

/// A cursor over a CQL body; running past its end is malformed (frames are
/// whole before they are read).
pub(super) struct Reader<'a> {
    /// The bytes, up to the frame's end.
    pub buf: &'a [u8],
    /// The next byte to read.
    pub pos: usize,
}

const SHORT: Malformed = Malformed("truncated CQL body");

impl Reader<'_> {
    /// The next `n` bytes' range.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<Range<usize>, Malformed> {
        let end = self.pos.checked_add(n).ok_or(SHORT)?;
        if end > self.buf.len() {
            return Err(SHORT);
        }
        let at = self.pos;
        self.pos = end;
        Ok(at..end)
    }

    /// A `[short]`.
    #[inline]
    pub fn short(&mut self) -> Result<u16, Malformed> {
        let r = self.take(2)?;
        Ok(u16::from_be_bytes([
            self.buf[r.start],
            self.buf[r.start + 1],
        ]))
    }

    /// An `[int]`.
    #[inline]
    pub fn int(&mut self) -> Result<i32, Malformed> {
        let r = self.take(4)?;
        let b = &self.buf[r];
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `[string]`: its bytes' range.
    pub fn string(&mut self) -> Result<Range<usize>, Malformed> {
        let n = self.short()?;
        self.take(usize::from(n))
    }

    /// A `[bytes]`: its range, `None` for null.
    #[inline]
    pub fn bytes(&mut self) -> Result<Option<Range<usize>>, Malformed> {
        let n = self.int()?;
        if n < 0 {
            return Ok(None);
        }
        self.take(n as usize).map(Some)
    }

    /// A `[short bytes]`.
    pub fn short_bytes(&mut self) -> Result<Range<usize>, Malformed> {
        let n = self.short()?;
        self.take(usize::from(n))
    }

    /// An `[option]` (a column type), skipped.
    fn option(&mut self) -> Result<(), Malformed> {
        match self.short()? {
            0x0000 => {
                self.string()?; // custom type's class
            }
            0x0020 | 0x0022 => self.option()?, // list, set
            0x0021 => {
                self.option()?; // map
                self.option()?;
            }
            0x0001..=0x0015 => {}
            _ => return Err(Malformed("a column type kvlab does not read")),
        }
        Ok(())
    }
}
