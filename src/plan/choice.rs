//! The query mode and consistency level a plan asks for, read from the
//! command line, a study file or a result file against what each product
//! offers (its facts), with the error that names the option and the fix.

use serde::{Deserialize, Deserializer};

use crate::driver::{Consistency, Facts, QueryMode};
use crate::error::UsageError;
use crate::products::{self, TargetKind};

/// `mode` as a query mode of `kind`, or the error naming `flag`.
pub fn query_mode_of(
    kind: TargetKind,
    mode: &str,
    flag: &'static str,
) -> Result<QueryMode, UsageError> {
    let modes = kind.product().facts().query_modes;
    QueryMode::among(modes, mode)
        .ok_or_else(|| refused(kind, flag, "mode", mode, modes, |f| f.query_modes))
}

/// `level` as a consistency level of `kind`, or the error naming `flag`.
pub fn consistency_of(
    kind: TargetKind,
    level: &str,
    flag: &'static str,
) -> Result<Consistency, UsageError> {
    let levels = kind.product().facts().consistency_levels;
    Consistency::among(levels, level)
        .ok_or_else(|| refused(kind, flag, "level", level, levels, |f| f.consistency_levels))
}

/// Why `given` is no `what` of `kind`: the products that have any when
/// `kind` has none, else the ones it has.
fn refused(
    kind: TargetKind,
    flag: &'static str,
    what: &str,
    given: &str,
    offered: &[&str],
    of: fn(&Facts) -> &'static [&'static str],
) -> UsageError {
    if offered.is_empty() {
        let takers: Vec<&str> = TargetKind::ALL
            .into_iter()
            .filter(|k| !of(k.product().facts()).is_empty())
            .map(|k| k.product().facts().title)
            .collect();
        return UsageError::bad(
            flag,
            format!(
                "applies to {} targets only (not {})",
                products::or_list(&takers),
                kind.name()
            ),
            "drop it",
        );
    }
    UsageError::bad(
        flag,
        format!("unknown {what} '{given}'"),
        format!("use {}", offered.join("|")),
    )
}

/// The choice any product offers under `name`, for reading result files.
fn any_of<T>(
    name: &str,
    among: fn(&'static [&'static str], &str) -> Option<T>,
    of: fn(&Facts) -> &'static [&'static str],
) -> Option<T> {
    TargetKind::ALL
        .into_iter()
        .find_map(|k| among(of(k.product().facts()), name))
}

impl<'de> Deserialize<'de> for QueryMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        any_of(&name, QueryMode::among, |f| f.query_modes)
            .ok_or_else(|| serde::de::Error::custom(format!("no product has query mode '{name}'")))
    }
}

impl<'de> Deserialize<'de> for Consistency {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        any_of(&name, Consistency::among, |f| f.consistency_levels).ok_or_else(|| {
            serde::de::Error::custom(format!("no product has consistency level '{name}'"))
        })
    }
}
