//! `--deploy`, `--prices` and `--multi-az` turned once into the
//! [`Deployment`] a decision is priced for: which deployment (aws-managed
//! unless told; own where the team's machine or price flags are given), its
//! catalog read and checked, its shapes resolved for the products weighed.

use anyhow::Result;

use crate::cli::DecideArgs;
use crate::error::UsageError;
use crate::pricing::catalog::{Catalog, Loaded};
use crate::pricing::{days, deploy};
use crate::results::decide::assumptions::Policy;
use crate::results::decide::bill::{Deploy, Deployment};

/// The flags that price own machines, by id.
const OWN: [&str; 7] = [
    "machine_cores",
    "machine_gib",
    "price_core_hour",
    "price_gib_hour",
    "price_machine_month",
    "currency",
    "shared",
];

/// Whether `args` give any flag of the deployment (what `--from` reprices).
pub fn given(args: &DecideArgs) -> bool {
    let g = |id: &str| args.given.iter().any(|x| x == id);
    g("deploy") || g("prices") || g("multi_az") || OWN.iter().any(|id| g(id))
}

/// The deployment `args` name, checked: `--deploy` as given; else `managed`
/// of a `--prices` catalog (`vms` where it prices no managed service, see
/// [`deployment`]); else own where an own-machine flag is given;
/// else `default` ([`Deploy::DEFAULT`], or a saved decision's).
fn deploy_of(args: &DecideArgs, default: Deploy) -> Result<Deploy, UsageError> {
    let own = OWN.iter().find(|id| args.given.iter().any(|x| x == *id));
    let named = match &args.deploy {
        Some(n) => Some(Deploy::named(n).ok_or_else(|| {
            UsageError::bad(
                "--deploy",
                format!("{n:?} is no deployment"),
                format!("give one of {}", Deploy::ALL.map(|d| d.name()).join(", ")),
            )
        })?),
        None => None,
    };
    let deploy = match (named, &args.prices, own) {
        (Some(d), ..) => d,
        (None, Some(_), _) => Deploy::Managed,
        (None, None, Some(_)) => Deploy::Own,
        (None, None, None) => default,
    };
    if let (true, Some(id)) = (deploy != Deploy::Own, own) {
        let flag = format!("--{}", id.replace('_', "-"));
        let problem = format!(
            "{flag} prices the team's own machines, and --deploy {deploy} prices a catalog's shapes"
        );
        return Err(UsageError::conflict(
            "--deploy",
            problem,
            "give --deploy own with it, or drop it",
        ));
    }
    Ok(deploy)
}

/// The catalog `deploy` is priced from: `--prices FILE`, else its built-in
/// one (`None`: own machines).
fn catalog_of(args: &DecideArgs, deploy: Deploy) -> Result<Option<Loaded>> {
    match (deploy, &args.prices) {
        (Deploy::Own, Some(_)) => Err(UsageError::conflict(
            "--prices",
            "--deploy own prices the team's machines (--machine-cores, --price-core-hour, ...), not a catalog",
            "drop --prices, or name the catalog's deployment (--deploy managed or vms)",
        )
        .into()),
        (Deploy::Own, None) => Ok(None),
        (_, Some(file)) => Catalog::read(file).map(Some),
        (d, None) => match d.catalog() {
            Some(name) => Catalog::built_in(name).map(Some),
            None => Err(UsageError::bad(
                "--deploy",
                format!("{d} prices the catalog given with --prices, and none is given"),
                "give --prices FILE (see kvlab prices for the format), or a built-in deployment such as aws-managed",
            )
            .into()),
        },
    }
}

/// The deployment `args` price a decision of `products` (the database's and
/// the cache's names) for, under `policy`; `default` where they name none.
pub fn deployment(
    args: &DecideArgs,
    products: (&str, &str),
    policy: &Policy,
    default: Deploy,
) -> Result<Deployment> {
    let deploy = deploy_of(args, default)?;
    if args.multi_az && !deploy.managed() {
        return Err(UsageError::conflict(
            "--multi-az",
            format!("it prices a managed database's standby, and --deploy {deploy} has none"),
            "drop it, or give a managed deployment (aws-managed, gcp-managed)",
        )
        .into());
    }
    let catalog = catalog_of(args, deploy)?;
    // A --prices catalog of virtual machines only, its deployment not named:
    // its machines.
    let vms_only = catalog.as_ref().is_some_and(|l| !l.catalog.has_managed());
    let deploy = match (deploy, &args.deploy) {
        (Deploy::Managed, None) if vms_only => Deploy::Vms,
        (d, _) => d,
    };
    Ok(deploy::resolve(
        &deploy::Asked {
            deploy,
            catalog: catalog.as_ref(),
            products,
            multi_az: args.multi_az,
            today: days::today(),
        },
        policy,
    ))
}
