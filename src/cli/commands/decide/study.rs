//! A study file's `[decide]` as `kvlab decide`'s flags: each key a flag
//! without its dashes, an error at the key's line.

use anyhow::{Result, anyhow};
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

use crate::cli::DecideArgs;
use crate::plan::study::StudyFile;

/// `kvlab decide`'s flags, parsed on their own.
#[derive(Parser)]
#[command(name = "kvlab decide")]
struct Flags {
    #[command(flatten)]
    args: DecideArgs,
}

/// Where `key` (of `[decide]`; "" the table) is written.
fn at<'s>(s: &'s StudyFile, key: &str) -> &'s str {
    s.decide_at
        .get(key)
        .or_else(|| s.decide_at.get(""))
        .map_or(s.name.as_str(), String::as_str)
}

/// The flags `[decide]` stands for, `--out` last unless it gives one (or
/// `resume`, whose directory is the out).
pub fn argv_of(s: &StudyFile, out: &std::path::Path) -> Result<Vec<String>> {
    let cmd = crate::cli::decide_flags(Flags::command());
    let table = s.decide.clone().unwrap_or_default();
    let mut argv = vec!["decide".to_string()];
    for (key, value) in &table {
        let long = key.replace('_', "-");
        let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(&long)) else {
            return Err(anyhow!(
                "{}: [decide] has no key {key}; its keys are kvlab decide's flags without the dashes (see kvlab decide --help), e.g. rps = 20000, p99_ms = 5",
                at(s, key)
            ));
        };
        let flag = format!("--{long}");
        let switch = matches!(arg.get_action(), ArgAction::SetTrue);
        let values = match value {
            toml::Value::Array(a) => a.clone(),
            v => vec![v.clone()],
        };
        for v in values {
            match (v, switch) {
                (toml::Value::Boolean(b), true) => {
                    if b {
                        argv.push(flag.clone());
                    }
                }
                (toml::Value::String(t), false) => argv.extend([flag.clone(), t]),
                (v @ (toml::Value::Integer(_) | toml::Value::Float(_)), false) => {
                    argv.extend([flag.clone(), v.to_string()])
                }
                (_, true) => {
                    return Err(anyhow!(
                        "{}: [decide] {key} is a switch; write {key} = true or drop it",
                        at(s, key)
                    ));
                }
                (_, false) => {
                    return Err(anyhow!(
                        "{}: [decide] {key} takes a string or a number (or a list of them, where the flag repeats), as --{long} would",
                        at(s, key)
                    ));
                }
            }
        }
    }
    if !table.contains_key("out") && !table.contains_key("resume") {
        argv.extend(["--out".into(), out.display().to_string()]);
    }
    Ok(argv)
}

/// `argv` parsed as `kvlab decide`'s flags; an error names the key and
/// its line.
pub fn parse(s: &StudyFile, argv: &[String]) -> Result<DecideArgs> {
    let parsed = crate::cli::decide_flags(Flags::command())
        .try_get_matches_from(argv)
        .and_then(|m| {
            let mut f = Flags::from_arg_matches(&m)?;
            f.args.given = crate::cli::given(&m);
            Ok(f)
        });
    match parsed {
        Ok(f) => Ok(f.args),
        Err(e) if e.kind() == clap::error::ErrorKind::MissingRequiredArgument => {
            let missing: Vec<String> = match e.get(clap::error::ContextKind::InvalidArg) {
                Some(clap::error::ContextValue::Strings(v)) => v
                    .iter()
                    .map(|a| keyed(a.split(' ').next().unwrap_or_default()))
                    .collect(),
                _ => vec![],
            };
            Err(anyhow!(
                "{}: [decide] needs {}; add it, e.g. rps = 20000 and p99_ms = 5",
                at(s, ""),
                missing.join(" and ")
            ))
        }
        Err(e) => {
            let arg = e
                .get(clap::error::ContextKind::InvalidArg)
                .map(|a| a.to_string())
                .unwrap_or_default();
            let long = arg
                .trim_start_matches("--")
                .split([' ', '='])
                .next()
                .unwrap_or_default()
                .replace('-', "_");
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or_default();
            let first = first.trim_start_matches("error: ");
            let first = first.replace(&arg, &long);
            Err(anyhow!(
                "{}: [decide]: {}; its keys are kvlab decide's flags without the dashes (see kvlab decide --help)",
                at(s, &long),
                first.replace("--", "")
            ))
        }
    }
}

/// `text` in the file's words: each `--flag-name` as its key, `flag_name`.
fn keyed(text: &str) -> String {
    text.split(' ')
        .map(|w| match w.strip_prefix("--") {
            Some(f) if f.starts_with(|c: char| c.is_ascii_lowercase()) => f.replace('-', "_"),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A usage error of `kvlab decide` at the line of the key it names.
pub fn in_file(s: &StudyFile, e: anyhow::Error) -> anyhow::Error {
    let Some(u) = e.downcast_ref::<crate::error::UsageError>() else {
        return e;
    };
    let flag = match u {
        crate::error::UsageError::BadValue { flag, .. } => *flag,
        crate::error::UsageError::Conflict { flags, .. } => *flags,
    };
    let key = keyed(flag.split('/').next().unwrap_or_default());
    anyhow!("{}: [decide] {}", at(s, &key), keyed(&u.to_string()))
}

/// `argv` (past "decide") to show: a URL's password masked.
pub fn shown(argv: &[String]) -> String {
    let mask = |a: &String| match (a.find("://"), a.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &a[scheme + 3..at];
            match user.find(':') {
                Some(c) => format!("{}{}:***{}", &a[..scheme + 3], &user[..c], &a[at..]),
                None => a.clone(),
            }
        }
        _ => a.clone(),
    };
    argv[1..].iter().map(mask).collect::<Vec<_>>().join(" ")
}
