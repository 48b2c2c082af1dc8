//! MySQL/MariaDB packet framing, shared by the codec, the batch read and the
//! set-up session: a packet's 4-byte header, the packets of a reply walked
//! in place, and length-encoded integers and strings.

use std::ops::Range;

/// Appends `n` as a length-encoded integer.
pub(super) fn lenenc(n: usize, out: &mut Vec<u8>) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&(n as u64).to_le_bytes());
        }
    }
}

/// Packet `seq` carrying `payload` (set-up and templates, not per request).
pub(super) fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(payload.len() + 4);
    p.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    p.push(seq);
    p.extend_from_slice(payload);
    p
}

/// The whole packet at `pos` of `buf`: where the next one starts, and its
/// payload; `None` while incomplete.
#[inline]
pub(super) fn next_packet(buf: &[u8], pos: usize) -> Option<(usize, &[u8])> {
    let h = buf.get(pos..pos + 4)?;
    let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
    let body = buf.get(pos + 4..pos + 4 + len)?;
    Some((pos + 4 + len, body))
}

/// Whether `payload` is an EOF packet's.
#[inline]
pub(super) fn is_eof(payload: &[u8]) -> bool {
    payload.first() == Some(&0xfe) && payload.len() < 9
}

/// The length-encoded integer (up to 3 bytes) at the front of `b`: its value
/// and the bytes it takes; `None` when cut short or longer.
#[inline]
pub(super) fn lenenc_len(b: &[u8]) -> Option<(usize, usize)> {
    match *b.first()? {
        x if x < 0xfb => Some((usize::from(x), 1)),
        0xfc => Some((usize::from(u16::from_le_bytes([*b.get(1)?, *b.get(2)?])), 3)),
        0xfd => {
            let n = b.get(1..4)?;
            Some((
                usize::from(n[0]) | usize::from(n[1]) << 8 | usize::from(n[2]) << 16,
                4,
            ))
        }
        _ => None,
    }
}

/// The length-encoded string at the front of `b`: its range in `b`.
#[inline]
pub(super) fn lenenc_str(b: &[u8]) -> Option<Range<usize>> {
    let (n, skip) = lenenc_len(b)?;
    (skip + n <= b.len()).then_some(skip..skip + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_encoded_strings_cut_short_are_none() {
        let mut b = Vec::new();
        lenenc(300, &mut b);
        assert_eq!(lenenc_len(&b), Some((300, 3)));
        assert_eq!(lenenc_str(b"\x03abc"), Some(1..4));
        assert_eq!(lenenc_str(b"\x03ab"), None);
        assert_eq!(lenenc_len(b"\xfd\x01\x00"), None);
        assert_eq!(lenenc_len(b"\xfe\x01"), None);
        let p = packet(3, b"xy");
        assert_eq!(next_packet(&p, 0), Some((6, &b"xy"[..])));
        assert_eq!(next_packet(&p[..5], 0), None);
    }
}
