//! What a decision's servers cost: the deployment a team names (`--deploy`),
//! priced from a dated, sourced catalog (`prices/*.toml`, or `--prices
//! FILE`), each server on the cheapest shape that holds it; or the team's
//! own machines (`--deploy own`). One method for every row, every rate of a
//! sweep and `--from`.
//!
//! # Layout
//! - `catalog`: a catalog file as read and checked; the built-in ones.
//! - `deploy`: a deployment resolved once for a decision's products.
//! - `choose`: one server on its shapes (pure).
//! - `days`: a price's date and age.
//! - `listed`: catalogs as words (`kvlab prices`).

pub mod catalog;
pub mod choose;
pub mod days;
pub mod deploy;
pub mod listed;
#[cfg(test)]
mod reference_tests;

use crate::results::decide::{Role, ServerSize, StatedLoad};

/// Prices `servers` at `load` (a month being `hours`) on its deployment:
/// fills each server's place (or why it has none), machines and cost. The
/// whole: (machines, monthly cost), `None` when a server is not priced.
pub fn price(load: &StatedLoad, hours: f64, servers: &mut [ServerSize]) -> Option<(u32, f64)> {
    if !load.deployment.catalogued() {
        return own(load, servers);
    }
    let d = &load.deployment;
    for s in servers.iter_mut() {
        let placed = s
            .cores
            .ok_or_else(|| "cores not known".to_string())
            .and_then(|cores| {
                let need = choose::Need {
                    role: s.role,
                    cores,
                    gib: s.memory_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64,
                    ops_per_s: s.ops_per_s,
                    write_ops: match s.role {
                        Role::Database => load.rps * load.write_share,
                        _ => 0.0,
                    },
                    kb_per_op: load.value_size as f64 / 1024.0,
                };
                choose::place(d, hours, &need)
            });
        s.machines = placed.as_ref().ok().map(|p| p.count);
        s.monthly_cost = placed.as_ref().ok().map(|p| p.monthly);
        (s.placed, s.unpriced) = match placed {
            Ok(p) => (Some(p), None),
            Err(why) => (None, Some(why)),
        };
    }
    servers.iter().all(|s| s.placed.is_some()).then(|| {
        (
            servers.iter().filter_map(|s| s.machines).sum(),
            servers.iter().filter_map(|s| s.monthly_cost).sum(),
        )
    })
}

/// Prices `servers` at `load` on whole machines: each server on machines of
/// its own (the larger of its cores and its memory in machines, at least
/// one), or with `load.shared` all of them on one pool; fills each server's
/// machines and cost. The whole: (machines, monthly cost), `None` when a
/// server's cores are not known.
fn own(load: &StatedLoad, servers: &mut [ServerSize]) -> Option<(u32, f64)> {
    let gib = |b: Option<u64>| b.unwrap_or(0) as f64 / (1u64 << 30) as f64;
    let machines = |cores: f64, gib: f64| load.machine().machines(cores, gib);
    let known = servers.iter().all(|s| s.cores.is_some());
    if load.shared {
        servers.iter_mut().for_each(|s| {
            s.machines = None;
            s.monthly_cost = None;
        });
        let cores: f64 = servers.iter().filter_map(|s| s.cores).sum();
        let mem: f64 = servers.iter().map(|s| gib(s.memory_bytes)).sum();
        let m = machines(cores, mem);
        return known.then_some((m, m as f64 * load.price_machine_month));
    }
    for s in servers.iter_mut() {
        s.machines = s.cores.map(|c| machines(c, gib(s.memory_bytes)));
        s.monthly_cost = s.machines.map(|m| m as f64 * load.price_machine_month);
    }
    known.then(|| {
        (
            servers.iter().filter_map(|s| s.machines).sum(),
            servers.iter().filter_map(|s| s.monthly_cost).sum(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::decide::{KVLAB, Role};

    fn price_own(load: &StatedLoad, servers: &mut [ServerSize]) -> Option<(u32, f64)> {
        price(load, KVLAB.policy.hours_per_month, servers)
    }

    #[test]
    fn sizes_take_the_larger_of_cores_and_memory_in_machines() {
        let load = StatedLoad {
            p99_ms: 1.0,
            keys: 1,
            value_size: 1,
            machine_cores: 8.0,
            machine_gib: 32.0,
            price_machine_month: KVLAB.policy.machine_month(8.0, 32.0, 0.04, 0.005),
            ..StatedLoad::example(1.0)
        };
        let server = |cores: f64, gib: u64| ServerSize {
            role: Role::Database,
            product: "postgres".into(),
            ops_per_s: cores * 1000.0,
            ops_per_core: Some(1000.0),
            cores: Some(cores),
            memory_bytes: Some(gib << 30),
            ..Default::default()
        };
        let month = load.price_machine_month;
        assert_eq!(month, KVLAB.policy.machine_month(8.0, 32.0, 0.04, 0.005));
        let mut one = [server(20.0, 16)];
        assert_eq!(price_own(&load, &mut one), Some((3, 3.0 * month)));
        assert_eq!(one[0].machines, Some(3));
        assert_eq!(
            price_own(&load, &mut [server(1.0, 100)]).map(|p| p.0),
            Some(4)
        );
        // A fraction of a core is a whole machine: no cheaper than one.
        assert_eq!(price_own(&load, &mut [server(0.3, 1)]), Some((1, month)));
        // A database and a cache each on machines of their own, or shared.
        let mut two = [server(1.0, 1), server(1.0, 1)];
        assert_eq!(price_own(&load, &mut two).map(|p| p.0), Some(2));
        let shared = StatedLoad {
            shared: true,
            ..load.clone()
        };
        assert_eq!(price_own(&shared, &mut two), Some((1, month)));
        // A server whose cores are not known: no price.
        let mut unknown = [
            server(1.0, 1),
            ServerSize {
                cores: None,
                ..server(1.0, 1)
            },
        ];
        assert_eq!(price_own(&load, &mut unknown), None);
    }
}
