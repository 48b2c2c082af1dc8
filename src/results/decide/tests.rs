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
            deployment: Default::default(),
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
