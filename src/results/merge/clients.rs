//! Which parts make the clients of one run (each a shard of the same plan,
//! given once), and each client's part and problems in the merged result.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use crate::plan::shard::Shard;
use crate::results::{ClientReport, RunResult};

/// The first part, the number of clients of the run, and each part by its
/// client's index; fails with one line unless the parts are distinct clients
/// of one run.
pub(super) fn clients_of_one_run(
    parts: &[(String, RunResult)],
) -> Result<(&RunResult, usize, BTreeMap<usize, &RunResult>)> {
    let Some((first_name, first)) = parts.first() else {
        bail!("kvlab merge: give the result files of the clients of one run");
    };
    let count = shard_of(first_name, first)?.count;
    let mut by_index: BTreeMap<usize, &RunResult> = BTreeMap::new();
    for (name, r) in parts {
        let s = shard_of(name, r)?;
        if s.count != count {
            bail!(
                "cannot merge: {name} is client {s} but {first_name} is one of {count}: they are not clients of one run"
            );
        }
        same_run(first_name, first, name, r)?;
        if by_index.insert(s.index, r).is_some() {
            bail!("cannot merge: client {s} is given twice ({name}); give each client's file once");
        }
    }
    Ok((first, count, by_index))
}

/// The shard a result was measured as, or why it cannot be merged.
fn shard_of(name: &str, r: &RunResult) -> Result<Shard> {
    r.shard.ok_or_else(|| {
        anyhow!(
            "cannot merge {name}: it is not the result of a client of a sharded run; merge the files of kvlab run --shard I/N"
        )
    })
}

/// Fails with one line unless `b` was measured with the same workload,
/// target and load as `a` (but for the client's own index and threads).
fn same_run(a_name: &str, a: &RunResult, b_name: &str, b: &RunResult) -> Result<()> {
    let key = |r: &RunResult| -> Result<Value> {
        let mut v = serde_json::json!({
            "config": r.config,
            "target": { "kind": r.target.kind, "url": r.target.url,
                        "product": r.target.product, "version": r.target.version },
            "schema_version": r.schema_version,
        });
        if let Some(load) = v.pointer_mut("/config/load").and_then(Value::as_object_mut) {
            load.remove("shard");
            load.remove("threads");
        }
        Ok(v)
    };
    if let Some((path, x, y)) = first_difference("", &key(a)?, &key(b)?) {
        bail!(
            "cannot merge: {a_name} and {b_name} differ in {path} ({x} vs {y}): they are not clients of one run"
        );
    }
    Ok(())
}

/// The first path at which two JSON values differ, with both values.
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<(String, String, String)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                first_difference(
                    &p,
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                )
            })
        }
        _ if a == b => None,
        _ => Some((path.to_string(), a.to_string(), b.to_string())),
    }
}

/// One client's part.
pub(super) fn client(shard: Shard, r: &RunResult) -> ClientReport {
    ClientReport {
        shard,
        status: if r.valid { "ok" } else { "invalid" }.into(),
        requests: r.totals.requests,
        throughput_rps: r.totals.throughput_rps,
        window: r.window,
        start_late_ms: r.start.map(|s| s.late_ms),
        client_busy: r.client.client_busy,
        client_saturated: r.client.client_saturated,
        client_cpu_s: r.client.client_cpu_s,
        problems: r.problems.clone(),
    }
}

/// The part of a client that wrote no result.
pub(super) fn missing(shard: Shard) -> ClientReport {
    ClientReport {
        shard,
        status: "missing".into(),
        requests: 0,
        throughput_rps: 0.0,
        window: None,
        start_late_ms: None,
        client_busy: None,
        client_saturated: false,
        client_cpu_s: 0.0,
        problems: vec!["no result: this client failed before writing one (see its log)".into()],
    }
}

/// The clients' problems, each under its client's name: missing clients
/// first, as they explain the others' misses.
pub(super) fn clients_problems(clients: &[ClientReport]) -> Vec<String> {
    let mut clients: Vec<&ClientReport> = clients.iter().collect();
    clients.sort_by_key(|c| c.status != "missing");
    clients
        .iter()
        .flat_map(|c| {
            c.problems
                .iter()
                .map(|p| format!("client {}: {p}", c.shard))
        })
        .collect()
}
