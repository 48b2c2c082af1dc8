//! The rule of `--server-opt replicas=N` (managed read replicas) for every
//! product: how many, and which products have them ([`replicas_of`]). What a
//! product does to run them and read their lag is its
//! [`Replication`](crate::driver::Replication) (with the traits in
//! `product.rs`, which it refers to); `servers::ManagedServer` starts, waits
//! for and stops the replicas; nothing here routes requests to them.

use std::collections::BTreeMap;

use crate::driver::product::Product;
use crate::error::UsageError;

/// The most replicas a managed primary may have.
pub const MAX_REPLICAS: usize = 8;

/// The `--server-opt` key that asks for replicas.
pub const REPLICAS_KEY: &str = "replicas";

/// The replicas `opts` asks `product` for (0 when none): refused, in one
/// line naming the flag, where the value is not 0..=8 or the product has no
/// managed replicas. A cluster's own `replicas=` (per primary) is its
/// product's to read: 0 here.
pub fn replicas_of(
    product: &dyn Product,
    opts: &BTreeMap<String, String>,
) -> Result<usize, UsageError> {
    let Some(v) = opts.get(REPLICAS_KEY) else {
        return Ok(0);
    };
    if product.facts().sharded {
        return Ok(0);
    }
    let n = match v.trim().parse::<usize>() {
        Ok(n) if n <= MAX_REPLICAS => n,
        _ => {
            return Err(UsageError::bad(
                "--server-opt",
                format!("replicas={v} is not a number of read replicas from 0 to {MAX_REPLICAS}"),
                "give e.g. replicas=2",
            ));
        }
    };
    if n > 0 && product.server().replication().is_none() {
        return Err(UsageError::bad(
            "--server-opt",
            format!(
                "replicas= is for managed postgres and mariadb, not {}",
                product.facts().name
            ),
            "remove it",
        ));
    }
    Ok(n)
}

/// The refusal of `replicas=` for a server kvlab did not start (a URL).
pub fn replicas_not_managed() -> UsageError {
    UsageError::conflict(
        "--server-opt",
        "replicas= starts read replicas of a server kvlab starts, not of a URL target",
        "drop --server-opt replicas=, or use --target postgres or --target mariadb",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::products::TargetKind;

    const POSTGRES_PRODUCT: &dyn Product = &crate::products::postgres::POSTGRES;
    const MARIADB_PRODUCT: &dyn Product = &crate::products::mysql::MARIADB;
    const REDIS_PRODUCT: fn() -> &'static dyn Product = || TargetKind::Redis.product();

    fn opts(v: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(REPLICAS_KEY.to_string(), v.to_string())])
    }

    #[test]
    fn counts_replicas_and_refuses_in_one_line() {
        assert_eq!(replicas_of(POSTGRES_PRODUCT, &opts("2")).unwrap(), 2);
        assert_eq!(replicas_of(MARIADB_PRODUCT, &opts("8")).unwrap(), 8);
        assert_eq!(replicas_of(REDIS_PRODUCT(), &BTreeMap::new()).unwrap(), 0);
        for (p, v) in [
            (POSTGRES_PRODUCT, "9"),
            (POSTGRES_PRODUCT, "x"),
            (REDIS_PRODUCT(), "1"),
        ] {
            let e = replicas_of(p, &opts(v)).unwrap_err().to_string();
            assert!(
                e.starts_with("--server-opt: replicas") && !e.contains('\n'),
                "{e}"
            );
        }
    }
}
