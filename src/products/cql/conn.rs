//! A blocking CQL session for set-up, never on the hot path: OPTIONS, STARTUP,
//! PasswordAuthenticator's SASL PLAIN, simple QUERYs, PREPARE, and pipelined
//! INSERTs for the bulk load.

use std::io::{self, Write};
use std::time::Duration;

use super::codec::CqlCodec;
use super::frame::{
    AUTH_RESPONSE, AUTH_SUCCESS, AUTHENTICATE, ERROR, HEADER, PREPARE, QUERY, READY, RESULT,
    Reader, STARTUP, frame, header, patch, skip_metadata,
};
use crate::driver::Connector;
use crate::driver::setup::SetupConn;
use crate::driver::table::{LoadSlice, load_pipelined};
use crate::driver::wire::{Malformed, StatementId, read_frame};
use crate::transport::Stream;

/// Opcode OPTIONS.
const OPTIONS: u8 = 0x05;
/// Opcode SUPPORTED.
const SUPPORTED: u8 = 0x06;
/// Error code of refused credentials.
const BAD_CREDENTIALS: i32 = 0x0100;

/// One row of a set-up query: each cell's bytes (`None`: null).
pub type Row = Vec<Option<Vec<u8>>>;

/// A set-up session.
pub struct CqlConn {
    stream: Stream,
    /// The stream id of the last set-up request (each has its own, so a
    /// reply to another one is caught).
    last: i16,
    /// Whether the server said it is ScyllaDB (its OPTIONS name shards).
    pub scylla: bool,
}

fn invalid(m: Malformed) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m.0)
}

/// Appends a `[string]`.
fn put_string(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Opens a set-up session on `c`, logged in as its user when it has one.
pub fn open(c: &Connector, timeout: Duration) -> io::Result<CqlConn> {
    let s = c.open(timeout)?;
    CqlConn::start(s, c.user.as_deref(), c.password.as_deref())
}

/// The text of a cell (empty for null or not UTF-8).
pub fn text(cell: Option<&Option<Vec<u8>>>) -> String {
    cell.and_then(Option::as_deref)
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or_default()
        .to_string()
}

/// The value of a bigint cell.
pub fn bigint(cell: Option<&Option<Vec<u8>>>) -> Option<i64> {
    let b = cell?.as_deref()?;
    Some(i64::from_be_bytes(b.try_into().ok()?))
}

impl CqlConn {
    /// Asks for the server's options, starts protocol v4 on `stream` and logs
    /// in `user` with `password` if the server asks for it.
    pub fn start(
        stream: Stream,
        user: Option<&str>,
        password: Option<&str>,
    ) -> io::Result<CqlConn> {
        let mut c = CqlConn {
            stream,
            last: 0,
            scylla: false,
        };
        let (op, body) = c.call(OPTIONS, &[])?;
        if op == SUPPORTED {
            c.scylla = body.windows(6).any(|w| w == b"SCYLLA");
        }
        let mut startup = Vec::new();
        startup.extend_from_slice(&1u16.to_be_bytes());
        put_string("CQL_VERSION", &mut startup);
        put_string("3.0.0", &mut startup);
        match c.call(STARTUP, &startup)?.0 {
            READY => Ok(c),
            AUTHENTICATE => {
                let (Some(user), Some(password)) = (user, password) else {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        "the server needs a user and password: cql://USER:PASS@host:port",
                    ));
                };
                let token = format!("\0{user}\0{password}");
                let mut b = (token.len() as i32).to_be_bytes().to_vec();
                b.extend_from_slice(token.as_bytes());
                match c.call(AUTH_RESPONSE, &b)?.0 {
                    AUTH_SUCCESS => Ok(c),
                    _ => Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        "the server asked for more than a password (SASL PLAIN)",
                    )),
                }
            }
            _ => Err(invalid(Malformed("unexpected reply to STARTUP"))),
        }
    }

    /// A session on a connection that is already started and logged in.
    pub fn resume(stream: Stream) -> CqlConn {
        CqlConn {
            stream,
            last: 0,
            scylla: false,
        }
    }

    /// Sends one request on a stream id of its own and returns the reply's
    /// opcode and body; an ERROR reply becomes an error with the server's
    /// message (refused credentials: `PermissionDenied`), a reply on another
    /// stream a protocol error.
    fn call(&mut self, opcode: u8, body: &[u8]) -> io::Result<(u8, Vec<u8>)> {
        self.last = self.last % i16::MAX + 1;
        let mut req = Vec::with_capacity(HEADER + body.len());
        header(opcode, &mut req);
        req.extend_from_slice(body);
        patch(&mut req, 0, self.last as u16);
        self.stream.write_all(&req)?;
        let mut buf = Vec::new();
        let f = read_frame(&mut self.stream, &mut buf, |b| {
            Ok(frame(b)?.map(|f| {
                let len = f.len;
                (f, len)
            }))
        })?;
        if f.stream != self.last {
            return Err(invalid(Malformed(
                "a reply on another stream than its request's",
            )));
        }
        let body = buf[f.body].to_vec();
        if f.opcode == ERROR {
            let mut r = Reader { buf: &body, pos: 0 };
            let code = r.int().map_err(invalid)?;
            let msg = r
                .string()
                .map(|m| String::from_utf8_lossy(&body[m]).into_owned())
                .unwrap_or_default();
            let kind = if code == BAD_CREDENTIALS {
                io::ErrorKind::PermissionDenied
            } else {
                io::ErrorKind::Other
            };
            return Err(io::Error::new(
                kind,
                format!("{msg} (CQL error 0x{code:04x})"),
            ));
        }
        Ok((f.opcode, body))
    }

    /// Runs `cql` at consistency ONE; returns its rows (none for other results).
    pub fn query(&mut self, cql: &str) -> io::Result<Vec<Row>> {
        let mut b = (cql.len() as u32).to_be_bytes().to_vec();
        b.extend_from_slice(cql.as_bytes());
        b.extend_from_slice(&1u16.to_be_bytes());
        b.push(0);
        let (op, body) = self.call(QUERY, &b)?;
        if op != RESULT {
            return Err(invalid(Malformed("unexpected reply to QUERY")));
        }
        rows(&body).map_err(invalid)
    }

    /// Prepares `cql`; returns the statement's id.
    pub fn prepare(&mut self, cql: &str) -> io::Result<StatementId> {
        let mut b = (cql.len() as u32).to_be_bytes().to_vec();
        b.extend_from_slice(cql.as_bytes());
        let (op, body) = self.call(PREPARE, &b)?;
        let mut r = Reader { buf: &body, pos: 0 };
        if op != RESULT || r.int().map_err(invalid)? != 4 {
            return Err(invalid(Malformed("unexpected reply to PREPARE")));
        }
        let id = r.short_bytes().map_err(invalid)?;
        StatementId::new(&body[id]).ok_or_else(|| invalid(Malformed("statement id over 32 bytes")))
    }

    /// INSERTs the keys of `slice` (version 0) with `codec`, 256 in flight.
    /// Fails on the first refused write.
    pub fn insert_rows(&mut self, codec: &CqlCodec, slice: LoadSlice<'_>) -> io::Result<()> {
        load_pipelined(&mut self.stream, codec, slice, |reply| {
            format!("the node refused an INSERT: {}", error_message(reply))
        })
    }

    /// The socket, for the engine once set-up is done.
    pub fn into_stream(self) -> Stream {
        self.stream
    }
}

