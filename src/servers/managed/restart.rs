//! What an event does to a managed server during a run (`--event`): kill its
//! process, start it again in the same directory on the same port with the
//! same settings (a cache comes back empty, a database with its data), or
//! kill a cluster's primary so that its replica takes over.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::ManagedServer;
use crate::driver::product::{Connector, Launch};
use crate::system::process::{log_tail, spawn_owned};

impl ManagedServer {
    /// Kills the server (SIGKILL) and reaps it; the CPU it spent stays counted.
    pub fn kill(&self) -> Result<()> {
        if self.nodes().len() != 1 {
            bail!("kvlab kills and restarts only a server of one process");
        }
        self.kill_node(0)
    }

    /// Kills the last primary of a managed cluster with a replica per
    /// primary, so that its replica takes over (after the cluster's
    /// `cluster-node-timeout`); the first primary, which kvlab reads the
    /// cluster's counters from, stays up. The killed node stays down.
    pub fn kill_primary(&self) -> Result<()> {
        let get = |k: &str| {
            self.config
                .settings
                .get(k)
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
        };
        let (shards, replicas) = (get("shards"), get("replicas"));
        if shards < 3 || replicas == 0 {
            bail!(
                "a primary's replica takes over only in a cluster of 3 or more primaries with replicas (--server-opt shards=3 --server-opt replicas=1)"
            );
        }
        self.kill_node(shards - 1)
    }

    fn kill_node(&self, i: usize) -> Result<()> {
        let mut nodes = self.nodes();
        let Some((child, _)) = nodes.get_mut(i) else {
            bail!("managed {} has no process {i}", self.binary());
        };
        if let Ok(None) = child.try_wait() {
            if let Some(u) = self.product.server().usage(child.id()) {
                *self.retired_cpu_s.lock().unwrap_or_else(|e| e.into_inner()) += u.cpu_s;
            }
            let _ = child.kill();
        }
        let _ = child.wait();
        Ok(())
    }

    /// How a process of this server in `dir` (its data in `data`) is
    /// launched on `port` (or `socket`, when the server listens on sockets),
    /// with the server's binary, user, settings and TLS.
    pub(super) fn launch_at<'a>(
        &'a self,
        dir: &'a std::path::Path,
        data: &'a std::path::Path,
        port: u16,
        socket: &'a std::path::Path,
    ) -> Launch<'a> {
        Launch {
            binary: &self.binary,
            dir,
            data,
            port,
            aux_port: 0,
            run_as: self.run_as.as_ref(),
            config: &self.config,
            tls: self.access.tls.as_ref(),
            socket: self.access.socket.then_some(socket),
        }
    }

    /// Starts the killed server again as it was started; returns once it
    /// answers its protocol (within its start timeout).
    pub fn start_again(&self) -> Result<()> {
        let name = self.binary();
        let dir = self.dir.path();
        let log = dir.join("server-restarted.log");
        {
            let mut nodes = self.nodes();
            if nodes.len() != 1 {
                bail!("kvlab kills and restarts only a server of one process");
            }
            if let Ok(None) = nodes[0].0.try_wait() {
                bail!("managed {name} still runs; it is started again only after a kill");
            }
            let port = nodes[0].1;
            let data = dir.join("data");
            let (mut cmd, _) = self.product.server().command(&self.launch_at(
                dir,
                &data,
                port,
                &self.access.sockets[0],
            ))?;
            cmd.args(&self.config.args);
            nodes[0].0 = spawn_owned(&mut cmd, dir, &log, &self.binary)?;
        }
        let c = Connector::new(self.product, &self.endpoint())?;
        let deadline = Instant::now() + self.product.facts().server.start_timeout;
        loop {
            if let Ok(Some(status)) = self.nodes()[0].0.try_wait() {
                bail!(
                    "managed {name} exited when started again ({status}): {}",
                    log_tail(&log)
                );
            }
            match c.probe(Duration::from_millis(500)) {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    return Err(e.context(format!("managed {name} did not come back")));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}
