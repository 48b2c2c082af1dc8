//! The servers' CPU and memory in the summary: every server of the run
//! together, then each role's (database, cache, pooler), read from
//! [`ServerFigures::servers`](crate::results::ServerFigures::servers) so every place shows the same figures.

use std::fmt::Write as _;

use crate::results::RunResult;
use crate::results::stats::num;

/// The servers' CPU and memory: all together, then each role's where the run
/// had more than one server (database, cache, pooler).
pub(super) fn lines(s: &mut String, r: &RunResult) {
    let mib = |kb: u64| num(kb as f64 / 1024.0);
    let sv = &r.server;
    match (sv.server_cpu_s, sv.server_cpu_us_per_request) {
        (Some(cpu), Some(per)) => {
            let source = match sv.server_cpu_source.as_deref() {
                Some("proc") | None => String::new(),
                Some(src) => format!(", as the server reports it ({src})"),
            };
            let memory = match (&sv.server_peak_rss_kb, &sv.server_reported_memory) {
                (Some(kb), _) => format!(", peak RSS {} MiB", mib(*kb)),
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
                if sv.servers.len() > 1 {
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
        _ if sv.servers.len() > 1 => {
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
    if sv.servers.len() < 2 {
        return;
    }
    for u in &sv.servers {
        let _ = writeln!(
            s,
            "    {:<8} {:<10} CPU {}, peak RSS {}",
            u.role.name(),
            u.product,
            match (u.cpu_s, u.cpu_us_per_request) {
                (Some(c), Some(p)) => format!("{c:.2} s, {} µs/request", num(p)),
                _ => "not known".into(),
            },
            u.peak_rss_kb
                .map_or("not known".into(), |kb| format!("{} MiB", mib(kb)))
        );
    }
}
