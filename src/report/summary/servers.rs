//! The servers' CPU and memory in the summary: every server of the run
//! together, then each role's (database, cache, pooler), read from
//! [`ServerFigures::servers`](crate::results::ServerFigures::servers) so every place shows the same figures;
//! a figure a server kvlab did not start reported of itself says so.

use std::fmt::Write as _;

use crate::results::RunResult;
use crate::results::stats::num;

/// The servers' CPU and memory: all together, then each role's where the run
/// had more than one server (database, cache, pooler).
pub(super) fn lines(s: &mut String, r: &RunResult) {
    let mib = |kb: u64| num(kb as f64 / 1024.0);
    let sv = &r.server;
    let several = sv.servers.len() > 1;
    let single = sv.servers.first().filter(|_| !several);
    match (sv.server_cpu_s, sv.server_cpu_us_per_request) {
        (Some(cpu), Some(per)) => {
            let source = match sv.server_cpu_source.as_deref() {
                Some(src) if src != "proc" && !several => {
                    format!(", as the server reports it ({src})")
                }
                _ => String::new(),
            };
            let memory = match (&sv.server_peak_rss_kb, &sv.server_reported_memory) {
                (Some(kb), _) => format!(
                    ", peak RSS {} MiB{}",
                    mib(*kb),
                    rss_from(single.and_then(|u| u.rss_source.as_deref()))
                ),
                (None, Some(m)) => {
                    format!(
                        "; memory {} MiB ({})",
                        num(m.bytes as f64 / 1048576.0),
                        m.source
                    )
                }
                (None, None) => String::new(),
            };
            let _ = writeln!(
                s,
                "  server CPU  {cpu:.2} s, {} µs/request{source}{memory}{}",
                num(per),
                if several {
                    format!(": the {} servers together", sv.servers.len())
                } else {
                    String::new()
                }
            );
        }
        _ if r.cache_aside.is_none() && !r.target.managed => {
            let _ = writeln!(
                s,
                "  server CPU  not known: {} does not report its own CPU use; run it through kvlab (a managed --target) to measure it from /proc",
                r.target.product
            );
        }
        _ if several => {
            let _ = writeln!(
                s,
                "  server CPU  not known for every server, no sum (each one below){}",
                sv.server_peak_rss_kb
                    .map(|kb| format!(
                        "; peak RSS {} MiB: the {} servers together",
                        mib(kb),
                        sv.servers.len()
                    ))
                    .unwrap_or_default()
            );
        }
        _ => {}
    }
    if !several {
        return;
    }
    for u in &sv.servers {
        let _ = writeln!(
            s,
            "    {:<8} {:<10} CPU {}, peak RSS {}",
            u.role.name(),
            u.product,
            match (u.cpu_s, u.cpu_us_per_request) {
                (Some(c), Some(p)) => format!(
                    "{c:.2} s, {} µs/request{}",
                    num(p),
                    u.cpu_source
                        .as_deref()
                        .map(|src| format!(" (from the server's {src})"))
                        .unwrap_or_default()
                ),
                _ => "not known".into(),
            },
            u.peak_rss_kb.map_or("not known".into(), |kb| format!(
                "{} MiB{}",
                mib(kb),
                rss_from(u.rss_source.as_deref())
            ))
        );
    }
}

/// Where a peak RSS a server kvlab did not start reported comes from (empty
/// for /proc's).
fn rss_from(source: Option<&str>) -> String {
    source
        .map(|src| format!(" (the largest the server reported: {src})"))
        .unwrap_or_default()
}
