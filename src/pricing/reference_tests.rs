//! Five reference deployments priced by hand from the built-in catalog (the
//! arithmetic in each comment), held against kvlab's bills to the cent; and
//! the rules every choice keeps, over many loads.

use super::catalog::{Catalog, Loaded};
use super::deploy::{Asked, resolve};
use super::price;
use crate::results::decide::bill::Deploy;
use crate::results::decide::{KVLAB, Role, ServerSize, StatedLoad};

/// A month, as kvlab prices one.
const H: f64 = 730.0;

/// `load` on `deploy` of the built-in catalog (or `file`'s), for postgres
/// and `cache`.
fn on(deploy: Deploy, cache: &str, file: Option<&Loaded>) -> StatedLoad {
    let built = deploy.catalog().map(|n| Catalog::built_in(n).unwrap());
    let catalog = file.or(built.as_ref());
    let asked = Asked {
        deploy,
        catalog,
        products: ("postgres", cache),
        multi_az: false,
        today: "2026-12-07".into(),
    };
    StatedLoad {
        rps: 10_000.0,
        write_share: 0.05,
        value_size: 1024,
        deployment: resolve(&asked, &KVLAB.policy),
        ..StatedLoad::example(10_000.0)
    }
}

/// A server of `role` with `cores` at the stated load and `gib` of data.
fn server(role: Role, cores: f64, gib: f64) -> ServerSize {
    ServerSize {
        role,
        product: "x".into(),
        ops_per_s: cores * 10_000.0,
        ops_per_core: Some(10_000.0),
        cores: Some(cores),
        memory_bytes: Some((gib * (1u64 << 30) as f64) as u64),
        ..Default::default()
    }
}

/// `servers` priced on `load`: each one's shape and count, and the bill.
fn bill(load: &StatedLoad, mut servers: Vec<ServerSize>) -> (Vec<String>, f64) {
    let (_, total) = price(load, H, &mut servers).expect("every server priced");
    let shapes = servers
        .iter()
        .map(|s| s.placed.as_ref().unwrap().said())
        .collect();
    (shapes, total)
}

fn cents(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.005
}

