//! The io_uring side of the reactor: one ring per worker thread. Each open
//! socket keeps one multishot receive in the kernel, which fills buffers of
//! the worker's provided-buffer ring ([`bufs`](super::bufs)) as replies come,
//! each copied to the socket's read buffer and handed back at once; a flush
//! copies the socket's buffered requests into its send buffer and queues one
//! send. Sockets sit in the ring's fixed-file table where it has room (no
//! lookup per operation). Nothing is handed to the kernel until the loop
//! waits: then every queued send and receive and the wait with the next
//! wake's timeout are one `io_uring_enter`, which also returns the
//! completions (with `DEFER_TASKRUN`, the kernel does the work then, not by
//! interrupting the loop).
//!
//! Buffers the kernel holds stay put: a socket's send buffer is not touched
//! while its send is out; a socket closed with an operation out is shut down
//! so that the operation ends, and its buffers wait for that end
//! ([`Op::Stale`]). The ring cancels and waits for whatever is still out
//! before it and its provided buffers are dropped.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use io_uring::{IoUring, cqueue, opcode, squeue, types};
use mio::Token;

use super::bufs::{Bufs, GROUP};
use super::timer::{Lateness, narrow_timer_slack};
use super::{Inbox, Ready, What, too_large};
use crate::transport::EngineSock;

/// The size of each provided buffer a receive fills.
const BUF_SIZE: usize = 8192;

/// What a receive's result says when the reply did not fit the read buffer's
/// limit (not an errno).
const TOO_LARGE: i32 = i32::MIN;

/// Bits of `user_data` below the socket's token: which operation.
const OP_BITS: u32 = 2;
const OP_RECV: u64 = 0;
const OP_SEND: u64 = 1;
const OP_CANCEL: u64 = 2;

/// One worker's ring.
pub(crate) struct Ring {
    ring: IoUring,
    /// What multishot receives fill (dropped after `ring`).
    bufs: Bufs,
    /// Receives and sends the kernel holds.
    out: usize,
    /// Paced (the open loop): the wait after a pass of sends waits for their
    /// completions and one more (a reply or the time), so that a pass of
    /// sends is not followed by a pass for their completions alone (a
    /// closed loop's replies keep it busy: it waits for one completion).
    paced: bool,
    /// Sends queued since the last wait.
    fresh_sends: usize,
    /// Free slots of the ring's fixed-file table (empty: none registered),
    /// so that the kernel does not look each socket up per operation.
    free_slots: Vec<u32>,
    /// How late its timed waits end.
    late: Lateness,
}

