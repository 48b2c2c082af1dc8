//! MySQL/MariaDB driver: the key-value workload as prepared statements over the
//! client/server protocol. Set-up (handshake, authentication, prepare, text
//! queries) uses the `mysql_common` crate's packets; the hot path copies a
//! `COM_STMT_EXECUTE` template with the statement id and key patched in, and walks
//! the binary result set by packet headers. The protocol answers one command at a
//! time, so the engine runs MySQL connections at pipeline 1.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use mysql_common::auth::plugins::caching_sha2_password::scramble_sha256;
use mysql_common::auth::plugins::mysql_native_password::scramble_native;
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{
    AuthPlugin, AuthSwitchRequest, ErrPacket, HandshakePacket, HandshakeResponse, StmtPacket,
};
use mysql_common::proto::{MyDeserialize, MySerialize};

use super::{Codec, Decoded, Key, Malformed, Reply};
use crate::workload::{OpKind, Values};

/// The prepared point select.
pub const GET_SQL: &str = "SELECT v FROM kvlab_kv WHERE k = ?";
/// The prepared upsert.
pub const SET_SQL: &str =
    "INSERT INTO kvlab_kv (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)";
/// Largest value the MySQL driver sends (one protocol packet).
pub const MAX_VALUE: usize = (1 << 24) - 64;

/// The MySQL codec: `COM_STMT_EXECUTE` templates for one value size.
#[derive(Clone, Debug)]
pub struct Mysql {
    get: Vec<u8>,
    set: Vec<u8>,
    vlen: usize,
}

const TYPE_LONGLONG: u8 = 0x08;
const TYPE_BLOB: u8 = 0xfc;

fn lenenc(n: usize, out: &mut Vec<u8>) {
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

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(payload.len() + 4);
    p.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    p.push(seq);
    p.extend_from_slice(payload);
    p
}

/// Offsets inside the templates: statement id at 5, key at the end of the
/// parameter types (GET) or before the value (SET).
const STMT_ID_AT: usize = 4 + 1;

impl Mysql {
    /// Templates for values of `value_size` bytes (at most [`MAX_VALUE`]).
    /// Statement ids are patched per connection by [`Mysql::for_statements`].
    pub fn new(value_size: usize) -> Mysql {
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
        Mysql {
            get: packet(0, &g),
            set: packet(0, &s),
            vlen: value_size,
        }
    }

