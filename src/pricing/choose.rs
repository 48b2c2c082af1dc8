//! Each server on the cheapest shape that holds it: its cores at the stated
//! load sustained (a burstable shape only up to its baseline) and its data in
//! the memory left after the shape's reserve. Past the largest shape, N of
//! the shape that costs least for the load: a cache's shards, or a
//! database's primary and read replicas where its writes leave room (else
//! "beyond one primary", said). A serverless cache is priced beside the
//! nodes and taken where it costs less. Pure: a [`Need`] and a
//! [`Deployment`] in, a [`Placed`] or the reason none holds it out.

use crate::results::decide::Role;
use crate::results::decide::bill::{Deployment, Offer, Placed, Serverless};
use crate::results::stats::num;

/// What one server needs of its shapes at the stated load.
#[derive(Clone, Copy, Debug)]
pub struct Need {
    /// Its part.
    pub role: Role,
    /// Its cores at the stated load.
    pub cores: f64,
    /// Its data in memory, GiB.
    pub gib: f64,
    /// Its operations per second.
    pub ops_per_s: f64,
    /// Of them, the writes (every replica of a database applies each).
    pub write_ops: f64,
    /// KB a request moves (a serverless cache's ECPUs).
    pub kb_per_op: f64,
}

/// One way to hold a server: `count` of `offer`, a month's cost.
struct Fit<'a> {
    offer: &'a Offer,
    count: u32,
    storage: f64,
    monthly: f64,
}

/// `need` placed on `d`'s shapes for its role, a month being `hours`; the
/// reason none holds it where none does.
pub fn place(d: &Deployment, hours: f64, need: &Need) -> Result<Placed, String> {
    if let Some(why) = d.unpriced(need.role) {
        return Err(why.to_string());
    }
    let (offers, cache) = match need.role {
        Role::Cache => (&d.cache, true),
        _ => (&d.database, false),
    };
    // One of a shape where one holds it; past the largest, N.
    let fits = |many: bool| -> Vec<Fit> {
        offers
            .iter()
            .filter_map(|o| match cache {
                true => shards(o, need, hours),
                false => instances(d, o, need, hours),
            })
            .filter(|f| many || f.count == 1)
            .collect()
    };
    let one = fits(false);
    let fits = match one.is_empty() {
        true => fits(true),
        false => one,
    };
    let best = fits.into_iter().min_by(|a, b| {
        a.monthly
            .total_cmp(&b.monthly)
            .then(a.count.cmp(&b.count))
            .then(a.offer.hour.total_cmp(&b.offer.hour))
    });
    let serverless = d
        .serverless
        .as_ref()
        .filter(|_| cache)
        .map(|s| (s, serverless_month(s, need, hours)));
    match (best, serverless) {
        (Some(f), Some((s, m))) if m < f.monthly => Ok(on_serverless(d, s, need, m, Some(&f))),
        (None, Some((s, m))) => Ok(on_serverless(d, s, need, m, None)),
        (Some(f), Some((s, m))) => {
            let mut p = placed(d, &f, need);
            p.why.push_str(&format!(
                "; {} would cost {} a month",
                s.service,
                crate::results::decide::bill::money(m)
            ));
            Ok(p)
        }
        (Some(f), None) => Ok(placed(d, &f, need)),
        (None, None) => Err(none_holds(offers, need)),
    }
}

/// A cache on `o`: enough nodes (shards) for its cores and its memory.
fn shards<'a>(o: &'a Offer, need: &Need, hours: f64) -> Option<Fit<'a>> {
    let by_mem = (need.gib / o.usable_gib()).ceil();
    let by_cpu = o.sustained_cores().map_or(1.0, |c| (need.cores / c).ceil());
    let count = by_mem.max(by_cpu).max(1.0);
    (count < 10_000.0).then_some(Fit {
        offer: o,
        count: count as u32,
        storage: 0.0,
        monthly: count * o.hour * hours,
    })
}

/// A database on `o`: one instance where it holds the server; past it, a
/// primary and read replicas, each holding the data and applying every
/// write, the reads spread over all (a replica's own role: one only).
fn instances<'a>(d: &Deployment, o: &'a Offer, need: &Need, hours: f64) -> Option<Fit<'a>> {
    if o.usable_gib() < need.gib {
        return None;
    }
    let count = match o.sustained_cores() {
        None => 1.0,
        Some(c) if need.cores <= c => 1.0,
        Some(c) if need.role == Role::Database && need.ops_per_s > 0.0 => {
            let per_op = need.cores / need.ops_per_s;
            let (w, r) = (
                need.write_ops * per_op,
                (need.ops_per_s - need.write_ops) * per_op,
            );
            if c <= w {
                return None;
            }
            (r / (c - w)).ceil().max(1.0)
        }
        Some(_) => return None,
    };
    let ha = d.multi_az.unwrap_or(1.0);
    let storage = d.storage.as_ref().map_or(0.0, |s| {
        count * need.gib.ceil().max(s.min_gb) * s.gb_month * ha
    });
    Some(Fit {
        offer: o,
        count: count as u32,
        storage,
        monthly: count * o.hour * hours * ha + storage,
    })
}

/// A serverless cache's month at `need`: its data (at least the minimum)
/// and its requests in ECPUs (a request at least one).
fn serverless_month(s: &Serverless, need: &Need, hours: f64) -> f64 {
    let ecpu = (need.kb_per_op / s.kb_per_ecpu).max(1.0);
    let data = need.gib.max(s.min_gb) * s.gb_hour * hours;
    let requests = need.ops_per_s * 3600.0 * hours * ecpu / 1e6 * s.per_million_ecpu;
    data + requests
}

