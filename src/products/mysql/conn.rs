//! A blocking MySQL/MariaDB session for set-up, never on the hot path:
//! handshake and authentication (native, caching_sha2, clear), text queries,
//! preparing kvlab's statements, and multi-row INSERTs for the bulk load, with
//! the `mysql_common` crate's packets.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

use mysql_common::auth::plugins::caching_sha2_password::scramble_sha256;
use mysql_common::auth::plugins::mysql_native_password::scramble_native;
use mysql_common::constants::CapabilityFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{
    AuthPlugin, AuthSwitchRequest, ErrPacket, HandshakePacket, HandshakeResponse, StmtPacket,
};
use mysql_common::proto::{MyDeserialize, MySerialize};

use super::codec::{GET_SQL, SET_SQL};
use super::packet::packet;
use crate::driver::Connector;
use crate::driver::setup::SetupConn;
use crate::driver::table::LoadSlice;
use crate::products::sql::{Rows, SqlConn};
use crate::transport::Stream;

/// A blocking MySQL/MariaDB connection for set-up.
pub struct MyConn {
    stream: Stream,
    caps: CapabilityFlags,
    /// The sequence number the next reply packet of a command must carry
    /// (`None` during the handshake): a packet out of step answers another
    /// request.
    next: Option<u8>,
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
        if len == 0xff_ffff {
            // A payload continued in another packet: 16 MiB or more.
            return Err(crate::transport::setup_reply_too_large());
        }
        if let Some(want) = self.next {
            if h[3] != want {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "packet {} where {want} was due: a reply out of step with its request",
                        h[3]
                    ),
                ));
            }
            self.next = Some(want.wrapping_add(1));
        }
        let mut body = vec![0; len];
        self.stream.read_exact(&mut body)?;
        Ok((h[3], body))
    }

    /// Sends command `body` as a packet of its own; its reply's packets are
    /// numbered from 1.
    fn command(&mut self, body: &[u8]) -> io::Result<()> {
        self.stream.write_all(&packet(0, body))?;
        self.next = Some(1);
        Ok(())
    }

    /// Connects on `stream`: greeting, TLS when `tls` uses it (the
    /// `CLIENT_SSL` request), authentication, default database.
    pub fn start(
        stream: Stream,
        user: &str,
        password: Option<&str>,
        database: &str,
        tls: &Connector,
    ) -> io::Result<MyConn> {
        let mut c = MyConn {
            stream,
            caps: CapabilityFlags::empty(),
            next: None,
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
        let mut seq = 1;
        if tls.tls() {
            c.ssl_request(hs.capabilities(), tls)?;
            seq = 2;
        }
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
        c.stream.write_all(&packet(seq, &body))?;
        c.authenticate(password, tls.tls())?;
        Ok(c)
    }

    /// Asks for TLS with the `SSLRequest` packet (`CLIENT_SSL` added to the
    /// capabilities) and turns the stream to TLS; fails where the server's
    /// capabilities `offered` lack it.
    fn ssl_request(&mut self, offered: CapabilityFlags, tls: &Connector) -> io::Result<()> {
        if !offered.contains(CapabilityFlags::CLIENT_SSL) {
            return Err(other(
                "the server does not accept TLS (it has no ssl certificate configured); use ssl-mode=DISABLED and no --tls, or configure its ssl",
            ));
        }
        self.caps |= CapabilityFlags::CLIENT_SSL;
        // SSLRequest: capabilities, max packet, charset, 23 zero bytes.
        let mut req = Vec::with_capacity(32);
        req.extend_from_slice(&self.caps.bits().to_le_bytes());
        req.extend_from_slice(&(1u32 << 24).to_le_bytes());
        req.push(45); // utf8mb4_general_ci
        req.extend_from_slice(&[0; 23]);
        self.stream.write_all(&packet(1, &req))?;
        tls.start_tls(&mut self.stream)
    }

    /// The server's answers to the handshake response, up to its OK: an auth
    /// switch answered with `password` scrambled for the plugin named,
    /// caching_sha2's fast authentication, or its full one where the
    /// connection uses `tls` (the password sent as is).
    fn authenticate(&mut self, password: &str, tls: bool) -> io::Result<()> {
        loop {
            let (seq, p) = self.read_packet()?;
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(err_packet(&p, self.caps)),
                Some(0xfe) => {
                    let sw = AuthSwitchRequest::deserialize((), &mut ParseBuf(&p))
                        .map_err(|e| other(format!("bad auth switch: {e}")))?;
                    let name = sw.auth_plugin().as_bytes().to_vec();
                    let data = scramble(&name, sw.plugin_data(), password)?;
                    self.stream.write_all(&packet(seq.wrapping_add(1), &data))?;
                }
                Some(0x01) if p.get(1) == Some(&3) => {} // caching_sha2 fast auth: OK follows
                Some(0x01) if p.get(1) == Some(&4) && tls => {
                    // Full authentication: over TLS the password goes as is.
                    let mut clear = password.as_bytes().to_vec();
                    clear.push(0);
                    self.stream
                        .write_all(&packet(seq.wrapping_add(1), &clear))?;
                }
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
    pub fn query(&mut self, sql: &str) -> io::Result<Rows> {
        Ok(self.query_named(sql)?.1)
    }

    /// Runs `sql` (text protocol); returns the column names and the rows as
    /// text.
    pub fn query_named(&mut self, sql: &str) -> io::Result<(Vec<String>, Rows)> {
        let mut body = vec![0x03];
        body.extend_from_slice(sql.as_bytes());
        self.command(&body)?;
        let (_, first) = self.read_packet()?;
        match first.first() {
            Some(0x00) => return Ok((Vec::new(), Vec::new())),
            Some(0xff) => return Err(err_packet(&first, self.caps)),
            _ => {}
        }
        let cols = usize::from(*first.first().ok_or_else(|| other("an empty reply"))?);
        let mut names = Vec::with_capacity(cols);
        for _ in 0..cols {
            // catalog, schema, table, org_table, name, …
            let (_, def) = self.read_packet()?;
            names.push(text_row(&def, 5)?.pop().flatten().unwrap_or_default());
        }
        self.read_packet()?; // EOF after column definitions
        let mut rows = Vec::new();
        loop {
            let (_, p) = self.read_packet()?;
            if p.first() == Some(&0xfe) && p.len() < 9 {
                return Ok((names, rows));
            }
            if p.first() == Some(&0xff) {
                return Err(err_packet(&p, self.caps));
            }
            rows.push(text_row(&p, cols)?);
        }
    }

    fn prepare(&mut self, sql: &str) -> io::Result<u32> {
        let mut body = vec![0x16];
        body.extend_from_slice(sql.as_bytes());
        self.command(&body)?;
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

    /// Loads the keys of `slice` with multi-row INSERTs of about 1 MiB each.
    pub fn insert_rows(&mut self, slice: LoadSlice<'_>) -> io::Result<()> {
        let (values, end) = (slice.values, slice.end);
        let mut sql = String::with_capacity(1 << 20);
        let mut v = Vec::with_capacity(values.size());
        let mut pending = 0;
        let mut k = slice.start;
        while k < end {
            if slice.stop.load(Ordering::Relaxed) {
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
            slice.done.fetch_add(pending, Ordering::Relaxed);
            pending = 0;
        }
        Ok(())
    }

    /// The socket, for the engine once set-up is done.
    pub fn into_stream(self) -> Stream {
        self.stream
    }
}

impl SetupConn for MyConn {
    fn stream(&self) -> &Stream {
        &self.stream
    }
    fn open(c: &Connector, timeout: Duration) -> io::Result<MyConn> {
        open(c, timeout)
    }
}

impl SqlConn for MyConn {
    fn query(&mut self, sql: &str) -> io::Result<Rows> {
        MyConn::query(self, sql)
    }
}

/// The `cols` cells of a text-protocol row packet `p` (`None`: SQL NULL);
/// an error, never a panic, on a packet cut short.
pub(crate) fn text_row(p: &[u8], cols: usize) -> io::Result<Vec<Option<String>>> {
    let short = || other("short row");
    let le = |at: usize, n: usize| -> io::Result<usize> {
        let b = p.get(at..at + n).ok_or_else(short)?;
        Ok(b.iter().rev().fold(0usize, |a, &x| a << 8 | usize::from(x)))
    };
    let mut row = Vec::with_capacity(cols);
    let mut i = 0;
    for _ in 0..cols {
        let b = *p.get(i).ok_or_else(short)?;
        if b == 0xfb {
            row.push(None);
            i += 1;
            continue;
        }
        let (n, skip) = match b {
            0xfc => (le(i + 1, 2)?, 3),
            0xfd => (le(i + 1, 3)?, 4),
            0xfe => (le(i + 1, 8)?, 9),
            b => (usize::from(b), 1),
        };
        let start = i.checked_add(skip).ok_or_else(short)?;
        let end = start.checked_add(n).ok_or_else(short)?;
        let v = p.get(start..end).ok_or_else(short)?;
        row.push(Some(String::from_utf8_lossy(v).into_owned()));
        i = end;
    }
    Ok(row)
}

/// Opens a set-up session on `c`.
pub fn open(c: &Connector, timeout: Duration) -> io::Result<MyConn> {
    let s = c.dial(timeout)?;
    let user = c.user.as_deref().unwrap_or("root");
    let db = c.database.as_deref().unwrap_or("");
    MyConn::start(s, user, c.password.as_deref(), db, c)
}

#[cfg(test)]
mod tests {
    use super::text_row;

    #[test]
    fn rows_cut_short_are_errors_not_panics() {
        assert_eq!(
            text_row(b"\x02ab\xfb\x01c", 3).unwrap(),
            [Some("ab".into()), None, Some("c".into())]
        );
        assert_eq!(text_row(b"\xfc\x02\x00hi", 1).unwrap(), [Some("hi".into())]);
        // Every row cut short is an error, whatever its cells' length headers.
        let rows: [(&[u8], usize); 5] = [
            (b"\x02ab\xfb\x01c", 3),
            (b"\xfc\x02\x00hi", 1),
            (b"\xfd\x01\x00\x00x", 1),
            (b"\xfe\x01\0\0\0\0\0\0\0x", 1),
            (b"\x05abcde", 1),
        ];
        for (row, cols) in rows {
            assert!(text_row(row, cols).is_ok(), "{row:?}");
            for n in 0..row.len() {
                assert!(text_row(&row[..n], cols).is_err(), "{:?}", &row[..n]);
            }
        }
        let huge = b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff";
        assert!(text_row(huge, 1).is_err());
    }
}
