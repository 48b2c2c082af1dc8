//! A price catalog as its TOML file holds it (`prices/*.toml`, built in;
//! `--prices FILE` in the same format): dated sources, and each shape,
//! managed service and rule with the source it cites. Read and checked once
//! here; [`super::deploy`] turns one into the shapes of a decision.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::days;

/// The catalogs kvlab ships, by name: (name, TOML).
pub const BUILT_IN: [(&str, &str); 3] = [
    (
        "aws-us-east-1",
        include_str!("../../prices/aws-us-east-1.toml"),
    ),
    (
        "gcp-us-central1",
        include_str!("../../prices/gcp-us-central1.toml"),
    ),
    (
        "azure-eastus",
        include_str!("../../prices/azure-eastus.toml"),
    ),
];

/// One catalog: a provider's list prices in one region.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Its name, e.g. `aws-us-east-1`.
    pub name: String,
    /// The provider, e.g. `aws`.
    pub provider: String,
    /// The region its prices are for.
    pub region: String,
    /// The prices' currency.
    pub currency: String,
    /// The day it was put together (YYYY-MM-DD).
    pub date: String,
    /// What it covers, in words.
    #[serde(default)]
    pub note: String,
    /// What it lacks, and why, one line each.
    #[serde(default)]
    pub missing: Vec<String>,
    /// The sources its rows cite, by key.
    pub sources: BTreeMap<String, Source>,
    /// Plain virtual machines.
    #[serde(default)]
    pub vm: Vec<Row>,
    /// Managed database instances, one row per shape and engine.
    #[serde(default)]
    pub database: Vec<Row>,
    /// Managed databases priced per vCPU and GiB (Cloud SQL).
    #[serde(default)]
    pub database_rates: Vec<Rates>,
    /// A managed database's Multi-AZ factor and storage.
    #[serde(default)]
    pub database_rules: Option<Rules>,
    /// Managed cache nodes, one row per shape and engine.
    #[serde(default)]
    pub cache: Vec<Row>,
    /// Serverless caches, one row per engine.
    #[serde(default)]
    pub serverless_cache: Vec<ServerlessRow>,
}

/// A source: what it is and the date its prices were valid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// What it is (a repository and path at a commit, a page).
    pub cites: String,
    /// The date its prices were valid (YYYY-MM-DD).
    pub date: String,
}

/// One shape at its hourly price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The service, e.g. `EC2`, `RDS for PostgreSQL`.
    pub service: String,
    /// The engine it runs (managed rows): `postgres`, `mysql`, `redis`,
    /// `valkey`, `memcached`.
    #[serde(default)]
    pub engine: Option<String>,
    /// The shape's name.
    pub name: String,
    /// Its vCPUs (omitted where not known).
    #[serde(default)]
    pub vcpu: Option<f64>,
    /// Its memory, GiB.
    pub gib: f64,
    /// Its price for an hour.
    pub hour: f64,
    /// A burstable shape's baseline, the share of each vCPU it sustains.
    #[serde(default)]
    pub baseline: Option<f64>,
    /// The source of the baseline.
    #[serde(default)]
    pub baseline_source: Option<String>,
    /// A managed cache's share of memory not for data.
    #[serde(default)]
    pub reserve: Option<f64>,
    /// The source of the reserve.
    #[serde(default)]
    pub reserve_source: Option<String>,
    /// The source of the price.
    pub source: String,
    /// A second source that agrees.
    #[serde(default)]
    pub also: Option<String>,
    /// The date the price was valid, where not its source's.
    #[serde(default)]
    pub date: Option<String>,
}

/// A managed database priced per vCPU-hour and GiB-hour, its shapes made
/// from its rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rates {
    /// The service, e.g. `Cloud SQL for PostgreSQL`.
    pub service: String,
    /// The engine.
    pub engine: String,
    /// Price of a vCPU for an hour.
    pub vcpu_hour: f64,
    /// Price of a GiB for an hour.
    pub gib_hour: f64,
    /// The vCPU counts a shape may have.
    pub vcpus: Vec<f64>,
    /// The least and most GiB a shape has per vCPU.
    pub gib_per_vcpu: [f64; 2],
    /// The least GiB a shape has.
    #[serde(default)]
    pub min_gib: f64,
    /// The source of the prices.
    pub source: String,
    /// A second source that agrees.
    #[serde(default)]
    pub also: Option<String>,
    /// The source of the shapes' rules.
    #[serde(default)]
    pub rules_source: Option<String>,
    /// The date the prices were valid, where not their source's.
    #[serde(default)]
    pub date: Option<String>,
}

