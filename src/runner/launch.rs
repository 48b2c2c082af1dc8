//! Starting the managed servers a plan asks for (its target, its cache, a
//! pooler in front of the target), sized for the plan's data and connections,
//! with a note of what was started.

use anyhow::{Result, bail};

use crate::driver::Sizing;
use crate::plan::{RunPlan, TargetSpec};
use crate::servers::{ManagedPooler, ManagedServer};
use crate::system::process::{open_files, raise_open_files};
use crate::system::procfs;
use crate::system::progress::{RunOptions, note};

/// Bytes of data `plan` stores (keys, values, overhead), for sizing servers.
pub fn data_bytes(plan: &RunPlan) -> u64 {
    plan.workload.keys.saturating_mul(
        plan.workload.value_size as u64 + plan.workload.key_prefix.len() as u64 + 80,
    )
}

/// Refuses to start a server that cannot hold `data` bytes on this machine:
/// one that keeps its data in memory against the memory available (a
/// `memory-mb` cap counts instead where it is smaller), one that keeps it on
/// disk against twice the data (indexes, logs) in the free space of the
/// temporary directory. Past it the machine's OOM killer or a full disk would
/// end the run, and might take other processes with it.
fn room_for_data(target: &TargetSpec, data: u64) -> Result<()> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let kind = target.kind;
    if kind.product().facts().server.on_disk {
        let dir = std::env::temp_dir();
        let need = data.saturating_mul(2);
        if let Some(free) = procfs::disk_free(&dir)
            && need > free / 10 * 9
        {
            bail!(
                "the data set ({:.1} GiB with overheads, about {:.1} GiB on disk) does not fit in the {:.1} GiB free in {} for a managed {}; lower --keys or --value-size, set TMPDIR to a larger file system (managed servers keep their files there), or point --target at a server elsewhere",
                gib(data),
                gib(need),
                gib(free),
                dir.display(),
                kind.name()
            );
        }
        return Ok(());
    }
    let cap = target
        .server_opts
        .get("memory-mb")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(u64::MAX, |mb| mb.saturating_mul(1 << 20));
    if let Some(free) = procfs::meminfo("MemAvailable")
        && data.min(cap) > free / 10 * 9
    {
        bail!(
            "the data set ({:.1} GiB with overheads) does not fit in the {:.1} GiB of memory this machine has available for a managed {}, which keeps its data in memory; lower --keys or --value-size, cap the server with --server-opt memory-mb=N (it then holds only part of the data), or point --target at a server elsewhere",
            gib(data),
            gib(free),
            kind.name()
        );
    }
    Ok(())
}

/// Starts `target` (the plan's target or its cache) if kvlab is to manage it,
/// sized for `plan`'s data and connections.
pub fn start_managed(
    target: &TargetSpec,
    plan: &RunPlan,
    opts: RunOptions,
) -> Result<Option<ManagedServer>> {
    let kind = target.kind;
    if target.external.is_some() {
        return Ok(None);
    }
    room_for_data(target, data_bytes(plan))?;
    let local = crate::plan::shard::local_connections(plan.load.shard, plan.load.connections);
    room_for_sockets(sockets(local, None, plan.cache.is_some()))?;
    let pooler = target.pooler_settings(plan.load.connections)?;
    if let Some((p, s)) = &pooler {
        // The pooler (which inherits kvlab's limit) holds a socket per client
        // and per server connection.
        let sockets = plan.load.connections + p.server_connections(s);
        raise_fd_limit(sockets);
        let (limit, _) = open_files();
        if limit < sockets as u64 + 64 {
            note(
                opts,
                format!(
                    "kvlab: the open-file limit ({limit}) is below the {sockets} sockets the pooler may hold; raise the hard limit (ulimit -Hn) or expect refused connections"
                ),
            );
        }
    }
    let sizing = Sizing {
        data_bytes: data_bytes(plan),
        // The pooler's server connections must fit too.
        connections: plan
            .load
            .connections
            .max(pooler.as_ref().map_or(0, |(p, s)| p.server_connections(s))),
    };
    if let Some(u) = ManagedServer::os_user(kind, &target.server_opts) {
        note(
            opts,
            format!(
                "kvlab: runs as root; the managed {} runs as system user '{u}'",
                kind.name()
            ),
        );
    }
    let mut s = ManagedServer::start(kind, &target.server_opts, sizing)?;
    let pids = s.pids();
    let started = match pids.len() {
        1 => format!(
            "kvlab: started {} {} (pid {}) on 127.0.0.1:{}",
            s.info.product,
            s.info.version,
            pids[0],
            s.endpoint().port,
        ),
        n => format!(
            "kvlab: started {} {} as {n} processes (pids {}) joined as one {}, seed 127.0.0.1:{}",
            s.info.product,
            s.info.version,
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            kind.name(),
            s.endpoint().port,
        ),
    };
    note(opts, format!("{started} in {}", s.dir().display()));
    if let Some((pooler, settings)) = pooler {
        let p = ManagedPooler::start(pooler, &settings, &s.endpoint(), s.run_as())?;
        note(
            opts,
            format!(
                "kvlab: started {} {} (pid {}) on 127.0.0.1:{} in front of it, {}",
                pooler.name(),
                p.version,
                p.pid(),
                p.endpoint().port,
                settings
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        );
        s.attach_pooler(p);
    }
    Ok(Some(s))
}

/// Raises the open-file limit for `sockets` of kvlab's own (one a connection,
/// two with a cache in front), and refuses a run whose sockets cannot all be
/// open at once: the connections past the limit would fail and the run with them.
pub fn room_for_sockets(sockets: usize) -> Result<()> {
    raise_fd_limit(sockets);
    let (limit, _) = open_files();
    let need = sockets as u64 + FD_SPARE;
    if limit < need {
        bail!(
            "--connections: the run's {sockets} sockets (one a connection and cluster node, one more with --cache) and kvlab's own files need {need} open files, but this process may open {limit} (ulimit -Hn); lower --connections, raise the hard limit (ulimit -Hn {} as root, LimitNOFILE= for a systemd unit, ulimits in a container), or split the run over client processes (--shard I/N)",
            need.next_power_of_two()
        );
    }
    Ok(())
}

/// The sockets this process opens: one a connection and node of `server` (a
/// managed cluster's primaries; an external cluster's are known only once
/// connected), and one more to the cache in front, if any.
pub fn sockets(connections: usize, server: Option<&ManagedServer>, cache: bool) -> usize {
    let nodes = server
        .and_then(|s| s.settings.get("shards"))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1);
    connections * nodes + if cache { connections } else { 0 }
}

/// Raises the open-file limit to what `connections` need, with room for the
/// managed servers that inherit it (up to the hard limit).
fn raise_fd_limit(connections: usize) {
    raise_open_files(connections as u64 * 2 + 256);
}

/// Files kvlab holds beside its sockets (epoll, timers, results, threads).
const FD_SPARE: u64 = 64;