impl Ring {
    /// A ring with room for the operations of about `sockets` sockets (a
    /// full submission queue is handed over early, never dropped), for a
    /// `paced` loop or not.
    pub(crate) fn new(sockets: usize, paced: bool) -> io::Result<Ring> {
        let entries = (2 * sockets + 8).next_power_of_two().clamp(8, 4096) as u32;
        let cq = (4 * entries).max(2 * (2 * sockets as u32 + 8).next_power_of_two());
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(cq)
            .build(entries)
            .or_else(|_| IoUring::builder().setup_cqsize(cq).build(entries))?;
        if !ring.params().is_feature_ext_arg() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's io_uring has no timed wait (IORING_FEAT_EXT_ARG, Linux 5.11)",
            ));
        }
        let count = (2 * sockets).next_power_of_two().clamp(64, 2048) as u16;
        let bufs = Bufs::new(&ring, count, BUF_SIZE).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("no provided-buffer ring for multishot receives (Linux 5.19): {e}"),
            )
        })?;
        narrow_timer_slack();
        // A table with room for sockets a redirect adds later; without one
        // (refused), operations name the socket's descriptor.
        let slots = (sockets as u32 + 64).min(1 << 16);
        let free_slots = match ring.submitter().register_files_sparse(slots) {
            Ok(()) => (0..slots).rev().collect(),
            Err(_) => Vec::new(),
        };
        Ok(Ring {
            ring,
            bufs,
            free_slots,
            out: 0,
            paced,
            fresh_sends: 0,
            late: Lateness::default(),
        })
    }

    /// Queues `e` (handing the queue to the kernel first when it is full).
    #[inline]
    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        // SAFETY: every entry's buffer is owned by a socket's `RingOps`,
        // which keeps it in place until the entry's completion.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// Queues operation `e`, which the kernel then holds until its (last)
    /// completion.
    #[inline]
    fn start(&mut self, e: squeue::Entry) -> io::Result<()> {
        if self.paced && e.get_user_data() & ((1 << OP_BITS) - 1) == OP_SEND {
            self.fresh_sends += 1;
        }
        self.push(e)?;
        self.out += 1;
        Ok(())
    }

    /// Hands the kernel what was queued and waits until `wake` or a
    /// completion; appends the completions to `out`.
    pub(super) fn wait(&mut self, wake: Instant, out: &mut Vec<Ready>) -> io::Result<()> {
        let timeout = wake.saturating_duration_since(Instant::now());
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        let want = 1 + std::mem::take(&mut self.fresh_sends);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => return Err(e),
        }
        let before = out.len();
        for cqe in self.ring.completion() {
            let ud = cqe.user_data();
            let what = match ud & ((1 << OP_BITS) - 1) {
                OP_RECV => What::Received(cqe.result(), cqe.flags()),
                OP_SEND => What::Sent(cqe.result()),
                _ => continue,
            };
            // A multishot receive is out until a completion without MORE.
            if ud & ((1 << OP_BITS) - 1) != OP_RECV || !cqueue::more(cqe.flags()) {
                self.out -= 1;
            }
            out.push(Ready {
                token: Token((ud >> OP_BITS) as usize),
                what,
            });
        }
        if out.len() == before && !timeout.is_zero() {
            self.late.woke(wake, Instant::now());
        }
        Ok(())
    }

    /// Puts socket `fd` in a free slot of the fixed-file table (`None`:
    /// none free or the kernel refused; its descriptor is used instead).
    fn fix(&mut self, fd: RawFd) -> Option<u32> {
        let slot = self.free_slots.pop()?;
        match self.ring.submitter().register_files_update(slot, &[fd]) {
            Ok(_) => Some(slot),
            Err(_) => {
                self.free_slots.push(slot);
                None
            }
        }
    }

    /// Empties fixed-file slot `slot` (the table's reference to its socket
    /// is dropped) and frees it.
    fn unfix(&mut self, slot: u32) {
        if self
            .ring
            .submitter()
            .register_files_update(slot, &[-1])
            .is_ok()
        {
            self.free_slots.push(slot);
        }
    }

    /// The first `len` bytes of provided buffer `bid`.
    #[inline]
    fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        self.bufs.bytes(bid, len)
    }

    /// Hands provided buffer `bid` back to the kernel.
    #[inline]
    fn recycle(&mut self, bid: u16) {
        self.bufs.recycle(bid);
    }

    /// The usual lateness of its timed waits.
    pub(super) fn wake_lead(&self) -> Duration {
        self.late.lead()
    }
}

impl Drop for Ring {
    /// Cancels what the kernel still holds and waits (at most a second) for
    /// it to end, so that no operation outlives the buffers it was given.
    fn drop(&mut self) {
        if self.out == 0 {
            return;
        }
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(OP_CANCEL);
        let _ = self.push(cancel);
        let end = Instant::now() + Duration::from_secs(1);
        let mut done = Vec::new();
        while self.out > 0 && Instant::now() < end {
            if self
                .wait(Instant::now() + Duration::from_millis(10), &mut done)
                .is_err()
            {
                break;
            }
            done.clear();
        }
    }
}

/// Where one of a socket's operations stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Op {
    /// None out.
    #[default]
    Idle,
    /// One out, for the socket as it is.
    Busy,
    /// One out for a socket since closed: its result is dropped.
    Stale,
}

