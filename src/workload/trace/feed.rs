//! Streaming a trace to the workers. A trace may be larger than memory: one
//! reader thread reads it (plain text or zstd, told apart by the file's first
//! bytes), turns each modelled line into a [`TraceReq`] at its time on the
//! replay's clock, and hands each worker its requests in chunks of
//! [`CHUNK`] over a bounded channel (a key always goes to the same worker, so
//! writes to one key stay in one place). Lines of one timestamp (whole
//! seconds in the published traces) are spread evenly over the gap to the
//! next timestamp, at most a second. Used chunks come back to be refilled:
//! the hot path neither allocates nor takes a lock per request.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{Scan, parse, request_of};
use crate::workload::OpKind;

/// One request of the trace as a worker sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceReq {
    /// Its time from the start of the load (warm-up included), ns, at the
    /// replay's speed.
    pub at_ns: u64,
    /// The key's id in kvlab's key space.
    pub key: u64,
    /// GET or SET.
    pub op: OpKind,
}

/// Requests handed over at once.
pub const CHUNK: usize = 2048;
/// Chunks a worker may have waiting (the reader's lead).
const DEPTH: usize = 32;
/// A chunk is handed over once its first request is this far (ns of the
/// replay's clock) behind the reader, full or not (slow traces).
const FLUSH_NS: u64 = 20_000_000;
/// Lines of one timestamp held to spread them over their second.
const GROUP_MAX: usize = 1 << 20;
/// Keys whose use is tracked (a bit each) to report how many were touched.
const TOUCH_MAX: u64 = 1 << 27;

/// Opens a trace: zstd when it starts with zstd's magic number, else text.
pub fn open(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    let mut f = File::open(path)?;
    let mut magic = [0u8; 4];
    let n = f.read(&mut magic)?;
    let f = File::open(path)?;
    if n == 4 && magic == [0x28, 0xb5, 0x2f, 0xfd] {
        let d = zstd::stream::read::Decoder::new(f)?;
        return Ok(Box::new(BufReader::with_capacity(1 << 20, d)));
    }
    Ok(Box::new(BufReader::with_capacity(1 << 20, f)))
}

/// Whether the trace at `path` is zstd-compressed.
pub fn compressed(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|_| magic == [0x28, 0xb5, 0x2f, 0xfd])
}

/// The longest line kept (the format's lines are well under 1 KiB); a longer
/// one is read through and counted as malformed.
const MAX_LINE: usize = 64 << 10;

/// Reads one line into `buf` (cleared first, newline dropped), keeping at most
/// [`MAX_LINE`] bytes: `Ok(None)` at the end of the input, `Ok(Some(false))`
/// for a line that was too long (its bytes are not kept).
fn next_line(input: &mut dyn BufRead, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    buf.clear();
    let (mut any, mut fits) = (false, true);
    loop {
        let avail = match input.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(any.then_some(fits));
        }
        any = true;
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        if fits && buf.len() + take <= MAX_LINE {
            buf.extend_from_slice(&avail[..take]);
        } else {
            fits = false;
            buf.clear();
        }
        input.consume(take + usize::from(done));
        if done {
            return Ok(Some(fits));
        }
    }
}

/// Parses a line [`next_line`] read.
fn parse_read(line: &[u8], fits: bool) -> Result<super::Line<'_>, &'static str> {
    match fits {
        true => parse(line),
        false => Err("the line is longer than 64 KiB"),
    }
}

/// Reads every line of `input` into a [`Scan`] (memory stays bounded). An
/// I/O or decompression error ends it: the error and the line it came at.
pub fn scan(input: impl BufRead, stop: &AtomicBool) -> (Scan, Option<String>) {
    let mut s = Scan::default();
    let err = each_line(input, stop, |n, l| s.count(n, &l));
    (s, err)
}

/// Hands every non-blank line of `input` to `f`, numbered from 1 and parsed;
/// the I/O or decompression error that ended it early, or the stop, with
/// the line it came at.
pub fn each_line(
    mut input: impl BufRead,
    stop: &AtomicBool,
    mut f: impl FnMut(u64, Result<super::Line<'_>, &'static str>),
) -> Option<String> {
    let mut buf = Vec::with_capacity(256);
    let mut n = 0u64;
    loop {
        let fits = match next_line(&mut input, &mut buf) {
            Ok(None) => return None,
            Ok(Some(f)) => f,
            Err(e) => return Some(format!("after line {n}: {e}")),
        };
        if fits && buf.trim_ascii().is_empty() {
            continue;
        }
        n += 1;
        f(n, parse_read(&buf, fits));
        if n.is_multiple_of(65_536) && stop.load(Ordering::Relaxed) {
            return Some(format!("interrupted after line {n}"));
        }
    }
}

