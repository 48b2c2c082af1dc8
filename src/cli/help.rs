//! Help texts built from the registry: which products take an option.

use crate::driver::{Facts, Role};
use crate::products;

/// The help of a table option: `what`, and the databases that take it (with
/// their engines, for `table_engine`).
pub(super) fn schema_help(option: &str, what: &str) -> String {
    let takers: Vec<String> = products::kinds(false)
        .filter(|k| k.takes(option))
        .map(|k| match k.product().role() {
            Role::Database(_) if option == "table_engine" => {
                let facts = k.product().facts();
                format!("{} ({})", facts.title, facts.table.engines.join("|"))
            }
            _ => k.product().facts().title.to_string(),
        })
        .collect();
    format!("{}: {what}", products::or_list(&takers))
}

/// The `--query-mode` help: the products that have modes, with the modes.
pub(super) fn query_mode_help() -> String {
    let takers = takers(
        |f| f.query_modes,
        |modes| format!("{}; default {}", modes.join("|"), modes[0]),
    );
    format!(
        "{}: how requests are sent (as pgbench's -M); a transaction-pooling --pooler needs the unnamed statement, so it defaults to extended there",
        products::or_list(&takers)
    )
}

/// The `--consistency` help: the products that have levels, with the levels.
pub(super) fn consistency_help() -> String {
    let takers = takers(
        |f| f.consistency_levels,
        |levels| format!("{}; default one", levels.join("|")),
    );
    format!(
        "{}: consistency level of every request",
        products::or_list(&takers)
    )
}

/// The products whose facts list choices (`choices`: modes, levels), each as
/// `title (what)`, `what` as `describe` says of its choices.
fn takers(
    choices: fn(&Facts) -> &'static [&'static str],
    describe: impl Fn(&[&str]) -> String,
) -> Vec<String> {
    products::TargetKind::ALL
        .into_iter()
        .map(|k| k.product().facts())
        .filter(|f| !choices(f).is_empty())
        .map(|f| format!("{} ({})", f.title, describe(choices(f))))
        .collect()
}
