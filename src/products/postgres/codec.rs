//! PostgreSQL codec: the key-value workload as prepared statements over the v3
//! wire protocol, framed with the `postgres-protocol` crate.
//!
//! Hot path: a GET is `Bind(kvlab_get, k) Execute Sync`, a SET the same with the
//! upsert; both are copied from templates built once by `postgres-protocol` with
//! the key (and value) patched in, so a request costs a memcpy. Each request ends
//! with its own Sync, so up to P requests can be in flight on one connection.
//! The other [`QueryMode`]s are templates too: `Parse Bind Execute Sync` on the
//! unnamed statement, or one simple `Query` with the key's digits and the value
//! patched into the SQL text.
//! Set-up (start-up, authentication, preparing, simple queries, COPY) is in
//! [`super::conn`].

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use postgres_protocol::IsNull;
use postgres_protocol::message::{backend, frontend};

use crate::driver::wire::{
    Codec, Decoded, Key, Malformed, Reply, batch_read_in, declared_by_messages,
};
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
    simple: bool,
}

#[derive(Debug)]
struct Templates {
    get: Vec<u8>,
    get_key: usize,
    set: Vec<u8>,
    set_key: usize,
    set_val: usize,
    vlen: usize,
    /// Offsets of the SET's length fields (i32) that count the value's
    /// bytes: its message's, and in binary mode the value's own.
    set_lens: Vec<usize>,
}

enum Param {
    Key,
    Value(usize),
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("key placeholder present in template")
}

impl Templates {
    /// The GET and SET messages `get` and `set`, each with its key where the
    /// placeholder `key` first stands, the SET's value of `vlen` bytes
    /// `value_after` bytes after its key.
    fn new(get: Vec<u8>, set: Vec<u8>, key: &[u8], value_after: usize, vlen: usize) -> Templates {
        let (get_key, set_key) = (find(&get, key), find(&set, key));
        let set_val = set_key + value_after;
        // The message holding the value: its length follows its tag.
        let mut at = 0;
        while at + 5 <= set.len() {
            let len = i32::from_be_bytes([set[at + 1], set[at + 2], set[at + 3], set[at + 4]]);
            let end = at + 1 + len as usize;
            if set_val < end {
                break;
            }
            at = end;
        }
        Templates {
            get,
            get_key,
            set,
            set_key,
            set_val,
            vlen,
            set_lens: vec![at + 1],
        }
    }
}

/// How requests reach the server (`--query-mode`, as pgbench's `-M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryMode {
    /// Named statements prepared once per connection; each request is
    /// `Bind Execute Sync`.
    Prepared,
    /// The unnamed statement: each request is `Parse Bind Execute Sync` (what
    /// a transaction-pooling pooler passes on to any server connection).
    Extended,
    /// The simple query protocol: each request is one `Query` with the key
    /// (and value) written into the SQL text; values come back as text.
    Simple,
}

impl QueryMode {
    /// The modes by name, the default first.
    pub const NAMES: [&'static str; 3] = ["prepared", "extended", "simple"];

    /// The mode called `name` (`None`: the default, prepared).
    pub fn named(name: Option<&str>) -> Option<QueryMode> {
        match name.unwrap_or("prepared") {
            "prepared" => Some(QueryMode::Prepared),
            "extended" => Some(QueryMode::Extended),
            "simple" => Some(QueryMode::Simple),
            _ => None,
        }
    }
}

/// The simple-mode point select; `encode(v, 'escape')` gives the value's own
/// bytes as text for the letters and digits kvlab's values are made of (any
/// other byte would come back escaped and fail verification).
const SIMPLE_GET: &str = "SELECT encode(v, 'escape') FROM kvlab_kv WHERE k = ";
/// How `pg_stat_statements` records `SIMPLE_GET` (constants replaced).
pub const SIMPLE_GET_STAT: &str = "SELECT encode(v, $1) FROM kvlab_kv WHERE k = $2";
/// Decimal digits of a key in simple mode (leading zeros; `i64::MAX` has 19).
const KEY_DIGITS: usize = 19;

/// Writes `v` as exactly `out.len()` decimal digits (leading zeros).
#[inline]
fn put_digits(out: &mut [u8], mut v: u64) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

impl PgCodec {
    /// Templates for values of `value_size` bytes, prepared statements.
    pub fn new(value_size: usize) -> PgCodec {
        PgCodec::with_mode(value_size, QueryMode::Prepared)
    }

    /// The codec for values of `value_size` bytes in `c`'s query mode
    /// (prepared when it names none; the mode was checked with the plan).
    pub fn for_connector(value_size: usize, c: &crate::driver::Connector) -> PgCodec {
        let mode = QueryMode::named(c.query_mode.map(|m| m.name())).unwrap_or(QueryMode::Prepared);
        PgCodec::with_mode(value_size, mode)
    }

