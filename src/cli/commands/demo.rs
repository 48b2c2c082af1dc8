//! `kvlab demo`: the built-in demo study (`studies/demo.toml`), run as `kvlab
//! study` runs a file.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::study::run_study;
use crate::cli::DemoArgs;
use crate::modes::study;

/// The built-in demo study.
pub const DEMO: &str = include_str!("../../../studies/demo.toml");

/// What `kvlab demo` does, for its help: the demo study's targets, named
/// from the study itself.
pub fn about() -> String {
    let targets: Vec<String> = toml::from_str::<study::StudyFile>(DEMO)
        .map(|s| s.targets.iter().map(study::label).collect())
        .unwrap_or_default();
    let names = match targets.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => targets.join(""),
    };
    format!("A quick study (studies/demo.toml): read-only point reads against managed {names}")
}

/// Runs `kvlab demo`.
pub fn exec(args: &DemoArgs, shutdown: &AtomicBool) -> Result<()> {
    let study = study::parse(DEMO, "built-in demo study")?;
    run_study(&study, &args.out, false, shutdown)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kvlab --help` names exactly the targets the demo runs.
    #[test]
    fn the_help_names_the_demos_targets() {
        let study = study::parse(DEMO, "built-in demo study").unwrap();
        let names: Vec<String> = study.targets.iter().map(study::label).collect();
        let help = about();
        assert!(
            help.ends_with("redis, valkey, memcached, postgres and mariadb"),
            "{help}"
        );
        for n in &names {
            assert!(help.contains(n.as_str()), "{help} lacks {n}");
        }
        assert_eq!(help.matches(", ").count() + 2, names.len(), "{help}");
    }
}
