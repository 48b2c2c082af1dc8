//! The CQL native protocol (v4) codec: EXECUTE of kvlab's two prepared
//! statements over byte buffers. Requests are copied from per-connection
//! templates with the stream id, key and value patched in; replies are walked
//! without allocating. Every request carries the low 15 bits of its tag as the
//! frame's stream id and every reply is matched by it ([`Decoded::Tagged`]):
//! a node answers requests in the order they finish.

use std::ops::Range;

use super::frame::{ERROR, EXECUTE, HEADER, RESULT, Reader, frame, header, patch, skip_metadata};
use crate::driver::wire::{Codec, Decoded, Key, Malformed, Reply, Session, StatementId, tag_op};
use crate::workload::OpKind;

/// RESULT kind Void (a write).
const VOID: i32 = 1;
/// RESULT kind Rows.
const ROWS: i32 = 2;
/// EXECUTE flags: values follow.
const WITH_VALUES: u8 = 0x01;
/// EXECUTE flags: the reply's rows carry no column metadata.
const SKIP_METADATA: u8 = 0x02;

/// The consistency levels by name, with their protocol codes.
pub const LEVELS: &[(&str, u16)] = &[
    ("any", 0x0000),
    ("one", 0x0001),
    ("two", 0x0002),
    ("three", 0x0003),
    ("quorum", 0x0004),
    ("all", 0x0005),
    ("local_quorum", 0x0006),
    ("each_quorum", 0x0007),
    ("serial", 0x0008),
    ("local_serial", 0x0009),
    ("local_one", 0x000A),
];

/// The names of [`LEVELS`], in their order.
pub const LEVEL_NAMES: [&str; LEVELS.len()] = {
    let mut names = [""; LEVELS.len()];
    let mut i = 0;
    while i < LEVELS.len() {
        names[i] = LEVELS[i].0;
        i += 1;
    }
    names
};

/// The protocol code of consistency level `name` (any case).
pub fn level(name: &str) -> Option<u16> {
    LEVELS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, c)| c)
}

/// The CQL codec for kvlab's prepared GET and SET (bound per connection).
#[derive(Clone, Debug, Default)]
pub struct CqlCodec {
    get: Vec<u8>,
    set: Vec<u8>,
    /// The batch read's EXECUTE up to its value.
    batch: Vec<u8>,
}

/// An EXECUTE template up to the first value's bytes: id, consistency, flags,
/// `values` values, and the length of the first (an 8-byte bigint).
fn template(id: &StatementId, level: u16, flags: u8, values: u16) -> Vec<u8> {
    let mut t = Vec::with_capacity(64);
    header(EXECUTE, &mut t);
    let id = id.as_bytes();
    t.extend_from_slice(&(id.len() as u16).to_be_bytes());
    t.extend_from_slice(id);
    t.extend_from_slice(&level.to_be_bytes());
    t.push(flags);
    t.extend_from_slice(&values.to_be_bytes());
    t.extend_from_slice(&8i32.to_be_bytes());
    t
}

impl CqlCodec {
    /// The codec for statements `get`, `set` and `batch` at consistency `level`.
    pub fn prepared(
        get: &StatementId,
        set: &StatementId,
        batch: &StatementId,
        level: u16,
    ) -> CqlCodec {
        let mut batch = template(batch, level, WITH_VALUES | SKIP_METADATA, 1);
        batch.truncate(batch.len() - 4); // its value's length is the list's
        CqlCodec {
            get: template(get, level, WITH_VALUES | SKIP_METADATA, 1),
            set: template(set, level, WITH_VALUES, 2),
            batch,
        }
    }

    #[inline]
    fn put(template: &[u8], key: Key<'_>, out: &mut Vec<u8>) -> usize {
        let at = out.len();
        out.extend_from_slice(template);
        out.extend_from_slice(&(key.id as i64).to_be_bytes());
        at
    }
}

impl Codec for CqlCodec {
    /// Stream ids are 15 bits.
    const TAG_MASK: u32 = 0x7fff;