    /// Writes key `id` at the front of `out`: digits in simple mode, else a
    /// binary `bigint`.
    #[inline]
    fn put_key(&self, out: &mut [u8], id: u64) {
        if self.simple {
            put_digits(&mut out[..KEY_DIGITS], id);
        } else {
            out[..8].copy_from_slice(&(id as i64).to_be_bytes());
        }
    }

    /// Templates for values of `value_size` bytes in query mode `mode`.
    pub fn with_mode(value_size: usize, mode: QueryMode) -> PgCodec {
        let t = match mode {
            QueryMode::Simple => simple_templates(value_size),
            QueryMode::Prepared | QueryMode::Extended => {
                bound_templates(value_size, mode == QueryMode::Extended)
            }
        };
        PgCodec {
            t: Arc::new(t),
            simple: mode == QueryMode::Simple,
        }
    }
}

/// `[Parse] Bind Execute Sync` templates with the key and value as binary
/// parameters.
fn bound_templates(value_size: usize, unnamed: bool) -> Templates {
    let ser = |p: Param,
               buf: &mut BytesMut|
     -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match p {
            Param::Key => buf.put_i64(SENTINEL),
            Param::Value(n) => buf.put_bytes(0xab, n),
        }
        Ok(IsNull::No)
    };
    let (get_name, set_name) = if unnamed {
        ("", "")
    } else {
        ("kvlab_get", "kvlab_set")
    };
    let mut b = BytesMut::new();
    if unnamed {
        frontend::parse("", GET_SQL, [INT8_OID], &mut b).expect("parse encodes");
    }
    let bound = frontend::bind("", get_name, [1], [Param::Key], ser, [1], &mut b);
    assert!(bound.is_ok(), "bind encodes");
    frontend::execute("", 0, &mut b).expect("execute encodes");
    frontend::sync(&mut b);
    let get = b.to_vec();
    let mut b = BytesMut::new();
    if unnamed {
        frontend::parse("", SET_SQL, [INT8_OID, BYTEA_OID], &mut b).expect("parse encodes");
    }
    let params = [Param::Key, Param::Value(value_size)];
    let bound = frontend::bind("", set_name, [1, 1], params, ser, [1], &mut b);
    assert!(bound.is_ok(), "bind encodes");
    frontend::execute("", 0, &mut b).expect("execute encodes");
    frontend::sync(&mut b);
    // The value follows the key's 8 bytes and its own length.
    let mut t = Templates::new(get, b.to_vec(), &SENTINEL.to_be_bytes(), 8 + 4, value_size);
    t.set_lens.push(t.set_val - 4);
    debug_assert!(
        t.set[t.set_val..t.set_val + value_size]
            .iter()
            .all(|&x| x == 0xab)
    );
    t
}

/// `Query` templates: the key as [`KEY_DIGITS`] digits, the value as a string
/// literal (kvlab's values are letters and digits, so it needs no escaping).
fn simple_templates(value_size: usize) -> Templates {
    let zeros = "0".repeat(KEY_DIGITS);
    let get_sql = format!("{SIMPLE_GET}{zeros}");
    let set_sql = SET_SQL.replace(
        "($1, $2)",
        &format!("({zeros}, '{}')", "\u{1}".repeat(value_size)),
    );
    let message = |sql: &str| {
        let mut b = BytesMut::new();
        frontend::query(sql, &mut b).expect("query encodes");
        b.to_vec()
    };
    // The value's quoted literal follows the key's digits and `, '`.
    let (get, set) = (message(&get_sql), message(&set_sql));
    Templates::new(get, set, zeros.as_bytes(), KEY_DIGITS + 3, value_size)
}

impl Codec for PgCodec {
    /// Every backend message is a type byte and a length that counts itself.
    #[inline]
    fn declared_len(&self, buf: &[u8]) -> Option<usize> {
        declared_by_messages(buf, 5, |h| {
            1 + u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize
        })
    }

