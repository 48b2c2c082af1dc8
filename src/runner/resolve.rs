//! A run's plan resolved once into what its steps need: this client's
//! connections, the sockets it opens (checked against the open-file limit),
//! the pipeline the protocol allows, the query mode, the data's size and the
//! engine's [`Spec`]. Nothing downstream derives these from the plan again.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::launch::{room_for_sockets, sockets};
use crate::driver::{Connector, Topology};
use crate::engine::Spec;
use crate::plan::RunPlan;
use crate::plan::shard::{Share, instant_of, local_connections};
use crate::servers::ManagedServer;
use crate::workload::OpMix;
use crate::workload::consistency::VersionBoard;

/// What one run derives from its plan, once.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// This client's connections: its share of a sharded run's.
    pub connections: usize,
    /// The sockets this process opens: a connection's to each node of the
    /// server, and one more to the cache in front, if any.
    pub sockets: usize,
    /// Requests in flight per connection, as the protocol allows.
    pub pipeline: usize,
    /// The query mode requests use, for products that have modes.
    pub query_mode: Option<String>,
    /// The values: keys × value size, bytes.
    pub value_bytes: u64,
    /// The versions of the values the run writes, when stale reads are
    /// measured.
    pub board: Option<Arc<VersionBoard>>,
    /// Why stale reads are not measured, where the run writes.
    pub board_note: Option<String>,
    /// This client's background writer's rate (its part of a sharded run's).
    pub background_rps: Option<f64>,
    /// What the run measures, named as everywhere (e.g. "redis in front of
    /// postgres").
    pub architecture: String,
}

impl Resolved {
    /// Resolves `plan` against `server` (kvlab's, or `None` for a server it
    /// did not start), refusing a key prefix the product cannot take and a
    /// run whose sockets cannot all be open at once.
    pub fn of(plan: &RunPlan, server: Option<&ManagedServer>) -> Result<Resolved> {
        let product = plan.target.kind.product();
        product.check_prefix(&plan.workload.key_prefix)?;
        let connections = local_connections(plan.load.shard, plan.load.connections);
        let sockets = sockets(connections, server, plan.cache.is_some());
        // A managed server's start checked the room for one node's sockets
        // (launch::start_managed); a cluster's other nodes add theirs.
        let one_node = super::launch::sockets(connections, None, plan.cache.is_some());
        if server.is_none() || sockets > one_node {
            room_for_sockets(sockets)?;
        }
        let facts = product.facts();
        let (board, board_note) = version_board(plan);
        Ok(Resolved {
            connections,
            sockets,
            pipeline: match facts.pipelines {
                true => plan.load.pipeline.min(facts.max_pipeline),
                false => 1,
            },
            query_mode: plan.target.query_mode_used(),
            value_bytes: plan
                .workload
                .keys
                .saturating_mul(plan.workload.value_size as u64),
            board,
            board_note,
            background_rps: plan
                .workload
                .background_writes
                .map(|r| r / plan.load.shard.map_or(1.0, |s| s.count as f64)),
            architecture: crate::results::architecture_name(
                product.name(),
                plan.cache.as_ref().map(|c| c.cache.kind.product().name()),
                plan.target.pooler.as_deref(),
            ),
        })
    }

    /// The engine's point for `plan` through `connector`, as resolved.
    pub fn spec(
        &self,
        plan: &RunPlan,
        connector: Connector,
        topology: Option<Arc<Topology>>,
    ) -> Spec {
        let (w, l, shard) = (&plan.workload, &plan.load, plan.load.shard);
        Spec {
            distribution: w.distribution,
            mix: OpMix::new(w.ratio),
            connections: self.connections,
            threads: l.threads,
            pipeline: self.pipeline,
            warmup: Duration::from_secs_f64(l.warmup_s),
            stop: l.stop,
            rate: l.rate,
            timeout: Duration::from_secs_f64(l.timeout_s),
            seed: shard.map_or(w.seed, |s| s.seed(w.seed)),
            ttl_s: w.ttl_s,
            batch: w.batch.clone(),
            topology,
            board: self.board.clone(),
            share: shard.map_or(Share::all(l.connections), |s| s.connections(l.connections)),
            start_at: l.start_at_ms.map(instant_of),
            timeline_seconds: l.timeline_seconds,
            ..Spec::writes(
                connector,
                w.key_prefix.as_bytes().to_vec(),
                w.values(),
                w.keys,
            )
        }
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
