//! A deployment resolved once for a decision's products: which catalog, and
//! from it the shapes a database (or replica) and a cache node may take and
//! what a managed database's storage costs, each offer carrying its price's
//! source and date. A product the catalog does not price is said, naming
//! `--prices`.

use super::catalog::{Catalog, Loaded, Rates, Row};
use crate::results::decide::Role;
use crate::results::decide::assumptions::Policy;
use crate::results::decide::bill::{CatalogRef, Deploy, Deployment, Offer, Serverless, Storage};

/// What a decision is priced for: the deployment and its catalog (`None`
/// for own machines).
pub struct Asked<'a> {
    /// The deployment.
    pub deploy: Deploy,
    /// Its catalog, read.
    pub catalog: Option<&'a Loaded>,
    /// The database's and the cache's product names.
    pub products: (&'a str, &'a str),
    /// `--multi-az`: a managed database with a standby.
    pub multi_az: bool,
    /// The day it is priced (YYYY-MM-DD).
    pub today: String,
}

/// The engine a managed service runs for kvlab's product `product`.
pub fn engine(product: &str) -> &str {
    match product {
        "mariadb" => "mysql",
        "redis-cluster" => "redis",
        "valkey-cluster" => "valkey",
        p => p,
    }
}

/// The deployment `a` asks, its offers resolved for its products under
/// `policy` (the share of a machine's memory not for the data).
pub fn resolve(a: &Asked, policy: &Policy) -> Deployment {
    let Some(l) = a.catalog.filter(|_| a.deploy != Deploy::Own) else {
        return Deployment {
            deploy: Deploy::Own,
            priced_on: a.today.clone(),
            ..Deployment::default()
        };
    };
    let c = &l.catalog;
    let mut d = Deployment {
        deploy: a.deploy,
        catalog: Some(CatalogRef {
            name: c.name.clone(),
            file: l.file.clone(),
            date: c.date.clone(),
            oldest: c.oldest(),
            currency: c.currency.clone(),
            old: super::days::old(&c.oldest(), &a.today),
        }),
        priced_on: a.today.clone(),
        ..Deployment::default()
    };
    let (db, cache) = a.products;
    if !a.deploy.managed() {
        let vms: Vec<Offer> =
            c.vm.iter()
                .map(|r| offer(c, r, policy.machine_reserve))
                .collect();
        if vms.is_empty() {
            let why = format!(
                "the catalog {} prices no virtual machines: give them with --prices FILE ([[vm]] rows)",
                c.name
            );
            d.unpriced = vec![(Role::Database, why.clone()), (Role::Cache, why)];
        }
        d.database = vms.clone();
        d.cache = vms;
        return d;
    }
    let e = engine(db);
    d.database = c
        .database
        .iter()
        .filter(|r| r.engine.as_deref() == Some(e))
        .map(|r| offer(c, r, policy.machine_reserve))
        .chain(
            c.database_rates
                .iter()
                .filter(|r| r.engine == e)
                .flat_map(|r| rated(c, r, policy.machine_reserve)),
        )
        .collect();
    if d.database.is_empty() {
        d.unpriced.push((Role::Database, unpriced(c, a.deploy, db)));
    }
    d.storage = c.database_rules.as_ref().map(|r| Storage {
        gb_month: r.storage_gb_month,
        min_gb: r.storage_min_gb,
        source: c.cite(&r.storage_source, None),
        date: c.date_of(&r.storage_source, None),
    });
    d.multi_az = c
        .database_rules
        .as_ref()
        .filter(|_| a.multi_az)
        .map(|r| r.multi_az_factor);
    let e = engine(cache);
    d.cache = c
        .cache
        .iter()
        .filter(|r| r.engine.as_deref() == Some(e))
        .map(|r| offer(c, r, r.reserve.unwrap_or(0.0)))
        .collect();
    d.serverless = c
        .serverless_cache
        .iter()
        .find(|r| r.engine == e)
        .map(|r| Serverless {
            service: r.service.clone(),
            gb_hour: r.gb_hour,
            per_million_ecpu: r.per_million_ecpu,
            min_gb: r.min_gb,
            kb_per_ecpu: r.kb_per_ecpu,
            source: c.cite(&r.source, r.also.as_ref()),
            date: c.date_of(&r.source, r.date.as_ref()),
        });
    if d.cache.is_empty() && d.serverless.is_none() {
        d.unpriced.push((Role::Cache, unpriced(c, a.deploy, cache)));
    }
    d
}

/// Why `product` has no managed shapes in `c`, naming `--prices` and the
/// virtual machines beside it.
fn unpriced(c: &Catalog, deploy: Deploy, product: &str) -> String {
    let vms = match deploy {
        Deploy::AwsManaged => ", or --deploy aws-vms to price it on EC2",
        Deploy::GcpManaged => ", or --deploy gcp-vms to price it on Compute Engine",
        _ => "",
    };
    format!(
        "the catalog {} prices no managed {product} (see its missing list: kvlab prices {}): give its prices with --prices FILE{vms}",
        c.name, c.name
    )
}

/// A row as an offer, `reserve` of its memory not for the data.
fn offer(c: &Catalog, r: &Row, reserve: f64) -> Offer {
    Offer {
        service: r.service.clone(),
        name: r.name.clone(),
        vcpu: r.vcpu,
        gib: r.gib,
        hour: r.hour,
        baseline: r.baseline,
        reserve,
        source: c.cite(&r.source, r.also.as_ref()),
        date: c.date_of(&r.source, r.date.as_ref()),
    }
}

/// GiB per vCPU a priced-by-resource shape is made at (its least and most
/// beside): a few steps, not every 256 MB.
const GIB_PER_VCPU: [f64; 4] = [1.0, 2.0, 3.75, 5.0];

/// The shapes of a service priced per vCPU and GiB: for each vCPU count, its
/// least and most memory per vCPU and [`GIB_PER_VCPU`] between, at least
/// the least GiB, rounded up to a quarter GiB; named as Cloud SQL names a
/// custom shape (`db-custom-2-7680`).
fn rated(c: &Catalog, r: &Rates, reserve: f64) -> Vec<Offer> {
    let [lo, hi] = r.gib_per_vcpu;
    let mut out = Vec::new();
    for &v in &r.vcpus {
        let mut gibs: Vec<f64> = [lo, hi]
            .into_iter()
            .chain(GIB_PER_VCPU.into_iter().filter(|g| (lo..=hi).contains(g)))
            .map(|g| ((v * g).max(r.min_gib) * 4.0).ceil() / 4.0)
            .filter(|g| *g <= v * hi + 1e-9)
            .collect();
        gibs.sort_by(f64::total_cmp);
        gibs.dedup();
        for g in gibs {
            out.push(Offer {
                service: r.service.clone(),
                name: format!("db-custom-{v}-{}", (g * 1024.0).round()),
                vcpu: Some(v),
                gib: g,
                hour: v * r.vcpu_hour + g * r.gib_hour,
                baseline: None,
                reserve,
                source: c.cite(&r.source, r.also.as_ref()),
                date: c.date_of(&r.source, r.date.as_ref()),
            });
        }
    }
    out
}