/// One socket over io_uring: blocking (the ring waits for it), its
/// operations on the ring and the send buffer the kernel reads.
pub(crate) struct UringSock {
    token: Token,
    stream: Option<EngineSock>,
    recv: Op,
    send: Op,
    /// Bytes appended to the read buffer that the loop has not taken yet.
    got: i32,
    /// How the receives ended, not yet taken: `0` (the peer closed), an
    /// errno, or [`TOO_LARGE`].
    end: Option<i32>,
    /// The bytes of the send out (the write buffer fills meanwhile).
    sending: Vec<u8>,
    /// How many of them the kernel has taken.
    sent: usize,
    /// The socket's slot in the ring's fixed-file table, if it has one.
    slot: Option<u32>,
}

impl UringSock {
    /// A closed socket known to the ring as `token`.
    pub(super) fn new(token: Token) -> UringSock {
        UringSock {
            token,
            stream: None,
            recv: Op::Idle,
            send: Op::Idle,
            got: 0,
            end: None,
            sending: Vec::new(),
            sent: 0,
            slot: None,
        }
    }

    #[inline]
    pub(super) fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Takes the connected socket `s` (made blocking), in a slot of the
    /// fixed-file table if one is free, and queues its first receive.
    pub(super) fn open(&mut self, ring: &mut Ring, s: EngineSock) -> io::Result<()> {
        s.set_blocking()?;
        if let Some(old) = self.slot.take() {
            ring.unfix(old);
        }
        self.slot = ring.fix(s.raw_fd());
        self.stream = Some(s);
        self.receive(ring)
    }

    /// What came since the last call (already in the read buffer), else the
    /// next receive is queued and `WouldBlock` (see [`super::Sock::read`]).
    #[inline]
    pub(super) fn read(&mut self, ring: &mut Ring) -> io::Result<(usize, bool)> {
        let came = match std::mem::take(&mut self.got) {
            0 => self.end.take(),
            n => Some(n),
        };
        match came {
            Some(TOO_LARGE) => Err(too_large()),
            Some(r) if r < 0 => Err(io::Error::from_raw_os_error(-r)),
            Some(0) => Ok((0, false)),
            // `true`: the next call queues the next receive.
            Some(n) => Ok((n as usize, true)),
            None => {
                self.receive(ring)?;
                Err(io::ErrorKind::WouldBlock.into())
            }
        }
    }

    /// Queues a multishot receive (each arrival fills a provided buffer
    /// until it ends: a completion without MORE), unless one is out (or a
    /// stale one has yet to end) or the receives ended.
    #[inline]
    fn receive(&mut self, ring: &mut Ring) -> io::Result<()> {
        let Some(s) = self.stream.as_ref() else {
            return Ok(());
        };
        if self.recv != Op::Idle || self.end.is_some() {
            return Ok(());
        }
        let e = match self.slot {
            Some(slot) => opcode::RecvMulti::new(types::Fixed(slot), GROUP).build(),
            None => opcode::RecvMulti::new(types::Fd(s.raw_fd()), GROUP).build(),
        }
        .user_data(user_data(self.token, OP_RECV));
        ring.start(e)?;
        self.recv = Op::Busy;
        Ok(())
    }

    /// A receive's completion with `res` and `flags` came: the bytes of the
    /// provided buffer it filled go to `inbox` if it was for the socket as
    /// it is, and the buffer is handed back. Its end (`0`, an error) is kept
    /// for [`UringSock::read`]; one that only ran out of buffers is not (the
    /// next receive is queued).
    #[inline]
    pub(super) fn received(
        &mut self,
        ring: &mut Ring,
        res: i32,
        flags: u32,
        inbox: &mut impl Inbox,
    ) {
        let current = self.recv == Op::Busy;
        if !cqueue::more(flags) {
            self.recv = Op::Idle;
        }
        let Some(bid) = cqueue::buffer_select(flags) else {
            if current && res != -libc::ENOBUFS {
                self.came(res.min(0));
            }
            return;
        };
        if current && res > 0 {
            let came = match take_in(inbox, ring.bytes(bid, res as usize)) {
                Ok(()) => res,
                Err(_) => TOO_LARGE,
            };
            self.came(came);
        }
        ring.recycle(bid);
    }

