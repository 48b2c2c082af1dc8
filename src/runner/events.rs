//! Events during a run (`--event`), done by the run's observer when their
//! second of the measured window begins: kill a managed server, start it again
//! after its seconds down, flush the cache, or kill a cluster's primary so
//! that its replica takes over. Each kill of a server first reads the
//! server's counters, so that the counters check adds up across restarts.

use std::time::Instant;

use crate::driver::{Connector, OwnKeys, Role, ServerCounters};
use crate::plan::events::{EventAction, EventOn, ServerEvent};
use crate::results::{EventReport, RunResult};
use crate::servers::ManagedServer;

/// A managed server an event may act on, and how to read its counters.
#[derive(Clone, Copy)]
pub(super) struct Subject<'a> {
    pub server: &'a ManagedServer,
    pub connector: &'a Connector,
}

/// The events of a run, those still to come and what the done ones did.
pub(super) struct Events<'a> {
    planned: Vec<ServerEvent>,
    target: Option<Subject<'a>>,
    cache: Option<Subject<'a>>,
    /// Restarts waiting for their seconds down: when, which, its report.
    restarts: Vec<(u32, EventOn, usize, Instant)>,
    /// One per event, in the order done.
    pub reports: Vec<EventReport>,
    /// The target's counters read just before each kill.
    pub target_kills: Vec<Option<ServerCounters>>,
    /// The cache's counters read just before each kill.
    pub cache_kills: Vec<Option<ServerCounters>>,
    /// Seconds from each counters reading to its kill (requests served then
    /// are counted by kvlab, lost with the server's counters).
    pub kill_gaps_s: f64,
    /// The cache's keys kvlab may delete (its connector, key prefix and
    /// keys), for `drop-keys-cache` on any cache, started by kvlab or not.
    cache_keys: Option<CacheKeys<'a>>,
}

/// kvlab's own keys on a cache: `prefix` + `0..keys`, through `connector`.
#[derive(Clone, Copy)]
pub(super) struct CacheKeys<'a> {
    pub connector: &'a Connector,
    pub prefix: &'a [u8],
    pub keys: u64,
}

