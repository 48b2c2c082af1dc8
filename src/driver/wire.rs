//! The wire interface every protocol implements: a sans-IO request encoder and
//! reply decoder ([`Codec`], [`CacheCodec`]), the replies they decode, and the
//! small byte helpers codecs share. Codecs live in their product folders under
//! `products/`; the engine's hot loops are generic over [`Codec`]. Nothing here
//! sees a socket, a clock or a histogram.

use std::io::{self, Read, Write};
use std::ops::Range;

use crate::workload::OpKind;

/// One decoded reply, borrowing nothing: a value is a byte range of the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A GET found a value at this range of the decoded buffer.
    Value(Range<usize>),
    /// A GET found no value.
    Nil,
    /// A SET was stored.
    Stored,
    /// The server answered with an error (e.g. `-OOM`, `SERVER_ERROR`).
    ServerError,
    /// A batch read was answered: the values found are in the `found` list
    /// the decoder was given, as (key id, range of the input) pairs.
    Batch,
    /// A sharded server says another node serves the key's slot: for good
    /// (`ask == false`, e.g. `-MOVED`) or for this one request (`-ASK`), which
    /// is then sent there after [`Codec::encode_asking`].
    Redirect {
        /// The key's slot.
        slot: u16,
        /// The range of the input holding the node's `host:port`.
        to: Range<usize>,
        /// Only this request goes there (the slot is being migrated).
        ask: bool,
    },
}

/// Result of trying to decode one reply from the front of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The buffer does not yet hold a whole reply: read more. Not an error.
    Incomplete,
    /// A whole reply of `len` bytes to the oldest request in flight.
    Frame {
        /// Bytes the reply occupies at the front of the buffer.
        len: usize,
        /// What it says.
        reply: Reply,
    },
    /// A whole reply of `len` bytes to the request sent with `tag` (protocols
    /// that may answer out of order); decoded as that tag's operation.
    Tagged {
        /// Bytes the reply occupies at the front of the buffer.
        len: usize,
        /// What it says.
        reply: Reply,
        /// The tag of the request it answers ([`Key::tag`]).
        tag: u32,
    },
}

/// A message a server sent that no request asked for (a RESP3 push).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unasked {
    /// Not whole yet: read more.
    Incomplete,
    /// Keys changed: their names were pushed onto the caller's list; the
    /// message takes `len` bytes.
    Invalidate {
        /// Bytes the message occupies at the front of the buffer.
        len: usize,
    },
    /// Every key may have changed (the server flushed).
    InvalidateAll {
        /// Bytes the message occupies at the front of the buffer.
        len: usize,
    },
    /// Any other message: skipped.
    Other {
        /// Bytes the message occupies at the front of the buffer.
        len: usize,
    },
}

/// The bytes cannot be a reply of this protocol to the request sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// The key of one request: its numeric id (SQL targets) and its name (caches).
#[derive(Clone, Copy, Debug)]
pub struct Key<'a> {
    /// Key id, `0..keys`.
    pub id: u64,
    /// `prefix` + decimal id.
    pub name: &'a [u8],
    /// The request's number on its connection, unique among those in flight,
    /// with the operation in the low bit ([`tag_op`]); protocols whose replies
    /// may come out of order send it (as a sync or stream id) and hand it back
    /// in [`Decoded::Tagged`]. Others ignore it.
    pub tag: u32,
}

/// The tag of the `n`th request of a connection doing `op`.
#[inline]
pub fn tag_of(n: u32, op: OpKind) -> u32 {
    (n << 1) | u32::from(op == OpKind::Set)
}

/// The operation a tag was made for.
#[inline]
pub fn tag_op(tag: u32) -> OpKind {
    if tag & 1 == 1 {
        OpKind::Set
    } else {
        OpKind::Get
    }
}

/// The keys of one batch read (`--batch`): their ids and their names, laid
/// end to end in one buffer.
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    /// Key ids, distinct, in the order they were drawn.
    pub ids: &'a [u64],
    /// The names, end to end.
    pub names: &'a [u8],
    /// Where each name ends in `names`.
    pub ends: &'a [u32],
    /// The request's tag, as [`Key::tag`].
    pub tag: u32,
}

impl Batch<'_> {
    /// The name of key `i`.
    #[inline]
    pub fn name(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.names[start..self.ends[i] as usize]
    }

    /// The keys' names in order.
    pub fn names(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.ids.len()).map(|i| self.name(i))
    }
}

