//! Each target against its baseline target (`baseline = "NAME"` in the study
//! file, or in the target's own table): at every set of swept values both ran
//! without errors, how its throughput, p99 latency and client and server CPU
//! per request compare. This is how a report says what a topology (a
//! cluster, a pooler) or a transport (TLS, a unix socket) changed.

use super::chart::short;
use super::rows::{Row, swept};
/// One sentence per (target, baseline) pair, in the order given.
pub(super) fn lines(pairs: &[(String, String)], rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for (t, base) in pairs {
        let (t, base) = (t.as_str(), base.as_str());
        if !rows.iter().any(|r| r.target == t) {
            continue;
        }
        let pairs: Vec<(&Row, &Row)> = rows
            .iter()
            .filter(|r| r.target == t && r.errors == 0 && !r.not_sustained && r.rps > 0.0)
            .filter_map(|r| {
                let b = rows.iter().find(|b| {
                    b.target == base && b.params == r.params && b.errors == 0 && b.rps > 0.0
                })?;
                Some((r, b))
            })
            .collect();
        if pairs.is_empty() {
            out.push(format!(
                "{t} against {base}: no set of swept values where both ran without errors."
            ));
            continue;
        }
        let thr: Vec<f64> = pairs.iter().map(|(r, b)| r.rps / b.rps).collect();
        let p99: Vec<f64> = pairs
            .iter()
            .filter(|(r, b)| r.latency.p99 > 0.0 && b.latency.p99 > 0.0)
            .map(|(r, b)| r.latency.p99 / b.latency.p99)
            .collect();
        let cpu: Vec<f64> = pairs
            .iter()
            .filter_map(|(r, b)| Some(r.server_us? / b.server_us.filter(|x| *x > 0.0)?))
            .collect();
        let (lo, hi) = (min(&thr), max(&thr));
        let at = |v: f64| {
            let i = thr.iter().position(|x| *x == v).unwrap_or(0);
            let (r, b) = pairs[i];
            format!(
                "{} vs {} req/s at {}",
                short(r.rps),
                short(b.rps),
                params(r, rows)
            )
        };
        let mut s = format!(
            "{t} against {base}: throughput {} over {} point{} (lowest {}: {}; highest {}: {})",
            range(lo, hi),
            pairs.len(),
            if pairs.len() == 1 { "" } else { "s" },
            x(lo),
            at(lo),
            x(hi),
            at(hi)
        );
        if !p99.is_empty() {
            s.push_str(&format!(", p99 latency {}", range(min(&p99), max(&p99))));
        }
        if !cpu.is_empty() {
            s.push_str(&format!(
                ", server CPU per request {}",
                range(min(&cpu), max(&cpu))
            ));
        }
        let client: Vec<f64> = pairs
            .iter()
            .filter(|(_, b)| b.client_us > 0.0)
            .map(|(r, b)| r.client_us / b.client_us)
            .collect();
        if !client.is_empty() {
            s.push_str(&format!(
                ", client CPU per request {}",
                range(min(&client), max(&client))
            ));
        }
        s.push('.');
        out.push(s);
        out.extend(by_round_trip(t, base, &pairs));
    }
    out
}

/// Where the round trip is swept: `t`'s p50 and p99 against `base`'s at each
/// round trip, and from which one `t`'s p50 is the higher (where a cache in
/// front stops paying off in latency).
fn by_round_trip(t: &str, base: &str, pairs: &[(&Row, &Row)]) -> Option<String> {
    let mut at: Vec<(f64, &Row, &Row)> = pairs
        .iter()
        .filter_map(|(r, b)| Some((r.params.get("rtt")?.parse::<f64>().ok()?, *r, *b)))
        .collect();
    at.sort_by(|a, b| a.0.total_cmp(&b.0));
    at.dedup_by(|a, b| a.0 == b.0);
    if at.len() < 2
        || at
            .iter()
            .any(|(_, r, b)| r.latency.p50 <= 0.0 || b.latency.p50 <= 0.0)
    {
        return None;
    }
    let each: Vec<String> = at
        .iter()
        .map(|(ms, r, b)| {
            format!(
                "{ms} ms: p50 {} vs {} µs, p99 {} vs {} µs",
                short(r.latency.p50),
                short(b.latency.p50),
                short(r.latency.p99),
                short(b.latency.p99)
            )
        })
        .collect();
    let from = at
        .iter()
        .position(|(_, r, b)| r.latency.p50 > b.latency.p50);
    let end = match from {
        None => format!("{t}'s p50 is the lower at every round trip measured"),
        Some(0) => format!("{t}'s p50 is the higher at every round trip measured"),
        Some(i)
            if at[i..]
                .iter()
                .all(|(_, r, b)| r.latency.p50 > b.latency.p50) =>
        {
            format!(
                "{t}'s p50 is the higher from {} ms on: there it stops paying off in latency",
                at[i].0
            )
        }
        Some(i) => format!(
            "{t}'s p50 is first the higher at {} ms, but not at every round trip after it",
            at[i].0
        ),
    };
    Some(format!(
        "{t} against {base} by round trip ({}): {end}.",
        each.join("; ")
    ))
}

