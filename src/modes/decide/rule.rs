//! The rule that turns the rows into the answer: cache-aside is kept when
//! the database alone cannot meet the goal, or when it saves at least the
//! policy's share of the cost (10% unless `--keep-saving`) and its amount a
//! month (`--keep-saving-month`); the cache alone only when nothing with a
//! database meets the goal. Each saving is said in the prices' currency.

use crate::results::decide::bill::{bill_said, money};
use crate::results::decide::{Answer, Architecture, Role, Verdict};

/// What the rule asks of a cache to keep it, and the currency it says
/// costs in.
#[derive(Clone, Copy, Debug)]
pub struct Weigh<'a> {
    /// The least share of the database alone's cost saved.
    pub keep_saving: f64,
    /// The least saving a month.
    pub keep_saving_month: f64,
    /// The prices' currency.
    pub currency: &'a str,
}

/// The decision from the rows: the database alone, cache-aside and the cache
/// alone (any may be absent or outside the goal). Cache-aside is kept when
/// the database alone cannot meet the goal, or when it saves what `w` asks;
/// the cache alone only when nothing with a database meets the goal.
pub fn answer(
    db: Option<&Architecture>,
    aside: Option<&Architecture>,
    cache: Option<&Architecture>,
    w: &Weigh,
) -> Answer {
    fn ok(a: Option<&Architecture>) -> Option<&Architecture> {
        a.filter(|a| a.within_goal)
    }
    match (ok(db), ok(aside), ok(cache)) {
        (Some(d), Some(a), _) => {
            let share = share_of_cost(d, a);
            let verdict = match (pays(d, a, w), share) {
                (Some(true), Some(share)) => return kept(d, a, share, w),
                (Some(false), Some(share)) => format!(
                    "{} alone meets the goal with {}; with the cache in front it would take {} at {share:.0}% of the cost ({}): not enough saved to keep a second system and its stale reads (the rule asks {})",
                    d.product,
                    size(d, w),
                    machines(a, w),
                    saving(d, a, w),
                    asks(w)
                ),
                _ => format!(
                    "{} alone meets the goal{}; what each costs is not known ({}), so kvlab weighed what they carry within the goal, not their cost: the cache in front is kept where the database alone cannot meet the goal, or where it saves {}",
                    d.product,
                    carries(d),
                    [unknown(d), unknown(a)]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join("; "),
                    asks(w)
                ),
            };
            Answer {
                close_call: None,
                answer: Verdict::DropCache,
                because: verdict,
            }
        }
        (Some(d), None, _) => Answer {
            close_call: None,
            answer: Verdict::DropCache,
            because: format!(
                "{} alone meets the goal with {}, and the cache in front does not meet it",
                d.product,
                size(d, w)
            ),
        },
        (None, Some(a), _) => Answer {
            close_call: None,
            answer: Verdict::KeepCache,
            because: format!(
                "{}; with the cache in front ({:.0}% of reads hit) the goal is met with {}",
                db.and_then(|d| d.why_not.clone())
                    .unwrap_or_else(|| "the database alone cannot meet the goal".into()),
                a.hit_ratio.unwrap_or(0.0) * 100.0,
                size(a, w)
            ),
        },
        (None, None, Some(c)) => Answer {
            close_call: None,
            answer: Verdict::CacheOnly,
            because: format!(
                "neither the database alone nor cache-aside meets the goal; {} alone does, with {}, if the data may live in a cache (not durable as a database)",
                c.product,
                size(c, w)
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

/// Where neither the database alone nor cache-aside meets the goal (the
/// answer the cache alone, or none), the rows beside the answer that do,
/// each with its size, named after `because`: a durable architecture that
/// meets the goal with a near cache or a replica is not left to the table.
pub fn beside(answer: &mut Answer, others: &[Architecture], w: &Weigh) {
    if !matches!(answer.answer, Verdict::CacheOnly | Verdict::CannotMeet) {
        return;
    }
    let met: Vec<String> = others
        .iter()
        .filter(|o| o.within_goal)
        .map(|o| {
            let stale = o
                .stale_reads_per_million
                .map(|s| {
                    format!(
                        ", {} stale reads per million",
                        crate::results::stats::num(s)
                    )
                })
                .unwrap_or_default();
            format!("{} ({}) with {}{stale}", o.name, o.product, size(o, w))
        })
        .collect();
    if met.is_empty() {
        return;
    }
    answer.because = format!(
        "{}; beside the answer, with a database behind it, {} the goal: {}",
        answer.because,
        match met.len() {
            1 => "this meets",
            _ => "these meet",
        },
        met.join("; ")
    );
}

/// Cache-aside kept where it pays: at `share` percent of the database
/// alone's cost.
fn kept(d: &Architecture, a: &Architecture, share: f64, w: &Weigh) -> Answer {
    Answer {
        close_call: None,
        answer: Verdict::KeepCache,
        because: format!(
            "{} alone needs {} for the load within the goal; with the cache in front ({:.0}% of reads hit) {} do, at {share:.0}% of the cost ({}; the rule asks {})",
            d.product,
            size(d, w),
            a.hit_ratio.unwrap_or(0.0) * 100.0,
            size(a, w),
            saving(d, a, w),
            asks(w)
        ),
    }
}

/// Whether cache-aside `a` pays against the database alone `d`: at least
/// the share and the amount `w` asks saved (`None`: a cost not known).
fn pays(d: &Architecture, a: &Architecture, w: &Weigh) -> Option<bool> {
    let (dc, ac) = (d.monthly_cost?, a.monthly_cost?);
    Some(ac < (1.0 - w.keep_saving) * dc && dc - ac >= w.keep_saving_month)
}

/// `a`'s cost as a percentage of `d`'s, where both are known.
fn share_of_cost(d: &Architecture, a: &Architecture) -> Option<f64> {
    let (dc, ac) = (d.monthly_cost?, a.monthly_cost?);
    (dc > 0.0).then(|| ac * 100.0 / dc)
}

/// What cache-aside saves a month, or costs more, as said: `saving 45.26 USD
/// a month`.
fn saving(d: &Architecture, a: &Architecture, w: &Weigh) -> String {
    let (Some(dc), Some(ac)) = (d.monthly_cost, a.monthly_cost) else {
        return "its saving not known".into();
    };
    match dc >= ac {
        true => format!("saving {} {} a month", money(dc - ac), w.currency),
        false => format!("costing {} {} a month more", money(ac - dc), w.currency),
    }
}

/// What the rule asks of a cache, as said: `10% of the cost`, `10% of the
/// cost and 200 USD a month`.
fn asks(w: &Weigh) -> String {
    match w.keep_saving_month > 0.0 {
        true => format!(
            "{:.0}% of the cost and {} {} a month",
            w.keep_saving * 100.0,
            money(w.keep_saving_month),
            w.currency
        ),
        false => format!("{:.0}% of the cost", w.keep_saving * 100.0),
    }
}

/// A row's servers, as said: its bill on a catalogued deployment
/// (`db.t4g.medium x1 + cache.t4g.small x1 = 71.00 USD a month`), else
/// `2 machine(s)`, or that they are not known.
fn machines(a: &Architecture, w: &Weigh) -> String {
    if let Some(b) = bill(a, w) {
        return b;
    }
    match a.machines {
        Some(m) => format!("{m} machine(s)"),
        None => "machines not known".into(),
    }
}

/// A row's bill where every server is placed on a catalogued deployment.
fn bill(a: &Architecture, w: &Weigh) -> Option<String> {
    let placed: Vec<_> = a.servers.iter().map(|s| s.placed.as_ref()).collect();
    bill_said(&placed, w.currency)
}

/// A row's size, as said: `0.69 cores on db.m6g.large x1 = 116.07 USD a
/// month`, `4.00 cores on 2 machine(s) (1402 a month)`, or which of it is
/// not known and the flag that would make it known.
fn size(a: &Architecture, w: &Weigh) -> String {
    if let (Some(c), Some(b)) = (a.server_cores, bill(a, w)) {
        return format!("{c:.2} cores on {b}");
    }
    let unpriced = a.servers.iter().find_map(|s| {
        let why = s.unpriced.as_ref().filter(|_| s.cores.is_some())?;
        Some(format!("{} {}: {why}", s.role, s.product))
    });
    if let (Some(c), Some(why)) = (a.server_cores, unpriced) {
        return format!("{c:.2} cores (its cost not known: {why})");
    }
    match (a.server_cores, a.machines, a.monthly_cost) {
        (Some(c), Some(m), Some(cost)) => {
            format!("{c:.2} cores on {m} machine(s) ({cost:.0} a month)")
        }
        (Some(c), _, _) => format!("{c:.2} cores (machines and cost not known)"),
        _ => unknown(a).unwrap_or_else(|| "cores not known".into()),
    }
}

/// What of `a` is not known and how to make it known (`None`: its cores
/// and cost are known): its servers whose cores kvlab could not read name
/// the flag that states them.
fn unknown(a: &Architecture) -> Option<String> {
    if a.server_cores.is_some() && a.monthly_cost.is_some() {
        return None;
    }
    if let Some(s) = a
        .servers
        .iter()
        .find(|s| s.cores.is_some() && s.unpriced.is_some())
    {
        return Some(format!(
            "{}: {} {} not priced ({})",
            a.name,
            s.role,
            s.product,
            s.unpriced.as_deref().unwrap_or_default()
        ));
    }
    let flag = |role: Role| match role {
        Role::Cache => "--cache-cores",
        _ => "--target-cores",
    };
    let mut flags: Vec<&str> = a
        .servers
        .iter()
        .filter(|s| s.cores.is_none())
        .map(|s| flag(s.role))
        .collect();
    flags.dedup();
    let give = match flags.is_empty() {
        true => "--target-cores or --cache-cores".to_string(),
        false => flags.join(" and "),
    };
    Some(format!(
        "{}: cores not known (kvlab cannot read the CPU of a server it did not start; give {give})",
        a.name
    ))
}

/// What the database alone carries within the goal, as said (empty where
/// its search found no rate).
fn carries(d: &Architecture) -> String {
    d.capacity_rps
        .map(|c| {
            format!(
                ", carrying {} req/s within it",
                crate::results::stats::num(c)
            )
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::decide::ArchName;

    /// kvlab's saving for keeping a cache.
    const KEEP: Weigh = Weigh {
        keep_saving: crate::results::decide::KVLAB.policy.keep_saving,
        keep_saving_month: 0.0,
        currency: "USD",
    };

    fn row(name: ArchName, within: bool, cores: f64, cost: f64) -> Architecture {
        Architecture {
            name,
            product: name.to_string(),
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
        let d = |w, c| row(ArchName::Database, w, 10.0, c);
        let a = |w, c| row(ArchName::CacheAside, w, 4.0, c);
        let c = |w| row(ArchName::Cache, w, 2.0, 50.0);
        let the = |db, aside, cache| {
            answer(Some(&db), Some(&aside), Some(&cache), &KEEP)
                .answer
                .name()
        };
        assert_eq!(the(d(true, 1000.0), a(true, 400.0), c(true)), "keep-cache");
        assert_eq!(the(d(true, 100.0), a(true, 95.0), c(true)), "drop-cache");
        assert_eq!(the(d(true, 100.0), a(false, 50.0), c(true)), "drop-cache");
        assert_eq!(the(d(false, 100.0), a(true, 500.0), c(true)), "keep-cache");
        assert_eq!(the(d(false, 100.0), a(false, 50.0), c(true)), "cache-only");
        let none = answer(
            Some(&d(false, 1.0)),
            Some(&a(false, 1.0)),
            Some(&c(false)),
            &KEEP,
        );
        assert_eq!(none.answer, Verdict::CannotMeet);
        assert!(
            none.because.contains("database: database over the goal"),
            "{}",
            none.because
        );
    }

    #[test]
    fn a_row_beside_that_meets_the_goal_is_named_where_the_answer_has_no_database() {
        let d = row(ArchName::Database, false, 10.0, 100.0);
        let a = row(ArchName::CacheAside, false, 4.0, 50.0);
        let mut near = row(ArchName::DatabaseNear, true, 2.0, 40.0);
        near.stale_reads_per_million = Some(140_032.7);
        let far = row(ArchName::DatabaseReplicas, false, 2.0, 40.0);
        for cache in [true, false] {
            let c = row(ArchName::Cache, cache, 2.0, 50.0);
            let mut x = answer(Some(&d), Some(&a), Some(&c), &KEEP);
            beside(&mut x, &[far.clone(), near.clone()], &KEEP);
            assert!(
                x.because
                    .ends_with("; beside the answer, with a database behind it, this meets the goal: database-near (database-near) with 2.00 cores on 1 machine(s) (40 a month), 140,033 stale reads per million"),
                "{}",
                x.because
            );
        }
        let mut kept = answer(
            Some(&row(ArchName::Database, true, 10.0, 100.0)),
            Some(&a),
            None,
            &KEEP,
        );
        let before = kept.because.clone();
        beside(&mut kept, &[near], &KEEP);
        assert_eq!(kept.because, before);
    }

    #[test]
    fn a_row_whose_cores_are_not_known_says_so_and_names_the_flag_never_a_placeholder() {
        use crate::results::decide::ServerSize;
        let unknown = |mut a: Architecture, role: Role| {
            a.server_cores = None;
            a.machines = None;
            a.monthly_cost = None;
            a.servers = vec![ServerSize {
                role,
                product: "x".into(),
                ops_per_s: 1000.0,
                ops_per_core: None,
                ..Default::default()
            }];
            a
        };
        let d = |w| unknown(row(ArchName::Database, w, 10.0, 100.0), Role::Database);
        let a = |w| unknown(row(ArchName::CacheAside, w, 4.0, 50.0), Role::Cache);
        let c = |w| unknown(row(ArchName::Cache, w, 2.0, 50.0), Role::Cache);
        let known_a = row(ArchName::CacheAside, true, 4.0, 50.0);
        let mut db = d(true);
        db.capacity_rps = Some(4200.0);
        let cases = [
            answer(Some(&db), Some(&a(true)), Some(&c(true)), &KEEP),
            answer(Some(&db), Some(&known_a), Some(&c(true)), &KEEP),
            answer(Some(&d(true)), Some(&a(false)), Some(&c(true)), &KEEP),
            answer(Some(&d(false)), Some(&a(true)), Some(&c(true)), &KEEP),
            answer(Some(&d(false)), Some(&a(false)), Some(&c(true)), &KEEP),
            answer(Some(&d(false)), Some(&a(false)), Some(&c(false)), &KEEP),
        ];
        for x in &cases {
            let b = &x.because;
            for bad in ["4294967295", "NaN", "inf", "unknown number"] {
                assert!(!b.contains(bad), "{bad}: {b}");
            }
        }
        // Both within the goal, a cost not known: the database alone, and
        // what was weighed instead, with the flag.
        assert_eq!(cases[0].answer, Verdict::DropCache);
        let b = &cases[0].because;
        assert!(b.contains("carrying 4,200 req/s within it"), "{b}");
        assert!(b.contains("give --target-cores"), "{b}");
        assert!(b.contains("give --cache-cores"), "{b}");
        assert!(
            cases[1].because.contains("--target-cores"),
            "{}",
            cases[1].because
        );
        assert!(
            !cases[1].because.contains("cache-aside: cores"),
            "{}",
            cases[1].because
        );
        assert!(
            cases[3].because.contains("give --cache-cores"),
            "{}",
            cases[3].because
        );
    }
}