/// The key id of kvlab key `name` (`prefix` then the id in decimal).
#[inline]
pub fn id_of_name(prefix: &[u8], name: &[u8]) -> Option<u64> {
    let d = name.strip_prefix(prefix)?;
    if d.is_empty() || d.len() > 19 || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(d.iter().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')))
}

/// What a product's codec is made for: the server it talks to and the size
/// of the values of the point.
pub struct CodecInput<'a> {
    /// The server's connector (query mode, consistency level).
    pub connector: &'a crate::driver::Connector,
    /// Bytes of the smallest value (every value, when they have one size):
    /// templates are built for it, others written with their own length.
    pub value_size: usize,
}

/// A sans-IO request encoder and reply decoder. Cloned once per worker.
pub trait Codec: Clone + Send + Sync + 'static {
    /// Appends a GET of `key` to `out`.
    fn encode_get(&self, key: Key<'_>, out: &mut Vec<u8>);
    /// Appends a SET of `key` to `value` to `out`.
    fn encode_set(&self, key: Key<'_>, value: &[u8], out: &mut Vec<u8>);
    /// Appends a SET that expires after `ttl_s` seconds (0: never). Targets
    /// without expiry (databases) ignore the TTL.
    #[inline]
    fn encode_set_ttl(&self, key: Key<'_>, value: &[u8], ttl_s: u32, out: &mut Vec<u8>) {
        let _ = ttl_s;
        self.encode_set(key, value, out);
    }
    /// Decodes the reply from the front of `buf`: to the oldest request in
    /// flight, of kind `op` ([`Decoded::Frame`]), or, for protocols that may
    /// answer out of order, to the request its tag names ([`Decoded::Tagged`]).
    fn decode(&self, op: OpKind, buf: &[u8]) -> Result<Decoded, Malformed>;
    /// Appends one request reading every key of `b` with the protocol's own
    /// multi-key read (products whose facts declare `batch_reads`).
    fn encode_get_many(&self, b: &Batch<'_>, out: &mut Vec<u8>) {
        let _ = (b, out);
    }
    /// Decodes the reply to a batch read of `ids`, named `prefix` + id (the oldest in flight;
    /// protocols that answer out of order name theirs in [`Decoded::Tagged`]):
    /// [`Reply::Batch`] with each value found pushed onto `found` as (key id,
    /// range of `buf`); keys not there are misses.
    fn decode_many(
        &self,
        prefix: &[u8],
        ids: &[u64],
        buf: &[u8],
        found: &mut Vec<(u64, Range<usize>)>,
    ) -> Result<Decoded, Malformed> {
        let _ = (prefix, ids, buf, found);
        Err(Malformed("this protocol has no batch read"))
    }
    /// The fewest bytes the reply at the front of `buf` can take, as the
    /// headers buffered so far declare (`None`: nothing declared yet). Asked
    /// only when [`Codec::decode`] finds the reply incomplete: a reply that
    /// declares more than any the run can get is a protocol error at once,
    /// not a wait for bytes that should never come.
    #[inline]
    fn declared_len(&self, buf: &[u8]) -> Option<usize> {
        let _ = buf;
        None
    }
    /// Protocols that may answer out of order: the tag of the reply at the
    /// front of `buf` once its header is whole (`None`: in order, or not yet).
    #[inline]
    fn reply_tag(&self, buf: &[u8]) -> Option<u32> {
        let _ = buf;
        None
    }
    /// The bits of a [`Key::tag`] the protocol carries: a [`Decoded::Tagged`]
    /// reply names the request whose tag, masked by this, equals its tag.
    /// Requests in flight on a connection must stay below `(TAG_MASK + 1) / 2`.
    const TAG_MASK: u32 = u32::MAX;
    /// A message at the front of `buf` that no request asked for (a RESP3
    /// push), with the names of the keys it invalidates pushed onto `keys`
    /// as ranges of `buf`; `None` when the front is a reply (or the protocol
    /// sends none unasked).
    #[inline]
    fn unasked(
        &self,
        buf: &[u8],
        keys: &mut Vec<Range<usize>>,
    ) -> Option<Result<Unasked, Malformed>> {
        let _ = (buf, keys);
        None
    }
    /// This codec for a connection with `session` (default: unchanged).
    fn bind(&self, session: &Session) -> Self {
        let _ = session;
        self.clone()
    }
    /// Sharded protocols: the slot of key `name`, which decides the node that
    /// serves it (see [`crate::driver::Topology`]). Called only on sharded
    /// targets.
    #[inline]
    fn slot(&self, name: &[u8]) -> u16 {
        let _ = name;
        0
    }
    /// Sharded protocols: appends the request that makes the next one be served
    /// during a slot's migration (after a [`Reply::Redirect`] with `ask`); its
    /// reply decodes as a SET's [`Reply::Stored`].
    fn encode_asking(&self, out: &mut Vec<u8>) {
        let _ = out;
    }
}

/// Writes, inside a codec's `impl Codec`, [`Codec::encode_get_many`] and
/// [`Codec::decode_many`] as calls of `encode(b, out)` and `decode(buf,
/// found)` in module `$batch` (e.g. `super::batch`): a batch read whose reply
/// names the keys it found. Static calls, inlined as if written out.
macro_rules! batch_read_in {
    ($($batch:ident)::+) => {
        #[inline]
        fn encode_get_many(&self, b: &$crate::driver::wire::Batch<'_>, out: &mut Vec<u8>) {
            $($batch)::+::encode(b, out);
        }

        #[inline]
        fn decode_many(
            &self,
            _prefix: &[u8],
            _ids: &[u64],
            buf: &[u8],
            found: &mut Vec<(u64, std::ops::Range<usize>)>,
        ) -> Result<$crate::driver::wire::Decoded, $crate::driver::wire::Malformed> {
            $($batch)::+::decode(buf, found)
        }
    };
}
pub(crate) use batch_read_in;

/// A cache's codec: also deletes keys (cache-aside invalidation).
pub trait CacheCodec: Codec {
    /// Appends a DELETE of `key` to `out`.
    fn encode_delete(&self, key: Key<'_>, out: &mut Vec<u8>);
    /// Decodes the reply to a DELETE: [`Reply::Stored`] whether or not the key
    /// existed, [`Reply::ServerError`] for an error.
    fn decode_delete(&self, buf: &[u8]) -> Result<Decoded, Malformed>;
}

/// What a connection's set-up produced that its requests need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Session {
    /// Nothing.
    Plain,
    /// Ids of kvlab's GET and SET statements prepared on this connection (for
    /// protocols whose statement ids differ per connection).
    Statements {
        /// Id of the prepared GET.
        get: u32,
        /// Id of the prepared SET.
        set: u32,
    },
    /// Id of kvlab's table on this server (for protocols that address tables by
    /// number).
    Table {
        /// The table's id.
        id: u32,
    },
    /// Ids of kvlab's GET and SET statements as the server named them when
    /// they were prepared, and the consistency level requests ask for.
    Prepared {
        /// Id of the prepared GET.
        get: StatementId,
        /// Id of the prepared SET.
        set: StatementId,
        /// Id of the prepared batch read.
        batch: StatementId,
        /// The protocol's code of the consistency level.
        level: u16,
    },
}

/// A server-chosen statement id of up to 32 bytes, kept inline (`Copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatementId {
    len: u8,
    bytes: [u8; 32],
}