    #[inline]
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>) {
        let at = Self::put(&self.get, key, out);
        patch(out, at, (key.tag & Self::TAG_MASK) as u16);
    }

    #[inline]
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>) {
        let at = Self::put(&self.set, key, out);
        out.extend_from_slice(&(value.len() as i32).to_be_bytes());
        out.extend_from_slice(value);
        patch(out, at, (key.tag & Self::TAG_MASK) as u16);
    }

    fn encode_get_many(&self, b: &crate::driver::wire::Batch<'_>, out: &mut Vec<u8>) {
        super::batch::encode(&self.batch, b, out);
    }

    /// Every reply carries its request's stream id.
    fn reply_tag(&self, buf: &[u8]) -> Option<u32> {
        u32::try_from(frame(buf).ok().flatten()?.stream).ok()
    }

    fn decode_many(
        &self,
        _prefix: &[u8],
        _ids: &[u64],
        buf: &[u8],
        found: &mut Vec<(u64, Range<usize>)>,
    ) -> Result<Decoded, Malformed> {
        super::batch::decode(buf, found)
    }

    /// Every frame's 9-byte header ends with its body's length.
    #[inline]
    fn declared_len(&self, buf: &[u8]) -> Option<usize> {
        let len = buf.get(5..HEADER)?;
        Some(HEADER + u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize)
    }

    fn decode(&self, _op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
        let Some(f) = frame(buf)? else {
            return Ok(Decoded::Incomplete);
        };
        if f.stream < 0 {
            return Err(Malformed("an event frame kvlab did not ask for"));
        }
        let tag = f.stream as u32;
        let reply = match f.opcode {
            ERROR => Reply::ServerError,
            RESULT => result(buf, f.body, tag_op(tag))?,
            _ => return Err(Malformed("unexpected CQL opcode in a reply")),
        };
        Ok(Decoded::Tagged {
            len: f.len,
            reply,
            tag,
        })
    }

    fn bind(&self, session: &Session) -> Self {
        match session {
            Session::Prepared {
                get,
                set,
                batch,
                level,
            } => CqlCodec::prepared(get, set, batch, *level),
            _ => self.clone(),
        }
    }
}

