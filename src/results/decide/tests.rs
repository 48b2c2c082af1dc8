//! The decision's data under test: a stated load to start from, machines
//! and prices.

use super::*;

impl StatedLoad {
    /// A load for unit tests: `rps` reads a second of 1,000 uniform keys of
    /// 100 B within a 5 ms p99, on 16-core, 64 GiB machines at the example
    /// prices.
    pub(crate) fn example(rps: f64) -> StatedLoad {
        StatedLoad {
            rps,
            p99_ms: 5.0,
            p50_ms: None,
            p999_ms: None,
            keys: 1000,
            value_size: 100,
            ratio: "0:1".into(),
            distribution: "uniform".into(),
            write_share: 0.0,
            machine_cores: 16.0,
            machine_gib: 64.0,
            price_core_hour: 0.04,
            price_gib_hour: 0.005,
            currency: "USD".into(),
            example_prices: true,
            price_machine_month: KVLAB.policy.machine_month(16.0, 64.0, 0.04, 0.005),
            shared: false,
            target_cores: None,
            cache_cores: None,
            app_instances: 1,
            rtt_ms: None,
            cache_rtt_ms: None,
            rtt_assumed: false,
            trace: None,
            rate_shape: None,
            eviction: None,
            observed: Vec::new(),
        }
    }
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
        machines: None,
        monthly_cost: None,
        predicted_cores_at_run: None,
        predicted_range_at_run: None,
        measured_cores_at_run: None,
    };
    let month = load.price_machine_month;
    assert_eq!(month, KVLAB.policy.machine_month(8.0, 32.0, 0.04, 0.005));
    let mut one = [server(20.0, 16)];
    assert_eq!(price(&load, &mut one), Some((3, 3.0 * month)));
    assert_eq!(one[0].machines, Some(3));
    assert_eq!(price(&load, &mut [server(1.0, 100)]).map(|p| p.0), Some(4));
    // A fraction of a core is a whole machine: no cheaper than one.
    assert_eq!(price(&load, &mut [server(0.3, 1)]), Some((1, month)));
    // A database and a cache each on machines of their own, or shared.
    let mut two = [server(1.0, 1), server(1.0, 1)];
    assert_eq!(price(&load, &mut two).map(|p| p.0), Some(2));
    let shared = StatedLoad {
        shared: true,
        ..load.clone()
    };
    assert_eq!(price(&shared, &mut two), Some((1, month)));
    // A server whose cores are not known: no price.
    let mut unknown = [
        server(1.0, 1),
        ServerSize {
            cores: None,
            ..server(1.0, 1)
        },
    ];
    assert_eq!(price(&load, &mut unknown), None);
    assert!((db_load(1000.0, 0.05, 0.9) - 1000.0 * (0.95 * 0.1 + 0.05)).abs() < 1e-9);
}
