//! PostgreSQL codec: the key-value workload as prepared statements over the v3
//! wire protocol, framed with the `postgres-protocol` crate.
//!
//! Hot path: a GET is `Bind(kvlab_get, k) Execute Sync`, a SET the same with the
//! upsert; both are copied from templates built once by `postgres-protocol` with
//! the key (and value) patched in, so a request costs a memcpy. Each request ends
//! with its own Sync, so up to P requests can be in flight on one connection.
//! Set-up (start-up, authentication, preparing, simple queries, COPY) is in
//! [`super::conn`].

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use postgres_protocol::IsNull;
use postgres_protocol::message::{backend, frontend};

use crate::wire::{Codec, Decoded, Key, Malformed, Reply};
use crate::workload::OpKind;

/// The prepared point select.
pub const GET_SQL: &str = "SELECT v FROM kvlab_kv WHERE k = $1";
/// The prepared upsert.
pub const SET_SQL: &str =
    "INSERT INTO kvlab_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v";

const SENTINEL: i64 = 0x7f6b_766c_6162_5f31;
/// Type id of `bigint`.
pub(super) const INT8_OID: u32 = 20;
/// Type id of `bytea`.
pub(super) const BYTEA_OID: u32 = 17;

/// The PostgreSQL codec: request templates for one value size.
#[derive(Clone, Debug)]
pub struct PgCodec {
    t: Arc<Templates>,
}

#[derive(Debug)]
struct Templates {
    get: Vec<u8>,
    get_key: usize,
    set: Vec<u8>,
    set_key: usize,
    set_val: usize,
    vlen: usize,
}

enum Param {
    Key,
    Value(usize),
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("sentinel present in template")
}

impl PgCodec {
    /// Templates for values of `value_size` bytes.
    pub fn new(value_size: usize) -> PgCodec {
        let ser = |p: Param,
                   buf: &mut BytesMut|
         -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
            match p {
                Param::Key => buf.put_i64(SENTINEL),
                Param::Value(n) => buf.put_bytes(0xab, n),
            }
            Ok(IsNull::No)
        };
        let mut b = BytesMut::new();
        let bound = frontend::bind("", "kvlab_get", [1], [Param::Key], ser, [1], &mut b);
        assert!(bound.is_ok(), "bind encodes");
        frontend::execute("", 0, &mut b).expect("execute encodes");
        frontend::sync(&mut b);
        let get = b.to_vec();
        let get_key = find(&get, &SENTINEL.to_be_bytes());
        let mut b = BytesMut::new();
        let params = [Param::Key, Param::Value(value_size)];
        let bound = frontend::bind("", "kvlab_set", [1, 1], params, ser, [1], &mut b);
        assert!(bound.is_ok(), "bind encodes");
        frontend::execute("", 0, &mut b).expect("execute encodes");
        frontend::sync(&mut b);
        let set = b.to_vec();
        let set_key = find(&set, &SENTINEL.to_be_bytes());
        let set_val = set_key + 8 + 4;
        debug_assert!(
            set[set_val..set_val + value_size]
                .iter()
                .all(|&x| x == 0xab)
        );
        PgCodec {
            t: Arc::new(Templates {
                get,
                get_key,
                set,
                set_key,
                set_val,
                vlen: value_size,
            }),
        }
    }
}