    /// A copy bound to this connection's statement ids.
    pub fn for_statements(&self, get_id: u32, set_id: u32) -> Mysql {
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

impl Codec for Mysql {
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
        let n = value.len().min(self.vlen);
        let v = out.len() - self.vlen;
        out[v..v + n].copy_from_slice(&value[..n]);
    }

    fn bind(&self, session: &super::Session) -> Self {
        match *session {
            super::Session::MysqlStatements { get, set } => self.for_statements(get, set),
            super::Session::Plain => self.clone(),
        }
    }

    #[inline]
    fn decode(&self, op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed> {
        // Walk whole packets; any packet not yet complete means: read more.
        let next = |pos: usize| -> Option<(usize, &[u8])> {
            let h = buf.get(pos..pos + 4)?;
            let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
            let body = buf.get(pos + 4..pos + 4 + len)?;
            Some((pos + 4 + len, body))
        };
        let is_eof = |b: &[u8]| b.first() == Some(&0xfe) && b.len() < 9;
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
                Some(0xfe) if row.len() < 9 => {
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
                    let (n, skip) = match row.get(2) {
                        Some(&b) if b < 0xfb => (usize::from(b), 1),
                        Some(0xfc) if row.len() >= 5 => {
                            (usize::from(u16::from_le_bytes([row[3], row[4]])), 3)
                        }
                        Some(0xfd) if row.len() >= 6 => (
                            usize::from(row[3])
                                | usize::from(row[4]) << 8
                                | usize::from(row[5]) << 16,
                            4,
                        ),
                        _ => return Err(Malformed("bad length in a MySQL row")),
                    };
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

/// A blocking MySQL/MariaDB connection for set-up.
pub struct MyConn {
    stream: TcpStream,
    caps: CapabilityFlags,
    /// Version string the server sent in its greeting.
    pub server_version: String,
}

fn other(msg: impl Into<String>) -> io::Error {
    io::Error::other(msg.into())
}

fn err_packet(payload: &[u8], caps: CapabilityFlags) -> io::Error {
    // ERR: 0xff, code (2 bytes), then "#" + SQL state (protocol 4.1, not in a
    // greeting), then the message.
    let (code, message) = match ErrPacket::deserialize(caps, &mut ParseBuf(payload)) {
        Ok(ErrPacket::Error(e)) => (e.error_code(), e.message_str().into_owned()),
        _ => {
            let code = payload
                .get(1..3)
                .map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
            let rest = payload.get(3..).unwrap_or_default();
            let rest = if rest.first() == Some(&b'#') {
                rest.get(6..).unwrap_or_default()
            } else {
                rest
            };
            (code, String::from_utf8_lossy(rest).into_owned())
        }
    };
    let kind = match code {
        1045 | 1044 | 1698 => io::ErrorKind::PermissionDenied,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{message} (error {code})"))
}

fn scramble(plugin: &[u8], nonce: &[u8], password: &str) -> io::Result<Vec<u8>> {
    if password.is_empty() {
        return Ok(Vec::new());
    }
    match plugin {
        b"mysql_native_password" => Ok(scramble_native(nonce, password.as_bytes())
            .map(|s| s.to_vec())
            .unwrap_or_default()),
        b"caching_sha2_password" => {
            let nonce: &[u8; 20] = nonce
                .get(..20)
                .and_then(|n| n.try_into().ok())
                .ok_or_else(|| other("short nonce"))?;
            Ok(scramble_sha256(nonce, password.as_bytes())
                .map(|s| s.to_vec())
                .unwrap_or_default())
        }
        b"mysql_clear_password" => {
            let mut p = password.as_bytes().to_vec();
            p.push(0);
            Ok(p)
        }
        other_plugin => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "authentication plugin '{}' is not supported; use mysql_native_password or caching_sha2_password",
                String::from_utf8_lossy(other_plugin)
            ),
        )),
    }
}

impl MyConn {
    fn read_packet(&mut self) -> io::Result<(u8, Vec<u8>)> {
        let mut h = [0u8; 4];
        self.stream.read_exact(&mut h)?;
        let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        let mut body = vec![0; len];
        self.stream.read_exact(&mut body)?;
        Ok((h[3], body))
    }

    /// Connects on `stream`: greeting, authentication, default database.
    pub fn start(
        stream: TcpStream,
        user: &str,
        password: Option<&str>,
        database: &str,
    ) -> io::Result<MyConn> {
        let mut c = MyConn {
            stream,
            caps: CapabilityFlags::empty(),
            server_version: String::new(),
        };
        let (_, greeting) = c.read_packet()?;
        if greeting.first() == Some(&0xff) {
            return Err(err_packet(&greeting, CapabilityFlags::CLIENT_PROTOCOL_41));
        }
        if greeting.first() != Some(&10) {
            let shown = String::from_utf8_lossy(&greeting[..greeting.len().min(30)]).into_owned();
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a MySQL greeting: {shown:?}"),
            ));
        }
        let hs = HandshakePacket::deserialize((), &mut ParseBuf(&greeting)).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad MySQL greeting: {e}"),
            )
        })?;
        let v = String::from_utf8_lossy(hs.server_version_ref()).into_owned();
        // MariaDB prefixes "5.5.5-" for old clients.
        c.server_version = v.strip_prefix("5.5.5-").map(str::to_string).unwrap_or(v);
        let wanted = CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_PLUGIN_AUTH
            | CapabilityFlags::CLIENT_CONNECT_WITH_DB
            | CapabilityFlags::CLIENT_LONG_PASSWORD
            | CapabilityFlags::CLIENT_LONG_FLAG
            | CapabilityFlags::CLIENT_TRANSACTIONS;
        c.caps = wanted & hs.capabilities();
        let plugin = hs
            .auth_plugin_name_ref()
            .unwrap_or(b"mysql_native_password")
            .to_vec();
        let password = password.unwrap_or("");
        let nonce = hs.nonce();
        let data = scramble(&plugin, &nonce, password)?;
        let version = hs.server_version_parsed().unwrap_or((5, 7, 0));
        let resp = HandshakeResponse::new(
            Some(data),
            version,
            Some(user.as_bytes()),
            Some(database.as_bytes()),
            Some(AuthPlugin::from_bytes(&plugin)),
            c.caps,
            None,
            1 << 24,
        );
        let mut body = Vec::new();
        resp.serialize(&mut body);
        c.stream.write_all(&packet(1, &body))?;
        loop {
            let (seq, p) = c.read_packet()?;
            match p.first() {
                Some(0x00) => return Ok(c),
                Some(0xff) => return Err(err_packet(&p, c.caps)),
                Some(0xfe) => {
                    let sw = AuthSwitchRequest::deserialize((), &mut ParseBuf(&p))
                        .map_err(|e| other(format!("bad auth switch: {e}")))?;
                    let name = sw.auth_plugin().as_bytes().to_vec();
                    let data = scramble(&name, sw.plugin_data(), password)?;
                    c.stream.write_all(&packet(seq.wrapping_add(1), &data))?;
                }
                Some(0x01) if p.get(1) == Some(&3) => {} // caching_sha2 fast auth: OK follows
                Some(0x01) => {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        "the server wants caching_sha2_password full authentication, which needs TLS; log in once with the mysql client to cache the password, or use mysql_native_password",
                    ));
                }
                _ => return Err(other("unexpected packet during authentication")),
            }
        }
    }

    /// Runs `sql` (text protocol); returns rows as text.
    pub fn query(&mut self, sql: &str) -> io::Result<Vec<Vec<Option<String>>>> {
        let mut body = vec![0x03];
        body.extend_from_slice(sql.as_bytes());
        self.stream.write_all(&packet(0, &body))?;
        let (_, first) = self.read_packet()?;
        match first.first() {
            Some(0x00) => return Ok(Vec::new()),
            Some(0xff) => return Err(err_packet(&first, self.caps)),
            _ => {}
        }
        let cols = usize::from(first[0]);
        for _ in 0..cols {
            self.read_packet()?;
        }
        self.read_packet()?; // EOF after column definitions
        let mut rows = Vec::new();
        loop {
            let (_, p) = self.read_packet()?;
            if p.first() == Some(&0xfe) && p.len() < 9 {
                return Ok(rows);
            }
            if p.first() == Some(&0xff) {
                return Err(err_packet(&p, self.caps));
            }
            let mut row = Vec::with_capacity(cols);
            let mut i = 0;
            for _ in 0..cols {
                match p.get(i) {
                    Some(0xfb) => {
                        row.push(None);
                        i += 1;
                    }
                    Some(&b) => {
                        let (n, skip) = match b {
                            0xfc => (usize::from(u16::from_le_bytes([p[i + 1], p[i + 2]])), 3),
                            0xfd => (
                                usize::from(p[i + 1])
                                    | usize::from(p[i + 2]) << 8
                                    | usize::from(p[i + 3]) << 16,
                                4,
                            ),
                            0xfe => (
                                u64::from_le_bytes(p[i + 1..i + 9].try_into().unwrap_or_default())
                                    as usize,
                                9,
                            ),
                            b => (usize::from(b), 1),
                        };
                        let v = p
                            .get(i + skip..i + skip + n)
                            .ok_or_else(|| other("short row"))?;
                        row.push(Some(String::from_utf8_lossy(v).into_owned()));
                        i += skip + n;
                    }
                    None => return Err(other("short row")),
                }
            }
            rows.push(row);
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

    fn prepare(&mut self, sql: &str) -> io::Result<u32> {
        let mut body = vec![0x16];
        body.extend_from_slice(sql.as_bytes());
        self.stream.write_all(&packet(0, &body))?;
        let (_, p) = self.read_packet()?;
        if p.first() == Some(&0xff) {
            return Err(err_packet(&p, self.caps));
        }
        let st = StmtPacket::deserialize((), &mut ParseBuf(&p))
            .map_err(|e| other(format!("bad prepare reply: {e}")))?;
        for n in [st.num_params(), st.num_columns()] {
            if n > 0 {
                for _ in 0..=n {
                    self.read_packet()?; // definitions, then EOF
                }
            }
        }
        Ok(st.statement_id())
    }

    /// Prepares kvlab's GET and SET; returns their statement ids.
    pub fn prepare_ids(&mut self) -> io::Result<(u32, u32)> {
        Ok((self.prepare(GET_SQL)?, self.prepare(SET_SQL)?))
    }

    /// Loads keys `start..end` with multi-row INSERTs of about 1 MiB each.
    pub fn insert_rows(
        &mut self,
        values: &Values,
        start: u64,
        end: u64,
        done: &AtomicU64,
        stop: &AtomicBool,
    ) -> io::Result<()> {
        let mut sql = String::with_capacity(1 << 20);
        let mut v = Vec::with_capacity(values.size());
        let mut pending = 0;
        let mut k = start;
        while k < end {
            if stop.load(Ordering::Relaxed) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
            }
            sql.clear();
            sql.push_str("INSERT INTO kvlab_kv (k, v) VALUES ");
            while k < end && sql.len() < 1 << 20 {
                if pending > 0 {
                    sql.push(',');
                }
                v.clear();
                values.write(k, &mut v);
                // Values are ASCII letters and hex digits: no escaping needed.
                sql.push('(');
                sql.push_str(itoa::Buffer::new().format(k));
                sql.push_str(",'");
                sql.push_str(std::str::from_utf8(&v).map_err(|_| other("value is not text"))?);
                sql.push_str("')");
                pending += 1;
                k += 1;
            }
            self.query(&sql)?;
            done.fetch_add(pending, Ordering::Relaxed);
            pending = 0;
        }
        Ok(())
    }

    /// Sets read and write timeouts of the socket.
    pub fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.stream.set_read_timeout(t)?;
        self.stream.set_write_timeout(t)
    }

    /// The socket, for the engine once set-up is done.
    pub fn into_stream(self) -> TcpStream {
        self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let m = Mysql::new(300).for_statements(7, 9);
        let mut out = Vec::new();
        m.encode_get(
            Key {
                id: 0x0102,
                name: b"",
            },
            &mut out,
        );
        assert_eq!(&out[..5], &[22, 0, 0, 0, 0x17]);
        assert_eq!(&out[5..9], &7u32.to_le_bytes());
        assert_eq!(&out[out.len() - 8..], &0x0102i64.to_le_bytes());
        out.clear();
        let v = vec![b'q'; 300];
        m.encode_set(Key { id: 5, name: b"" }, &v, &mut out);
        assert_eq!(&out[5..9], &9u32.to_le_bytes());
        assert_eq!(&out[20..28], &5i64.to_le_bytes());
        assert_eq!(&out[28..31], &[0xfc, 0x2c, 0x01]);
        assert!(out.ends_with(&v));
        let len = usize::from(out[0]) | usize::from(out[1]) << 8;
        assert_eq!(len + 4, out.len());
    }

    #[test]
    fn decodes_result_sets() {
        let m = Mysql::new(3);
        let r = get_reply(Some(b"abc"));
        match m.decode(OpKind::Get, &r).unwrap() {
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
            m.decode(OpKind::Get, &r),
            Ok(Decoded::Frame {
                len: r.len(),
                reply: Reply::Nil
            })
        );
        for n in 0..r.len() {
            assert_eq!(
                m.decode(OpKind::Get, &r[..n]),
                Ok(Decoded::Incomplete),
                "{n}"
            );
        }
        let ok = pk(1, &[0, 2, 0, 2, 0, 0, 0]);
        assert_eq!(
            m.decode(OpKind::Set, &ok),
            Ok(Decoded::Frame {
                len: ok.len(),
                reply: Reply::Stored
            })
        );
        let err = pk(1, b"\xff\x15\x04#28000boom");
        assert_eq!(
            m.decode(OpKind::Get, &err),
            Ok(Decoded::Frame {
                len: err.len(),
                reply: Reply::ServerError
            })
        );
        assert!(m.decode(OpKind::Get, &pk(1, &[2])).is_err(), "two columns");
        assert!(m.decode(OpKind::Get, &pk(1, b"+OK")).is_err());
    }
}
