//! A run's plan resolved once into what its steps need: this client's
//! connections and share, the sockets it opens (checked against the
//! open-file limit), the pipeline the protocol allows, the query mode, the
//! data's size, the requests it owes, the plan as results record it and the
//! engine's [`Spec`]. Nothing downstream derives these from the plan again.

use std::sync::Arc;

use anyhow::Result;

use crate::plan::shard::local_connections;
use crate::plan::{PoolerSettings, RunPlan};
use crate::results::ProfileNote;
use crate::system::process::{open_files, raise_open_files};
use crate::workload::consistency::VersionBoard;
use crate::workload::{KEY_OVERHEAD_BYTES, bytes_per_key};

/// What one run derives from its plan, once.
#[derive(Clone)]
pub struct Resolved {
    /// The plan as results record it (passwords redacted).
    pub config: RunPlan,
    /// This client's connections: its share of a sharded run's.
    pub connections: usize,
    /// The share of the run's connections (and so of its rate) this client
    /// drives.
    pub local_share: f64,
    /// The sockets this process opens: one a connection and node of the
    /// server (a managed cluster's primaries; an external cluster's are known
    /// only once connected), and one more to the cache in front, if any.
    pub sockets: usize,
    /// Why the pooler in front may refuse connections: the open-file limit
    /// is below the sockets it may hold.
    pub pooler_fd_note: Option<String>,
    /// Bytes of data the plan stores (keys, values, overhead), for sizing
    /// servers.
    pub data_bytes: u64,
    /// The requests this client owes a `--requests` run (its share).
    pub requests_due: Option<u64>,
    /// The run writes versioned values, so stale reads can be counted.
    pub writes_versioned: bool,
    /// The production profile the workload came from, in words.
    pub profile: Option<ProfileNote>,
    /// Requests in flight per connection, as the protocol allows.
    pub pipeline: usize,
    /// The query mode requests use, for products that have modes.
    pub query_mode: Option<crate::plan::QueryMode>,
    /// Round trips a new connection's set-up sends in that query mode beyond
    /// its requests (what a pooler in front counts).
    pub set_up_round_trips: u64,
    /// The pooler kvlab starts in front of the target, and its settings.
    pub pooler: Option<PoolerSettings>,
    /// The values: keys × value size, bytes.
    pub value_bytes: u64,
    /// The versions of the values the run writes, when stale reads are
    /// measured.
    pub board: Option<Arc<VersionBoard>>,
    /// What the run cannot do as the plan asks (a pipeline the protocol
    /// does not allow, stale reads it cannot measure), one line each.
    pub problems: Vec<String>,
    /// This client's background writer's rate (its part of a sharded run's).
    pub background_rps: Option<f64>,
    /// What the run measures, named as everywhere (e.g. "redis in front of
    /// postgres").
    pub architecture: String,
    /// The client tracking the target's request connections turn on: a near
    /// cache in front of it (not of a cache-aside run's cache).
    pub tracking: Option<crate::driver::Tracking>,
}

impl Resolved {
    /// Resolves `plan`, refusing a key prefix the product (or the cache in
    /// front) cannot take and a run whose sockets cannot all be open at once.
    pub fn of(plan: &RunPlan) -> Result<Resolved> {
        let (w, l) = (&plan.workload, &plan.load);
        let architecture = crate::results::architecture_name(
            plan.target.kind.product().name(),
            plan.cache.as_ref().map(|c| c.cache.kind.product().name()),
            plan.target.pooler.as_deref(),
        );
        let config = plan.redacted();
        let query_mode = plan.target.query_mode_used();
        let pooler = plan.target.pooler_settings(l.connections)?;
        let product = plan.target.kind.product();
        product.check_prefix(&w.key_prefix)?;
        if let Some(a) = &plan.cache {
            a.cache
                .kind
                .product()
                .check_prefix(&w.key_prefix)
                .map_err(|e| anyhow::anyhow!("{e:#} (of the cache)"))?;
        }
        let connections = local_connections(l.shard, l.connections);
        let nodes = match plan.target.external {
            Some(_) => 1,
            None => product.server().nodes(&plan.target.server_opts),
        };
        let sockets = connections * nodes + if plan.cache.is_some() { connections } else { 0 };
        // The pooler (which inherits kvlab's limit) holds a socket per client
        // and per server connection.
        let pooler_sockets = pooler
            .as_ref()
            .map(|(p, s)| l.connections + p.server_connections(s));
        let pooler_fd_note = room_for_sockets(sockets, pooler_sockets.unwrap_or(0))?;
        let facts = product.facts();
        let (board, board_note) = version_board(plan);
        Ok(Resolved {
            config,
            connections,
            local_share: connections as f64 / l.connections.max(1) as f64,
            sockets,
            pooler_fd_note,
            data_bytes: w.keys.saturating_mul(bytes_per_key(
                w.value_size as u64,
                w.key_prefix.len() as u64,
                KEY_OVERHEAD_BYTES,
            )),
            requests_due: requests_due(plan),
            writes_versioned: (w.ratio.set > 0 || w.background_writes.is_some())
                && w.values().versioned(),
            profile: profile_note(plan),
            pipeline: match facts.pipelines {
                true => plan.load.pipeline.min(facts.max_pipeline),
                false => 1,
            },
            set_up_round_trips: product.set_up_round_trips(query_mode),
            query_mode,
            pooler,
            value_bytes: plan
                .workload
                .keys
                .saturating_mul(plan.workload.value_size as u64),
            board,
            problems: pipeline_problems(plan)
                .into_iter()
                .chain(board_note)
                .collect(),
            background_rps: plan
                .workload
                .background_writes
                .map(|r| r / plan.load.shard.map_or(1.0, |s| s.count as f64)),
            architecture,
            tracking: match plan.cache {
                Some(_) => None,
                None => crate::plan::near::tracking(plan.near.as_ref(), w.key_prefix.as_bytes()),
            },
        })
    }
}

