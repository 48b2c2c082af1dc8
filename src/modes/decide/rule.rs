//! The rule that turns the rows into the answer: cache-aside is kept when
//! the database alone cannot meet the goal, or when it saves machines and at
//! least 10% of the cost; the cache alone only when nothing with a database
//! meets the goal.

use crate::results::decide::{Answer, Architecture, Verdict};

/// The decision from the rows: the database alone, cache-aside and the cache
/// alone (any may be absent or outside the goal). Cache-aside is kept when
/// the database alone cannot meet the goal, or when it saves machines and at
/// least 10% of the cost; the cache alone only when nothing with a database
/// meets the goal.
pub fn answer(
    db: Option<&Architecture>,
    aside: Option<&Architecture>,
    cache: Option<&Architecture>,
) -> Answer {
    fn ok(a: Option<&Architecture>) -> Option<&Architecture> {
        a.filter(|a| a.within_goal)
    }
    let cost = |a: &Architecture| a.monthly_cost.unwrap_or(f64::INFINITY);
    let machines = |a: &Architecture| a.machines.unwrap_or(u32::MAX);
    let pays =
        |d: &Architecture, a: &Architecture| cost(a) < 0.9 * cost(d) && machines(a) < machines(d);
    let cores = |a: &Architecture| {
        a.server_cores
            .map_or("an unknown number of".into(), |c| format!("{c:.2}"))
    };
    let money = |a: &Architecture| {
        a.monthly_cost
            .map_or("a cost not known".into(), |c| format!("{c:.0}"))
    };
    match (ok(db), ok(aside), ok(cache)) {
        (Some(d), Some(a), _) if pays(d, a) => Answer {
            close_call: None,
            answer: Verdict::KeepCache,
            because: format!(
                "{} alone needs {} cores on {} machines for the load within the goal ({} a month); with the cache in front ({:.0}% of reads hit) {} cores on {} machines do, at {:.0}% of the cost",
                d.product,
                cores(d),
                machines(d),
                money(d),
                a.hit_ratio.unwrap_or(0.0) * 100.0,
                cores(a),
                machines(a),
                cost(a) * 100.0 / cost(d)
            ),
        },
        (Some(d), aside, _) => Answer {
            close_call: None,
            answer: Verdict::DropCache,
            because: match aside {
                Some(a) => format!(
                    "{} alone meets the goal with {} cores on {} machine(s) ({} a month); with the cache in front it would take {} machine(s) at {:.0}% of the cost: not enough saved to keep a second system and its stale reads",
                    d.product,
                    cores(d),
                    machines(d),
                    money(d),
                    machines(a),
                    cost(a) * 100.0 / cost(d)
                ),
                None => format!(
                    "{} alone meets the goal with {} cores ({} a month), and the cache in front does not meet it",
                    d.product,
                    cores(d),
                    money(d)
                ),
            },
        },
        (None, Some(a), _) => Answer {
            close_call: None,
            answer: Verdict::KeepCache,
            because: format!(
                "{}; with the cache in front ({:.0}% of reads hit) the goal is met with {} cores ({} a month)",
                db.and_then(|d| d.why_not.clone())
                    .unwrap_or_else(|| "the database alone cannot meet the goal".into()),
                a.hit_ratio.unwrap_or(0.0) * 100.0,
                cores(a),
                money(a)
            ),
        },
        (None, None, Some(c)) => Answer {
            close_call: None,
            answer: Verdict::CacheOnly,
            because: format!(
                "neither the database alone nor cache-aside meets the goal; {} alone does, with {} cores ({} a month), if the data may live in a cache (not durable as a database)",
                c.product,
                cores(c),
                money(c)
            ),
        },
        (None, None, None) => Answer {
            close_call: None,
            answer: Verdict::CannotMeet,
            because: format!(
                "no architecture meets the goal here: {}",
                [db, aside, cache]
                    .into_iter()
                    .flatten()
                    .map(|a| format!(
                        "{}: {}",
                        a.name,
                        a.why_not.as_deref().unwrap_or("outside the goal")
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, within: bool, cores: f64, cost: f64) -> Architecture {
        Architecture {
            name: name.into(),
            product: name.into(),
            server_cores: Some(cores),
            memory_bytes: Some(1 << 30),
            machines: Some((cores / 2.0).ceil() as u32),
            monthly_cost: Some(cost),
            p99_ms: Some(1.0),
            within_goal: within,
            hit_ratio: Some(0.9),
            cache_memory_bytes: None,
            stale_reads_per_million: None,
            on_cache_loss: None,
            measured_from: String::new(),
            why_not: (!within).then(|| format!("{name} over the goal")),
            servers: Vec::new(),
            capacity_rps: None,
            capacity_bracket: None,
            model_warning: None,
            range: None,
        }
    }

    #[test]
    fn the_cache_is_kept_only_where_it_pays_and_every_case_has_an_answer() {
        let d = |w, c| row("database", w, 10.0, c);
        let a = |w, c| row("cache-aside", w, 4.0, c);
        let c = |w| row("cache", w, 2.0, 50.0);
        let the = |db, aside, cache| answer(Some(&db), Some(&aside), Some(&cache)).answer.name();
        assert_eq!(the(d(true, 1000.0), a(true, 400.0), c(true)), "keep-cache");
        assert_eq!(the(d(true, 100.0), a(true, 95.0), c(true)), "drop-cache");
        assert_eq!(the(d(true, 100.0), a(false, 50.0), c(true)), "drop-cache");
        assert_eq!(the(d(false, 100.0), a(true, 500.0), c(true)), "keep-cache");
        assert_eq!(the(d(false, 100.0), a(false, 50.0), c(true)), "cache-only");
        let none = answer(Some(&d(false, 1.0)), Some(&a(false, 1.0)), Some(&c(false)));
        assert_eq!(none.answer, Verdict::CannotMeet);
        assert!(
            none.because.contains("database: database over the goal"),
            "{}",
            none.because
        );
    }
}