    #[inline]
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>) {
        let t = &*self.t;
        let at = out.len() + t.get_key;
        out.extend_from_slice(&t.get);
        self.put_key(&mut out[at..], key.id);
    }

    #[inline]
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>) {
        let t = &*self.t;
        let base = out.len();
        out.extend_from_slice(&t.set);
        self.put_key(&mut out[base + t.set_key..], key.id);
        if value.len() == t.vlen {
            out[base + t.set_val..base + t.set_val + t.vlen].copy_from_slice(value);
            return;
        }
        // A value of another size (sizes by key): the template's tail after
        // it, and the lengths that count it patched.
        out.truncate(base + t.set_val);
        out.extend_from_slice(value);
        out.extend_from_slice(&t.set[t.set_val + t.vlen..]);
        let delta = value.len() as i64 - t.vlen as i64;
        for &at in &t.set_lens {
            let f = &mut out[base + at..base + at + 4];
            let len = i64::from(i32::from_be_bytes([f[0], f[1], f[2], f[3]])) + delta;
            f.copy_from_slice(&(len as i32).to_be_bytes());
        }
    }

    batch_read_in!(super::batch);

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
            if !b"12TCNSAnDEZ".contains(&header.tag()) {
                return Err(Malformed("unexpected PostgreSQL message"));
            }
            let end = pos + 1 + header.len() as usize;
            if buf.len() < end {
                return Ok(Decoded::Incomplete);
            }
            let body = &buf[pos + 5..end];
            match header.tag() {
                b'1' | b'2' | b'T' | b'C' | b'N' | b'S' | b'A' | b'n' => {}
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
    use crate::driver::wire::testing::{assert_incomplete, assert_value, encoded, frame, key};

    #[test]
    fn message_headers_declare_their_lengths() {
        let pg = PgCodec::new(4);
        // BindComplete whole, then a DataRow declaring 2 GiB.
        let buf = b"2\0\0\0\x04D\x7f\xff\xff\xff";
        assert_eq!(pg.declared_len(buf), Some(5 + 1 + 0x7fff_ffff));
        assert_eq!(pg.declared_len(&buf[..7]), None);
        assert_eq!(pg.declared_len(b"2\0\0\0\x04"), None);
    }

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
        let (get, set) = encoded(&PgCodec::new(4), key(258, b""), b"wxyz");
        assert_eq!(get[0], b'B');
        assert!(get.windows(8).any(|w| w == 258i64.to_be_bytes()));
        assert!(get.ends_with(&[b'S', 0, 0, 0, 4]));
        assert!(
            set.windows(12)
                .any(|w| w[..8] == 258i64.to_be_bytes() && w[8..] == 4i32.to_be_bytes())
        );
        assert!(set.windows(4).any(|w| w == b"wxyz"));
    }

    #[test]
    fn decodes_replies() {
        let pg = PgCodec::new(3);
        assert_value(&pg, &get_reply(Some(b"abc")), b"abc");
        let r = get_reply(None);
        assert_eq!(pg.decode(OpKind::Get, &r), frame(r.len(), Reply::Nil));
        let mut r = msg(b'E', b"SERROR\0Mboom\0\0");
        r.extend(msg(b'Z', b"I"));
        assert_eq!(
            pg.decode(OpKind::Set, &r),
            frame(r.len(), Reply::ServerError)
        );
        let mut r = msg(b'2', b"");
        r.extend(msg(b'C', b"INSERT 0 1\0"));
        r.extend(msg(b'Z', b"I"));
        assert_eq!(pg.decode(OpKind::Set, &r), frame(r.len(), Reply::Stored));
    }

    #[test]
    fn other_modes_carry_key_and_value() {
        let key = |id| key(id, b"");
        let pg = PgCodec::with_mode(4, QueryMode::Simple);
        let mut out = Vec::new();
        pg.encode_get(key(1234), &mut out);
        assert_eq!(out[0], b'Q');
        let sql = std::str::from_utf8(&out[5..out.len() - 1]).unwrap();
        assert_eq!(sql, format!("{SIMPLE_GET}0000000000000001234"));
        out.clear();
        pg.encode_set(key(9), b"wxyz", &mut out);
        let sql = std::str::from_utf8(&out[5..out.len() - 1]).unwrap();
        assert_eq!(
            sql,
            SET_SQL.replace("($1, $2)", "(0000000000000000009, 'wxyz')")
        );
        let pg = PgCodec::with_mode(4, QueryMode::Extended);
        out.clear();
        pg.encode_get(key(258), &mut out);
        assert_eq!(out[0], b'P');
        assert!(out.windows(GET_SQL.len()).any(|w| w == GET_SQL.as_bytes()));
        assert!(out.windows(8).any(|w| w == 258i64.to_be_bytes()));
        assert!(out.ends_with(&[b'S', 0, 0, 0, 4]));
        // A simple query's reply: RowDescription, DataRow, CommandComplete.
        let mut r = msg(b'1', b"");
        r.extend(msg(b'T', b"\0\x01encode\0"));
        r.extend(get_reply(Some(b"abc")));
        assert!(matches!(
            pg.decode(OpKind::Get, &r),
            Ok(Decoded::Frame {
                reply: Reply::Value(_),
                ..
            })
        ));
    }

    #[test]
    fn partial_and_malformed_replies() {
        let pg = PgCodec::new(3);
        assert_incomplete(&pg, OpKind::Get, &get_reply(Some(b"abc")));
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
