//! The epoll side of the reactor (mio): readiness events, a `timerfd` for
//! wake-ups finer than `epoll_wait`'s milliseconds, and the sockets'
//! registration. Reads and writes are the socket's own syscalls (`Pipe`).

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Registry, Token};

use super::{Ready, What};
use crate::engine::pacer::PreciseTimer;

/// The token of the pacing timer; sockets use small tokens.
const TIMER: Token = Token(usize::MAX - 1);

/// A poll, its events and, for paced loops, a precise timer.
pub(crate) struct Epoll {
    poll: Poll,
    events: Events,
    timer: Option<PreciseTimer>,
}

impl Epoll {
    /// A poll; `paced`: with a timer.
    pub(super) fn new(paced: bool) -> io::Result<Epoll> {
        let poll = Poll::new()?;
        let timer = match paced {
            true => Some(PreciseTimer::new(poll.registry(), TIMER)?),
            false => None,
        };
        Ok(Epoll {
            poll,
            events: Events::with_capacity(1024),
            timer,
        })
    }

    /// The registry sockets are registered with.
    pub(crate) fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    /// Registers `source` as `token`, for reads (and writes when `write`).
    pub(crate) fn watch(
        &self,
        source: &mut impl mio::event::Source,
        token: Token,
        write: bool,
        first: bool,
    ) -> io::Result<()> {
        let interest = match write {
            true => Interest::READABLE | Interest::WRITABLE,
            false => Interest::READABLE,
        };
        match first {
            true => self.registry().register(source, token, interest),
            false => self.registry().reregister(source, token, interest),
        }
    }

    /// Waits for events until `wake` (the timer, when paced, wakes on time;
    /// the poll's timeout is a backstop); the timer's own event is taken here.
    pub(super) fn wait(&mut self, wake: Instant, out: &mut Vec<Ready>) -> io::Result<()> {
        let mut timeout = wake.saturating_duration_since(Instant::now());
        if let Some(t) = self.timer.as_mut()
            && !timeout.is_zero()
        {
            t.arm(wake);
            timeout += Duration::from_millis(2);
        }
        if let Err(e) = self.poll.poll(&mut self.events, Some(timeout))
            && e.kind() != io::ErrorKind::Interrupted
        {
            return Err(e);
        }
        let mut fired = false;
        for ev in self.events.iter() {
            let token = ev.token();
            if token == TIMER {
                fired = true;
                continue;
            }
            let what = match ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                true => What::Readable,
                false => What::Writable,
            };
            out.push(Ready { token, what });
        }
        if fired && let Some(t) = self.timer.as_mut() {
            t.fired(Instant::now());
        }
        Ok(())
    }

    /// The timer's usual lateness (none without a timer).
    pub(super) fn wake_lead(&self) -> Duration {
        self.timer
            .as_ref()
            .map_or(Duration::ZERO, PreciseTimer::wake_lead)
    }
}
