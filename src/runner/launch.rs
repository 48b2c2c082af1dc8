//! Starting the managed servers a plan asks for (its target, its cache, a
//! pooler in front of the target), sized for the plan's data and connections,
//! with a note of what was started.

use anyhow::{Result, bail};

use super::resolve::Resolved;
use crate::driver::Sizing;
use crate::driver::replication::replicas_of;
use crate::plan::{RunPlan, TargetSpec};
use crate::servers::{ManagedPooler, ManagedServer};
use crate::system::procfs;
use crate::system::progress::{RunOptions, note};

/// Refuses to start a server that cannot hold `data` bytes on this machine:
/// one that keeps its data in memory against the memory available (a
/// `memory-mb` cap counts instead where it is smaller), one that keeps it on
/// disk against twice the data (indexes, logs), and as much per read
/// replica, in the free space of the
/// temporary directory. Past it the machine's OOM killer or a full disk would
/// end the run, and might take other processes with it.
fn room_for_data(target: &TargetSpec, data: u64) -> Result<()> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let kind = target.kind;
    if kind.product().facts().server.on_disk {
        let dir = std::env::temp_dir();
        // Each read replica holds a copy of the data.
        let copies = 1 + replicas_of(kind.product(), &target.server_opts).unwrap_or(0) as u64;
        let need = data.saturating_mul(2).saturating_mul(copies);
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

/// Starts what the plan (resolved in `rs`) asks kvlab to manage and the
/// caller did not start: its target (`have_target`: the caller started it)
/// and the cache in front (`have_cache`: ditto). The servers started here,
/// the target's then the cache's.
pub fn start_missing(
    plan: &RunPlan,
    rs: &Resolved,
    have_target: bool,
    have_cache: bool,
    opts: RunOptions,
) -> Result<[Option<ManagedServer>; 2]> {
    let wanted = [
        Some(&plan.target).filter(|_| !have_target),
        plan.cache
            .as_ref()
            .map(|a| &a.cache)
            .filter(|_| !have_cache),
    ];
    let mut started = [None, None];
    for (i, spec) in wanted.into_iter().enumerate() {
        let Some(spec) = spec else { continue };
        started[i] = start_managed(spec, rs, opts).map_err(|e| match i {
            0 => e,
            _ => super::cache::as_cache(e),
        })?;
    }
    Ok(started)
}

/// Starts `target` (the plan's target or its cache) if kvlab is to manage it,
/// sized for the resolved plan's data and connections (`rs`, whose
/// resolution made room for its sockets), with the pooler the plan puts in
/// front of its target; then says what it started.
pub fn start_managed(
    target: &TargetSpec,
    rs: &Resolved,
    opts: RunOptions,
) -> Result<Option<ManagedServer>> {
    let kind = target.kind;
    if target.external.is_some() {
        return Ok(None);
    }
    room_for_data(target, rs.data_bytes)?;
    // The pooler in front of the plan's target (a cache has none).
    let pooler = target.pooler.as_ref().and(rs.pooler.clone());
    let sizing = Sizing {
        data_bytes: rs.data_bytes,
        // The pooler's server connections must fit too.
        connections: rs
            .config
            .load
            .connections
            .max(pooler.as_ref().map_or(0, |(p, s)| p.server_connections(s))),
    };
    let mut said = Vec::new();
    if pooler.is_some() {
        said.extend(rs.pooler_fd_note.clone());
    }
    if let Some(u) = ManagedServer::os_user(kind, &target.server_opts) {
        said.push(format!(
            "kvlab: runs as root; the managed {} runs as system user '{u}'",
            kind.name()
        ));
    }
    let mut s = ManagedServer::start(kind, &target.server_opts, sizing)?;
    said.push(format!("{} in {}", started(&s, kind), s.dir().display()));
    if let Some((pooler, settings)) = pooler {
        let p = ManagedPooler::start(pooler, &settings, &s.endpoint(), s.run_as())?;
        said.push(format!(
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
        ));
        s.attach_pooler(p);
    }
    for line in said {
        note(opts, line);
    }
    Ok(Some(s))
}

/// The line that says `s` (a managed `kind`) started: its product, version,
/// processes, port, and its read replicas.
fn started(s: &ManagedServer, kind: crate::plan::TargetKind) -> String {
    let pids = s.pids();
    let replicas: Vec<String> = s
        .replica_endpoints()
        .iter()
        .zip(s.replica_pids())
        .map(|(e, pid)| format!("127.0.0.1:{} (pid {pid})", e.port))
        .collect();
    let replicas = match replicas.is_empty() {
        true => String::new(),
        false => format!(", read replicas on {}", replicas.join(", ")),
    };
    let line = match pids.len() {
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
    line + &replicas
}
