//! What a decision's servers run on and what they cost, as data: the
//! deployment it is priced for ([`Deployment`]: a dated catalog's shapes for
//! the products weighed, or the team's own machines) and each server's place
//! on it ([`Placed`]). The choice itself is `pricing::choose`; every bill is
//! recomputable from these fields (count × hourly price × hours a month, plus
//! storage).

use serde::{Deserialize, Serialize};

use super::Role;
use crate::results::stats::num;

/// Where a decision's servers run (`--deploy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Deploy {
    /// The team's own whole machines (`--machine-cores`, `--price-*`): the
    /// one that needs no catalog, and what a decision saved before
    /// deployments were priced used.
    #[default]
    Own,
    /// RDS for the database, ElastiCache for the cache (AWS us-east-1).
    AwsManaged,
    /// EC2 instances for both (AWS us-east-1).
    AwsVms,
    /// Cloud SQL for the database, Memorystore for the cache (GCP
    /// us-central1).
    GcpManaged,
    /// Compute Engine instances for both (GCP us-central1).
    GcpVms,
    /// Azure virtual machines for both (East US).
    AzureVms,
    /// The managed services of the catalog given with `--prices`.
    Managed,
    /// The virtual machines of the catalog given with `--prices`.
    Vms,
}

impl Deploy {
    /// Every deployment, in the order `--help` lists them.
    pub const ALL: [Deploy; 8] = [
        Deploy::AwsManaged,
        Deploy::AwsVms,
        Deploy::GcpManaged,
        Deploy::GcpVms,
        Deploy::AzureVms,
        Deploy::Managed,
        Deploy::Vms,
        Deploy::Own,
    ];

    /// The deployment a measuring decision is priced for unless told.
    pub const DEFAULT: Deploy = Deploy::AwsManaged;

    /// Its name as given and written (`aws-managed`).
    pub fn name(self) -> &'static str {
        match self {
            Deploy::Own => "own",
            Deploy::AwsManaged => "aws-managed",
            Deploy::AwsVms => "aws-vms",
            Deploy::GcpManaged => "gcp-managed",
            Deploy::GcpVms => "gcp-vms",
            Deploy::AzureVms => "azure-vms",
            Deploy::Managed => "managed",
            Deploy::Vms => "vms",
        }
    }

    /// The deployment named `name`.
    pub fn named(name: &str) -> Option<Deploy> {
        Deploy::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The built-in catalog it is priced from (`None`: own machines, or the
    /// catalog `--prices` gives).
    pub fn catalog(self) -> Option<&'static str> {
        match self {
            Deploy::Own | Deploy::Managed | Deploy::Vms => None,
            Deploy::AwsManaged | Deploy::AwsVms => Some("aws-us-east-1"),
            Deploy::GcpManaged | Deploy::GcpVms => Some("gcp-us-central1"),
            Deploy::AzureVms => Some("azure-eastus"),
        }
    }

    /// Whether the servers are a provider's managed services (else plain
    /// virtual machines or own machines).
    pub fn managed(self) -> bool {
        matches!(
            self,
            Deploy::AwsManaged | Deploy::GcpManaged | Deploy::Managed
        )
    }

    /// What it means, in words.
    pub fn said(self) -> &'static str {
        match self {
            Deploy::Own => "each server on whole machines of the team's own shape and price",
            Deploy::AwsManaged => "RDS for the database, ElastiCache for the cache",
            Deploy::AwsVms => "each server on its own EC2 instances",
            Deploy::GcpManaged => "Cloud SQL for the database, Memorystore for the cache",
            Deploy::GcpVms => "each server on its own Compute Engine instances",
            Deploy::AzureVms => "each server on its own Azure virtual machines",
            Deploy::Managed => "the managed services of the catalog given",
            Deploy::Vms => "each server on its own virtual machines of the catalog given",
        }
    }
}

impl std::fmt::Display for Deploy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One shape a server may run on, at its list price.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Offer {
    /// The service, e.g. `RDS for PostgreSQL`, `EC2`.
    pub service: String,
    /// The shape, e.g. `db.t4g.medium`.
    pub name: String,
    /// Its vCPUs (`None`: the catalog does not say; sized by memory alone).
    pub vcpu: Option<f64>,
    /// Its memory, GiB.
    pub gib: f64,
    /// Its price for an hour.
    pub hour: f64,
    /// A burstable shape's baseline: the share of each vCPU it sustains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    /// The share of its memory not for the data (a managed cache's reserve,
    /// a machine's OS and the server's own).
    pub reserve: f64,
    /// Where the price comes from, and the date it was valid (YYYY-MM-DD).
    pub source: String,
    /// The date the price was valid.
    pub date: String,
}

impl Offer {
    /// The cores it sustains: its vCPUs, at a burstable shape's baseline.
    pub fn sustained_cores(&self) -> Option<f64> {
        self.vcpu.map(|v| v * self.baseline.unwrap_or(1.0))
    }

    /// The memory it holds data in, GiB: its memory less the reserve.
    pub fn usable_gib(&self) -> f64 {
        self.gib * (1.0 - self.reserve)
    }
}

/// A serverless cache, priced by the data it stores and the requests it
/// serves (ElastiCache Serverless).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Serverless {
    /// The service, e.g. `ElastiCache Serverless for Redis OSS`.
    pub service: String,
    /// Price of a GB of data stored for an hour.
    pub gb_hour: f64,
    /// Price of a million ECPUs.
    pub per_million_ecpu: f64,
    /// The least data billed, GB.
    pub min_gb: f64,
    /// KB transferred a request takes per ECPU (a request takes at least one).
    pub kb_per_ecpu: f64,
    /// Where the prices come from.
    pub source: String,
    /// The date they were valid.
    pub date: String,
}