/// The version board of a run that writes, or why stale reads are not measured.
fn version_board(
    plan: &RunPlan,
) -> (
    Option<std::sync::Arc<crate::workload::consistency::VersionBoard>>,
    Option<String>,
) {
    use crate::workload::consistency::VersionBoard;
    let writes = plan.workload.ratio.set > 0 || plan.workload.background_writes.is_some();
    if !writes {
        return (None, None);
    }
    if plan.load.shard.is_some() {
        return (
            None,
            Some("stale reads were not measured: the clients of a sharded run do not share the versions they write".into()),
        );
    }
    if !plan.workload.values().versioned() {
        return (
            None,
            Some(format!(
                "stale reads were not measured: values under {} bytes cannot carry a version",
                crate::workload::VERSIONED_SIZE
            )),
        );
    }
    if VersionBoard::bytes_for(plan.workload.keys) > 2 << 30 {
        return (
            None,
            Some("stale reads were not measured: tracking versions of this many keys would take over 2 GiB".into()),
        );
    }
    (
        Some(std::sync::Arc::new(VersionBoard::new(plan.workload.keys))),
        None,
    )
}

/// This client's share of a `--requests` run's requests: the requests of its
/// connections' slice of the run's (`None`: the run stops otherwise).
fn requests_due(plan: &RunPlan) -> Option<u64> {
    let crate::workload::Stop::Requests(total) = plan.load.stop else {
        return None;
    };
    let Some(s) = plan.load.shard else {
        return Some(total);
    };
    let share = s.connections(plan.load.connections);
    let local = local_connections(Some(s), plan.load.connections);
    let at = |i: usize| crate::workload::slice_of(total, i, share.total).0;
    Some(at(share.first + local) - at(share.first))
}

/// The words of the production profile the workload came from.
fn profile_note(plan: &RunPlan) -> Option<ProfileNote> {
    let p = crate::workload::profiles::profile(plan.workload.profile.as_deref()?)?;
    Some(ProfileNote {
        name: p.name.into(),
        source: p.source.into(),
        not_reproduced: p.not_reproduced(plan.workload.ttl_s > 0),
    })
}

/// A `--pipeline` the protocol cannot run as asked.
fn pipeline_problems(plan: &RunPlan) -> Vec<String> {
    let facts = plan.target.kind.product().facts();
    let asked = plan.load.pipeline;
    let mut problems = Vec::new();
    if asked > 1 && !facts.pipelines {
        problems.push(format!(
            "--pipeline {asked} was run as 1: the {} protocol answers one command at a time per connection",
            facts.title
        ));
    }
    if asked > facts.max_pipeline {
        problems.push(format!(
            "--pipeline {asked} was run as {}: the {} protocol has no more request ids per connection",
            facts.max_pipeline, facts.title
        ));
    }
    problems
}

/// Raises the open-file limit for `sockets` of kvlab's own (and for the
/// `pooler`'s, which inherits it), and refuses a run whose sockets cannot
/// all be open at once: the connections past the limit would fail and the
/// run with them. The note for a pooler that may run out of files.
fn room_for_sockets(sockets: usize, pooler: usize) -> Result<Option<String>> {
    // Room for the managed servers that inherit the limit too.
    raise_open_files(sockets.max(pooler) as u64 * 2 + 256);
    let (limit, _) = open_files();
    let need = sockets as u64 + FD_SPARE;
    if limit < need {
        anyhow::bail!(
            "--connections: the run's {sockets} sockets (one a connection and cluster node, one more with --cache) and kvlab's own files need {need} open files, but this process may open {limit} (ulimit -Hn); lower --connections, raise the hard limit (ulimit -Hn {} as root, LimitNOFILE= for a systemd unit, ulimits in a container), or split the run over client processes (--shard I/N)",
            need.next_power_of_two()
        );
    }
    Ok((pooler > 0 && limit < pooler as u64 + FD_SPARE).then(|| format!(
        "kvlab: the open-file limit ({limit}) is below the {pooler} sockets the pooler may hold; raise the hard limit (ulimit -Hn) or expect refused connections"
    )))
}

/// Files kvlab holds beside its sockets (epoll, timers, results, threads).
const FD_SPARE: u64 = 64;