/// What the reader did by the end of the run.
#[derive(Debug, Default)]
pub struct ReadOutcome {
    /// The lines it read.
    pub scan: Scan,
    /// Requests handed to the workers: GETs, SETs.
    pub handed: [u64; 2],
    /// Why it stopped before the end of the trace (a read error), if it did.
    pub error: Option<String>,
    /// Distinct key ids the requests touched (`None`: too many keys to track).
    pub keys_touched: Option<u64>,
    /// It read the trace to its end.
    pub finished: bool,
}

/// A trace being streamed to the workers of one run.
pub struct Feed {
    cursors: Mutex<Vec<Option<Cursor>>>,
    reader: Mutex<Option<JoinHandle<ReadOutcome>>>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feed")
    }
}

impl Feed {
    /// Starts reading `input` for `workers` workers, mapping keys onto
    /// `0..keys`, at `speed` times the trace's pace.
    pub fn start(
        input: Box<dyn BufRead + Send>,
        speed: f64,
        keys: u64,
        workers: usize,
    ) -> io::Result<Feed> {
        let workers = workers.max(1);
        let (back_tx, back_rx) = channel::<Vec<TraceReq>>();
        let mut senders = Vec::with_capacity(workers);
        let mut cursors = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (tx, rx) = sync_channel(DEPTH);
            senders.push(Some(tx));
            cursors.push(Some(Cursor {
                rx,
                back: back_tx.clone(),
                chunk: Vec::new(),
                pos: 0,
                ended: false,
            }));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let r = Reader {
            senders,
            chunks: (0..workers).map(|_| Vec::with_capacity(CHUNK)).collect(),
            back: back_rx,
            speed,
            keys,
            stop: Arc::clone(&stop),
            out: ReadOutcome::default(),
            touched: (keys <= TOUCH_MAX).then(|| vec![0u64; keys.div_ceil(64) as usize]),
        };
        let h = std::thread::Builder::new()
            .name("kvlab-trace".into())
            .spawn(move || r.run(input))?;
        Ok(Feed {
            cursors: Mutex::new(cursors),
            reader: Mutex::new(Some(h)),
            stop,
        })
    }

    /// Worker `w`'s cursor (once).
    pub fn take(&self, w: usize) -> Option<Cursor> {
        self.cursors
            .lock()
            .ok()
            .and_then(|mut c| c.get_mut(w).and_then(Option::take))
    }

    /// Stops the reader (the workers are done) and returns what it did.
    pub fn finish(&self) -> ReadOutcome {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(mut c) = self.cursors.lock() {
            c.clear();
        }
        let h = self.reader.lock().ok().and_then(|mut h| h.take());
        match h.map(JoinHandle::join) {
            Some(Ok(out)) => out,
            _ => ReadOutcome {
                error: Some("the trace reader stopped unexpectedly".into()),
                ..Default::default()
            },
        }
    }
}

/// The reader thread's state.
struct Reader {
    senders: Vec<Option<SyncSender<Vec<TraceReq>>>>,
    chunks: Vec<Vec<TraceReq>>,
    back: Receiver<Vec<TraceReq>>,
    speed: f64,
    keys: u64,
    stop: Arc<AtomicBool>,
    out: ReadOutcome,
    touched: Option<Vec<u64>>,
}