#[test]
fn five_reference_deployments_price_to_the_cent() {
    let rds = on(Deploy::AwsManaged, "redis", None);
    // 1. The database alone, 0.69 cores and 1.18 GiB of data. db.t4g.micro,
    // small and medium sustain 2 × 10% or 20% = 0.2 or 0.4 cores, below 0.69
    // (read replicas only past the largest shape);
    // db.m6g.large sustains 2 and holds 8 × 0.75 = 6 GiB: 0.159 × 730 =
    // 116.07, plus 20 GB (the least volume; 1.18 rounds up to 2) × 0.115 =
    // 2.30: 118.37.
    let (s, total) = bill(&rds, vec![server(Role::Database, 0.69, 1.18)]);
    assert_eq!(s, ["db.m6g.large x1"]);
    assert!(cents(total, 118.37), "{total}");
    // Each place names the sources of its prices, and their date.
    let mut one = [server(Role::Database, 0.69, 1.18)];
    price(&rds, H, &mut one).unwrap();
    let p = one[0].placed.as_ref().unwrap();
    assert!(
        p.source.starts_with("VRDS21: ") && p.source.contains("storage: IC-RDS: "),
        "{}",
        p.source
    );
    assert_eq!(p.price_date, "2021-08-03");
    // 2. Cache-aside with a node cache: the database 0.25 cores, 1.18 GiB:
    // db.t4g.micro's 0.2 is below 0.25; db.t4g.small sustains 0.4 and holds
    // 2 × 0.75 = 1.5 GiB: 0.032 × 730 + 2.30 = 25.66. The cache 0.28 cores,
    // 82 MiB: cache.t4g.micro sustains 0.2, below 0.28 (shards only past
    // the largest node); cache.t4g.small sustains 0.4: 0.032 × 730 = 23.36.
    // Serverless: at least 1 GB × 0.125 ×
    // 730 = 91.25, more. 25.66 + 23.36 = 49.02.
    let (s, total) = bill(
        &rds,
        vec![
            server(Role::Database, 0.25, 1.18),
            server(Role::Cache, 0.28, 82.0 / 1024.0),
        ],
    );
    assert_eq!(s, ["db.t4g.small x1", "cache.t4g.small x1"]);
    assert!(cents(total, 49.02), "{total}");
    // 3. Cache-aside with a serverless cache, on a team's catalog whose
    // nodes cost 0.50 an hour (365 a month) and whose serverless cache 0.10
    // a GB-hour (at least 1 GB) and 0.002 a million ECPUs: 2,800 ops/s of
    // 1 KB (one ECPU each) is 2,800 × 3,600 × 730 / 1e6 × 0.002 = 14.72, and
    // 1 GB × 0.10 × 730 = 73.00: 87.72, below the node. The database on its
    // one shape: 0.20 × 730 = 146.00 (its storage not priced).
    let team = Catalog::parse(TEAM, "team.toml").unwrap();
    let team = Loaded {
        catalog: team,
        file: "team.toml".into(),
    };
    let own = on(Deploy::Managed, "valkey", Some(&team));
    let (s, total) = bill(
        &own,
        vec![
            server(Role::Database, 0.25, 1.18),
            server(Role::Cache, 0.28, 0.08),
        ],
    );
    assert_eq!(s, ["db.team.large x1", "Serverless Valkey"]);
    assert!(cents(total, 146.0 + 87.72), "{total}");
    // 4. A database with a read replica, each holding the 1.18 GiB: the
    // primary takes the writes, 0.05 cores; db.t4g.micro holds 1 × 0.75 GiB,
    // too little; db.t4g.small 25.66 (as in 2). The replica 0.6 cores, past
    // every db.t4g's 0.4: db.m6g.large 118.37. 144.03 in all.
    let (s, total) = bill(
        &rds,
        vec![
            server(Role::Database, 0.05, 1.18),
            server(Role::Replica, 0.6, 1.18),
        ],
    );
    assert_eq!(s, ["db.t4g.small x1", "db.m6g.large x1"]);
    assert!(cents(total, 144.03), "{total}");
    // 5. A cache too large for one node: 160 GiB, 2 cores. After the 25%
    // reserve cache.r6g.large holds 13.07 × 0.75 = 9.8025 GiB: 17 nodes,
    // 17 × 0.206 × 730 = 2,556.46; r6g.xlarge 9 × 0.411 × 730 = 2,700.27;
    // r6g.2xlarge 5 × 0.821 × 730 = 2,996.65; r6g.4xlarge 3 × 1.642 × 730 =
    // 3,595.98; cache.t4g.medium 70 × 0.065 × 730 = 3,321.50. The shards of
    // cache.r6g.large cost least.
    let (s, total) = bill(&rds, vec![server(Role::Cache, 2.0, 160.0)]);
    assert_eq!(s, ["cache.r6g.large x17"]);
    assert!(cents(total, 2556.46), "{total}");
    // And on EC2 the database alone of case 1: t4g.large sustains 2 × 30% =
    // 0.6, below 0.69; c7g.large 2 cores, 4 × 0.75 = 3 GiB: 0.0725 × 730 =
    // 52.925 (no storage priced).
    let ec2 = on(Deploy::AwsVms, "redis", None);
    let (s, total) = bill(&ec2, vec![server(Role::Database, 0.69, 1.18)]);
    assert_eq!(s, ["c7g.large x1"]);
    assert!(cents(total, 52.925), "{total}");
}

/// A team's catalog: one database shape, one dear cache node, a cheap
/// serverless cache.
const TEAM: &str = r#"
name = "team"
provider = "aws"
region = "eu-west-1"
currency = "EUR"
date = "2026-11-01"
[sources.DEAL]
cites = "our 2026 agreement"
date = "2026-11-01"
[[database]]
service = "Team RDS"
engine = "postgres"
name = "db.team.large"
vcpu = 2
gib = 8
hour = 0.20
source = "DEAL"
[[cache]]
service = "Team cache"
engine = "valkey"
name = "cache.team.large"
vcpu = 2
gib = 8
hour = 0.50
reserve = 0.25
source = "DEAL"
[[serverless_cache]]
service = "Serverless Valkey"
engine = "valkey"
gb_hour = 0.10
per_million_ecpu = 0.002
min_gb = 1
kb_per_ecpu = 1
source = "DEAL"
"#;

#[test]
fn a_sustained_load_never_rests_on_a_burstable_shape_above_its_baseline_and_a_cache_fits_after_its_reserve()
 {
    for deploy in [Deploy::AwsManaged, Deploy::AwsVms] {
        let load = on(deploy, "redis", None);
        for i in 1..200 {
            let cores = i as f64 * 0.037;
            let gib = (i as f64 * 0.61) % 40.0;
            for role in [Role::Database, Role::Cache] {
                let mut s = [server(role, cores, gib)];
                if price(&load, H, &mut s).is_none() {
                    continue;
                }
                let p = s[0].placed.as_ref().unwrap();
                let n = p.count as f64;
                if let Some(c) = p.sustained_cores {
                    assert!(c * n + 1e-9 >= cores, "{deploy} {role} {cores}: {p:?}");
                }
                assert!(
                    p.usable_gib * n + 1e-9 >= gib,
                    "{deploy} {role} {gib}: {p:?}"
                );
            }
        }
    }
    // A managed cache's node holds the data after the service's 25%.
    let load = on(Deploy::AwsManaged, "redis", None);
    let mut s = [server(Role::Cache, 0.1, 0.4)];
    price(&load, H, &mut s).unwrap();
    let p = s[0].placed.as_ref().unwrap();
    // cache.t4g.micro (0.5 GiB) holds 0.375 after its reserve: too little.
    assert_eq!(p.said(), "cache.t4g.small x1");
    assert!((p.usable_gib - 1.37 * 0.75).abs() < 1e-9);
}

