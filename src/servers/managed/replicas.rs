//! A managed primary's read replicas (`--server-opt replicas=N`): each made
//! by the product's [`Replication`] in its own subdirectory (`replicaI/`) on
//! its own free loopback port, run as the primary's user, probed with the
//! primary's login, and waited for until every one streams; then reachable
//! ([`ManagedServer::replica_endpoints`]), measured with the server
//! ([`ManagedServer::usage`] sums them) and stopped by pid with it.

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::ManagedServer;
use crate::driver::endpoint::Endpoint;
use crate::driver::product::{Connector, Following, ReplicaLag, Replication};
use crate::system::osuser;
use crate::system::process::{free_port, log_tail, spawn_owned};

/// One read replica kvlab started.
pub(super) struct Replica {
    /// Its process (locked: an event may kill it while the run reads).
    pub(super) child: std::sync::Mutex<Child>,
    /// Its loopback port.
    port: u16,
    /// Its unix socket (used when the server listens on sockets).
    socket: PathBuf,
}

impl ManagedServer {
    /// Starts `n` read replicas of the running primary and waits until every
    /// one streams from it (within the product's start timeout).
    pub(super) fn start_replicas(&mut self, n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let rep = self.replication()?;
        let name = self.binary();
        let deadline = Instant::now() + self.product.facts().server.start_timeout;
        let primary = Connector::new(self.product, &self.endpoint())?;
        rep.prepare_primary(self.dir.path(), &primary, deadline)
            .with_context(|| format!("managed {name} could not be prepared for replicas"))?;
        for i in 0..n {
            self.start_replica(rep, &primary, i, deadline)
                .with_context(|| format!("managed {name}'s replica {i} did not start"))?;
        }
        let replicas = self.replica_connectors()?;
        loop {
            let lag = rep.lag(&primary, &replicas);
            match &lag {
                Ok(l) if l.len() == n && l.iter().all(|r| r.streaming) => return Ok(()),
                _ if Instant::now() >= deadline => {
                    let seen = match lag {
                        Ok(l) => l
                            .iter()
                            .map(|r| format!("{} {}", r.server, r.state))
                            .collect::<Vec<_>>()
                            .join(", "),
                        Err(e) => format!("{e:#}"),
                    };
                    bail!(
                        "managed {name}'s {n} replicas did not all stream in {} s ({seen}); check its log in {}",
                        self.product.facts().server.start_timeout.as_secs(),
                        self.dir.path().display()
                    );
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Starts replica `i` of `primary` and waits until it answers.
    fn start_replica(
        &mut self,
        rep: &dyn Replication,
        primary: &Connector,
        i: usize,
        deadline: Instant,
    ) -> Result<()> {
        let dir = self.dir.path().join(format!("replica{i}"));
        std::fs::create_dir(&dir).context("cannot create a replica's directory")?;
        if let Some(u) = &self.run_as {
            osuser::give_dir(&dir, u)?;
        }
        let port = free_port()?;
        let socket = self.product.server().socket_path(&dir, port);
        let log = dir.join("server.log");
        let data = dir.join("data");
        let mut cmd =
            rep.replica_command(&self.launch_at(&dir, &data, port, &socket), primary, i)?;
        let child = spawn_owned(&mut cmd, &dir, &log, &self.binary)?;
        self.replicas.push(Replica {
            child: std::sync::Mutex::new(child),
            port,
            socket,
        });
        let replica = self.replicas.last_mut().expect("just pushed");
        let child = replica.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut alive = || matches!(child.try_wait(), Ok(None));
        let alive = &mut alive;
        rep.follow(Following {
            dir: &dir,
            primary,
            deadline,
            alive,
        })
        .map_err(|e| e.context(log_tail(&log)))?;
        let c = Connector::new(self.product, &self.replica_endpoint(i))?;
        loop {
            let child = self.replicas[i].child.get_mut();
            if let Some(status) = child.unwrap_or_else(|e| e.into_inner()).try_wait()? {
                bail!("it exited ({status}): {}", log_tail(&log));
            }
            match c.probe(Duration::from_millis(500)) {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    return Err(e.context(format!("it did not answer: {}", log_tail(&log))));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// The product's replication; an error where it has none.
    fn replication(&self) -> Result<&'static dyn Replication> {
        self.product.server().replication().with_context(|| {
            format!(
                "--server-opt replicas=: replicas= is for managed postgres and mariadb, not {}; remove it",
                self.product.name()
            )
        })
    }

    /// How many read replicas it runs.
    pub fn replica_count(&self) -> usize {
        self.replicas.len()
    }

    /// Where to reach each of its read replicas, in order (the primary's
    /// login, socket and TLS settings; empty without replicas).
    pub fn replica_endpoints(&self) -> Vec<Endpoint> {
        (0..self.replicas.len())
            .map(|i| self.replica_endpoint(i))
            .collect()
    }

    /// Where to reach its read replica `i`.
    pub fn replica_endpoint(&self, i: usize) -> Endpoint {
        let r = &self.replicas[i];
        self.endpoint_at(r.port, self.access.socket.then(|| r.socket.clone()))
    }

    /// The process ids of its read replicas still running, in order.
    pub fn replica_pids(&self) -> Vec<u32> {
        self.replicas
            .iter()
            .filter_map(|r| {
                let mut c = r.child.lock().unwrap_or_else(|e| e.into_inner());
                matches!(c.try_wait(), Ok(None)).then(|| c.id())
            })
            .collect()
    }

    /// Each read replica's CPU and memory now, in order (`None`: it is down).
    pub fn replica_usage(&self) -> Vec<Option<crate::system::ProcUsage>> {
        self.replicas
            .iter()
            .map(|r| {
                let mut c = r.child.lock().unwrap_or_else(|e| e.into_inner());
                match c.try_wait() {
                    Ok(None) => self.product.server().usage(c.id()),
                    _ => None,
                }
            })
            .collect()
    }

    /// Kills read replica `i` (SIGKILL; it stays down): its CPU so far is
    /// kept in the server's.
    pub fn kill_replica(&self, i: usize) -> Result<()> {
        let Some(r) = self.replicas.get(i) else {
            bail!("managed {} has no read replica {i}", self.binary());
        };
        let mut child = r.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(None) = child.try_wait() {
            if let Some(u) = self.product.server().usage(child.id()) {
                *self.retired_cpu_s.lock().unwrap_or_else(|e| e.into_inner()) += u.cpu_s;
            }
            let _ = child.kill();
        }
        let _ = child.wait();
        Ok(())
    }

    /// Each read replica's state and lag now, in order, as the servers
    /// report it (the product's [`Replication::lag`]); empty without
    /// replicas.
    pub fn replica_lag(&self) -> Result<Vec<ReplicaLag>> {
        if self.replicas.is_empty() {
            return Ok(Vec::new());
        }
        let primary = Connector::new(self.product, &self.endpoint())?;
        self.replication()?
            .lag(&primary, &self.replica_connectors()?)
    }

    /// A connector for each read replica.
    fn replica_connectors(&self) -> Result<Vec<Connector>> {
        self.replica_endpoints()
            .iter()
            .map(|e| Connector::new(self.product, e))
            .collect()
    }
}
