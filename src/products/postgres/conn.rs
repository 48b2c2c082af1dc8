//! A blocking PostgreSQL session for set-up, never on the hot path: start-up and
//! authentication (trust, password, MD5, SCRAM-SHA-256), simple queries,
//! preparing kvlab's statements, and COPY for the bulk load.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::{backend, frontend};

use super::codec::{BYTEA_OID, GET_SQL, INT8_OID, SET_SQL};
use crate::driver::Connector;
use crate::driver::setup::SetupConn;
use crate::driver::table::LoadSlice;
use crate::products::sql::{Rows, SqlConn};
use crate::transport::Stream;

/// A blocking connection for set-up: start-up, authentication, simple queries,
/// preparing kvlab's statements and COPY.
pub struct PgConn {
    stream: Stream,
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
        stream: Stream,
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

    /// Sends a request; bytes still unread from the server when one is sent
    /// (past the last ReadyForQuery) answer no request, a protocol error.
    fn send(&mut self, out: &[u8]) -> io::Result<()> {
        if !self.buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} bytes after the reply, answering no request",
                    self.buf.len()
                ),
            ));
        }
        self.stream.write_all(out)
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
    pub fn query(&mut self, sql: &str) -> io::Result<Rows> {
        Ok(self.query_named(sql)?.1)
    }

    /// Runs `sql` with the simple query protocol; returns the column names
    /// and the rows as text.
    pub fn query_named(&mut self, sql: &str) -> io::Result<(Vec<String>, Rows)> {
        let mut names = Vec::new();
        let mut out = BytesMut::new();
        frontend::query(sql, &mut out)?;
        self.send(&out)?;
        let mut rows = Vec::new();
        let mut err = None;
        loop {
            match self.read_message()? {
                backend::Message::RowDescription(d) => {
                    let mut fields = d.fields();
                    while let Some(f) = fields.next()? {
                        names.push(f.name().to_string());
                    }
                }
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
                backend::Message::ReadyForQuery(_) => return err.map_or(Ok((names, rows)), Err),
                _ => {}
            }
        }
    }

    /// Prepares kvlab's GET and SET statements on this connection.
    pub fn prepare_kv(&mut self) -> io::Result<()> {
        let mut out = BytesMut::new();
        frontend::parse("kvlab_get", GET_SQL, [INT8_OID], &mut out)?;
        frontend::parse("kvlab_set", SET_SQL, [INT8_OID, BYTEA_OID], &mut out)?;
        frontend::sync(&mut out);
        self.send(&out)?;
        self.wait_ready()
    }

    /// Loads the keys of `slice` with `COPY … FROM STDIN (FORMAT binary)`,
    /// counting rows done as they are sent; stops early (with CopyFail) when
    /// the slice is stopped.
    pub fn copy_in(&mut self, slice: LoadSlice<'_>) -> io::Result<()> {
        let (values, done) = (slice.values, slice.done);
        let mut out = BytesMut::new();
        frontend::query("COPY kvlab_kv (k, v) FROM STDIN (FORMAT binary)", &mut out)?;
        self.send(&out)?;
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
        for k in slice.start..slice.end {
            data.extend_from_slice(&2i16.to_be_bytes());
            data.extend_from_slice(&8i32.to_be_bytes());
            data.extend_from_slice(&(k as i64).to_be_bytes());
            data.extend_from_slice(&(values.size_of(k) as i32).to_be_bytes());
            values.write(k, &mut data);
            pending += 1;
            if data.len() >= 1 << 20 {
                if slice.stop.load(Ordering::Relaxed) {
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

    /// Reads up to `ReadyForQuery`; fails with the server's error if it sent one.
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

    /// The socket, for the engine once set-up is done.
    pub fn into_stream(self) -> Stream {
        self.stream
    }
}

impl SetupConn for PgConn {
    fn stream(&self) -> &Stream {
        &self.stream
    }
    fn open(c: &Connector, timeout: Duration) -> io::Result<PgConn> {
        open(c, timeout)
    }
}

impl SqlConn for PgConn {
    fn query(&mut self, sql: &str) -> io::Result<Rows> {
        PgConn::query(self, sql)
    }
}

/// Quotes `s` as an SQL string literal.
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Opens a set-up session on `c` (not prepared for the engine).
pub fn open(c: &Connector, timeout: Duration) -> io::Result<PgConn> {
    let mut s = c.dial(timeout)?;
    if c.tls() {
        ssl_request(&mut s)?;
        c.start_tls(&mut s)?;
    }
    let user = c.user.as_deref().unwrap_or("postgres");
    let db = c.database.as_deref().unwrap_or("postgres");
    PgConn::start(s, user, c.password.as_deref(), db)
}

/// Asks the server to turn to TLS (`SSLRequest`); fails when it will not.
fn ssl_request(s: &mut Stream) -> io::Result<()> {
    let mut buf = BytesMut::new();
    frontend::ssl_request(&mut buf);
    s.write_all(&buf)?;
    let mut reply = [0u8; 1];
    s.read_exact(&mut reply)?;
    match reply[0] {
        b'S' => Ok(()),
        b'N' => Err(io::Error::other(
            "the server does not accept TLS (its ssl setting is off); use sslmode=disable and no --tls, or turn ssl on",
        )),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected reply {other:#04x} to SSLRequest"),
        )),
    }
}