impl Reader {
    fn run(mut self, mut input: Box<dyn BufRead + Send>) -> ReadOutcome {
        let input: &mut dyn BufRead = &mut *input;
        let mut buf = Vec::with_capacity(256);
        let mut group: Vec<(u64, OpKind)> = Vec::new();
        let (mut group_ts, mut gap) = (f64::NAN, 1.0f64);
        let mut first = None;
        let mut n = 0u64;
        let mut last_flush = 0u64;
        loop {
            let fits = match next_line(input, &mut buf) {
                Ok(None) => {
                    self.out.finished = true;
                    break;
                }
                Ok(Some(f)) => f,
                Err(e) => {
                    self.out.error = Some(format!("after line {n}: {e}"));
                    break;
                }
            };
            if fits && buf.trim_ascii().is_empty() {
                continue;
            }
            n += 1;
            let parsed = parse_read(&buf, fits);
            self.out.scan.count(n, &parsed);
            let Ok(l) = parsed else { continue };
            let Some((key, op)) = request_of(&l, self.keys) else {
                continue;
            };
            let f = *first.get_or_insert(l.ts);
            // A line out of order is replayed with the lines above it.
            let ts = if group_ts.is_nan() {
                l.ts
            } else {
                l.ts.max(group_ts)
            };
            if !group.is_empty() && (ts > group_ts || group.len() >= GROUP_MAX) {
                if ts > group_ts {
                    gap = (ts - group_ts).min(1.0);
                }
                let at = self.emit(&group, group_ts - f, gap);
                group.clear();
                if at >= last_flush + FLUSH_NS / 4 {
                    last_flush = at;
                    self.flush_older(at.saturating_sub(FLUSH_NS));
                }
                if self.stop.load(Ordering::Relaxed) || self.senders.iter().all(Option::is_none) {
                    break;
                }
            }
            group_ts = ts;
            group.push((key, op));
        }
        if let Some(f) = first {
            self.emit(&group, group_ts - f, gap);
        }
        self.flush_older(u64::MAX);
        self.out.keys_touched = self
            .touched
            .as_ref()
            .map(|t| t.iter().map(|w| u64::from(w.count_ones())).sum());
        self.out
    }

    /// Hands out the requests of one timestamp, `offset_s` after the trace's
    /// first, spread over `width_s`; returns the time of the last, ns.
    fn emit(&mut self, group: &[(u64, OpKind)], offset_s: f64, width_s: f64) -> u64 {
        let n = group.len().max(1) as f64;
        let mut at = 0;
        for (i, &(key, op)) in group.iter().enumerate() {
            at = ((offset_s + width_s * i as f64 / n) / self.speed * 1e9) as u64;
            self.out.handed[usize::from(op == OpKind::Set)] += 1;
            if let Some(t) = self.touched.as_mut() {
                t[(key / 64) as usize] |= 1 << (key % 64);
            }
            let w = (key % self.chunks.len() as u64) as usize;
            self.chunks[w].push(TraceReq { at_ns: at, key, op });
            if self.chunks[w].len() >= CHUNK {
                self.send(w);
            }
        }
        at
    }

    /// Hands over every chunk whose first request is due before `before`.
    fn flush_older(&mut self, before: u64) {
        for w in 0..self.chunks.len() {
            if self.chunks[w].first().is_some_and(|r| r.at_ns <= before) {
                self.send(w);
            }
        }
    }

    /// Sends worker `w`'s chunk (waiting while its channel is full) and
    /// starts another from a used one.
    fn send(&mut self, w: usize) {
        let fresh = self
            .back
            .try_recv()
            .map(|mut c| {
                c.clear();
                c
            })
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.chunks[w], fresh);
        if let Some(tx) = &self.senders[w]
            && tx.send(full).is_err()
        {
            // That worker is done: drop what is meant for it.
            self.senders[w] = None;
        }
    }
}

/// What a worker's cursor has next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// This request.
    Req(TraceReq),
    /// Nothing yet: the reader has not got that far.
    Behind,
    /// The trace is over for this worker.
    End,
}

/// A worker's view of the trace: the requests meant for it, in time order.
pub struct Cursor {
    rx: Receiver<Vec<TraceReq>>,
    back: Sender<Vec<TraceReq>>,
    chunk: Vec<TraceReq>,
    pos: usize,
    ended: bool,
}

impl Cursor {
    /// The next request, without taking it.
    #[inline]
    pub fn peek(&mut self) -> Next {
        if let Some(&r) = self.chunk.get(self.pos) {
            return Next::Req(r);
        }
        if self.ended {
            return Next::End;
        }
        match self.rx.try_recv() {
            Ok(c) => {
                let used = std::mem::replace(&mut self.chunk, c);
                self.pos = 0;
                let _ = self.back.send(used);
                self.chunk.first().map_or(Next::Behind, |&r| Next::Req(r))
            }
            Err(TryRecvError::Empty) => Next::Behind,
            Err(TryRecvError::Disconnected) => {
                self.ended = true;
                Next::End
            }
        }
    }

    /// Takes the request [`Cursor::peek`] returned.
    #[inline]
    pub fn advance(&mut self) {
        self.pos += 1;
    }