impl Codec for PgCodec {
    #[inline]
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>) {
        let t = &*self.t;
        let at = out.len() + t.get_key;
        out.extend_from_slice(&t.get);
        out[at..at + 8].copy_from_slice(&(key.id as i64).to_be_bytes());
    }

    #[inline]
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>) {
        let t = &*self.t;
        let base = out.len();
        out.extend_from_slice(&t.set);
        out[base + t.set_key..base + t.set_key + 8].copy_from_slice(&(key.id as i64).to_be_bytes());
        let n = value.len().min(t.vlen);
        out[base + t.set_val..base + t.set_val + n].copy_from_slice(&value[..n]);
    }

    #[inline]
    fn decode(&self, op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
        let mut pos = 0;
        let mut value = None;
        let mut error = false;
        loop {
            let header = match backend::Header::parse(&buf[pos..]) {
                Ok(Some(h)) => h,
                Ok(None) => return Ok(Decoded::Incomplete),
                Err(_) => return Err(Malformed("bad PostgreSQL message length")),
            };
            if !b"2CNSAnDEZ".contains(&header.tag()) {
                return Err(Malformed("unexpected PostgreSQL message"));
            }
            let end = pos + 1 + header.len() as usize;
            if buf.len() < end {
                return Ok(Decoded::Incomplete);
            }
            let body = &buf[pos + 5..end];
            match header.tag() {
                b'2' | b'C' | b'N' | b'S' | b'A' | b'n' => {}
                b'D' => {
                    // Int16 column count, then Int32 length (-1: NULL) and bytes.
                    if body.len() < 6 || body[..2] != [0, 1] {
                        return Err(Malformed("DataRow without exactly one column"));
                    }
                    let len = i32::from_be_bytes([body[2], body[3], body[4], body[5]]);
                    let start = pos + 5 + 6;
                    let len = usize::try_from(len).unwrap_or(0);
                    if start + len > end {
                        return Err(Malformed("DataRow value past its message"));
                    }
                    value = Some(start..start + len);
                }
                b'E' => error = true,
                b'Z' => {
                    let reply = match (error, op) {
                        (true, _) => Reply::ServerError,
                        (false, OpKind::Get) => value.map_or(Reply::Nil, Reply::Value),
                        (false, OpKind::Set) => Reply::Stored,
                    };
                    return Ok(Decoded::Frame { len: end, reply });
                }
                _ => return Err(Malformed("unexpected PostgreSQL message")),
            }
            pos = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn get_reply(value: Option<&[u8]>) -> Vec<u8> {
        let mut r = msg(b'2', b"");
        if let Some(v) = value {
            let mut body = vec![0, 1];
            body.extend_from_slice(&(v.len() as i32).to_be_bytes());
            body.extend_from_slice(v);
            r.extend(msg(b'D', &body));
        }
        r.extend(msg(b'C', b"SELECT 1\0"));
        r.extend(msg(b'Z', b"I"));
        r
    }

    #[test]
    fn templates_carry_key_and_value() {
        let pg = PgCodec::new(4);
        let mut out = Vec::new();
        pg.encode_get(
            Key {
                id: 258,
                name: b"",
                tag: 0,
            },
            &mut out,
        );
        assert_eq!(out[0], b'B');
        assert!(out.windows(8).any(|w| w == 258i64.to_be_bytes()));
        assert!(out.ends_with(&[b'S', 0, 0, 0, 4]));
        out.clear();
        pg.encode_set(
            Key {
                id: 7,
                name: b"",
                tag: 0,
            },
            b"wxyz",
            &mut out,
        );
        assert!(
            out.windows(12)
                .any(|w| w[..8] == 7i64.to_be_bytes() && w[8..] == 4i32.to_be_bytes())
        );
        assert!(out.windows(4).any(|w| w == b"wxyz"));
    }

    #[test]
    fn decodes_replies() {
        let pg = PgCodec::new(3);
        let r = get_reply(Some(b"abc"));
        match pg.decode(OpKind::Get, &r).unwrap() {
            Decoded::Frame {
                len,
                reply: Reply::Value(v),
            } => {
                assert_eq!(len, r.len());
                assert_eq!(&r[v], b"abc");
            }
            other => panic!("{other:?}"),
        }
        let r = get_reply(None);
        assert_eq!(
            pg.decode(OpKind::Get, &r),
            Ok(Decoded::Frame {
                len: r.len(),
                reply: Reply::Nil
            })
        );
        let mut r = msg(b'E', b"SERROR\0Mboom\0\0");
        r.extend(msg(b'Z', b"I"));
        assert_eq!(
            pg.decode(OpKind::Set, &r),
            Ok(Decoded::Frame {
                len: r.len(),
                reply: Reply::ServerError
            })
        );
        let mut r = msg(b'2', b"");
        r.extend(msg(b'C', b"INSERT 0 1\0"));
        r.extend(msg(b'Z', b"I"));
        assert_eq!(
            pg.decode(OpKind::Set, &r),
            Ok(Decoded::Frame {
                len: r.len(),
                reply: Reply::Stored
            })
        );
    }

    #[test]
    fn partial_and_malformed_replies() {
        let pg = PgCodec::new(3);
        let r = get_reply(Some(b"abc"));
        for n in 0..r.len() {
            assert_eq!(
                pg.decode(OpKind::Get, &r[..n]),
                Ok(Decoded::Incomplete),
                "{n}"
            );
        }
        assert!(pg.decode(OpKind::Get, b"+OK\r\n\0\0\0\0").is_err());
        assert!(
            pg.decode(OpKind::Get, &msg(b'D', &[0, 2, 0, 0, 0, 0]))
                .is_err()
        );
        assert!(
            pg.decode(OpKind::Get, &[b'Z', 0, 0, 0, 1]).is_err(),
            "length below 4"
        );
    }
}
