//! A cache loss on the shapes chosen: the database's load at the loss run's
//! peak carried to the stated rate, held against the shape cache-aside's
//! database sits on (its burst credits where it is burstable), and the row
//! whose database is sized to carry that peak (`cache-aside-loss-sized`).

use super::ask::Asked;
use crate::results::decide::{ArchName, Architecture, CacheLoss, Role};
use crate::results::stats::num;

/// CPU credits a burstable shape holds at most: a day of its baseline (one
/// credit is a vCPU for a minute).
const CREDIT_HOURS: f64 = 24.0;

/// The database's operations per second at the loss run's peak, carried to
/// the stated rate: its reads at the peak as a share of the run's rate, and
/// every write (never more than the whole load).
pub fn peak_ops(loss: &CacheLoss, rps: f64, write_share: f64) -> Option<f64> {
    (loss.rate_rps > 0.0 && loss.event_error.is_none())
        .then(|| (rps * (loss.db_peak_rps / loss.rate_rps + write_share)).min(rps))
}

/// Whether cache-aside's database (row `aside`) carries the load while a
/// lost cache warms, on its shape, as one sentence (`None`: not placed on a
/// catalogued shape, or no loss measured).
pub fn on_shape(
    aside: &Architecture,
    loss: &CacheLoss,
    rps: f64,
    write_share: f64,
) -> Option<String> {
    let db = aside.servers.iter().find(|s| s.role == Role::Database)?;
    let p = db.placed.as_ref()?;
    let (pc, peak) = (db.ops_per_core?, peak_ops(loss, rps, write_share)?);
    let need = peak / pc;
    let count = p.count as f64;
    let sustained = p.sustained_cores? * count;
    let above = seconds_above(loss, sustained * pc, rps, write_share);
    let shape = p.said();
    if need <= sustained {
        return Some(format!(
            "on its shape the database carries the loss: {} cores at the peak ({} ops/s at the stated rate), {shape} sustains {sustained:.2}",
            fmt(need),
            num(peak)
        ));
    }
    // Bursting, every vCPU runs; a credit is a vCPU for a minute, earned at
    // the baseline.
    let burst = match p.vcpu.map(|v| v * count) {
        Some(v) if v > sustained + 1e-9 && need <= v => {
            let credits = sustained * 60.0 * CREDIT_HOURS;
            let per_s = (need - sustained) / 60.0;
            let lasts = credits / per_s.max(1e-9);
            Some(match lasts >= above {
                true => format!(
                    "it bursts above its baseline on its CPU credits: a full balance ({} credits) lasts {} s at the peak, longer than the {} s the loss run's database stayed above its baseline",
                    num(credits),
                    num(lasts.round()),
                    above
                ),
                false => format!(
                    "its CPU credits (a full balance, {}) last {} s at the peak, and the loss run's database stayed above its baseline for {} s: the goal is missed for about {} s",
                    num(credits),
                    num(lasts.round()),
                    above,
                    (above - lasts).round()
                ),
            })
        }
        _ => None,
    };
    Some(format!(
        "on its shape ({shape}, {sustained:.2} cores sustained) the database does not carry the loss's peak of {} cores ({} ops/s at the stated rate): {}",
        fmt(need),
        num(peak),
        burst.unwrap_or_else(|| format!(
            "the goal is missed for about {above} s (the seconds the loss run's database load stayed above what the shape carries)"
        ))
    ))
}

/// Seconds of the loss run whose database load, carried to the stated rate,
/// was above `ops` a second.
fn seconds_above(loss: &CacheLoss, ops: f64, rps: f64, write_share: f64) -> f64 {
    let per = |reads: f64| rps * (reads / loss.rate_rps.max(1e-9) + write_share);
    loss.seconds
        .iter()
        .filter(|s| s.second >= loss.at_s && per(s.db_reads_per_s) > ops)
        .count() as f64
}

