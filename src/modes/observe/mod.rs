//! `kvlab observe`: the servers a team runs, watched read-only for a window
//! (one thread and one connection each, a reading every second on a shared
//! clock), then asked what they hold; the stated load is derived from what
//! they counted ([`derive`]). Ctrl-C ends the window early with what it has.
//!
//! # Layout
//! - [`derive`]: the stated load from the servers' counters.

pub mod derive;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::driver::observe::{KeysLike, Notes, Reading};
use crate::modes::watched::ToWatch;
use crate::results::observe::{Observation, Second, Watched};
use crate::results::usage::Role;

/// Watches `servers` for `seconds` and derives the load they show; with
/// `like`, a cache's keys, value sizes and TTLs are those of the keys it
/// matches (`--keys-like`). On a terminal, the time watched so far is shown
/// (a long watch is not silent).
pub fn observe(
    servers: &[ToWatch],
    (seconds, like): (f64, Option<&KeysLike>),
    shutdown: &AtomicBool,
) -> Result<Observation> {
    let shown = crate::system::progress::Progress::spinner(
        &format!("kvlab observe: watching for {seconds} s, then sampling its keys:"),
        true,
    );
    let o = unshown(servers, (seconds, like), shutdown);
    shown.finish();
    o
}

/// [`observe`], unshown.
fn unshown(
    servers: &[ToWatch],
    (seconds, like): (f64, Option<&KeysLike>),
    shutdown: &AtomicBool,
) -> Result<Observation> {
    let mut watches = Vec::new();
    for s in servers {
        let product = s.connector.product;
        let observe = product
            .observe()
            .with_context(|| format!("{} cannot be watched by kvlab observe", product.name()))?;
        let w = observe
            .watch(&s.connector)
            .with_context(|| format!("cannot watch {}", s.connector.display))?;
        watches.push(w);
    }
    let start = Instant::now();
    let ticks = seconds.ceil().max(1.0) as u32;
    let watched = std::thread::scope(|scope| {
        let handles: Vec<_> = servers
            .iter()
            .zip(watches)
            .map(|(s, mut w)| {
                scope.spawn(move || {
                    let mut notes = Notes::default();
                    let mut readings = Vec::new();
                    // What the watch sent between its first and last reading.
                    let mut sent = [0, 0];
                    for i in 0..=ticks {
                        let due = start + Duration::from_secs(i as u64);
                        if !sleep_until(due, shutdown) {
                            break;
                        }
                        let r = w.read(&mut notes);
                        let r = notes.or_unknown(r, &format!("the reading at second {i}"), "it");
                        readings.push((start.elapsed().as_secs_f64(), r));
                        sent[usize::from(i > 0)] = w.sent();
                    }
                    let in_window = sent[1].saturating_sub(sent[0]);
                    let holding = w.holding(&mut notes, like);
                    if let Some(l) = like.filter(|_| s.role == Role::Cache) {
                        notes.say(format!(
                            "--keys-like {:?}: its keys, value sizes, TTLs and the skew fit's items are those of the keys that match; its hits, misses, reads, writes, memory and evictions are the whole server's (its counters do not split by key)",
                            l.said()
                        ));
                    }
                    watched(s, &readings, holding, (w.sent(), in_window), notes)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a watch thread panicked"))
            .collect::<Vec<Watched>>()
    });
    let watched_s = watched.iter().map(|w| w.window_s).fold(0.0, f64::max);
    let load = derive::load(&watched);
    let mut o = Observation {
        kvlab_version: env!("CARGO_PKG_VERSION").into(),
        seconds,
        watched_s,
        decide_flags: Vec::new(),
        servers: watched,
        load,
    };
    o.decide_flags = o.flags();
    Ok(o)
}

/// Sleeps until `due`; `false` when Ctrl-C came first.
fn sleep_until(due: Instant, shutdown: &AtomicBool) -> bool {
    loop {
        if shutdown.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(Duration::from_millis(50)));
    }
}

/// One server's watch as a result: the change over the window (first to
/// last good reading), per second, and the watch's share of its commands
/// (`sent`: all it sent, and what it sent within the window).
fn watched(
    s: &ToWatch,
    readings: &[(f64, Option<Reading>)],
    holding: crate::driver::observe::Holding,
    sent: (u64, u64),
    notes: Notes,
) -> Watched {
    let good: Vec<(f64, Reading)> = readings
        .iter()
        .filter_map(|(t, r)| Some((*t, (*r)?)))
        .collect();
    let (window, window_s) = match (good.first(), good.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => (change(&a.1, &b.1), b.0 - a.0),
        _ => (Reading::default(), 0.0),
    };
    let per_second = readings
        .windows(2)
        .map(|w| match (&w[0], &w[1]) {
            ((t0, Some(a)), (t1, Some(b))) if t1 > t0 => {
                let d = change(a, b);
                let rate = |x: Option<u64>| x.map(|v| v as f64 / (t1 - t0));
                Second {
                    reads: rate(d.reads),
                    writes: rate(d.writes),
                    hits: rate(d.hits),
                    misses: rate(d.misses),
                }
            }
            _ => Second::default(),
        })
        .collect();
    // Of the server's own count of commands, or (where it keeps none, as
    // memcached) of its reads and writes and the watch's.
    let all = window
        .commands
        .or_else(|| Some(window.reads? + window.writes? + sent.1));
    let own_share = all.filter(|c| *c > 0).map(|c| sent.1 as f64 / c as f64);
    Watched {
        role: s.role,
        product: s.connector.product.name().into(),
        server: s.connector.display.clone(),
        window,
        window_s,
        per_second,
        holding,
        sent: sent.0,
        own_share,
        notes: notes.0,
        // Read after the window, on a connection of its own.
        eviction: (s.role == Role::Cache).then(|| crate::modes::eviction::read(&s.connector)),
    }
}

/// `b - a`, figure by figure (`None` where either is unknown).
fn change(a: &Reading, b: &Reading) -> Reading {
    let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
    Reading {
        reads: d(a.reads, b.reads),
        writes: d(a.writes, b.writes),
        hits: d(a.hits, b.hits),
        misses: d(a.misses, b.misses),
        evictions: d(a.evictions, b.evictions),
        expired: d(a.expired, b.expired),
        commands: d(a.commands, b.commands),
    }
}