/// The swept values of `r` (those that vary among `rows`).
fn params(r: &Row, rows: &[Row]) -> String {
    let v = swept(r, rows, " ");
    if v.is_empty() {
        "the study's settings".into()
    } else {
        v.join(", ")
    }
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn x(v: f64) -> String {
    format!("{v:.2}x")
}

fn range(lo: f64, hi: f64) -> String {
    if (hi - lo).abs() < 0.005 {
        x(lo)
    } else {
        format!("{}–{}", x(lo), x(hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(target: &str, connections: &str, rps: f64, server_us: f64) -> Row {
        Row {
            target: target.into(),
            product: "db".into(),
            cache: false,
            params: [("connections".to_string(), connections.to_string())].into(),
            rps,
            latency: Default::default(),
            errors: 0,
            requests: 1000,
            server_us: Some(server_us),
            client_us: 10.0,
            pooler: None,
            timeline: Vec::new(),
            offered_timeline: Vec::new(),
            saturated: false,
            ratio: "0:1".into(),
            aside: None,
            paced: false,
            offered: None,
            not_sustained: false,
            stale: None,
            server_cores: None,
            server_mib: None,
            near_hit_ratio: None,
        }
    }

    #[test]
    fn compares_every_target_with_the_baseline_point_by_point() {
        let rows = [
            row("direct", "50", 40_000.0, 25.0),
            row("direct", "500", 20_000.0, 70.0),
            row("pooled", "50", 16_000.0, 60.0),
            row("pooled", "500", 24_000.0, 63.0),
        ];
        let l = lines(&[("pooled".into(), "direct".into())], &rows);
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].starts_with("pooled against direct: throughput 0.40x–1.20x over 2 points (lowest 0.40x: 16k vs 40k req/s at connections 50; highest 1.20x: 24k vs 20k req/s at connections 500)"),
            "{}",
            l[0]
        );
        assert!(
            l[0].contains("server CPU per request 0.90x–2.40x"),
            "{}",
            l[0]
        );
        assert!(l[0].contains("client CPU per request 1.00x"), "{}", l[0]);
        assert!(lines(&[("absent".into(), "direct".into())], &rows).is_empty());
    }

    #[test]
    fn a_swept_round_trip_says_where_the_cache_stops_paying_off() {
        let at = |target: &str, rtt: &str, p50: f64| {
            let mut r = row(target, "50", 2_000.0, 10.0);
            r.params = [("rtt".to_string(), rtt.to_string())].into();
            r.latency.p50 = p50;
            r.latency.p99 = p50 * 3.0;
            r
        };
        let rows = [
            at("db", "0.05", 300.0),
            at("db", "0.5", 800.0),
            at("db", "1", 1_300.0),
            at("aside", "0.05", 200.0),
            at("aside", "0.5", 850.0),
            at("aside", "1", 1_500.0),
        ];
        let l = lines(&[("aside".into(), "db".into())], &rows);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(
            l[1].starts_with("aside against db by round trip (0.05 ms: p50 200 vs 300 µs"),
            "{}",
            l[1]
        );
        assert!(
            l[1].ends_with(
                "aside's p50 is the higher from 0.5 ms on: there it stops paying off in latency."
            ),
            "{}",
            l[1]
        );
    }
}
