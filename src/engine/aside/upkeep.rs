//! Upkeep of a cache-aside client's two connections, off the per-request
//! path: step timeouts, connect failures and reconnection with back-off.

use std::io;
use std::time::{Duration, Instant};

use super::{Client, Ctx, is_cache_step};
use crate::stats::ErrorKind;
use crate::wire::{CacheCodec, Codec};

impl Ctx<'_> {
    /// Counts a failed connect, keeping its message now and then.
    pub(super) fn connect_failed(&mut self, e: io::Error) {
        self.connect_failures += 1;
        if self.last_connect_error.is_none() || self.connect_failures % 1000 == 1 {
            self.last_connect_error = Some(e.to_string());
        }
    }

    /// Timeouts and reconnection; runs every few milliseconds, not per request.
    pub(super) fn housekeep<K: CacheCodec, D: Codec>(
        &mut self,
        c: &mut Client<K, D>,
        now: Instant,
        attempts: &mut u32,
    ) {
        if c.refused {
            return;
        }
        if let Some(op) = c.op
            && now.saturating_duration_since(op.step_sent) > self.spec.timeout
        {
            let on_cache = is_cache_step(op.step);
            self.fail(c, ErrorKind::Timeout, now);
            if on_cache {
                c.cache.close(now);
            } else {
                c.db.close(now);
            }
        }
        if self.draining {
            return;
        }
        let t = self.spec.timeout.min(Duration::from_secs(2));
        let mut reopened = false;
        for on_cache in [true, false] {
            let (down, retry_at) = if on_cache {
                (c.cache.stream.is_none(), c.cache.retry_at)
            } else {
                (c.db.stream.is_none(), c.db.retry_at)
            };
            if !down || *attempts == 0 || now < retry_at {
                continue;
            }
            *attempts -= 1;
            let r = if on_cache {
                c.cache.open(&self.aside.cache, &self.registry, t)
            } else {
                c.db.open(&self.spec.connector, &self.registry, t)
            };
            match r {
                Ok(()) => {
                    self.reconnects += 1;
                    reopened = true;
                }
                Err(e) => {
                    self.connect_failed(e);
                    let link_fails = if on_cache {
                        &mut c.cache.fails
                    } else {
                        &mut c.db.fails
                    };
                    *link_fails = link_fails.saturating_add(1);
                    let back = now + Duration::from_millis(100 << (*link_fails).min(6));
                    if on_cache {
                        c.cache.retry_at = back;
                    } else {
                        c.db.retry_at = back;
                    }
                }
            }
        }
        if reopened && self.pacer.is_none() {
            self.next(c, now);
        }
    }
}
