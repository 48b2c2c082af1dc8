//! A connection's sockets as the loop keeps them: opening them at the start
//! (and a socket a client adds, [`Io::add_socket`]), reading what arrives and handing it to the client, flushing, timing out,
//! closing (failing what waited), reconnecting with back-off, and giving a
//! connection up after [`GIVE_UP`] failed attempts in a row. Runs at the
//! start, every few milliseconds and when a socket is readable; the only
//! per-request work here is the read and the flush.

use std::io;
use std::time::Instant;

use super::{Client, Conn, GIVE_UP, Io, READS_PER_PASS, Worker, token};
use crate::driver::Connector;
use crate::driver::wire::Session;
use crate::engine::pipe::Pipe;
use crate::results::stats::ErrorKind;
use crate::workload::LinkDelay;

impl Io<'_> {
    /// Adds a socket to the connection and opens it to `to`, over an
    /// emulated `link` if given; the session on success (a failure is
    /// counted and backed off; housekeeping retries it).
    pub fn add_socket(
        &mut self,
        to: &Connector,
        link: Option<LinkDelay>,
        now: Instant,
    ) -> Option<Session> {
        let s = self.pipes.len();
        let t = token(self.conn, s);
        let seed = self.net.seed ^ (t.0 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let pipe = Pipe::new(&self.net.reactor, t, self.net.buffers, now);
        self.pipes
            .push(pipe.with_link(link, seed, self.net.inflight));
        self.open(s, to, now)
    }

    /// Opens socket `s` to `to` (blocking, bounded).
    pub(super) fn open(&mut self, s: usize, to: &Connector, now: Instant) -> Option<Session> {
        let p = &mut self.pipes[s];
        match p.open(to, &mut self.net.reactor, self.net.connect_timeout) {
            Ok(session) => Some(session),
            Err(e) => {
                self.tally.connect_failed(e);
                p.failed(now);
                None
            }
        }
    }
}

