//! MySQL/MariaDB codec: the key-value workload as prepared statements over the
//! client/server protocol. Set-up (handshake, authentication, prepare, text
//! queries) is in [`super::conn`]; the hot path copies a
//! `COM_STMT_EXECUTE` template with the statement id and key patched in, and walks
//! the binary result set by packet headers. The protocol answers one command at a
//! time, so the engine runs MySQL connections at pipeline 1.

use super::packet::{is_eof, lenenc, lenenc_len, next_packet, packet};
use crate::driver::wire::{
    Codec, Decoded, Key, Malformed, Reply, Session, batch_read_in, declared_by_messages,
};
use crate::workload::OpKind;

/// The prepared point select.
pub const GET_SQL: &str = "SELECT v FROM kvlab_kv WHERE k = ?";
/// The prepared upsert.
pub const SET_SQL: &str =
    "INSERT INTO kvlab_kv (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)";
/// Largest value kvlab sends to MySQL/MariaDB (one protocol packet).
pub const MAX_VALUE: usize = (1 << 24) - 64;

/// The MySQL codec: `COM_STMT_EXECUTE` templates for one value size (a
/// value of another size is written with its own length).
#[derive(Clone, Debug)]
pub struct MyCodec {
    get: Vec<u8>,
    set: Vec<u8>,
    vlen: usize,
}

const TYPE_LONGLONG: u8 = 0x08;
const TYPE_BLOB: u8 = 0xfc;

/// Offsets inside the templates: statement id at 5, key at the end of the
/// parameter types (GET) or before the value (SET).
const STMT_ID_AT: usize = 4 + 1;

impl MyCodec {
    /// Templates for values of `value_size` bytes (at most [`MAX_VALUE`]).
    /// Statement ids are patched per connection by [`MyCodec::for_statements`].
    pub fn new(value_size: usize) -> MyCodec {
        let head = |params: &[u8]| {
            let mut p = vec![0x17, 0, 0, 0, 0, 0x00, 1, 0, 0, 0]; // COM_STMT_EXECUTE, id, no cursor, 1 iteration
            p.push(0); // NULL bitmap (1 byte covers up to 8 parameters)
            p.push(1); // new parameters bound: types follow
            for &t in params {
                p.extend_from_slice(&[t, 0]);
            }
            p
        };
        let mut g = head(&[TYPE_LONGLONG]);
        g.extend_from_slice(&[0; 8]);
        let mut s = head(&[TYPE_LONGLONG, TYPE_BLOB]);
        s.extend_from_slice(&[0; 8]);
        lenenc(value_size, &mut s);
        s.resize(s.len() + value_size, 0);
        MyCodec {
            get: packet(0, &g),
            set: packet(0, &s),
            vlen: value_size,
        }
    }

    /// A copy bound to this connection's statement ids.
    pub fn for_statements(&self, get_id: u32, set_id: u32) -> MyCodec {
        let mut m = self.clone();
        m.get[STMT_ID_AT..STMT_ID_AT + 4].copy_from_slice(&get_id.to_le_bytes());
        m.set[STMT_ID_AT..STMT_ID_AT + 4].copy_from_slice(&set_id.to_le_bytes());
        m
    }

    fn get_key_at(&self) -> usize {
        self.get.len() - 8
    }

    fn set_key_at(&self) -> usize {
        4 + 10 + 2 + 4
    }
}

impl Codec for MyCodec {
    /// Every packet is a 3-byte length (little-endian) and a sequence number.
    #[inline]
    fn declared_len(&self, buf: &[u8]) -> Option<usize> {
        declared_by_messages(buf, 4, |h| {
            4 + u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize
        })
    }