impl SetupConn for CqlConn {
    fn stream(&self) -> &Stream {
        &self.stream
    }
    fn open(c: &Connector, timeout: Duration) -> io::Result<CqlConn> {
        open(c, timeout)
    }
}

/// The message of the ERROR frame at the front of `buf`.
pub(crate) fn error_message(buf: &[u8]) -> String {
    let Ok(Some(f)) = frame(buf) else {
        return "an unreadable reply".into();
    };
    let mut r = Reader {
        buf: &buf[..f.body.end],
        pos: f.body.start,
    };
    match (r.int(), r.string()) {
        (Ok(code), Ok(m)) => format!(
            "{} (CQL error 0x{code:04x})",
            String::from_utf8_lossy(&r.buf[m])
        ),
        _ => "an unreadable error".into(),
    }
}

/// The rows of a RESULT body (none for Void, SetKeyspace, SchemaChange).
pub(crate) fn rows(body: &[u8]) -> Result<Vec<Row>, Malformed> {
    let mut r = Reader { buf: body, pos: 0 };
    if r.int()? != 2 {
        return Ok(Vec::new());
    }
    let columns = skip_metadata(&mut r)?;
    let n = usize::try_from(r.int()?).map_err(|_| Malformed("negative row count"))?;
    if columns == 0 && n > 0 {
        return Err(Malformed("rows without columns"));
    }
    let mut out = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        let mut row = Vec::with_capacity(columns.min(4096));
        for _ in 0..columns {
            row.push(r.bytes()?.map(|c| body[c].to_vec()));
        }
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_a_huge_declared_size_are_malformed() {
        // Found by fuzzing: a row's cells were allocated for the column count
        // the server declared (here 2^31 - 1, 51 GB) before any was read.
        let body = [2i32, 0x04, i32::MAX, 1].map(i32::to_be_bytes).concat();
        assert!(rows(&body).is_err());
        // And rows of no columns, read from no bytes: 2^31 - 1 of them.
        let body = [2i32, 0x04, 0, i32::MAX].map(i32::to_be_bytes).concat();
        assert!(rows(&body).is_err());
        let mut body = [2i32, 0x04, 1, 1, 2].map(i32::to_be_bytes).concat();
        body.extend_from_slice(b"ab");
        assert_eq!(rows(&body), Ok(vec![vec![Some(b"ab".to_vec())]]));
    }
}
