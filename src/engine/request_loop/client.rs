//! The interface between the loop and what a connection does per request:
//! the [`Client`] trait the loop is generic over (static dispatch), and the
//! [`Request`] it hands a client.

use std::time::Instant;

use super::Io;
use crate::driver::Connector;
use crate::driver::wire::Session;
use crate::results::stats::{ErrorKind, Recorder};
use crate::workload::{LinkDelay, OpKind};

/// One request as the loop drew it: what the client is to do and the instants
/// its latency is taken from.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    /// GET or SET.
    pub op: OpKind,
    /// The key's id.
    pub key: u64,
    /// SET: the version written; GET: the newest completed version at the start.
    pub version: u64,
    /// When the schedule meant it to start (latency is taken from here).
    pub intended: Instant,
    /// When it was first sent (service time and stale reads are taken from here).
    pub sent: Instant,
    /// Counted in the measured window (else in the warm-up).
    pub measured: bool,
}

/// What a connection does per request, over the sockets the loop owns. Every
/// request handed to [`Client::start`] ends exactly once in [`Tally::finish`](super::Tally::finish).
pub trait Client {
    /// One connection's own state: codecs bound to its sockets, requests in flight.
    type Conn;
    /// A fresh connection state.
    fn conn(&self) -> Self::Conn;
    /// The sockets a connection opens at the start.
    fn sockets(&self) -> usize;
    /// The server socket `s` connects to.
    fn connector(&self, s: usize) -> &Connector;
    /// The round trip kvlab emulates on socket `s` (`None`: none).
    fn link(&self, s: usize) -> Option<LinkDelay>;
    /// Whether socket `s` may be down while the connection issues requests
    /// (the client goes around it), as long as one socket is open; it is then
    /// retried every few hundred ms and never given up. It must still open
    /// at the start.
    fn optional(&self, s: usize) -> bool {
        let _ = s;
        false
    }
    /// Buffer sizes of a new socket: write, read.
    fn buffers(&self) -> (usize, usize);
    /// A fresh recorder for the per-second hand-over.
    fn recorder() -> Recorder {
        Recorder::default()
    }
    /// Socket `s` of `c` was (re)opened with `session`: bind its codec.
    fn opened(&self, c: &mut Self::Conn, s: usize, session: &Session);
    /// Requests `c` may have in flight over `sockets` sockets.
    fn depth(&self, c: &Self::Conn, sockets: usize) -> usize;
    /// Requests `c` has in flight.
    fn inflight(&self, c: &Self::Conn) -> usize;
    /// Encodes request `r` onto `c`'s sockets (the loop flushes them).
    fn start(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, r: Request);
    /// Handles every whole reply buffered on socket `s` (sending next steps
    /// where a request has more); `false` when the server broke the protocol
    /// (what is still in flight on `s` then fails as a protocol error).
    fn replies(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, s: usize, now: Instant) -> bool;
    /// When the oldest request still waiting on socket `s` was sent.
    fn oldest(&self, c: &Self::Conn, s: usize) -> Option<Instant>;
    /// Fails everything waiting on socket `s` with `kind`.
    fn fail(&mut self, io: &mut Io<'_>, c: &mut Self::Conn, s: usize, kind: ErrorKind);
}