/// A managed database's Multi-AZ factor and storage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// The service they apply to.
    pub service: String,
    /// What a standby multiplies the instance and storage by.
    pub multi_az_factor: f64,
    /// Its source.
    pub multi_az_source: String,
    /// Storage, a GB a month.
    pub storage_gb_month: f64,
    /// The smallest volume, GB.
    pub storage_min_gb: f64,
    /// Its source.
    pub storage_source: String,
    /// The source of the smallest volume.
    #[serde(default)]
    pub storage_min_source: Option<String>,
}

/// A serverless cache's prices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerlessRow {
    /// The service, e.g. `ElastiCache Serverless for Redis OSS`.
    pub service: String,
    /// The engine.
    pub engine: String,
    /// Price of a GB stored for an hour.
    pub gb_hour: f64,
    /// Price of a million ECPUs.
    pub per_million_ecpu: f64,
    /// The least data billed, GB.
    pub min_gb: f64,
    /// KB transferred per ECPU.
    pub kb_per_ecpu: f64,
    /// The source.
    pub source: String,
    /// A second source that agrees.
    #[serde(default)]
    pub also: Option<String>,
    /// The date, where not its source's.
    #[serde(default)]
    pub date: Option<String>,
}

/// A catalog and the file it was read from (`built in` for kvlab's own).
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The catalog.
    pub catalog: Catalog,
    /// Where it came from.
    pub file: String,
}

impl Catalog {
    /// The built-in catalog named `name`.
    pub fn built_in(name: &str) -> Result<Loaded> {
        let (_, text) = BUILT_IN
            .iter()
            .find(|(n, _)| *n == name)
            .with_context(|| format!("no built-in price catalog {name}"))?;
        let file = format!("built in (prices/{name}.toml)");
        Ok(Loaded {
            catalog: Catalog::parse(text, &file)?,
            file,
        })
    }

    /// Every built-in catalog.
    pub fn all_built_in() -> Result<Vec<Loaded>> {
        BUILT_IN.iter().map(|(n, _)| Catalog::built_in(n)).collect()
    }

