//! PostgreSQL driver: the key-value workload as prepared statements over the v3
//! wire protocol, framed with the `postgres-protocol` crate.
//!
//! Hot path: a GET is `Bind(kvlab_get, k) Execute Sync`, a SET the same with the
//! upsert; both are copied from templates built once by `postgres-protocol` with
//! the key (and value) patched in, so a request costs a memcpy. Each request ends
//! with its own Sync, so up to P requests can be in flight on one connection.
//! Set-up (start-up, authentication, preparing, simple queries, COPY) is blocking.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::{backend, frontend};

use super::{Codec, Decoded, Key, Malformed, Reply};
use crate::workload::{OpKind, Values};

/// kvlab's table.
pub const TABLE: &str = "kvlab_kv";
/// The prepared point select.
pub const GET_SQL: &str = "SELECT v FROM kvlab_kv WHERE k = $1";
/// The prepared upsert.
pub const SET_SQL: &str =
    "INSERT INTO kvlab_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v";
/// Marker written as the table's comment; kvlab touches no table without it.
pub const MARK: &str = "kvlab key-value table";

const SENTINEL: i64 = 0x7f6b_766c_6162_5f31;
const INT8_OID: u32 = 20;
const BYTEA_OID: u32 = 17;

/// The PostgreSQL codec: request templates for one value size.
#[derive(Clone, Debug)]
pub struct Postgres {
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

impl Postgres {
    /// Templates for values of `value_size` bytes.
    pub fn new(value_size: usize) -> Postgres {
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
        Postgres {
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

impl Codec for Postgres {
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

/// A blocking connection for set-up: start-up, authentication, simple queries,
/// preparing kvlab's statements and COPY.
pub struct PgConn {
    stream: TcpStream,
    buf: BytesMut,
    /// `server_version` as reported at start-up.
    pub server_version: String,
}

/// An error the server reported, or an I/O failure, as one line.
fn server_error(body: &backend::ErrorResponseBody) -> io::Error {
    let mut msg = String::new();
    let mut code = String::new();
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'M' => msg = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    let kind = match code.as_str() {
        "28P01" | "28000" => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{msg} (SQLSTATE {code})"))
}

impl PgConn {
    /// Opens a session on `stream` as `user` in `database` (trust, password,
    /// MD5 and SCRAM-SHA-256 authentication).
    pub fn start(
        stream: TcpStream,
        user: &str,
        password: Option<&str>,
        database: &str,
    ) -> io::Result<PgConn> {
        let mut c = PgConn {
            stream,
            buf: BytesMut::with_capacity(8192),
            server_version: String::new(),
        };
        let mut out = BytesMut::new();
        let params = [
            ("user", user),
            ("database", database),
            ("application_name", "kvlab"),
            ("client_encoding", "UTF8"),
        ];
        frontend::startup_message(params.iter().copied(), &mut out)?;
        c.stream.write_all(&out)?;
        let need_password = || {
            password.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the server asks for a password and the URL has none",
                )
            })
        };
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            out.clear();
            match c.read_message()? {
                backend::Message::AuthenticationOk => {}
                backend::Message::AuthenticationCleartextPassword => {
                    frontend::password_message(need_password()?.as_bytes(), &mut out)?;
                }
                backend::Message::AuthenticationMd5Password(b) => {
                    let h = md5_hash(user.as_bytes(), need_password()?.as_bytes(), b.salt());
                    frontend::password_message(h.as_bytes(), &mut out)?;
                }
                backend::Message::AuthenticationSasl(b) => {
                    let mut mechs = b.mechanisms();
                    let mut ok = false;
                    while let Some(m) = mechs.next()? {
                        ok |= m == sasl::SCRAM_SHA_256;
                    }
                    if !ok {
                        return Err(io::Error::other(
                            "the server offers no SCRAM-SHA-256 authentication",
                        ));
                    }
                    let s = sasl::ScramSha256::new(
                        need_password()?.as_bytes(),
                        sasl::ChannelBinding::unsupported(),
                    );
                    frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut out)?;
                    scram = Some(s);
                }
                backend::Message::AuthenticationSaslContinue(b) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| io::Error::other("unexpected SASL message"))?;
                    s.update(b.data())?;
                    frontend::sasl_response(s.message(), &mut out)?;
                }
                backend::Message::AuthenticationSaslFinal(b) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| io::Error::other("unexpected SASL message"))?;
                    s.finish(b.data())?;
                }
                backend::Message::ParameterStatus(p) => {
                    if p.name()? == "server_version" {
                        c.server_version = p.value()?.to_string();
                    }
                }
                backend::Message::BackendKeyData(_) | backend::Message::NoticeResponse(_) => {}
                backend::Message::ErrorResponse(e) => return Err(server_error(&e)),
                backend::Message::ReadyForQuery(_) => return Ok(c),
                _ => {
                    return Err(io::Error::other(
                        "unsupported authentication method or unexpected message",
                    ));
                }
            }
            if !out.is_empty() {
                c.stream.write_all(&out)?;
            }
        }
    }

    fn read_message(&mut self) -> io::Result<backend::Message> {
        let mut chunk = [0u8; 16384];
        loop {
            if self.server_version.is_empty()
                && !self.buf.is_empty()
                && !b"REvNSK".contains(&self.buf[0])
            {
                let shown =
                    String::from_utf8_lossy(&self.buf[..self.buf.len().min(40)]).into_owned();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not a PostgreSQL reply: {:?}", shown.trim_end()),
                ));
            }
            if let Some(m) = backend::Message::parse(&mut self.buf)? {
                return Ok(m);
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Runs `sql` with the simple query protocol; returns the rows as text.
    pub fn query(&mut self, sql: &str) -> io::Result<Vec<Vec<Option<String>>>> {
        let mut out = BytesMut::new();
        frontend::query(sql, &mut out)?;
        self.stream.write_all(&out)?;
        let mut rows = Vec::new();
        let mut err = None;
        loop {
            match self.read_message()? {
                backend::Message::DataRow(r) => {
                    let buf = r.buffer();
                    let mut row = Vec::new();
                    let mut ranges = r.ranges();
                    while let Some(range) = ranges.next()? {
                        row.push(range.map(|x| String::from_utf8_lossy(&buf[x]).into_owned()));
                    }
                    rows.push(row);
                }
                backend::Message::ErrorResponse(e) => err = Some(server_error(&e)),
                backend::Message::CopyInResponse(_) => {
                    return Err(io::Error::other("unexpected COPY in a simple query"));
                }
                backend::Message::ReadyForQuery(_) => return err.map_or(Ok(rows), Err),
                _ => {}
            }
        }
    }

    /// The first column of the first row of `sql`.
    pub fn query_one(&mut self, sql: &str) -> io::Result<Option<String>> {
        Ok(self
            .query(sql)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten()))
    }

    /// Prepares kvlab's GET and SET statements on this connection.
    pub fn prepare_kv(&mut self) -> io::Result<()> {
        let mut out = BytesMut::new();
        frontend::parse("kvlab_get", GET_SQL, [INT8_OID], &mut out)?;
        frontend::parse("kvlab_set", SET_SQL, [INT8_OID, BYTEA_OID], &mut out)?;
        frontend::sync(&mut out);
        self.stream.write_all(&out)?;
        let mut err = None;
        loop {
            match self.read_message()? {
                backend::Message::ErrorResponse(e) => err = Some(server_error(&e)),
                backend::Message::ReadyForQuery(_) => return err.map_or(Ok(()), Err),
                _ => {}
            }
        }
    }

    /// Loads keys `start..end` with `COPY … FROM STDIN (FORMAT binary)`, adding
    /// each row to `done` as it is sent.
    /// Stops early (with CopyFail) when `stop` is set.
    pub fn copy_in(
        &mut self,
        values: &Values,
        start: u64,
        end: u64,
        done: &AtomicU64,
        stop: &AtomicBool,
    ) -> io::Result<()> {
        let mut out = BytesMut::new();
        frontend::query("COPY kvlab_kv (k, v) FROM STDIN (FORMAT binary)", &mut out)?;
        self.stream.write_all(&out)?;
        loop {
            match self.read_message()? {
                backend::Message::CopyInResponse(_) => break,
                backend::Message::ErrorResponse(e) => {
                    let err = server_error(&e);
                    self.wait_ready()?;
                    return Err(err);
                }
                _ => {}
            }
        }
        let mut data = Vec::with_capacity(1 << 20);
        data.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        data.extend_from_slice(&[0; 8]); // flags, header extension length
        let mut pending = 0;
        for k in start..end {
            data.extend_from_slice(&2i16.to_be_bytes());
            data.extend_from_slice(&8i32.to_be_bytes());
            data.extend_from_slice(&(k as i64).to_be_bytes());
            data.extend_from_slice(&(values.size() as i32).to_be_bytes());
            values.write(k, &mut data);
            pending += 1;
            if data.len() >= 1 << 20 {
                if stop.load(Ordering::Relaxed) {
                    out.clear();
                    frontend::copy_fail("interrupted", &mut out)?;
                    self.stream.write_all(&out)?;
                    let _ = self.wait_ready();
                    return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
                }
                self.send_copy_data(&data, &mut out)?;
                data.clear();
                done.fetch_add(pending, Ordering::Relaxed);
                pending = 0;
            }
        }
        data.extend_from_slice(&(-1i16).to_be_bytes());
        self.send_copy_data(&data, &mut out)?;
        done.fetch_add(pending, Ordering::Relaxed);
        out.clear();
        frontend::copy_done(&mut out);
        self.stream.write_all(&out)?;
        self.wait_ready()
    }

    fn send_copy_data(&mut self, data: &[u8], out: &mut BytesMut) -> io::Result<()> {
        out.clear();
        frontend::CopyData::new(data)?.write(out);
        self.stream.write_all(out)
    }

    fn wait_ready(&mut self) -> io::Result<()> {
        let mut err = None;
        loop {
            match self.read_message()? {
                backend::Message::ErrorResponse(e) => err = Some(server_error(&e)),
                backend::Message::ReadyForQuery(_) => return err.map_or(Ok(()), Err),
                _ => {}
            }
        }
    }

    /// Sets read and write timeouts of the underlying socket.
    pub fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.stream.set_read_timeout(t)?;
        self.stream.set_write_timeout(t)
    }

    /// The socket, for the engine once set-up is done.
    pub fn into_stream(self) -> TcpStream {
        self.stream
    }
}

/// Quotes `s` as an SQL string literal.
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
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
        let pg = Postgres::new(4);
        let mut out = Vec::new();
        pg.encode_get(Key { id: 258, name: b"" }, &mut out);
        assert_eq!(out[0], b'B');
        assert!(out.windows(8).any(|w| w == 258i64.to_be_bytes()));
        assert!(out.ends_with(&[b'S', 0, 0, 0, 4]));
        out.clear();
        pg.encode_set(Key { id: 7, name: b"" }, b"wxyz", &mut out);
        assert!(
            out.windows(12)
                .any(|w| w[..8] == 7i64.to_be_bytes() && w[8..] == 4i32.to_be_bytes())
        );
        assert!(out.windows(4).any(|w| w == b"wxyz"));
    }

    #[test]
    fn decodes_replies() {
        let pg = Postgres::new(3);
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
        let pg = Postgres::new(3);
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
