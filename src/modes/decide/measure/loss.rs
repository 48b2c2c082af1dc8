//! A cache loss under load: the cache restarted empty (or kvlab's keys
//! deleted from one it did not start) during a run of the chosen
//! cache-aside, and what the database saw while it refilled.

use anyhow::Result;

use super::{AsideRun, Runs};
use crate::plan::Stop;
use crate::results::RunResult;
use crate::results::decide::CacheLoss;
use crate::results::stats::num;
use crate::runner;

impl Runs<'_> {
    /// The cache restarted empty 3 s into a run of the chosen cache-aside at
    /// `rate` (a cache kvlab did not start: kvlab's own keys deleted, the loss
    /// emulated): the database's read load, p99 and errors while it refills.
    pub fn cache_loss(
        &self,
        a: &AsideRun,
        rate: f64,
        say: &mut dyn FnMut(&str),
    ) -> Result<CacheLoss> {
        let mut p = self.aside(a.memory_mb, rate);
        let m = &self.ask.assumed.method;
        p.load.stop = Stop::Duration(m.loss_run_s(self.ask.quick));
        let emulated = self.ask.cache.cache.external.is_some();
        let at = m.loss_at_s;
        p.load.events = vec![match emulated {
            true => format!("{at}:drop-keys-cache").parse()?,
            false => format!("{at}:restart-cache").parse()?,
        }];
        say(&format!(
            "kvlab decide: a cache loss: {} {at} s into a run at {} req/s{}\n",
            match emulated {
                true =>
                    "kvlab's own keys deleted from the cache given by URL (a loss emulated; the server keeps running)",
                false => "the cache restarted empty",
            },
            num(rate),
            match self.ask.load.rate_shape {
                Some(_) if rate == self.ask.load.rps => " (the peak of the stated day)",
                _ => "",
            }
        ));
        let r = runner::measure(&self.drawn(p), self.db_server, self.opts, self.shutdown)?;
        let mut loss = loss_of(&r, at, self.ask.load.p99_ms);
        loss.emulated = emulated;
        loss.rate_rps = rate;
        loss.event_error = r.events.iter().find_map(|e| e.error.clone());
        Ok(loss)
    }
}

/// What the run `r`, whose cache was lost at second `at`, shows.
fn loss_of(r: &RunResult, at: i64, p99_ms: f64) -> CacheLoss {
    let reads = |s: &crate::results::Second| {
        s.cache
            .as_ref()
            .map_or(0.0, |c| c.db_reads as f64 / s.span_s.max(1) as f64)
    };
    let before: Vec<f64> = r
        .timeline
        .iter()
        .filter(|s| s.second < at)
        .map(reads)
        .collect();
    let after: Vec<&crate::results::Second> =
        r.timeline.iter().filter(|s| s.second >= at).collect();
    let recovered = after
        .iter()
        .find(|s| s.second > at && s.p99_us <= p99_ms * 1000.0)
        .map(|s| (s.second - at) as f64);
    let until = recovered.map_or(i64::MAX, |d| at + d as i64);
    CacheLoss {
        db_peak_rps: after.iter().map(|s| reads(s)).fold(0.0, f64::max),
        db_before_rps: before.iter().sum::<f64>() / before.len().max(1) as f64,
        db_counted: r
            .server_counters
            .as_ref()
            .map(|c| [c.server.gets, c.kvlab_gets]),
        p99_ms: after
            .iter()
            .filter(|s| s.second < until)
            .map(|s| s.p99_us / 1000.0)
            .fold(0.0, f64::max),
        errors: r.totals.errors,
        seconds_to_recover: recovered,
        database_alone_carries: false,
        emulated: false,
        rate_rps: 0.0,
        event_error: None,
        at_s: at,
        seconds: r
            .timeline
            .iter()
            .filter(|s| s.span_s == 1)
            .map(|s| crate::results::decide::LossSecond {
                second: s.second,
                db_reads_per_s: reads(s),
                p99_ms: s.p99_us / 1000.0,
            })
            .collect(),
    }
}