impl<'a> Events<'a> {
    /// The run's `planned` events over its managed `target` and `cache`.
    pub fn new(
        mut planned: Vec<ServerEvent>,
        target: Option<Subject<'a>>,
        cache: Option<Subject<'a>>,
    ) -> Events<'a> {
        planned.sort_by_key(|e| e.at_s);
        Events {
            planned,
            target,
            cache,
            restarts: Vec::new(),
            reports: Vec::new(),
            target_kills: Vec::new(),
            cache_kills: Vec::new(),
            kill_gaps_s: 0.0,
            cache_keys: None,
        }
    }

    /// With kvlab's own `keys` on the cache, which `drop-keys-cache` deletes.
    pub fn with_cache_keys(mut self, keys: Option<CacheKeys<'a>>) -> Events<'a> {
        self.cache_keys = keys;
        self
    }

    /// Deletes kvlab's own keys on the cache: how many it found, said.
    fn drop_keys(&self) -> anyhow::Result<String> {
        let k = self
            .cache_keys
            .ok_or_else(|| anyhow::anyhow!("no cache to delete kvlab's keys on"))?;
        let Role::Cache(c) = k.connector.product.role() else {
            anyhow::bail!("only a cache's keys are dropped");
        };
        let n = c.delete_keys(
            k.connector,
            OwnKeys {
                prefix: k.prefix,
                numbers: &mut (0..k.keys),
            },
        )?;
        Ok(format!(
            "deleted {n} of kvlab's keys (prefix '{}') one by one: a cache loss emulated, the server kept running",
            String::from_utf8_lossy(k.prefix)
        ))
    }

    /// Second `s` of the window begins: does what is due by then.
    pub fn second_begins(&mut self, s: i64) {
        while let Some(e) = self
            .planned
            .first()
            .copied()
            .filter(|e| i64::from(e.at_s) <= s)
        {
            self.planned.remove(0);
            self.act(e);
        }
        while let Some(i) = self.restarts.iter().position(|r| i64::from(r.0) <= s) {
            let (_, on, report, killed) = self.restarts.remove(i);
            let result = self.subject(on).map(|x| x.server.start_again());
            let r = &mut self.reports[report];
            r.took_ms = killed.elapsed().as_secs_f64() * 1e3;
            if let Some(Err(e)) = result {
                r.error = Some(format!("{e:#}"));
            }
        }
    }

    fn subject(&self, on: EventOn) -> Option<Subject<'a>> {
        match on {
            EventOn::Cache => self.cache,
            EventOn::Target => self.target,
        }
    }

    fn act(&mut self, e: ServerEvent) {
        let now = Instant::now();
        let mut report = EventReport {
            event: e.to_string(),
            // Told on time (within a few ms) by the engine's clock.
            at_s: f64::from(e.at_s),
            ..EventReport::default()
        };
        if e.action == EventAction::DropKeys {
            match self.drop_keys() {
                Ok(said) => report.note = Some(said),
                Err(err) => report.error = Some(format!("{err:#}")),
            }
            report.took_ms = now.elapsed().as_secs_f64() * 1e3;
            self.reports.push(report);
            return;
        }
        let Some(x) = self.subject(e.on) else {
            report.error = Some("no server kvlab started to act on".into());
            self.reports.push(report);
            return;
        };
        let outcome = match e.action {
            EventAction::DropKeys => Ok(()),
            EventAction::Flush => match x.server.product().role() {
                Role::Cache(c) => c.flush(x.connector),
                Role::Database(_) => Err(anyhow::anyhow!("only a cache is flushed")),
            },
            EventAction::KillReplica => {
                // The replica's counters go with it: the check is left out.
                self.target_kills.push(None);
                x.server.kill_replica(0)
            }
            EventAction::KillPrimary if x.server.replica_count() > 0 => {
                self.target_kills.push(None);
                x.server.kill()
            }
            EventAction::KillPrimary => {
                // The primary's counters go with it, and its replica's count
                // the writes it replicated: the counters check is left out.
                self.target_kills.push(None);
                x.server.kill_primary()
            }
            EventAction::Kill | EventAction::Restart { .. } => {
                let read = Instant::now();
                let counters = x.connector.counters().ok();
                let killed = x.server.kill();
                self.kill_gaps_s += read.elapsed().as_secs_f64();
                match e.on {
                    EventOn::Cache => self.cache_kills.push(counters),
                    EventOn::Target => self.target_kills.push(counters),
                }
                killed
            }
        };
        report.took_ms = now.elapsed().as_secs_f64() * 1e3;
        if let Err(err) = outcome {
            report.error = Some(format!("{err:#}"));
        } else if let EventAction::Restart { down_s } = e.action {
            self.restarts
                .push((e.at_s + down_s, e.on, self.reports.len(), now));
        }
        self.reports.push(report);
    }

    /// Restarts still waiting when the window ended (their servers stay down).
    pub fn finish(&mut self) {
        for (_, _, i, _) in self.restarts.drain(..) {
            let r = &mut self.reports[i];
            r.error
                .get_or_insert_with(|| "the run ended before the server was started again".into());
        }
    }

    /// Marks each event in `result`'s timeline (on the entry whose seconds
    /// hold it: a minute's, past the per-second part) and fills in its aftermath.
    pub fn report(&self, result: &mut RunResult) {
        for r in &self.reports {
            let mut r = r.clone();
            let s = r.at_s.floor() as i64;
            if let Some(sec) = result.timeline.iter_mut().find(|x| x.contains(s)) {
                let label = r.event.split_once(':').map_or(&*r.event, |(_, a)| a);
                sec.event = Some(match sec.event.take() {
                    Some(prev) => format!("{prev}, {label}"),
                    None => label.to_string(),
                });
            }
            r.analyse(&result.timeline);
            result.events.push(r);
        }
    }
}

/// What a server counted over a window in which it was killed: the counts up
/// to each kill (the first from `before`, later ones from its restart at zero)
/// and, if it came back, those since the last restart (`after`). `None` when
/// a reading is missing.
pub(super) fn counted_across(
    before: Option<ServerCounters>,
    kills: &[Option<ServerCounters>],
    after: Option<ServerCounters>,
) -> Option<ServerCounters> {
    let before = before?;
    if kills.is_empty() {
        return after.map(|a| a.since(&before));
    }
    let zero = ServerCounters {
        exact: before.exact,
        ..ServerCounters::default()
    };
    let mut sum = kills[0]?.since(&before);
    for k in &kills[1..] {
        sum = sum.plus(&(*k)?.since(&zero));
    }
    // Not started again: nothing after the last kill.
    if let Some(a) = after {
        sum = sum.plus(&a.since(&zero));
    }
    Some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(gets: u64, sets: u64) -> ServerCounters {
        ServerCounters {
            gets,
            sets,
            exact: true,
            ..ServerCounters::default()
        }
    }

    #[test]
    fn counts_add_up_across_a_restart() {
        let got = counted_across(Some(c(100, 10)), &[Some(c(600, 60))], Some(c(300, 30))).unwrap();
        assert_eq!((got.gets, got.sets), (800, 80));
        // Killed and never started again: the counts up to the kill.
        let got = counted_across(Some(c(100, 10)), &[Some(c(600, 60))], None).unwrap();
        assert_eq!((got.gets, got.sets), (500, 50));
        assert!(counted_across(Some(c(1, 1)), &[None], Some(c(2, 2))).is_none());
    }
}
