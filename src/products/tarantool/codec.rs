//! Tarantool IPROTO codec: SELECT by primary key for GET, REPLACE for SET,
//! DELETE for invalidation, over byte buffers. Requests are copied from
//! templates with the sync id, space id and key patched in; replies are walked
//! as MessagePack without allocating. Every request carries its tag as IPROTO's
//! sync id and every reply is matched by it ([`Decoded::Tagged`]): Tarantool
//! answers in the order requests finish, and a REPLACE that waits for its WAL
//! write finishes after a later SELECT.

use super::iproto::{
    KEY_DATA, PREFIX, Reader, Request, frame, header, patch_len, put_bin_header, put_uint,
};
use crate::driver::wire::{
    CacheCodec, Codec, Decoded, Key, Malformed, Reply, Session, batch_read_in, tag_op,
};
use crate::workload::OpKind;

/// Offset of the sync id (u32 big-endian) in every template.
const SYNC_AT: usize = PREFIX + 5;
/// Offset of the space id (u32 big-endian) in every template.
const SPACE_AT: usize = PREFIX + 9 + 3;

/// The Tarantool codec for kvlab's space (its id bound per connection).
/// Keys and lengths are written in their shortest MessagePack form: Tarantool
/// stores tuples as sent, and its indexes tell `3` from a 9-byte `3` apart.
#[derive(Clone, Debug)]
pub struct TtCodec {
    get: Vec<u8>,
    set: Vec<u8>,
    del: Vec<u8>,
}

impl Default for TtCodec {
    fn default() -> TtCodec {
        TtCodec::new()
    }
}

impl TtCodec {
    /// Request templates up to the key (space id 0 until bound); values of
    /// any size follow their own length.
    pub fn new() -> TtCodec {
        // SELECT {space: S, index: 0, limit: 1, offset: 0, iterator: EQ, key: [k]}
        let mut get = Vec::new();
        header(Request::Select, &mut get);
        get.extend_from_slice(&[
            0x86, 0x10, 0xce, 0, 0, 0, 0, 0x11, 0, 0x12, 1, 0x13, 0, 0x14, 0,
        ]);
        get.extend_from_slice(&[0x20, 0x91]);
        // REPLACE {space: S, tuple: [k, bin(v)]}
        let mut set = Vec::new();
        header(Request::Replace, &mut set);
        set.extend_from_slice(&[0x82, 0x10, 0xce, 0, 0, 0, 0, 0x21, 0x92]);
        // DELETE {space: S, index: 0, key: [k]}
        let mut del = Vec::new();
        header(Request::Delete, &mut del);
        del.extend_from_slice(&[0x83, 0x10, 0xce, 0, 0, 0, 0, 0x11, 0, 0x20, 0x91]);
        TtCodec { get, set, del }
    }

    /// A copy addressing space `space`.
    pub fn for_space(&self, space: u32) -> TtCodec {
        let mut c = self.clone();
        for t in [&mut c.get, &mut c.set, &mut c.del] {
            t[SPACE_AT..SPACE_AT + 4].copy_from_slice(&space.to_be_bytes());
        }
        c
    }

    /// Appends `template` with the tag patched in, then the key; returns where
    /// the request starts (its length is patched by the caller).
    #[inline]
    fn put(template: &[u8], key: Key<'_>, out: &mut Vec<u8>) -> usize {
        let at = out.len();
        out.extend_from_slice(template);
        out[at + SYNC_AT..at + SYNC_AT + 4].copy_from_slice(&key.tag.to_be_bytes());
        put_uint(key.id, out);
        at
    }
}