/// A managed database's storage price.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    /// Price of a GB for a month.
    pub gb_month: f64,
    /// The smallest volume, GB.
    pub min_gb: f64,
    /// Where the price comes from.
    pub source: String,
    /// The date it was valid.
    pub date: String,
}

/// The catalog a deployment was priced from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CatalogRef {
    /// Its name, e.g. `aws-us-east-1`.
    pub name: String,
    /// The file it was read from (`built in` for kvlab's own).
    pub file: String,
    /// The day it was put together.
    pub date: String,
    /// Its oldest price's date.
    pub oldest: String,
    /// Its prices' currency.
    pub currency: String,
    /// Its oldest price was over a year old on the day it was priced.
    #[serde(default)]
    pub old: bool,
}

/// What a decision is priced for: the deployment, and for one priced from
/// a catalog, the shapes each of its servers may take, resolved once for the
/// products weighed. A decision saved before deployments were priced read
/// [`Deploy::Own`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    /// Which deployment.
    pub deploy: Deploy,
    /// The catalog (`None`: own machines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogRef>,
    /// The shapes a database or a replica may take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub database: Vec<Offer>,
    /// The shapes a cache node may take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache: Vec<Offer>,
    /// The serverless cache priced beside the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serverless: Option<Serverless>,
    /// A managed database's storage (`None`: not priced, said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
    /// With `--multi-az`: the factor a standby multiplies a managed
    /// database's instance and storage by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_az: Option<f64>,
    /// Why a role has no shapes, by role (a product the catalog does not
    /// price), each naming `--prices`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<(Role, String)>,
    /// The day it was priced (YYYY-MM-DD): a price older than a year then is
    /// said to be old.
    #[serde(default)]
    pub priced_on: String,
}

impl Deployment {
    /// Whether it is priced from a catalog (not own machines).
    pub fn catalogued(&self) -> bool {
        self.deploy != Deploy::Own
    }

    /// The catalog's currency (`None`: own machines, priced as stated).
    pub fn currency(&self) -> Option<&str> {
        self.catalog.as_ref().map(|c| c.currency.as_str())
    }

    /// Why a server of `role` is not priced, if it is not.
    pub fn unpriced(&self, role: Role) -> Option<&str> {
        let role = match role {
            Role::Replica => Role::Database,
            r => r,
        };
        self.unpriced
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, why)| why.as_str())
    }

    /// The deployment in one line: `aws-managed (RDS for the database,
    /// ElastiCache for the cache), catalog aws-us-east-1 of 2026-12-07`.
    pub fn said(&self) -> String {
        match &self.catalog {
            Some(c) => format!(
                "{} ({}), catalog {} of {} ({})",
                self.deploy,
                self.deploy.said(),
                c.name,
                c.date,
                c.file
            ),
            None => format!("{} ({})", self.deploy, self.deploy.said()),
        }
    }
}

/// Where one server runs on a catalogued deployment and what it costs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Placed {
    /// The service, e.g. `ElastiCache for Redis OSS`.
    pub service: String,
    /// The shape, e.g. `cache.t4g.small` (a serverless cache: the service).
    pub shape: String,
    /// How many of it (a cache's shards, a primary and its read replicas).
    pub count: u32,
    /// One's price for an hour (0 for a serverless cache).
    pub hour: f64,
    /// One's cores sustained (vCPU at a burstable shape's baseline; `None`:
    /// not known, sized by memory alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained_cores: Option<f64>,
    /// One's vCPUs (`None`: not known, or serverless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpu: Option<f64>,
    /// One's memory for the data, GiB.
    pub usable_gib: f64,
    /// Storage a month, every instance together.
    #[serde(default)]
    pub storage_month: f64,
    /// The serverless cache's data and requests a month.
    #[serde(default)]
    pub usage_month: f64,
    /// The whole a month: count × hour × the hours of a month (× the
    /// Multi-AZ factor), plus storage and usage.
    pub monthly: f64,
    /// How it was chosen, in words.
    pub why: String,
    /// Where the prices used come from (the shape's, and its storage's).
    #[serde(default)]
    pub source: String,
    /// The oldest date of the prices used.
    pub price_date: String,
    /// A price used is older than a year on the day it was priced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub old: bool,
}

impl Placed {
    /// As said in a bill: `db.t4g.medium x1`, `cache.r6g.large x3`,
    /// `ElastiCache Serverless for Redis OSS`.
    pub fn said(&self) -> String {
        match self.hour > 0.0 {
            true => format!("{} x{}", self.shape, self.count),
            false => self.shape.clone(),
        }
    }
}

/// A bill in one line from each server's place: `db.t4g.medium x1 +
/// cache.t4g.small x1 = 71 USD a month` (`None`: a server not placed).
pub fn bill_said(placed: &[Option<&Placed>], currency: &str) -> Option<String> {
    let placed: Vec<&Placed> = placed.iter().copied().collect::<Option<Vec<_>>>()?;
    if placed.is_empty() {
        return None;
    }
    let total: f64 = placed.iter().map(|p| p.monthly).sum();
    Some(format!(
        "{} = {} {currency} a month",
        placed
            .iter()
            .map(|p| p.said())
            .collect::<Vec<_>>()
            .join(" + "),
        money(total)
    ))
}

/// A cost as said: whole units, cents below 100.
pub fn money(c: f64) -> String {
    match c < 100.0 {
        true => format!("{c:.2}"),
        false => num(c.round()),
    }
}
