//! The buffers the kernel fills for a ring's multishot receives: one
//! provided-buffer ring (`IORING_REGISTER_PBUF_RING`) per worker. A
//! receive's completion names the buffer it filled; the loop copies those
//! bytes to the socket's read buffer at once and hands the buffer back.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::IoUring;
use io_uring::types::BufRingEntry;

/// The buffer group of a worker's receives.
pub(super) const GROUP: u16 = 0;

/// A registered ring of `count` buffers of `size` bytes.
pub(super) struct Bufs {
    entries: *mut BufRingEntry,
    layout: Layout,
    mem: Vec<u8>,
    size: usize,
    count: u16,
    tail: u16,
}

impl Bufs {
    /// `count` (a power of two) buffers of `size` bytes, registered with `ring`.
    pub(super) fn new(ring: &IoUring, count: u16, size: usize) -> io::Result<Bufs> {
        debug_assert!(count.is_power_of_two());
        let layout = Layout::from_size_align(count as usize * size_of::<BufRingEntry>(), 4096)
            .map_err(io::Error::other)?;
        // SAFETY: a non-zero size, page-aligned layout.
        let entries = unsafe { alloc_zeroed(layout) }.cast::<BufRingEntry>();
        if entries.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut b = Bufs {
            entries,
            layout,
            mem: vec![0; count as usize * size],
            size,
            count,
            tail: 0,
        };
        // SAFETY: the ring memory lives as long as `b`, which unregisters it
        // only with the ring (dropped after every receive has ended).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(entries as u64, count, GROUP, 0)?
        };
        for bid in 0..count {
            b.put(bid);
        }
        b.publish();
        Ok(b)
    }

    /// The first `len` bytes of buffer `bid`.
    #[inline]
    pub(super) fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let at = bid as usize * self.size;
        &self.mem[at..at + len.min(self.size)]
    }

    /// Hands buffer `bid` back to the kernel.
    #[inline]
    pub(super) fn recycle(&mut self, bid: u16) {
        self.put(bid);
        self.publish();
    }

    fn put(&mut self, bid: u16) {
        let i = (self.tail & (self.count - 1)) as usize;
        // SAFETY: `i` is below `count`, the ring's length; the kernel reads
        // the entry only once the tail is published past it.
        let e = unsafe { &mut *self.entries.add(i) };
        e.set_addr(self.mem[bid as usize * self.size..].as_ptr() as u64);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field of the ring's first entry, as the kernel
        // reads it (an aligned u16 inside the allocation).
        let tail = unsafe { &*(BufRingEntry::tail(self.entries).cast::<AtomicU16>()) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for Bufs {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.entries.cast(), self.layout) };
    }
}