impl Codec for TtCodec {
    #[inline]
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>) {
        let at = Self::put(&self.get, key, out);
        patch_len(out, at);
    }

    #[inline]
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>) {
        let at = Self::put(&self.set, key, out);
        put_bin_header(value.len(), out);
        out.extend_from_slice(value);
        patch_len(out, at);
    }

    /// Every reply is framed by a 5-byte length, `0xce` and a u32.
    #[inline]
    fn declared_len(&self, buf: &[u8]) -> Option<usize> {
        let len = buf.get(1..PREFIX)?;
        Some(PREFIX + u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize)
    }

    fn decode(&self, _op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
        let Some((len, code, sync, body)) = frame(buf)? else {
            return Ok(Decoded::Incomplete);
        };
        let tag = sync as u32;
        let reply = if code != 0 {
            Reply::ServerError
        } else {
            match (tag_op(tag), data(&buf[..len], body)?) {
                (OpKind::Get, None) => Reply::Nil,
                (OpKind::Get, Some(v)) => Reply::Value(v),
                (OpKind::Set, Some(_)) => Reply::Stored,
                (OpKind::Set, None) => return Err(Malformed("REPLACE returned no tuple")),
            }
        };
        Ok(Decoded::Tagged { len, reply, tag })
    }

    batch_read_in!(super::batch);

    /// Every reply carries its request's sync id.
    fn reply_tag(&self, buf: &[u8]) -> Option<u32> {
        frame(buf).ok().flatten().map(|(_, _, sync, _)| sync as u32)
    }

    fn bind(&self, session: &Session) -> Self {
        match *session {
            Session::Table { id } => self.for_space(id),
            _ => self.clone(),
        }
    }
}

impl CacheCodec for TtCodec {
    fn encode_delete(&self, key: Key<'_>, out: &mut Vec<u8>) {
        let at = Self::put(&self.del, key, out);
        patch_len(out, at);
    }

    fn decode_delete(&self, buf: &[u8]) -> Result<Decoded, Malformed> {
        let Some((len, code, sync, _)) = frame(buf)? else {
            return Ok(Decoded::Incomplete);
        };
        let reply = if code == 0 {
            Reply::Stored
        } else {
            Reply::ServerError
        };
        Ok(Decoded::Tagged {
            len,
            reply,
            tag: sync as u32,
        })
    }
}

