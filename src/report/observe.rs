//! An observation as text (each figure with its source, what is unknown, the
//! watch's own share), as the `kvlab decide` command line it gives, and as a
//! `[decide]` study file.

use crate::results::observe::{Figure, Observation, Watched};
use crate::results::stats::num;
use crate::results::usage::Role;

/// The figures, each with where it came from.
pub fn text(o: &Observation) -> String {
    let l = &o.load;
    let mut out = String::new();
    let mut line = |name: &str, value: String, from: &str| {
        out += &format!("  {name:<12} {value}\n  {:<12}   ← {from}\n", "");
    };
    let rate = match (l.rps, l.rps_mean) {
        (Some(p), Some(m)) => format!(
            "{} req/s at the peak, {} req/s mean{}",
            num(p),
            num(m),
            l.rps_busiest
                .filter(|b| *b > p)
                .map_or(String::new(), |b| format!(
                    ", {} in the busiest second",
                    num(b)
                ))
        ),
        _ => "not known".into(),
    };
    line("rate", rate, &l.rps_from);
    let mix = match (l.write_share, &l.ratio) {
        (Some(w), Some(r)) => format!("{:.1}% writes (--ratio {r}, SET:GET)", w * 100.0),
        _ => "not known".into(),
    };
    line("mix", mix, &l.mix_from);
    line(
        "keys",
        l.keys.map_or("not known".into(), |k| num(k as f64)),
        &l.keys_from,
    );
    let sizes = l.value_size.as_ref().map_or("not known".into(), |v| {
        format!(
            "mean {} B, p50 {}, p99 {}, max {} (--value-size {})",
            num(v.mean),
            v.p50,
            v.p99,
            v.max,
            v.flag
        )
    });
    line("value size", sizes, &l.value_size_from);
    line(
        "skew",
        l.zipf.map_or("not known".into(), |z| format!("zipf {z}")),
        &l.skew_from,
    );
    if !l.ttl_from.is_empty() {
        line(
            "cache TTL",
            l.cache_ttl_s
                .map_or("none taken".into(), |t| format!("{t} s (--cache-ttl {t})")),
            &l.ttl_from,
        );
    }
    if let Some(h) = l.cache_hit_ratio {
        let cache = format!(
            "{:.2}% hits, {} items, {} in use{}{}",
            h * 100.0,
            l.cache_items.map_or("? ".into(), |i| num(i as f64)),
            l.cache_memory_bytes.map_or("?".into(), mib),
            l.cache_memory_limit
                .filter(|m| *m > 0)
                .map_or(" (no memory limit)".into(), |m| format!(" of {}", mib(m))),
            l.cache_resident_bytes
                .map(|r| format!(
                    " ({} resident, as kvlab measures a cache it starts)",
                    mib(r)
                ))
                .unwrap_or_default()
        );
        line(
            "cache today",
            cache,
            "its own counters: hits / (hits + misses) in the window",
        );
    }
    for w in &o.servers {
        out += &server(w);
    }
    if o.watched_s + 1.5 < o.seconds {
        out += &format!(
            "  note: watched {:.0} of the {} s asked (stopped early)\n",
            o.watched_s, o.seconds
        );
    }
    out
}

/// One server's own share and what it left unknown.
fn server(w: &Watched) -> String {
    let mut out = format!(
        "  {} ({}): the watch sent {} commands{}\n",
        w.server,
        w.role,
        w.sent,
        match w.own_share {
            Some(s) => format!(", {:.2}% of the server's in the window", s * 100.0),
            None => String::new(),
        }
    );
    for n in &w.notes {
        out += &format!("    {n}\n");
    }
    out
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// The `kvlab decide` command line the load gives, with the goal if stated.
pub fn command(o: &Observation, p99_ms: Option<f64>) -> String {
    let mut flags: Vec<String> = o.flags().iter().map(|f| quoted(f)).collect();
    match p99_ms {
        Some(g) => flags.extend(["--p99-ms".into(), g.to_string()]),
        None => flags.push("--p99-ms MS".into()),
    }
    let mut out = format!("\nkvlab decide {}\n", flags.join(" "));
    if p99_ms.is_none() {
        out += "  (the latency goal is yours to state: --p99-ms)\n";
    }
    for line in passwords(o) {
        out += &format!("  ({line})\n");
    }
    out
}

/// For each server watched with a password, where `kvlab decide` takes it
/// from: the URLs written hold none.
fn passwords(o: &Observation) -> Vec<String> {
    o.servers
        .iter()
        .filter(|s| s.server.contains(":***@"))
        .map(|s| {
            let var = crate::plan::TargetKind::named(&s.product)
                .and_then(|k| k.product().facts().password_env);
            match var {
                Some(var) => format!(
                    "{}'s password is never written: set {var} (kvlab reads it for a URL without one) or add it to the URL",
                    s.product
                ),
                None => format!(
                    "{}'s password is never written: add it to the URL",
                    s.product
                ),
            }
        })
        .collect()
}

/// `f` quoted for a shell where it needs it.
fn quoted(f: &str) -> String {
    match f
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.:/@,=+".contains(c))
    {
        true => f.to_string(),
        false => format!("'{}'", f.replace('\'', "'\\''")),
    }
}

/// The load as a `[decide]` study file.
pub fn study_file(o: &Observation, p99_ms: Option<f64>) -> String {
    let mut t = toml::Table::new();
    // The servers as decide takes them (no password), the load typed.
    for (role, url) in o.decide_servers() {
        let key = match role {
            Role::Cache => "cache",
            _ => "target",
        };
        t.insert(key.into(), toml::Value::String(url));
    }
    for (id, v) in o.load.figures() {
        let value = match v {
            Figure::Count(n) => toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX)),
            Figure::Text(t) => toml::Value::String(t),
        };
        t.insert(id.into(), value);
    }
    let goal = match p99_ms {
        Some(g) => {
            t.insert("p99_ms".into(), toml::Value::Float(g));
            String::new()
        }
        None => "# p99_ms = 5          # the latency goal: yours to state (required)\n".into(),
    };
    let l = &o.load;
    let mut sources = String::new();
    for (name, from) in [
        ("rps", &l.rps_from),
        ("ratio", &l.mix_from),
        ("keys", &l.keys_from),
        ("value_size", &l.value_size_from),
        ("key_distribution", &l.skew_from),
        ("cache_ttl", &l.ttl_from),
    ] {
        sources += &format!("#   {name}: {from}\n");
    }
    format!(
        "# The load kvlab observe saw in {:.0} s (kvlab {}); run it with `kvlab study FILE`.\n# Where each figure came from:\n{sources}{}\nname = \"observed\"\ndescription = \"Keep the cache or not, for the load observed\"\n\n[decide]\n{goal}{}",
        o.watched_s,
        o.kvlab_version,
        passwords(o)
            .iter()
            .map(|l| format!("# {l}.\n"))
            .collect::<String>(),
        toml::to_string(&t).unwrap_or_default()
    )
}