    /// The catalog in `path` (`--prices FILE`), checked.
    pub fn read(path: &std::path::Path) -> Result<Loaded> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--prices: cannot read {}", path.display()))?;
        let file = path.display().to_string();
        Ok(Loaded {
            catalog: Catalog::parse(&text, &file)?,
            file,
        })
    }

    /// `text` as a catalog, checked; errors name `file`.
    pub fn parse(text: &str, file: &str) -> Result<Catalog> {
        let c: Catalog = toml::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "--prices: {file} is not a price catalog: {}; see prices/aws-us-east-1.toml for the format",
                e.to_string().lines().collect::<Vec<_>>().join(" ")
            )
        })?;
        c.check()
            .map_err(|e| anyhow::anyhow!("--prices: {file}: {e}"))?;
        Ok(c)
    }

    /// Every row's source defined, every figure a positive number, every
    /// date a date.
    fn check(&self) -> Result<()> {
        days::parse(&self.date).with_context(|| format!("date {:?}", self.date))?;
        for (k, s) in &self.sources {
            days::parse(&s.date).with_context(|| format!("[sources.{k}] date {:?}", s.date))?;
        }
        let rows = [
            ("vm", &self.vm),
            ("database", &self.database),
            ("cache", &self.cache),
        ];
        for (kind, rows) in rows {
            for r in rows {
                let at = format!("[[{kind}]] {}", r.name);
                self.cited(&at, Some(&r.source))?;
                for s in [&r.also, &r.baseline_source, &r.reserve_source] {
                    self.cited(&at, s.as_ref())?;
                }
                positive(&at, "hour", r.hour)?;
                positive(&at, "gib", r.gib)?;
                if let Some(v) = r.vcpu {
                    positive(&at, "vcpu", v)?;
                }
                if let Some(b) = r.baseline.filter(|b| !(*b > 0.0 && *b <= 1.0)) {
                    bail!(
                        "{at}: baseline {b} is not a share of a vCPU; give one above 0 and at most 1"
                    );
                }
                if let Some(x) = r.reserve.filter(|x| !(0.0..1.0).contains(x)) {
                    bail!("{at}: reserve {x} is not a share of memory; give one from 0 to under 1");
                }
                if let Some(d) = &r.date {
                    days::parse(d).with_context(|| format!("{at}: date {d:?}"))?;
                }
            }
        }
        for r in &self.database_rates {
            let at = format!("[[database_rates]] {}", r.service);
            for s in [Some(&r.source), r.also.as_ref(), r.rules_source.as_ref()] {
                self.cited(&at, s)?;
            }
            positive(&at, "vcpu_hour", r.vcpu_hour)?;
            positive(&at, "gib_hour", r.gib_hour)?;
            if r.vcpus.is_empty()
                || r.gib_per_vcpu[0] <= 0.0
                || r.gib_per_vcpu[1] < r.gib_per_vcpu[0]
            {
                bail!("{at}: give vcpus (e.g. [1, 2, 4]) and gib_per_vcpu as [least, most]");
            }
        }
        if let Some(r) = &self.database_rules {
            for s in [
                Some(&r.multi_az_source),
                Some(&r.storage_source),
                r.storage_min_source.as_ref(),
            ] {
                self.cited("[database_rules]", s)?;
            }
            positive("[database_rules]", "multi_az_factor", r.multi_az_factor)?;
            positive("[database_rules]", "storage_gb_month", r.storage_gb_month)?;
        }
        for r in &self.serverless_cache {
            let at = format!("[[serverless_cache]] {}", r.service);
            for s in [Some(&r.source), r.also.as_ref()] {
                self.cited(&at, s)?;
            }
            positive(&at, "gb_hour", r.gb_hour)?;
            positive(&at, "per_million_ecpu", r.per_million_ecpu)?;
            positive(&at, "kb_per_ecpu", r.kb_per_ecpu)?;
        }
        Ok(())
    }

    /// `key` is a source defined in `[sources]`.
    fn cited(&self, at: &str, key: Option<&String>) -> Result<()> {
        match key {
            Some(k) if !self.sources.contains_key(k) => bail!(
                "{at}: source {k} is not in [sources]; define [sources.{k}] with cites and date"
            ),
            _ => Ok(()),
        }
    }

    /// The date of a price citing `source` (its own `date` where given).
    pub fn date_of(&self, source: &str, own: Option<&String>) -> String {
        own.cloned()
            .or_else(|| self.sources.get(source).map(|s| s.date.clone()))
            .unwrap_or_else(|| self.date.clone())
    }

    /// A price's source as said: `KAWS: <cites>, 2026-07-20`.
    pub fn cite(&self, source: &str, also: Option<&String>) -> String {
        let one = |k: &str| {
            self.sources
                .get(k)
                .map_or(k.to_string(), |s| format!("{k}: {}, {}", s.cites, s.date))
        };
        match also {
            Some(a) => format!("{}; {}", one(source), one(a)),
            None => one(source),
        }
    }

    /// The oldest date of any price in it.
    pub fn oldest(&self) -> String {
        let rows = self.vm.iter().chain(&self.database).chain(&self.cache);
        rows.map(|r| self.date_of(&r.source, r.date.as_ref()))
            .chain(
                self.database_rates
                    .iter()
                    .map(|r| self.date_of(&r.source, r.date.as_ref())),
            )
            .chain(
                self.serverless_cache
                    .iter()
                    .map(|r| self.date_of(&r.source, r.date.as_ref())),
            )
            .min()
            .unwrap_or_else(|| self.date.clone())
    }

    /// Whether it prices managed services (else only virtual machines).
    pub fn has_managed(&self) -> bool {
        !(self.database.is_empty() && self.database_rates.is_empty() && self.cache.is_empty())
    }
}

/// `v` positive, or the error naming the row and the field.
fn positive(at: &str, field: &str, v: f64) -> Result<()> {
    match v.is_finite() && v > 0.0 {
        true => Ok(()),
        false => bail!("{at}: {field} {v} is not a positive number"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_catalog_reads_and_every_price_cites_a_dated_source() {
        for l in Catalog::all_built_in().unwrap() {
            let c = &l.catalog;
            assert!(!c.sources.is_empty(), "{}", c.name);
            let rows = c.vm.iter().chain(&c.database).chain(&c.cache);
            for r in rows {
                assert!(c.sources.contains_key(&r.source), "{} {}", c.name, r.name);
                assert!(c.sources[&r.source].cites.len() > 10, "{}", r.source);
            }
            assert!(!c.missing.is_empty(), "{} says what it lacks", c.name);
        }
    }

    #[test]
    fn a_bad_catalog_is_one_line_naming_the_file_and_the_fix() {
        let e = Catalog::parse("name = 1", "team.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--prices: team.toml is not a price catalog"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let text = "name = \"x\"\nprovider = \"aws\"\nregion = \"r\"\ncurrency = \"EUR\"\ndate = \"2026-01-01\"\n[sources.A]\ncites = \"our contract\"\ndate = \"2026-01-01\"\n[[vm]]\nservice = \"EC2\"\nname = \"m\"\nvcpu = 2\ngib = 8\nhour = 0.1\nsource = \"B\"\n";
        let e = Catalog::parse(text, "team.toml").unwrap_err().to_string();
        assert!(e.contains("source B is not in [sources]"), "{e}");
        let ok = Catalog::parse(&text.replace("\"B\"", "\"A\""), "team.toml").unwrap();
        assert_eq!(ok.oldest(), "2026-01-01");
    }
}