impl StatementId {
    /// The id `bytes`; `None` when longer than 32 bytes.
    pub fn new(bytes: &[u8]) -> Option<StatementId> {
        let mut id = StatementId {
            len: u8::try_from(bytes.len()).ok().filter(|&n| n <= 32)?,
            bytes: [0; 32],
        };
        id.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(id)
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Sends `req` and reads until `frame_len` reports a whole reply; returns its
/// bytes. Bytes past the reply are an error: set-up sends one request at a
/// time, so they answer none (a server out of step, or a hostile one).
/// Blocking; for set-up and counters only, never on the hot path.
pub fn roundtrip<S: Read + Write>(
    s: &mut S,
    req: &[u8],
    frame_len: impl Fn(&[u8]) -> Result<Option<usize>, Malformed>,
) -> io::Result<Vec<u8>> {
    s.write_all(req)?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 16384];
    loop {
        match frame_len(&buf) {
            Ok(Some(n)) => {
                past_the_reply(buf.len(), n)?;
                buf.truncate(n);
                return Ok(buf);
            }
            Ok(None) => {}
            Err(Malformed(why)) => {
                let shown = String::from_utf8_lossy(&buf[..buf.len().min(60)]).into_owned();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{why}: got {:?}", shown.trim_end()),
                ));
            }
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            if buf.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection without a reply",
                ));
            }
            let shown = String::from_utf8_lossy(&buf[..buf.len().min(60)]).into_owned();
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the server closed the connection after {:?}",
                    shown.trim_end()
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 64 << 20 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "reply larger than 64 MiB",
            ));
        }
    }
}