    /// `res` bytes (or an end) came for the loop to take: bytes add up, the
    /// first end is kept (taken after the bytes before it).
    #[inline]
    fn came(&mut self, res: i32) {
        match res > 0 {
            true => self.got += res,
            false => {
                self.end.get_or_insert(res);
            }
        }
    }

    /// Hands `buf[*pos..]` to a send (copied, so the write buffer may fill
    /// meanwhile) and marks it written; `true` when a send is still out (the
    /// bytes wait for its completion).
    #[inline]
    pub(super) fn write(
        &mut self,
        ring: &mut Ring,
        buf: &[u8],
        pos: &mut usize,
    ) -> io::Result<bool> {
        if self.send != Op::Idle {
            return Ok(true);
        }
        if *pos == buf.len() || self.stream.is_none() {
            // Nothing has come through an emulated link yet.
            return Ok(false);
        }
        self.sending.clear();
        self.sending.extend_from_slice(&buf[*pos..]);
        *pos = buf.len();
        self.sent = 0;
        self.queue_send(ring)?;
        Ok(false)
    }

    fn queue_send(&mut self, ring: &mut Ring) -> io::Result<()> {
        let Some(s) = self.stream.as_ref() else {
            return Ok(());
        };
        let rest = &self.sending[self.sent..];
        let (at, len) = (rest.as_ptr(), rest.len() as u32);
        let e = match self.slot {
            Some(slot) => opcode::Send::new(types::Fixed(slot), at, len).build(),
            None => opcode::Send::new(types::Fd(s.raw_fd()), at, len).build(),
        }
        .user_data(user_data(self.token, OP_SEND));
        ring.start(e)?;
        self.send = Op::Busy;
        Ok(())
    }

    /// A send completed with `res`: the rest of a partial one is queued;
    /// `Err` when the connection broke.
    #[inline]
    pub(super) fn sent(&mut self, ring: &mut Ring, res: i32) -> io::Result<()> {
        let current = self.send == Op::Busy;
        self.send = Op::Idle;
        if !current || self.stream.is_none() {
            return Ok(());
        }
        match res {
            r if r < 0 => Err(io::Error::from_raw_os_error(-r)),
            0 => Err(io::ErrorKind::WriteZero.into()),
            r => {
                self.sent += r as usize;
                match self.sent < self.sending.len() {
                    true => self.queue_send(ring),
                    false => Ok(()),
                }
            }
        }
    }

    /// Lets the socket go: what is out becomes stale and the socket is shut
    /// down so that it ends (its buffers stay until then), what came is
    /// dropped, its slot in the fixed-file table is emptied.
    pub(super) fn close(&mut self, ring: &mut Ring) {
        self.got = 0;
        self.end = None;
        let holds = self.send != Op::Idle || self.recv != Op::Idle;
        if self.recv == Op::Busy {
            self.recv = Op::Stale;
        }
        if self.send == Op::Busy {
            self.send = Op::Stale;
        }
        let Some(s) = self.stream.take() else {
            return;
        };
        if holds {
            s.shut_down();
        }
        if let Some(slot) = self.slot.take() {
            ring.unfix(slot);
        }
    }
}

/// Appends `bytes` to `inbox`; `InvalidData` past its limit.
#[inline]
fn take_in(inbox: &mut impl Inbox, bytes: &[u8]) -> io::Result<()> {
    inbox.room(bytes.len())?[..bytes.len()].copy_from_slice(bytes);
    inbox.filled(bytes.len());
    Ok(())
}

/// The `user_data` of operation `op` on the socket of `token`.
#[inline]
fn user_data(token: Token, op: u64) -> u64 {
    ((token.0 as u64) << OP_BITS) | op
}