/// Cache-aside (row `aside`) with its database sized for the loss run's
/// peak, priced on the same deployment (`None`: no loss measured).
pub fn row(ask: &Asked, aside: &Architecture, loss: Option<&CacheLoss>) -> Option<Architecture> {
    let l = &ask.load;
    let peak = peak_ops(loss?, l.rps, l.write_share)?;
    if aside.servers.is_empty() {
        return None;
    }
    let mut r = aside.clone();
    r.name = ArchName::CacheAsideLossSized;
    r.range = None;
    r.on_cache_loss = Some(format!(
        "its database carries the loss run's peak, {} ops/s at the stated rate, while the cache warms",
        num(peak)
    ));
    r.measured_from = format!(
        "cache-aside's row, its database sized for the cache-loss run's peak ({} of its {} req/s reached the database, carried to the stated rate) rather than its steady misses",
        num(loss?.db_peak_rps),
        num(loss?.rate_rps)
    );
    let mut servers = r.servers.clone();
    for s in servers.iter_mut().filter(|s| s.role == Role::Database) {
        s.ops_per_s = s.ops_per_s.max(peak);
        s.cores = s.ops_per_core.map(|pc| s.ops_per_s / pc);
        (s.placed, s.unpriced) = (None, None);
        (
            s.predicted_cores_at_run,
            s.predicted_range_at_run,
            s.measured_cores_at_run,
        ) = (None, None, None);
    }
    super::rows::size(ask, &mut r, servers);
    Some(r)
}

/// Which of cache-aside (`aside`) and its loss-sized row (`sized`) the
/// answer weighed, and what the other costs, as one clause.
pub fn weighed(
    aside: &Architecture,
    sized: &Architecture,
    survive: bool,
    w: &super::rule::Weigh,
) -> String {
    let cost = |a: &Architecture| {
        a.monthly_cost.map_or("its cost not known".into(), |c| {
            format!(
                "{} {} a month",
                crate::results::decide::bill::money(c),
                w.currency
            )
        })
    };
    match survive {
        true => format!(
            "weighed: cache-aside with its database sized to survive a cache loss ({}; as sized for its steady load it costs {})",
            cost(sized),
            cost(aside)
        ),
        false => format!(
            "weighed: cache-aside as sized for its steady load; with its database sized to survive a cache loss it costs {} (--survive-cache-loss weighs that)",
            cost(sized)
        ),
    }
}

/// Cores as said.
fn fmt(c: f64) -> String {
    format!("{c:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::decide::bill::Placed;
    use crate::results::decide::{LossSecond, ServerSize};

    /// Cache-aside whose database sits on one 2-vCPU shape at a 20%
    /// baseline (0.4 cores sustained), 1,000 ops a core.
    fn aside() -> Architecture {
        let mut a = super::super::rows::row(ArchName::CacheAside, "redis in front of postgres");
        a.servers = vec![ServerSize {
            role: Role::Database,
            ops_per_core: Some(1000.0),
            placed: Some(Placed {
                shape: "db.t4g.small".into(),
                count: 1,
                hour: 0.032,
                sustained_cores: Some(0.4),
                vcpu: Some(2.0),
                ..Placed::default()
            }),
            ..ServerSize::default()
        }];
        a
    }

    /// A loss at 1,000 req/s, reads only, whose database reads peak at
    /// `peak` a second for `above` seconds, 100 after.
    fn loss(peak: f64, above: i64) -> CacheLoss {
        CacheLoss {
            db_peak_rps: peak,
            db_before_rps: 200.0,
            db_counted: None,
            p99_ms: 3.0,
            errors: 0,
            seconds_to_recover: Some(1.0),
            database_alone_carries: true,
            emulated: false,
            rate_rps: 1000.0,
            event_error: None,
            at_s: 0,
            seconds: (0..10)
                .map(|s| LossSecond {
                    second: s,
                    db_reads_per_s: if s < above { peak } else { 100.0 },
                    p99_ms: 3.0,
                })
                .collect(),
        }
    }

    #[test]
    fn a_burstable_database_carries_a_short_loss_on_credits_and_says_a_long_one_missed() {
        // The peak is 0.3 cores: within the 0.4 sustained.
        let l = on_shape(&aside(), &loss(300.0, 3), 1000.0, 0.0).unwrap();
        assert!(
            l.starts_with("on its shape the database carries the loss"),
            "{l}"
        );
        // 0.9 cores for 3 s: a day's credits (0.4 × 60 × 24 = 576) at 0.5
        // vCPU above the baseline last 69,120 s.
        let l = on_shape(&aside(), &loss(900.0, 3), 1000.0, 0.0).unwrap();
        assert!(
            l.contains("bursts above its baseline on its CPU credits"),
            "{l}"
        );
        assert!(l.contains("576 credits") && l.contains("69,120 s"), "{l}");
        // Past its 2 vCPUs (a peak of 2.5 cores at 2,500 ops/s would need
        // more than the shape has): the seconds the goal is missed.
        let l = on_shape(&aside(), &loss(1000.0, 4), 2500.0, 0.0).unwrap();
        assert!(l.contains("the goal is missed for about 4 s"), "{l}");
    }
}
