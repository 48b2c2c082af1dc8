//! Caveats for a study whose sweep needs more cores than the machine has: more
//! client threads, or more server threads (a product's thread settings such
//! as `io-threads`), or more server processes (a cluster's nodes), than there
//! are cores to run them.

use crate::plan::TargetSpec;
use crate::plan::study::StudyFile;

/// A whole number from a setting's value (`4` or `"4"`).
fn number(v: &toml::Value) -> Option<u64> {
    v.as_integer()
        .and_then(|i| u64::try_from(i).ok())
        .or_else(|| v.as_str()?.parse().ok())
}

/// What `s` cannot show on a machine with `cores` cores, one sentence each.
pub fn core_caveats(s: &StudyFile, cores: usize) -> Vec<String> {
    let mut out = Vec::new();
    let client = s.sweep.threads.iter().copied().chain(s.load.threads).max();
    if let Some(n) = client.filter(|&n| n > cores) {
        out.push(format!(
            "kvlab's client threads go up to {n} on a machine with {cores} cores: threads beyond {cores} share the cores, so those points measure contention, not the extra threads."
        ));
    }
    for t in &s.targets {
        let Ok(spec) = t.target.parse::<TargetSpec>() else {
            continue;
        };
        if spec.external.is_some() {
            continue; // another machine's cores
        }
        let server = spec.kind.product().server();
        if let Ok(config) = server.configure(&t.server_opts, Default::default()) {
            let n = server.processes(&config);
            if n > cores {
                out.push(format!(
                    "{}: {n} server processes on a machine with {cores} cores, shared with kvlab: they contend for the cores, so these points show what the topology costs, not the throughput it adds with more cores.",
                    crate::modes::study::label(t)
                ));
            }
        }
        for key in spec.kind.product().facts().server.thread_settings {
            let given = t.server_opts.get(*key).and_then(|v| v.parse().ok());
            let swept = s
                .sweep
                .server
                .get(*key)
                .into_iter()
                .flatten()
                .filter_map(number);
            let Some(max) = given.into_iter().chain(swept).max() else {
                continue;
            };
            if max as usize > cores {
                let c = format!(
                    "{}: {key} up to {max} on a machine with {cores} cores, shared with kvlab: server threads beyond {cores} cannot add throughput here, so the sweep cannot show what they add with more cores.",
                    spec.kind.name()
                );
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}