impl Worker<'_> {
    /// Opens the sockets of connection `c` at the start. A
    /// connection the server refused then (e.g. too many clients) is not
    /// retried: the run goes on with the connections it has.
    pub(super) fn open_all<Cl: Client>(
        &mut self,
        client: &Cl,
        c: &mut Conn<Cl::Conn>,
        now: Instant,
    ) {
        for s in 0..client.sockets() {
            let (mut io, state) = self.io(c);
            if let Some(session) = io.add_socket(client.connector(s), client.link(s), now) {
                client.opened(state, s, &session);
            }
        }
        c.refused = !c.all_open();
    }

    /// Marks the connections that did not open as refused; `--requests`: they
    /// make none of their share (the result shows how many were open), so the
    /// run does not wait for them. Returns the connections established.
    pub(super) fn refuse_unopened<S>(&mut self, conns: &mut [Conn<S>]) -> usize {
        for c in conns.iter_mut() {
            c.refused |= !c.all_open();
            if c.refused {
                c.quota = c.quota.map(|_| 0);
            }
        }
        self.quota_left = conns.iter().map(|c| c.quota).sum();
        conns.iter().filter(|c| !c.refused).count()
    }

    /// Reads what socket `s` of connection `c` has, at most
    /// [`READS_PER_PASS`] buffers of it, lets the client handle every whole
    /// reply, then issues what the schedule allows. A socket with more
    /// waiting goes on the backlog, read on the next pass: a server that
    /// sends without end (pushes, bytes) never keeps the loop from the run's
    /// end and its requests' deadlines.
    pub(super) fn on_readable<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        s: usize,
        now: Instant,
    ) {
        let mut more = false;
        for _ in 0..READS_PER_PASS {
            match c.pipes[s].read_some(&mut self.net.reactor) {
                Ok((0, _)) => return self.close(client, c, s, now),
                Ok((_, again)) => {
                    if let Some(at) = c.pipes[s].arrived(now) {
                        self.links.arriving(at, c.slot);
                    }
                    let (mut io, state) = self.io(c);
                    if !client.replies(&mut io, state, s, now) {
                        return self.broken(client, c, s, now);
                    }
                    more = again;
                    if !more {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => more = true,
                // A reply past the read limit.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    return self.broken(client, c, s, now);
                }
                Err(_) => return self.close(client, c, s, now),
            }
        }
        // The poll's events are edge-triggered: a socket left unread until
        // `WouldBlock` is read again by the loop itself.
        if more && !c.pipes[s].backlog {
            c.pipes[s].backlog = true;
            self.backlog.push((c.slot, s));
        }
        self.after_replies(client, c, now, false);
    }

    /// Reads the sockets a pass left with more to read (each a bounded
    /// amount again; one that still has more stays on the backlog), then
    /// flushes their connections.
    pub(super) fn read_backlog<Cl: Client>(
        &mut self,
        client: &mut Cl,
        conns: &mut [Conn<Cl::Conn>],
    ) {
        let n = self.backlog.len();
        if n == 0 {
            return;
        }
        let now = Instant::now();
        for k in 0..n {
            let (i, s) = self.backlog[k];
            let Some(c) = conns.get_mut(i) else { continue };
            let Some(p) = c.pipes.get_mut(s) else {
                continue;
            };
            // Closed (and perhaps reopened) since: nothing of it is owed.
            if !(p.is_open() && p.backlog) {
                continue;
            }
            p.backlog = false;
            self.on_readable(client, c, s, now);
            self.flush(client, c, now);
        }
        // Those put back meanwhile stay, in place of those just read.
        self.backlog.drain(..n);
    }

    /// After replies were handled, the application seeing them at `seen`:
    /// the closed loop refills, a replay blocked on a full pipeline goes on,
    /// the open loop sends what is due (`linked`: they came through an
    /// emulated link, at `seen`).
    fn after_replies<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        seen: Instant,
        linked: bool,
    ) {
        if c.life.over(seen) && self.renew(client, c, seen) {
            return;
        }
        if self.closed() {
            // Replies that came through an emulated link were seen at their
            // instant: the application wrote its next requests then, and the
            // link's outbound half absorbs the loop's own lateness (as a
            // paced connection's room does); else they are written now.
            let now = Instant::now();
            let at = if linked { seen } else { now };
            self.refill(client, c, at);
            self.flush_at(client, c, now, at);
        } else if let Some(rp) = &self.replay {
            // A reply made room: a trace that waited for it goes on.
            if rp.blocked {
                self.next_due = seen;
            }
        } else if let Some(p) = self.pacer
            && !self.draining
            && c.ready()
        {
            let now = Instant::now();
            if c.full && self.has_room(client, c) {
                // Room again: a request due meanwhile waited for it.
                c.full = false;
                c.room_at = seen;
                c.held = p.written(c.due) <= seen;
            }
            let written = self.issue_due(client, c, p, now);
            self.flush_at(client, c, now, written);
        }
    }

    /// Writes what every socket of `c` has buffered (on an emulated link,
    /// what has come through its outbound half); one that broke is closed.
    #[inline]
    pub(super) fn flush<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        now: Instant,
    ) {
        self.flush_at(client, c, now, now);
    }

    /// [`Worker::flush`] of bytes the application wrote at `written` (the
    /// pacer's folded half before `now`, or `now`).
    pub(super) fn flush_at<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        now: Instant,
        written: Instant,
    ) {
        for s in 0..c.pipes.len() {
            let p = &mut c.pipes[s];
            if !(p.is_open() && p.has_output()) {
                continue;
            }
            match p.flush(&mut self.net.reactor, now, written) {
                Ok(None) => {}
                Ok(Some(at)) => self.links.leaving(at, c.slot),
                Err(_) => self.close(client, c, s, now),
            }
        }
    }

    /// Emulated links: hands the client the replies that have come through
    /// by `now` (each at the time it did, what it writes written then),
    /// writes the requests that have, and goes on as a reply read then
    /// would (see [`Worker::on_readable`]), from when the last reply came
    /// through.
    pub(super) fn advance_links<Cl: Client>(
        &mut self,
        client: &mut Cl,
        conns: &mut [Conn<Cl::Conn>],
        now: Instant,
    ) {
        let due = self.links.take_due(now);
        for &i in &due {
            let Some(c) = conns.get_mut(i) else { continue };
            let mut seen = None;
            for s in 0..c.pipes.len() {
                while let Some(at) = c.pipes[s].reveal(now) {
                    seen = seen.max(Some(at));
                    let (mut io, state) = self.io(c);
                    if !client.replies(&mut io, state, s, at) {
                        self.broken(client, c, s, now);
                        break;
                    }
                    // What the reply called for was written when it came.
                    for p in 0..c.pipes.len() {
                        if let Some(m) = c.pipes[p].mark(at) {
                            self.links.leaving(m, c.slot);
                        }
                    }
                }
            }
            self.after_replies(client, c, seen.unwrap_or(now), seen.is_some());
            self.flush(client, c, now);
        }
        self.links.done(due);
    }

    /// Closed loop: fills `c`'s pipeline and writes it out.
    #[inline]
    pub(super) fn refill_and_flush<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        now: Instant,
    ) {
        self.refill(client, c, now);
        self.flush(client, c, now);
    }

    /// The server broke the protocol on socket `s` (a reply that cannot be
    /// decoded, answers no request or is larger than any the run can get):
    /// what waited on it fails as a protocol error, and it is closed.
    fn broken<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        s: usize,
        now: Instant,
    ) {
        self.fail(client, c, s, ErrorKind::Protocol);
        self.close(client, c, s, now);
    }

    /// Fails everything waiting on socket `s` of `c` with `kind`.
    fn fail<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        s: usize,
        kind: ErrorKind,
    ) {
        let (mut io, state) = self.io(c);
        client.fail(&mut io, state, s, kind);
    }

    /// Closes socket `s`, failing what waited on it; one closed before it
    /// served anything counts as a failed attempt (backed off).
    pub(super) fn close<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        s: usize,
        now: Instant,
    ) {
        self.fail(client, c, s, ErrorKind::Disconnect);
        c.pipes[s].close(&mut self.net.reactor, now);
        if c.may_lack(s) && c.ready() {
            // The client goes on without this socket: what it sent elsewhere
            // instead goes out now, and a closed loop starts the next request.
            if self.closed() {
                self.refill(client, c, now);
            }
            self.flush(client, c, now);
        }
    }

    /// Fails everything `c` has in flight with `kind` (the drain ran out).
    pub(super) fn fail_all<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        kind: ErrorKind,
    ) {
        for s in 0..c.pipes.len() {
            self.fail(client, c, s, kind);
        }
    }

    /// Gives connection `c` up: it is not retried and its share of
    /// `--requests` is dropped.
    fn give_up<S>(&mut self, c: &mut Conn<S>) {
        c.refused = true;
        if let Some(q) = c.quota.replace(0)
            && let Some(t) = self.quota_left.as_mut()
        {
            *t -= q;
        }
    }

    /// Timeouts, giving up and reconnection of connection `c`; its renewal
    /// when its life ended while it was idle.
    pub(super) fn housekeep<Cl: Client>(
        &mut self,
        client: &mut Cl,
        c: &mut Conn<Cl::Conn>,
        now: Instant,
    ) {
        self.renew(client, c, now);
        for s in 0..c.pipes.len() {
            if c.may_lack(s) {
                // Retried about every 0.4 s for as long as it is down.
                c.pipes[s].streak = c.pipes[s].streak.min(1);
            }
            if c.pipes[s].streak >= GIVE_UP && !c.refused {
                self.give_up(c);
            }
            if !c.pipes[s].is_open() {
                if !self.draining
                    && !c.refused
                    && self.attempts_left > 0
                    && now >= c.pipes[s].retry_at
                {
                    self.attempts_left -= 1;
                    let (mut io, state) = self.io(c);
                    if let Some(session) = io.open(s, client.connector(s), now) {
                        client.opened(state, s, &session);
                        c.room_at = now;
                        self.tally.reconnects += 1;
                        if self.closed() {
                            self.refill_and_flush(client, c, now);
                        }
                    }
                }
                continue;
            }
            if client
                .oldest(&c.state, s)
                .is_some_and(|sent| now.saturating_duration_since(sent) > self.spec.timeout)
            {
                self.fail(client, c, s, ErrorKind::Timeout);
                self.close(client, c, s, now);
            }
        }
    }
}