/// The value of the first tuple of a reply's DATA (`None`: no tuple).
fn data(buf: &[u8], body: usize) -> Result<Option<std::ops::Range<usize>>, Malformed> {
    const BAD: Malformed = Malformed("malformed IPROTO body");
    let mut r = Reader { buf, pos: body };
    let n = r.map()?.ok_or(BAD)?;
    for _ in 0..n {
        let k = r.uint()?.ok_or(BAD)?;
        if k != KEY_DATA {
            r.skip(0)?;
            continue;
        }
        let tuples = r.array()?.ok_or(BAD)?;
        if tuples == 0 {
            return Ok(None);
        }
        let fields = r.array()?.ok_or(BAD)?;
        if fields < 2 {
            return Err(Malformed("tuple without a value field"));
        }
        r.skip(0)?;
        return r.bytes().map(Some);
    }
    Err(Malformed("IPROTO reply without data"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::wire::tag_of;
    use crate::driver::wire::testing::assert_incomplete;

    #[test]
    fn the_frame_declares_its_length() {
        let c = TtCodec::new();
        assert_eq!(c.declared_len(b"\xce\x00\x10\x00\x00"), Some(5 + 0x10_0000));
        assert_eq!(c.declared_len(b"\xce\x00\x10"), None);
    }

    /// A reply: header {code, sync, schema 5}, then `body`.
    fn reply(code: u32, sync: u32, body: &[u8]) -> Vec<u8> {
        let mut h = vec![0x83, 0x00, 0xce];
        h.extend_from_slice(&code.to_be_bytes());
        h.extend_from_slice(&[0x01, 0xce]);
        h.extend_from_slice(&sync.to_be_bytes());
        h.extend_from_slice(&[0x05, 0x05]);
        let mut out = vec![0xce];
        out.extend_from_slice(&((h.len() + body.len()) as u32).to_be_bytes());
        out.extend(h);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn requests_carry_tag_space_and_key() {
        let c = TtCodec::new().for_space(512);
        let mut out = Vec::new();
        let k = Key {
            id: 0x0102,
            name: b"",
            tag: tag_of(7, OpKind::Get),
        };
        c.encode_get(k, &mut out);
        assert_eq!(out.len(), c.get.len() + 3, "key 0x0102 as 0xcd + u16");
        assert_eq!(&out[SYNC_AT..SYNC_AT + 4], &14u32.to_be_bytes());
        assert_eq!(&out[SPACE_AT..SPACE_AT + 4], &512u32.to_be_bytes());
        assert_eq!(&out[out.len() - 3..], &[0xcd, 1, 2]);
        let len = u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, out.len() - 5);
        let at = out.len();
        c.encode_set(
            Key {
                id: 9,
                name: b"",
                tag: tag_of(8, OpKind::Set),
            },
            b"wxyz",
            &mut out,
        );
        assert!(out.ends_with(&[0x92, 9, 0xc4, 4, b'w', b'x', b'y', b'z']));
        assert_eq!(&out[at + SYNC_AT..at + SYNC_AT + 4], &17u32.to_be_bytes());
        let len = u32::from_be_bytes(out[at + 1..at + 5].try_into().unwrap()) as usize;
        assert_eq!(len, out.len() - at - 5);
    }

    #[test]
    fn decodes_tagged_replies() {
        let c = TtCodec::new();
        // A GET hit: DATA [[9, bin "abc"]].
        let r = reply(
            0,
            14,
            &[0x81, 0x30, 0x91, 0x92, 0x09, 0xc4, 3, b'a', b'b', b'c'],
        );
        match c.decode(OpKind::Get, &r).unwrap() {
            Decoded::Tagged {
                len,
                reply: Reply::Value(v),
                tag,
            } => {
                assert_eq!((len, tag), (r.len(), 14));
                assert_eq!(&r[v], b"abc");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.reply_tag(&r), Some(14));
        assert_eq!(c.reply_tag(&r[..r.len() - 1]), None);
        // A miss: DATA [].
        let r = reply(0, 2, &[0x81, 0x30, 0x90]);
        assert_eq!(
            c.decode(OpKind::Get, &r),
            Ok(Decoded::Tagged {
                len: r.len(),
                reply: Reply::Nil,
                tag: 2
            })
        );
        // A REPLACE's reply, decoded by its tag whatever the front request was.
        let r = reply(0, 3, &[0x81, 0x30, 0x91, 0x92, 0x09, 0xc4, 1, b'x']);
        assert!(matches!(
            c.decode(OpKind::Get, &r),
            Ok(Decoded::Tagged {
                reply: Reply::Stored,
                tag: 3,
                ..
            })
        ));
        // An error: code 0x8000 | errcode, body {0x31: "msg"}.
        let r = reply(0x8000 | 36, 4, &[0x81, 0x31, 0xa3, b'b', b'a', b'd']);
        assert!(matches!(
            c.decode(OpKind::Get, &r),
            Ok(Decoded::Tagged {
                reply: Reply::ServerError,
                ..
            })
        ));
    }

    #[test]
    fn partial_and_malformed_replies() {
        let c = TtCodec::new();
        let r = reply(
            0,
            2,
            &[0x81, 0x30, 0x91, 0x92, 0x09, 0xc4, 3, b'a', b'b', b'c'],
        );
        assert_incomplete(&c, OpKind::Get, &r);
        assert!(c.decode(OpKind::Get, b"+OK\r\n").is_err());
        assert!(c.decode(OpKind::Get, b"Tarantool 2.6.0 (Binary)").is_err());
        let r = reply(0, 2, &[0x81, 0x30, 0x91, 0x92, 0x09, 0x05]);
        assert!(c.decode(OpKind::Get, &r).is_err(), "value not binary");
        let r = reply(0, 2, &[0x81, 0x30, 0x91, 0x91, 0x09]);
        assert!(c.decode(OpKind::Get, &r).is_err(), "tuple without value");
        // Found by fuzzing: a body cut short by its frame's length was read
        // on into the bytes after the frame (the next reply).
        let mut r = reply(
            0,
            2,
            &[0x81, 0x30, 0x91, 0x92, 0x09, 0xc4, 3, b'a', b'b', b'c'],
        );
        r[4] -= 2;
        assert!(c.decode(OpKind::Get, &r).is_err(), "value past its frame");
    }
}
