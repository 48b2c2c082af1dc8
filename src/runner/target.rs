//! The target of a run, reached: where it is, the connector its set-up and
//! counters use (the server itself) and the one its requests use (through
//! the pooler in front, if any), what it reported being, and its counters
//! before and after the window.

use std::time::Duration;

use anyhow::Result;

use super::resolve::Resolved;
use crate::driver::table::TABLE;
use crate::driver::{Connector, Endpoint, Role, ServerInfo};
use crate::engine::Spec;
use crate::plan::RunPlan;
use crate::plan::shard::{Share, instant_of};
use crate::servers::{ManagedPooler, ManagedServer};
use crate::system::progress::{RunOptions, note};
use crate::transport::TransportInfo;
use crate::workload::OpMix;

/// The run's target, reached.
pub struct Target<'a> {
    /// The managed server, if kvlab started it.
    pub server: Option<&'a ManagedServer>,
    /// The pooler kvlab started in front of it, if any.
    pub pooler: Option<&'a ManagedPooler>,
    /// Where the server is.
    pub endpoint: Endpoint,
    /// Set-up, probes and counters: the server itself.
    pub connector: Connector,
    /// Requests: through the pooler in front, if any.
    pub engine: Connector,
    /// The target's read replicas (managed, or `--read-replica`).
    pub replicas: Vec<Connector>,
    /// What the server reported being.
    pub info: ServerInfo,
}

impl<'a> Target<'a> {
    /// Reaches `plan`'s target: `server` (kvlab's) or the plan's external
    /// one, which is probed and told what kvlab will write there.
    pub fn reach(
        plan: &RunPlan,
        rs: &Resolved,
        server: Option<&'a ManagedServer>,
        opts: RunOptions,
    ) -> Result<Target<'a>> {
        let kind = plan.target.kind;
        let endpoint = match (&plan.target.external, server) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => s.endpoint(),
            (None, None) => anyhow::bail!("a managed target has no server"),
        };
        let connector_to = |e: &Endpoint| -> Result<Connector> {
            Ok(Connector::new(kind, e)?
                .with_consistency(plan.target.consistency)
                .with_query_mode(rs.query_mode))
        };
        let connector = connector_to(&endpoint)?;
        let pooler = server.and_then(ManagedServer::pooler);
        let engine = match pooler {
            Some(p) => connector_to(&p.endpoint())?,
            None => connector.clone(),
        }
        .with_tracking(rs.tracking.clone());
        let replicas = match server {
            Some(s) => s.replica_endpoints(),
            None => plan.target.read_replicas.clone(),
        }
        .iter()
        .map(connector_to)
        .collect::<Result<Vec<_>>>()?;
        let info = match server {
            Some(s) => s.info.clone(),
            None => probe(&connector, plan, opts)?,
        };
        Ok(Target {
            server,
            pooler,
            endpoint,
            connector,
            engine,
            replicas,
            info,
        })
    }

    /// The slot map of a sharded target (`None`: not sharded).
    pub fn topology(&self) -> Result<Option<std::sync::Arc<crate::driver::Topology>>> {
        Ok(match self.connector.product.facts().sharded {
            true => self.connector.topology()?.map(std::sync::Arc::new),
            false => None,
        })
    }

    /// The engine's point against this target (set-up, probes: the server
    /// itself), as `rs` resolved the plan.
    pub fn spec(&self, rs: &Resolved) -> Result<Spec> {
        let plan = &rs.config;
        let (w, l, shard) = (&plan.workload, &plan.load, plan.load.shard);
        let topology = self.topology()?;
        Ok(Spec {
            distribution: w.distribution,
            mix: OpMix::new(w.ratio),
            connections: rs.connections,
            threads: l.threads,
            pipeline: rs.pipeline,
            warmup: Duration::from_secs_f64(l.warmup_s),
            stop: l.stop,
            rate: l.rate,
            arrivals: l.arrivals,
            rate_shape: l.rate_shape,
            send_slack: l.send_slack,
            conn_life: l.conn_life,
            hot_keys: l.hot_keys,
            link: l.rtt,
            timeout: Duration::from_secs_f64(l.timeout_s),
            io: l.io,
            seed: shard.map_or(w.seed, |s| s.seed(w.seed)),
            ttl_s: w.ttl_s,
            batch: w.batch.clone(),
            topology,
            board: rs.board.clone(),
            near: plan.near,
            replicas: self.replicas.clone(),
            read_from: plan.target.read_from.unwrap_or_default(),
            share: shard.map_or(Share::all(l.connections), |s| s.connections(l.connections)),
            start_at: l.start_at_ms.map(instant_of),
            timeline_seconds: l.timeline_seconds,
            ..Spec::writes(
                self.connector.clone(),
                w.key_prefix.as_bytes().to_vec(),
                w.values(),
                w.keys,
            )
        })
    }

    /// How the run's connections reach the target (after the load: a
    /// database's connections need kvlab's table).
    pub fn transport(&self) -> Result<TransportInfo> {
        self.engine
            .transport_info(Duration::from_secs(5))
            .map_err(|e| self.engine.connect_error(e))
    }
}

/// Probes a server kvlab did not start and says what kvlab will write there.
fn probe(connector: &Connector, plan: &RunPlan, opts: RunOptions) -> Result<ServerInfo> {
    let info = connector.probe(Duration::from_secs(4))?;
    super::foreign::reached(&connector.display, None);
    let prefix = &plan.workload.key_prefix;
    let load = super::foreign::load_note(plan);
    note(
        opts,
        match connector.product.role() {
            Role::Cache(_) => format!(
                "kvlab: {} is {} {}, not kvlab's: kvlab writes only keys under the prefix '{prefix}', never flushes it, and removes its keys at the end unless --keep-data; it drives it with {load}",
                connector.display, info.product, info.version
            ),
            Role::Database(_) => format!(
                "kvlab: {} is {} {}, not kvlab's: kvlab writes only its own table {TABLE}, never drops or empties anything it did not create, and drops its table at the end unless --keep-data; it drives it with {load}",
                connector.display, info.product, info.version
            ),
        },
    );
    Ok(info)
}