/// The place `f` gives `need`, with how it was chosen.
fn placed(d: &Deployment, f: &Fit, need: &Need) -> Placed {
    let o = f.offer;
    let holds = format!("{} cores and {} of data", cores(need.cores), gib(need.gib));
    let each = format!(
        "{} sustains {} cores{} and holds {:.2} GiB for data ({} GiB less {:.0}% {})",
        o.name,
        o.sustained_cores().map_or("not known".into(), cores),
        match (o.baseline, o.vcpu) {
            (Some(b), Some(v)) => format!(" ({v} vCPU at its {:.0}% baseline)", b * 100.0),
            _ => String::new(),
        },
        o.usable_gib(),
        o.gib,
        o.reserve * 100.0,
        match need.role {
            Role::Cache if d.deploy.managed() => "the service reserves",
            _ => "for the system and the server's own",
        }
    );
    let mut why = match (f.count, need.role) {
        (1, _) => format!(
            "the cheapest {} shape that holds {holds}: {each}",
            o.service
        ),
        (n, Role::Cache) => {
            format!("{n} shards of the shape that costs least for {holds}: each {each}")
        }
        (n, _) => format!(
            "past the largest shape: a primary and {} read replica(s) of the shape that costs least for {holds} (the reads spread over all, each applying every write): each {each}",
            n - 1
        ),
    };
    if o.vcpu.is_none() {
        why.push_str(
            "; its vCPUs are not in the catalog: chosen by memory alone, its cores not checked",
        );
    }
    if let Some(f) = d.multi_az {
        why.push_str(&format!("; Multi-AZ: instance and storage × {f}"));
    }
    let storage = d.storage.as_ref().filter(|_| need.role != Role::Cache);
    if let Some(s) = storage {
        why.push_str(&format!(
            "; storage {:.0} GB at {} a GB-month each",
            need.gib.ceil().max(s.min_gb),
            s.gb_month
        ));
    }
    let price_date = storage
        .map(|s| s.date.clone())
        .into_iter()
        .chain([o.date.clone()])
        .min()
        .unwrap_or_default();
    Placed {
        service: o.service.clone(),
        shape: o.name.clone(),
        count: f.count,
        hour: o.hour,
        sustained_cores: o.sustained_cores(),
        vcpu: o.vcpu,
        usable_gib: o.usable_gib(),
        storage_month: f.storage,
        usage_month: 0.0,
        monthly: f.monthly,
        why,
        old: super::days::old(&price_date, &d.priced_on),
        source: match storage {
            Some(s) => format!("{}; storage: {}", o.source, s.source),
            None => o.source.clone(),
        },
        price_date,
    }
}

/// `need` on the serverless cache `s` at `monthly`, beside the cheapest
/// nodes `nodes` (if any held it).
fn on_serverless(
    d: &Deployment,
    s: &Serverless,
    need: &Need,
    monthly: f64,
    nodes: Option<&Fit>,
) -> Placed {
    let beside = nodes.map_or("no node shape holds it".to_string(), |f| {
        format!(
            "below the cheapest nodes ({} x{}, {} a month)",
            f.offer.name,
            f.count,
            crate::results::decide::bill::money(f.monthly)
        )
    });
    Placed {
        service: s.service.clone(),
        shape: s.service.clone(),
        count: 1,
        hour: 0.0,
        sustained_cores: None,
        vcpu: None,
        usable_gib: need.gib,
        storage_month: 0.0,
        usage_month: monthly,
        monthly,
        why: format!(
            "serverless, {beside}: {:.2} GB stored (at least {}) at {} a GB-hour and {} requests a second at {} ECPU each, {} a million ECPUs",
            need.gib.max(s.min_gb),
            s.min_gb,
            s.gb_hour,
            num(need.ops_per_s),
            (need.kb_per_op / s.kb_per_ecpu).max(1.0),
            s.per_million_ecpu
        ),
        old: super::days::old(&s.date, &d.priced_on),
        source: s.source.clone(),
        price_date: s.date.clone(),
    }
}

/// Why no shape of `offers` holds `need`.
fn none_holds(offers: &[Offer], need: &Need) -> String {
    let Some(big) = offers
        .iter()
        .max_by(|a, b| a.usable_gib().total_cmp(&b.usable_gib()))
    else {
        return "the catalog has no shape for it: give them with --prices FILE".into();
    };
    if big.usable_gib() < need.gib {
        return format!(
            "its data ({} in memory) is more than the largest shape holds ({}: {:.2} GiB for data): give larger shapes with --prices FILE",
            gib(need.gib),
            big.name,
            big.usable_gib()
        );
    }
    match need.role {
        Role::Database => format!(
            "beyond one primary: its writes alone take more cores than the largest shape sustains ({} cores at the stated load)",
            cores(need.cores)
        ),
        _ => format!(
            "{} cores at the stated load: more than the largest shape sustains",
            cores(need.cores)
        ),
    }
}

/// Memory as said: `1.18 GiB`, `24.8 MiB`.
fn gib(g: f64) -> String {
    crate::results::decide::bytes((g * (1u64 << 30) as f64) as u64)
}

/// Cores as said: `0.69`.
fn cores(c: f64) -> String {
    format!("{c:.2}")
}