    #[inline]
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>) {
        let at = out.len() + self.get_key_at();
        out.extend_from_slice(&self.get);
        out[at..at + 8].copy_from_slice(&(key.id as i64).to_le_bytes());
    }

    #[inline]
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>) {
        let base = out.len();
        out.extend_from_slice(&self.set);
        let k = base + self.set_key_at();
        out[k..k + 8].copy_from_slice(&(key.id as i64).to_le_bytes());
        if value.len() == self.vlen {
            let v = out.len() - self.vlen;
            out[v..].copy_from_slice(value);
            return;
        }
        // A value of another size (sizes by key): the key's end, then the
        // value with its own length, and the packet's length patched.
        out.truncate(k + 8);
        lenenc(value.len().min(MAX_VALUE), out);
        out.extend_from_slice(&value[..value.len().min(MAX_VALUE)]);
        let len = (out.len() - base - 4) as u32;
        out[base..base + 3].copy_from_slice(&len.to_le_bytes()[..3]);
    }

    fn bind(&self, session: &Session) -> Self {
        match *session {
            Session::Statements { get, set } => self.for_statements(get, set),
            _ => self.clone(),
        }
    }

    batch_read_in!(super::batch);

    #[inline]
    fn decode(&self, op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
        // Walk whole packets; any packet not yet complete means: read more.
        let next = |pos: usize| next_packet(buf, pos);
        let Some((mut pos, first)) = next(0) else {
            return Ok(Decoded::Incomplete);
        };
        match (first.first(), op) {
            (Some(0xff), _) => {
                return Ok(Decoded::Frame {
                    len: pos,
                    reply: Reply::ServerError,
                });
            }
            (Some(0x00), OpKind::Set) => {
                return Ok(Decoded::Frame {
                    len: pos,
                    reply: Reply::Stored,
                });
            }
            (Some(1), OpKind::Get) if first.len() == 1 => {}
            _ => return Err(Malformed("unexpected MySQL reply")),
        }
        // One column definition, then EOF.
        let Some((p, _coldef)) = next(pos) else {
            return Ok(Decoded::Incomplete);
        };
        let Some((p, eof)) = next(p) else {
            return Ok(Decoded::Incomplete);
        };
        if !is_eof(eof) {
            return Err(Malformed("column definitions not ended by EOF"));
        }
        pos = p;
        let mut value = None;
        loop {
            let Some((p, row)) = next(pos) else {
                return Ok(Decoded::Incomplete);
            };
            let start = pos + 4;
            pos = p;
            match row.first() {
                _ if is_eof(row) => {
                    let reply = value.map_or(Reply::Nil, Reply::Value);
                    return Ok(Decoded::Frame { len: pos, reply });
                }
                Some(0xff) => {
                    return Ok(Decoded::Frame {
                        len: pos,
                        reply: Reply::ServerError,
                    });
                }
                Some(0x00) if row.len() >= 2 => {
                    // Header, NULL bitmap (offset 2), then the value as a length-encoded string.
                    if row[1] & 0b100 != 0 {
                        value = Some(start..start);
                        continue;
                    }
                    let (n, skip) =
                        lenenc_len(&row[2..]).ok_or(Malformed("bad length in a MySQL row"))?;
                    let v = start + 2 + skip;
                    if v + n > pos {
                        return Err(Malformed("MySQL row value past its packet"));
                    }
                    value = Some(v..v + n);
                }
                _ => return Err(Malformed("unexpected packet in a MySQL result set")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::testing::{assert_incomplete, assert_value, encoded, frame, key};

    #[test]
    fn packet_headers_declare_their_lengths() {
        let m = MyCodec::new(3);
        let buf = b"\x01\0\0\x01\x01\xff\xff\xff\x02";
        assert_eq!(m.declared_len(buf), Some(5 + 4 + 0xff_ffff));
        assert_eq!(m.declared_len(&buf[..7]), None);
    }

    fn pk(seq: u8, body: &[u8]) -> Vec<u8> {
        packet(seq, body)
    }

    fn get_reply(value: Option<&[u8]>) -> Vec<u8> {
        let mut r = pk(1, &[1]);
        r.extend(pk(2, b"\x03def\x05kvlab\x08kvlab_kv\x08kvlab_kv\x01v\x01v\x0c\x3f\x00\x00\x01\x00\x00\xfc\x80\x00\x00\x00\x00"));
        r.extend(pk(3, &[0xfe, 0, 0, 2, 0]));
        if let Some(v) = value {
            let mut row = vec![0x00, 0x00];
            lenenc(v.len(), &mut row);
            row.extend_from_slice(v);
            r.extend(pk(4, &row));
        }
        r.extend(pk(5, &[0xfe, 0, 0, 2, 0]));
        r
    }

    #[test]
    fn templates_carry_ids_key_and_value() {
        let m = MyCodec::new(300).for_statements(7, 9);
        let v = vec![b'q'; 300];
        let (get, set) = encoded(&m, key(0x0102, b""), &v);
        assert_eq!(&get[..5], &[22, 0, 0, 0, 0x17]);
        assert_eq!(&get[5..9], &7u32.to_le_bytes());
        assert_eq!(&get[get.len() - 8..], &0x0102i64.to_le_bytes());
        assert_eq!(&set[5..9], &9u32.to_le_bytes());
        assert_eq!(&set[20..28], &0x0102i64.to_le_bytes());
        assert_eq!(&set[28..31], &[0xfc, 0x2c, 0x01]);
        assert!(set.ends_with(&v));
        let len = usize::from(set[0]) | usize::from(set[1]) << 8;
        assert_eq!(len + 4, set.len());
    }

    #[test]
    fn decodes_result_sets() {
        let m = MyCodec::new(3);
        assert_value(&m, &get_reply(Some(b"abc")), b"abc");
        let r = get_reply(None);
        assert_eq!(m.decode(OpKind::Get, &r), frame(r.len(), Reply::Nil));
        assert_incomplete(&m, OpKind::Get, &r);
        let ok = pk(1, &[0, 2, 0, 2, 0, 0, 0]);
        assert_eq!(m.decode(OpKind::Set, &ok), frame(ok.len(), Reply::Stored));
        let err = pk(1, b"\xff\x15\x04#28000boom");
        assert_eq!(
            m.decode(OpKind::Get, &err),
            frame(err.len(), Reply::ServerError)
        );
        assert!(m.decode(OpKind::Get, &pk(1, &[2])).is_err(), "two columns");
        assert!(m.decode(OpKind::Get, &pk(1, b"+OK")).is_err());
    }
}
