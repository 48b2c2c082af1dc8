//! `kvlab decide --from DIR`'s flags: what they change of the saved load,
//! and what the saved measurements cannot carry (refused, naming the flag).

use crate::cli::DecideArgs;
use crate::error::UsageError;
use crate::modes::decide::Asked;
use crate::results::decide::StatedLoad;

/// Flags `--from` takes: they change the load decided, not what was measured.
const CHANGES: [&str; 24] = [
    "deploy",
    "prices",
    "multi_az",
    "survive_cache_loss",
    "keep_saving_month",
    "rps",
    "rate_shape",
    "p99_ms",
    "p50_ms",
    "p999_ms",
    "from",
    "out",
    "json",
    "keys",
    "price_core_hour",
    "price_gib_hour",
    "price_machine_month",
    "currency",
    "machine_cores",
    "machine_gib",
    "shared",
    "target_cores",
    "cache_cores",
    "keep_saving",
];

/// Flags that would change what was measured, and why `--from` cannot.
const CANNOT: [(&str, &str); 7] = [
    ("value_size", "another value size"),
    ("ratio", "another mix of reads and writes"),
    ("key_distribution", "another key distribution"),
    ("target", "another database"),
    ("cache", "another cache"),
    (
        "app_instances",
        "another number of application instances (the near-cache runs had one near cache per instance)",
    ),
    ("profile", "another workload"),
];

/// The load `args` ask of the saved decision `ask`: its own, with what the
/// flags change. A flag that would need new measurements is refused.
pub fn change(args: &DecideArgs, ask: &Asked) -> anyhow::Result<StatedLoad> {
    let flag = |id: &str| format!("--{}", id.replace('_', "-"));
    for id in &args.given {
        if let Some((_, what)) = CANNOT.iter().find(|c| c.0 == id) {
            return Err(UsageError::conflict(
                flag(id),
                format!("the saved measurements cannot carry {what}"),
                "measure it: kvlab decide without --from",
            )
            .into());
        }
        if !CHANGES.contains(&id.as_str()) {
            return Err(UsageError::conflict(
                flag(id),
                "it changes how kvlab measures, and --from runs nothing",
                "drop it (or measure again without --from)",
            )
            .into());
        }
    }
    let given = |id: &str| args.given.iter().any(|g| g == id);
    let mut l = ask.load.clone();
    if let Some(v) = args.rps.filter(|_| given("rps")) {
        crate::error::positive("--rps", v, "give the requests per second at peak")?;
        l.rps = v;
    }
    if given("rate_shape") {
        l.rate_shape = super::ask::day_shape(args)?;
    }
    if let Some(k) = args.run.keys.filter(|_| given("keys")) {
        if k == 0 {
            return Err(UsageError::bad("--keys", "0", "give the keys of the data").into());
        }
        l.keys = k;
    }
    if let Some(p) = args.p99_ms.filter(|_| given("p99_ms")) {
        super::ask::check_goal(p, args)?;
        l.p99_ms = p;
    }
    if given("p50_ms") {
        l.p50_ms = args.p50_ms;
    }
    if given("p999_ms") {
        l.p999_ms = args.p999_ms;
    }
    let p = super::ask::prices(args)?;
    let hourly = [
        "price_core_hour",
        "price_gib_hour",
        "machine_cores",
        "machine_gib",
    ];
    if given("machine_cores") {
        l.machine_cores = args.machine_cores;
    }
    if given("machine_gib") {
        l.machine_gib = args.machine_gib;
    }
    if given("price_core_hour") {
        l.price_core_hour = p.core_hour;
    }
    if given("price_gib_hour") {
        l.price_gib_hour = p.gib_hour;
    }
    match (
        given("price_machine_month"),
        hourly.iter().any(|h| given(h)),
    ) {
        (true, _) => l.price_machine_month = p.machine_month,
        (false, true) => {
            l.price_machine_month = ask.assumed.policy.machine_month(
                l.machine_cores,
                l.machine_gib,
                l.price_core_hour,
                l.price_gib_hour,
            )
        }
        (false, false) => {}
    }
    if given("price_machine_month") || given("price_core_hour") || given("price_gib_hour") {
        l.example_prices = false;
    }
    if given("currency") {
        l.currency = p.currency.clone();
    }
    l.shared |= args.shared;
    if given("target_cores") {
        l.target_cores = args.target_cores;
    }
    if given("cache_cores") {
        l.cache_cores = args.cache_cores;
    }
    if super::deployed::given(args) {
        redeploy(args, ask, &p, &mut l)?;
    }
    Ok(l)
}

/// `l` priced on the deployment `args` name (`p`: their own-machine
/// prices), in its currency.
fn redeploy(
    args: &DecideArgs,
    ask: &Asked,
    p: &super::ask::Prices,
    l: &mut StatedLoad,
) -> anyhow::Result<()> {
    let products = (
        ask.plan.target.kind.product().name(),
        ask.cache.cache.kind.product().name(),
    );
    let saved = ask.load.deployment.deploy;
    l.deployment = super::deployed::deployment(args, products, &ask.assumed.policy, saved)?;
    match l.deployment.currency() {
        Some(c) => (l.currency, l.example_prices) = (c.to_string(), false),
        // From a catalog back to own machines: their prices as given.
        None if ask.load.deployment.catalogued() => {
            l.currency = p.currency.clone();
            l.example_prices = p.examples;
        }
        None => {}
    }
    Ok(())
}