/// A RESULT body's meaning for a request doing `op`.
fn result(buf: &[u8], body: Range<usize>, op: OpKind) -> Result<Reply, Malformed> {
    let mut r = Reader {
        buf: &buf[..body.end],
        pos: body.start,
    };
    match (r.int()?, op) {
        (VOID, OpKind::Set) => Ok(Reply::Stored),
        (ROWS, OpKind::Get) => {
            let columns = skip_metadata(&mut r)?;
            if columns != 1 {
                return Err(Malformed("a GET's rows have more than one column"));
            }
            match r.int()? {
                0 => Ok(Reply::Nil),
                _ => match r.bytes()? {
                    Some(v) => Ok(Reply::Value(v)),
                    None => Ok(Reply::Value(r.pos..r.pos)),
                },
            }
        }
        _ => Err(Malformed("a CQL result of the wrong kind")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::tag_of;
    use crate::driver::wire::testing::assert_incomplete;
    use crate::products::cql::frame::VERSION;

    #[test]
    fn the_header_declares_the_body() {
        let c = CqlCodec::default();
        assert_eq!(
            c.declared_len(b"\x84\0\0\0\x08\0\x10\0\0"),
            Some(9 + 0x10_0000)
        );
        assert_eq!(c.declared_len(b"\x84\0\0\0\x08\0\x10"), None);
    }

    fn reply(stream: i16, opcode: u8, flags: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![0x84, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.push(opcode);
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn rows(cells: &[Option<&[u8]>]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&ROWS.to_be_bytes());
        b.extend_from_slice(&4i32.to_be_bytes()); // no metadata
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&(cells.len() as i32).to_be_bytes());
        for c in cells {
            match c {
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v);
                }
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        b
    }

    fn codec() -> CqlCodec {
        let id = StatementId::new(&[7; 16]).unwrap();
        let id2 = StatementId::new(&[9; 16]).unwrap();
        CqlCodec::prepared(&id, &id2, &id2, level("quorum").unwrap())
    }

    #[test]
    fn requests_carry_stream_id_statement_and_key() {
        let c = codec();
        let mut out = Vec::new();
        let tag = tag_of(20_000, OpKind::Get);
        c.encode_get(
            Key {
                id: 0x0102,
                name: b"",
                tag,
            },
            &mut out,
        );
        assert_eq!(out[0], VERSION);
        assert_eq!(out[4], EXECUTE);
        let stream = u16::from_be_bytes([out[2], out[3]]);
        assert_eq!(u32::from(stream), tag & 0x7fff);
        let len = u32::from_be_bytes(out[5..9].try_into().unwrap()) as usize;
        assert_eq!(len, out.len() - HEADER);
        assert_eq!(&out[9..11], &[0, 16]);
        assert_eq!(&out[11..27], &[7; 16]);
        assert_eq!(&out[27..29], &[0, 4], "QUORUM");
        assert_eq!(out[29], WITH_VALUES | SKIP_METADATA);
        assert!(out.ends_with(&[0, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 1, 2]));
        let at = out.len();
        c.encode_set(
            Key {
                id: 3,
                name: b"",
                tag: tag_of(5, OpKind::Set),
            },
            b"xyz",
            &mut out,
        );
        assert!(out.ends_with(&[
            0, 2, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 3, b'x', b'y', b'z'
        ]));
        let len = u32::from_be_bytes(out[at + 5..at + 9].try_into().unwrap()) as usize;
        assert_eq!(len, out.len() - at - HEADER);
        assert_eq!(&out[at + 11..at + 27], &[9; 16]);
    }

    #[test]
    fn decodes_rows_void_and_errors_by_stream() {
        let c = codec();
        let r = reply(4, RESULT, 0, &rows(&[Some(b"abc")]));
        match c.decode(OpKind::Set, &r).unwrap() {
            Decoded::Tagged {
                len,
                reply: Reply::Value(v),
                tag: 4,
            } => {
                assert_eq!(len, r.len());
                assert_eq!(&r[v], b"abc");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.reply_tag(&r), Some(4));
        assert_eq!(c.reply_tag(&r[..r.len() - 1]), None);
        let r = reply(6, RESULT, 0, &rows(&[]));
        assert!(matches!(
            c.decode(OpKind::Get, &r),
            Ok(Decoded::Tagged {
                reply: Reply::Nil,
                tag: 6,
                ..
            })
        ));
        let r = reply(7, RESULT, 0, &VOID.to_be_bytes());
        assert!(matches!(
            c.decode(OpKind::Get, &r),
            Ok(Decoded::Tagged {
                reply: Reply::Stored,
                tag: 7,
                ..
            })
        ));
        let mut err = 0x1100i32.to_be_bytes().to_vec();
        err.extend_from_slice(&[0, 2, b'n', b'o']);
        let r = reply(9, ERROR, 0, &err);
        assert!(matches!(
            c.decode(OpKind::Get, &r),
            Ok(Decoded::Tagged {
                reply: Reply::ServerError,
                tag: 9,
                ..
            })
        ));
        // A warning list before the body.
        let mut body = vec![0, 1, 0, 2, b'h', b'i'];
        body.extend(rows(&[Some(b"v")]));
        let r = reply(2, RESULT, 0x08, &body);
        match c.decode(OpKind::Get, &r).unwrap() {
            Decoded::Tagged {
                reply: Reply::Value(v),
                ..
            } => assert_eq!(&r[v], b"v"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn partial_and_malformed_replies() {
        let c = codec();
        let r = reply(2, RESULT, 0, &rows(&[Some(b"abc")]));
        assert_incomplete(&c, OpKind::Get, &r);
        assert!(c.decode(OpKind::Get, b"+OK\r\n").is_err());
        assert!(c.decode(OpKind::Get, b"ERROR\r\n").is_err());
        assert!(c.decode(OpKind::Get, &reply(-1, 0x0C, 0, &[])).is_err());
        // A write's Void where a read was sent.
        assert!(
            c.decode(OpKind::Get, &reply(2, RESULT, 0, &VOID.to_be_bytes()))
                .is_err()
        );
        let mut short = rows(&[Some(b"abc")]);
        short.truncate(short.len() - 1);
        assert!(c.decode(OpKind::Get, &reply(2, RESULT, 0, &short)).is_err());
    }

    #[test]
    fn consistency_levels_by_name() {
        assert_eq!(level("ONE"), Some(1));
        assert_eq!(level("local_quorum"), Some(6));
        assert_eq!(level("most"), None);
    }
}
