//! A blocking Tarantool session for set-up, never on the hot path: the
//! greeting, CHAP-SHA1 authentication, EVAL of Lua, and pipelined REPLACE
//! batches for the bulk load.

use std::io::{self, Read, Write};
use std::time::Duration;

use base64::Engine;
use rmpv::Value;
use sha1::{Digest, Sha1};

use super::codec::TtCodec;
use super::iproto::{Request, frame};
use crate::driver::Connector;
use crate::driver::setup::SetupConn;
use crate::driver::table::{LoadSlice, load_pipelined};
use crate::driver::wire::read_frame;
use crate::transport::Stream;

/// A set-up session.
pub struct TtConn {
    stream: Stream,
    sync: u64,
    /// Version from the greeting, e.g. `2.6.0`.
    pub version: String,
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Opens a set-up session on `c`, logged in as its user (guest without one).
pub fn open(c: &Connector, timeout: Duration) -> io::Result<TtConn> {
    let s = c.open(timeout)?;
    TtConn::start(s, c.user.as_deref(), c.password.as_deref())
}

impl TtConn {
    /// Reads the greeting on `stream` and authenticates `user` with `password`.
    pub fn start(
        mut stream: Stream,
        user: Option<&str>,
        password: Option<&str>,
    ) -> io::Result<TtConn> {
        let mut greeting = [0u8; 128];
        let mut got = 0;
        while got < greeting.len() {
            match stream.read(&mut greeting[got..])? {
                0 if got == 0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection without a greeting",
                    ));
                }
                0 => return Err(invalid("the greeting ended early")),
                n => got += n,
            }
            if !b"Tarantool ".starts_with(&greeting[..got.min(10)]) {
                let shown = String::from_utf8_lossy(&greeting[..got.min(40)]).into_owned();
                return Err(invalid(format!(
                    "not a Tarantool greeting: {:?}",
                    shown.trim_end()
                )));
            }
        }
        let line = String::from_utf8_lossy(&greeting[..64]).into_owned();
        let version = line
            .split_whitespace()
            .nth(1)
            .unwrap_or("unknown")
            .to_string();
        let salt = base64::engine::general_purpose::STANDARD
            .decode(String::from_utf8_lossy(&greeting[64..108]).trim())
            .map_err(|_| invalid("the greeting's salt is not base64"))?;
        let mut c = TtConn {
            stream,
            sync: 0,
            version,
        };
        if let Some(u) = user.filter(|u| *u != "guest" || password.is_some()) {
            c.auth(u, password.unwrap_or(""), &salt)?;
        }
        Ok(c)
    }

    /// CHAP-SHA1: `sha1(password) xor sha1(salt[..20] + sha1(sha1(password)))`.
    fn auth(&mut self, user: &str, password: &str, salt: &[u8]) -> io::Result<()> {
        let h1 = Sha1::digest(password.as_bytes());
        let h2 = Sha1::digest(h1);
        let mut h = Sha1::new();
        h.update(&salt[..salt.len().min(20)]);
        h.update(h2);
        let h3 = h.finalize();
        let scramble: Vec<u8> = h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect();
        let body = Value::Map(vec![
            (Value::from(0x23), Value::from(user)),
            (
                Value::from(0x21),
                Value::Array(vec![Value::from("chap-sha1"), Value::Binary(scramble)]),
            ),
        ]);
        match self.call(Request::Auth, &body) {
            Err(e) if e.kind() == io::ErrorKind::Other => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("authentication failed: {e}"),
            )),
            r => r.map(|_| ()),
        }
    }

    /// Sends one request and returns its reply's DATA (an error reply becomes an
    /// error with the server's message).
    fn call(&mut self, code: Request, body: &Value) -> io::Result<Vec<Value>> {
        self.sync += 1;
        let head = Value::Map(vec![
            (Value::from(0x00), Value::from(code as u8)),
            (Value::from(0x01), Value::from(self.sync)),
        ]);
        let mut payload = Vec::new();
        rmpv::encode::write_value(&mut payload, &head).map_err(io::Error::other)?;
        rmpv::encode::write_value(&mut payload, body).map_err(io::Error::other)?;
        let mut req = vec![0xce];
        req.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        req.extend(payload);
        self.stream.write_all(&req)?;
        let mut buf = Vec::new();
        let (len, code, sync, body_at) = read_frame(&mut self.stream, &mut buf, |b| {
            Ok(frame(b)?.map(|f| (f, f.0)))
        })?;
        if sync != self.sync {
            return Err(invalid(format!(
                "a reply to request {sync}, not to {}",
                self.sync
            )));
        }
        let body = rmpv::decode::read_value(&mut &buf[body_at..len])
            .map_err(|e| invalid(e.to_string()))?;
        let field = |k: u64| {
            body.as_map().and_then(|m| {
                m.iter()
                    .find(|(key, _)| key.as_u64() == Some(k))
                    .map(|(_, v)| v.clone())
            })
        };
        if code != 0 {
            let msg = field(0x31)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("error {}", code & 0x7fff));
            return Err(io::Error::other(msg));
        }
        Ok(field(0x30)
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default())
    }

    /// Runs Lua `expr` with `args` (`...` in the chunk); returns what it returned.
    pub fn eval(&mut self, expr: &str, args: Vec<Value>) -> io::Result<Vec<Value>> {
        let body = Value::Map(vec![
            (Value::from(0x27), Value::from(expr)),
            (Value::from(0x21), Value::Array(args)),
        ]);
        self.call(Request::Eval, &body)
    }

    /// REPLACEs the keys of `slice` (version 0) into space `space`, pipelined
    /// in batches. Fails on the first refused write.
    pub fn replace_rows(&mut self, space: u32, slice: LoadSlice<'_>) -> io::Result<()> {
        let codec = TtCodec::new().for_space(space);
        load_pipelined(&mut self.stream, &codec, slice, |_| {
            "the server refused a REPLACE (is memtx_memory large enough? --server-opt memory-mb=…)"
                .into()
        })
    }

    /// The socket, for the engine once set-up is done.
    pub fn into_stream(self) -> Stream {
        self.stream
    }
}

impl SetupConn for TtConn {
    fn stream(&self) -> &Stream {
        &self.stream
    }
    fn open(c: &Connector, timeout: Duration) -> io::Result<TtConn> {
        open(c, timeout)
    }
}