/// Set-up is one request, one reply: bytes past the reply (`got` bytes read,
/// the reply `len`) answer no request, a protocol error.
fn past_the_reply(got: usize, len: usize) -> io::Result<()> {
    match got > len {
        true => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} bytes after the reply, answering no request", got - len),
        )),
        false => Ok(()),
    }
}

/// Reads from `s` into `buf` until `parse` finds a whole reply at its front
/// (and its length), and returns what it found; bytes past it are an error
/// (see [`roundtrip`]). Blocking; for set-up only, never on the hot path.
pub fn read_frame<S: Read, T>(
    s: &mut S,
    buf: &mut Vec<u8>,
    parse: impl Fn(&[u8]) -> Result<Option<(T, usize)>, Malformed>,
) -> io::Result<T> {
    let mut chunk = [0u8; 16384];
    loop {
        let found = parse(buf).map_err(|m| io::Error::new(io::ErrorKind::InvalidData, m.0))?;
        if let Some((found, len)) = found {
            past_the_reply(buf.len(), len)?;
            return Ok(found);
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Position just past the first `\r\n` at or after `from`, if any.
#[inline]
pub(crate) fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let rest = buf.get(from..)?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    Some(from + nl + 1)
}

/// The end (just past its CRLF) of the reply line that starts at 0 and whose
/// content starts at `from`; `None` while incomplete. Fails when the line is not
/// ended by CRLF, or when `max` bytes hold no line end (`too_long` says so).
#[inline]
pub(crate) fn reply_line(
    buf: &[u8],
    from: usize,
    max: usize,
    too_long: &'static str,
) -> Result<Option<usize>, Malformed> {
    let Some(eol) = line_end(buf, from) else {
        return if buf.len() > max {
            Err(Malformed(too_long))
        } else {
            Ok(None)
        };
    };
    if eol < from + 2 || buf[eol - 2] != b'\r' {
        return Err(Malformed("reply line not ended by CRLF"));
    }
    Ok(Some(eol))
}

/// [`Codec::declared_len`] of a reply made of messages that each declare
/// their length in a header of `header` bytes (`total` gives a message's
/// whole length from its header): the end of the first message not yet whole
/// whose header is.
#[inline]
pub(crate) fn declared_by_messages(
    buf: &[u8],
    header: usize,
    total: impl Fn(&[u8]) -> usize,
) -> Option<usize> {
    let mut at = 0usize;
    while let Some(h) = buf.get(at..at + header) {
        let end = at.saturating_add(total(h).max(header));
        if end > buf.len() {
            return Some(end);
        }
        at = end;
    }
    None
}

/// Parses an unsigned decimal; `None` for empty, non-digit or overflow.
#[inline]
pub(crate) fn parse_usize(d: &[u8]) -> Option<usize> {
    if d.is_empty() || d.len() > 18 {
        return None;
    }
    let mut n = 0usize;
    for &b in d {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + usize::from(b - b'0');
    }
    Some(n)
}

/// What codecs' unit tests share: keys, expected frames, whole-reply checks.
#[cfg(test)]
#[path = "wire_testing.rs"]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that has `reply` to read and takes any request.
    struct Canned(io::Cursor<Vec<u8>>);

    impl Read for Canned {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.0.read(b)
        }
    }

    impl Write for Canned {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn line(b: &[u8]) -> Result<Option<usize>, Malformed> {
        Ok(line_end(b, 0))
    }

    #[test]
    fn bytes_past_a_set_up_reply_answer_no_request() {
        let mut s = Canned(io::Cursor::new(b"+OK\r\n".to_vec()));
        assert_eq!(roundtrip(&mut s, b"PING\r\n", line).unwrap(), b"+OK\r\n");
        let mut s = Canned(io::Cursor::new(b"+OK\r\n+OK\r\n".to_vec()));
        let e = roundtrip(&mut s, b"PING\r\n", line).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("5 bytes after the reply"), "{e}");
        let framed = |b: &[u8]| Ok(line_end(b, 0).map(|n| (n, n)));
        let mut s = Canned(io::Cursor::new(b"+OK\r\n".to_vec()));
        assert_eq!(read_frame(&mut s, &mut Vec::new(), framed).unwrap(), 5);
        let mut s = Canned(io::Cursor::new(b"+OK\r\nx".to_vec()));
        assert!(read_frame(&mut s, &mut Vec::new(), framed).is_err());
    }
}