    /// Requests still to come that were meant before `limit_ns` (read
    /// through them: the run is over). Waits for the reader where it lags.
    pub fn left_before(&mut self, limit_ns: u64) -> u64 {
        let mut n = 0;
        loop {
            while let Some(r) = self.chunk.get(self.pos) {
                if r.at_ns >= limit_ns {
                    return n;
                }
                n += 1;
                self.pos += 1;
            }
            match self.rx.recv_timeout(std::time::Duration::from_secs(2)) {
                Ok(c) => {
                    self.chunk = c;
                    self.pos = 0;
                }
                Err(_) => return n,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(text: &str, speed: f64, workers: usize) -> (Vec<Vec<TraceReq>>, ReadOutcome) {
        let f = Feed::start(
            Box::new(io::Cursor::new(text.as_bytes().to_vec())),
            speed,
            100,
            workers,
        )
        .unwrap();
        // The workers take their requests side by side, as in a run.
        let mut cursors: Vec<Cursor> = (0..workers).map(|w| f.take(w).unwrap()).collect();
        let mut got = vec![Vec::new(); workers];
        let mut ended = vec![false; workers];
        while ended.iter().any(|e| !e) {
            for (w, c) in cursors.iter_mut().enumerate() {
                loop {
                    match c.peek() {
                        Next::Req(r) => {
                            got[w].push(r);
                            c.advance();
                        }
                        Next::Behind => break,
                        Next::End => {
                            ended[w] = true;
                            break;
                        }
                    }
                }
            }
            std::thread::yield_now();
        }
        (got, f.finish())
    }

    #[test]
    fn a_second_of_lines_is_spread_and_keys_keep_their_worker() {
        let mut text = String::new();
        for i in 0..10 {
            text.push_str(&format!("100,k{i},2,10,1,get,0\n"));
        }
        text.push_str("101,k0,2,10,1,set,0\n\n101,k1,2,10,1,delete,0\nbad line\n");
        let (got, out) = feed(&text, 2.0, 2);
        let all: Vec<TraceReq> = {
            let mut a: Vec<TraceReq> = got.concat();
            a.sort_by_key(|r| r.at_ns);
            a
        };
        assert_eq!(all.len(), 11);
        // Ten GETs over the first second at twice the speed: 50 ms apart.
        let ats: Vec<u64> = all[..10].iter().map(|r| r.at_ns).collect();
        assert_eq!(ats, (0..10).map(|i| i * 50_000_000).collect::<Vec<_>>());
        assert_eq!(
            all[10],
            TraceReq {
                at_ns: 500_000_000,
                key: super::super::key_id(b"k0", 100),
                op: OpKind::Set
            }
        );
        for (w, reqs) in got.iter().enumerate() {
            assert!(reqs.iter().all(|r| r.key as usize % 2 == w));
            assert!(reqs.windows(2).all(|p| p[0].at_ns <= p[1].at_ns));
        }
        assert_eq!(
            (out.handed, out.scan.lines, out.scan.malformed, out.finished),
            ([10, 1], 13, 1, true)
        );
        assert_eq!(out.scan.ops[8], 1);
    }

    #[test]
    fn lines_split_anywhere_read_the_same_and_long_ones_are_cut() {
        let text = format!(
            "1,a,1,1,1,get,0\n{}\n\n2,b,1,1,1,set,0",
            "x".repeat(MAX_LINE + 5)
        );
        let stop = AtomicBool::new(false);
        // A reader that hands out 3 bytes at a time.
        let slow = BufReader::with_capacity(3, text.as_bytes());
        let (s, err) = scan(slow, &stop);
        assert!(err.is_none());
        assert_eq!((s.lines, s.malformed, s.ops[0], s.ops[2]), (3, 1, 1, 1));
        assert_eq!(
            s.first_malformed,
            Some((2, "the line is longer than 64 KiB"))
        );
        let (whole, _) = scan(text.as_bytes(), &stop);
        assert_eq!((whole.lines, whole.malformed), (3, 1));
    }

    #[test]
    fn a_long_trace_streams_through_bounded_chunks() {
        let mut text = String::new();
        for i in 0..50_000 {
            text.push_str(&format!(
                "{}.{:04},k{},2,10,1,get,0\n",
                i / 10_000,
                i % 10_000,
                i % 777
            ));
        }
        let (got, out) = feed(&text, 1.0, 3);
        assert_eq!(got.iter().map(Vec::len).sum::<usize>(), 50_000);
        // 777 trace keys over 100 ids: every id is touched.
        assert_eq!(out.keys_touched, Some(100));
    }
}