#[test]
fn a_price_the_catalog_lacks_is_not_known_and_names_prices_never_zero() {
    // Valkey nodes are not confirmed in the built-in AWS catalog.
    let load = on(Deploy::AwsManaged, "valkey", None);
    let mut s = [
        server(Role::Database, 0.2, 0.1),
        server(Role::Cache, 0.2, 0.1),
    ];
    assert_eq!(price(&load, H, &mut s), None);
    assert!(s[0].placed.is_some());
    let why = s[1].unpriced.as_deref().unwrap();
    assert!(
        why.contains("--prices FILE") && why.contains("valkey"),
        "{why}"
    );
    assert_eq!((s[1].machines, s[1].monthly_cost), (None, None));
    // A database the catalog has no managed service for.
    let mut l = on(Deploy::AwsManaged, "redis", None);
    let c = Catalog::built_in("aws-us-east-1").unwrap();
    l.deployment = resolve(
        &Asked {
            deploy: Deploy::AwsManaged,
            catalog: Some(&c),
            products: ("cassandra", "redis"),
            multi_az: false,
            today: "2026-12-07".into(),
        },
        &KVLAB.policy,
    );
    let mut s = [server(Role::Database, 0.2, 0.1)];
    assert_eq!(price(&l, H, &mut s), None);
    let why = s[0].unpriced.as_deref().unwrap();
    assert!(why.contains("--deploy aws-vms"), "{why}");
    // A data set past every shape, said with the largest.
    let mut s = [server(Role::Database, 0.2, 500.0)];
    assert_eq!(price(&load, H, &mut s), None);
    let why = s[0].unpriced.as_deref().unwrap();
    assert!(
        why.contains("more than the largest shape holds (db.r6g.4xlarge"),
        "{why}"
    );
}

#[test]
fn past_the_largest_shape_a_database_takes_read_replicas_or_is_beyond_one_primary() {
    let load = on(Deploy::AwsManaged, "redis", None);
    // 40 cores of a 5%-write load: each db.*.4xlarge sustains 16, its
    // writes take 40 × 0.05 = 2 of them: ceil(38 / 14) = 3 instances.
    let s = ServerSize {
        ops_per_s: 10_000.0,
        ops_per_core: Some(250.0),
        ..server(Role::Database, 40.0, 1.0)
    };
    let mut one = [s.clone()];
    price(&load, H, &mut one).unwrap();
    let p = one[0].placed.as_ref().unwrap();
    assert_eq!(p.count, 3, "{p:?}");
    assert!(
        p.why.contains("a primary and 2 read replica(s)"),
        "{}",
        p.why
    );
    // Writes alone past the largest shape: beyond one primary.
    let mut heavy = load.clone();
    heavy.write_share = 1.0;
    let mut one = [s];
    assert_eq!(price(&heavy, H, &mut one), None);
    let why = one[0].unpriced.as_deref().unwrap();
    assert!(why.starts_with("beyond one primary"), "{why}");
}

#[test]
fn multi_az_doubles_a_managed_databases_instance_and_storage() {
    let c = Catalog::built_in("aws-us-east-1").unwrap();
    let mut load = on(Deploy::AwsManaged, "redis", None);
    load.deployment = resolve(
        &Asked {
            deploy: Deploy::AwsManaged,
            catalog: Some(&c),
            products: ("postgres", "redis"),
            multi_az: true,
            today: "2026-12-07".into(),
        },
        &KVLAB.policy,
    );
    // Case 1 of the reference deployments with a standby: db.m6g.large
    // 0.159 × 730 × 2 = 232.14, storage 20 GB × 0.115 × 2 = 4.60: 236.74.
    let (s, total) = bill(&load, vec![server(Role::Database, 0.69, 1.18)]);
    assert_eq!(s, ["db.m6g.large x1"]);
    assert!(cents(total, 236.74), "{total}");
    // A cache is not a database: its node is priced once.
    let (_, cache) = bill(&load, vec![server(Role::Cache, 0.28, 0.08)]);
    assert!(cents(cache, 23.36), "{cache}");
}
