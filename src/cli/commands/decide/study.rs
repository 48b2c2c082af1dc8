//! A study file's `[decide]` as `kvlab decide`'s arguments: each key a
//! flag without its dashes, its value typed as that flag's field (by the
//! type of the flag's value parser) and put in that field of
//! [`DecideArgs`], no command line in between; an error at the key's line.

use std::any::TypeId;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use clap::{Arg, ArgAction};
use serde_json::Value as Json;

use crate::cli::{DecideArgs, decide_command};
use crate::plan::study::StudyFile;

/// Where `key` (of `[decide]`; "" the table) is written.
fn at<'s>(s: &'s StudyFile, key: &str) -> &'s str {
    s.decide_at
        .get(key)
        .or_else(|| s.decide_at.get(""))
        .map_or(s.name.as_str(), String::as_str)
}

/// The arguments `[decide]` gives: kvlab decide's defaults with each key's
/// value in its flag's field, the keys as the flags given; into `out`
/// unless the table names one (or `resume`, whose directory is the out, or
/// `check`, which writes into its own).
pub fn args_of(s: &StudyFile, out: &Path) -> Result<DecideArgs> {
    let cmd = decide_command();
    let mut fields = serde_json::to_value(DecideArgs::defaults()?)?;
    let mut given = Vec::new();
    for (key, value) in s.decide.iter().flatten() {
        let long = key.replace('_', "-");
        let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(&long)) else {
            return Err(anyhow!(
                "{}: [decide] has no key {key}; its keys are kvlab decide's flags without the dashes (see kvlab decide --help), e.g. rps = 20000, p99_ms = 5",
                at(s, key)
            ));
        };
        let v = field(arg, value)
            .map_err(|e| anyhow!("{}: [decide] {key}{}", at(s, key), keyed(&e)))?;
        let id = arg.get_id().as_str();
        fields[id] = v;
        given.push(id.to_string());
    }
    let mut args: DecideArgs =
        serde_json::from_value(fields).map_err(|e| anyhow!("{}: [decide]: {e}", at(s, "")))?;
    if args.out.is_none() && args.resume.is_none() && args.check.is_none() {
        args.out = Some(out.to_path_buf());
    }
    args.given = given;
    Ok(args)
}

/// The field's value for `arg` from the key's `value`: a switch's boolean,
/// a repeatable flag's list (or one value), else one value; an error
/// reads after the key.
fn field(arg: &Arg, value: &toml::Value) -> Result<Json, String> {
    let long = arg.get_long().unwrap_or_default();
    match (arg.get_action(), value) {
        (ArgAction::SetTrue, toml::Value::Boolean(b)) => Ok(Json::Bool(*b)),
        (ArgAction::SetTrue, _) => Err(format!(
            " is a switch; write {} = true or drop it",
            long.replace('-', "_")
        )),
        (ArgAction::Append, toml::Value::Array(a)) => a
            .iter()
            .map(|v| one(arg, v))
            .collect::<Result<_, _>>()
            .map(Json::Array),
        (ArgAction::Append, v) => Ok(Json::Array(vec![one(arg, v)?])),
        (_, toml::Value::Array(_)) => Err(format!(
            " takes one value, as --{long} does (a list only where the flag repeats)"
        )),
        (_, v) => one(arg, v),
    }
}

/// One value of `arg` as its field's type holds it (a number, a string,
/// a `KEY=VALUE` pair), or why it is none.
fn one(arg: &Arg, value: &toml::Value) -> Result<Json, String> {
    let long = arg.get_long().unwrap_or_default();
    let text = match value {
        toml::Value::String(t) => t.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        _ => {
            return Err(format!(
                " takes a string or a number (or a list of them, where --{long} repeats)"
            ));
        }
    };
    let ty = arg.get_value_parser().type_id();
    let whole = |most: u64| match text.trim().parse::<u64>() {
        Ok(n) if n <= most => Ok(Json::from(n)),
        Ok(_) => Err(format!(": {text} is past the most, {most}")),
        Err(_) => Err(format!(": {text} is not a whole number of 0 or more")),
    };
    if ty == TypeId::of::<String>() || ty == TypeId::of::<PathBuf>() {
        Ok(Json::String(text))
    } else if ty == TypeId::of::<(String, String)>() {
        let (k, v) = crate::driver::parse_opt(&text).map_err(|e| format!(": {e}"))?;
        Ok(Json::from([k, v]))
    } else if ty == TypeId::of::<f64>() {
        match text
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
        {
            Some(n) => Ok(Json::Number(n)),
            None => Err(format!(": {text} is not a number")),
        }
    } else if ty == TypeId::of::<u32>() {
        whole(u32::MAX.into())
    } else if ty == TypeId::of::<u64>() || ty == TypeId::of::<usize>() {
        whole(u64::MAX)
    } else {
        Err(format!(
            ": kvlab cannot take --{long} from a study file; give it to kvlab decide on the command line"
        ))
    }
}

/// `text` in the file's words: each `--flag-name` as its key, `flag_name`.
fn keyed(text: &str) -> String {
    let flag = |part: &str| match part.strip_prefix("--") {
        Some(f) if f.starts_with(|c: char| c.is_ascii_lowercase()) => {
            let end = f
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(f.len());
            format!("{}{}", f[..end].replace('-', "_"), &f[end..])
        }
        _ => part.to_string(),
    };
    let word = |w: &str| w.split('/').map(flag).collect::<Vec<_>>().join("/");
    text.split(' ').map(word).collect::<Vec<_>>().join(" ")
}

/// A usage error of `kvlab decide` at the line of the key it names.
pub fn in_file(s: &StudyFile, e: anyhow::Error) -> anyhow::Error {
    let Some(u) = e.downcast_ref::<crate::error::UsageError>() else {
        return e;
    };
    let flag = match u {
        crate::error::UsageError::BadValue { flag, .. } => flag,
        crate::error::UsageError::Conflict { flags, .. } => flags,
    };
    let key = keyed(flag.split('/').next().unwrap_or_default());
    anyhow!("{}: [decide] {}", at(s, &key), keyed(&u.to_string()))
}

/// The command `args` of a study stand for, to show: each key given as
/// its flag, a URL's password masked.
pub fn shown(s: &StudyFile, args: &DecideArgs) -> String {
    let mask = |a: &str| match (a.find("://"), a.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user = &a[scheme + 3..at];
            match user.find(':') {
                Some(c) => format!("{}{}:***{}", &a[..scheme + 3], &user[..c], &a[at..]),
                None => a.to_string(),
            }
        }
        _ => a.to_string(),
    };
    let mut words = Vec::new();
    for (key, value) in s.decide.iter().flatten() {
        let flag = format!("--{}", key.replace('_', "-"));
        let values = match value {
            toml::Value::Array(a) => a.clone(),
            v => vec![v.clone()],
        };
        for v in values {
            match v {
                toml::Value::Boolean(true) => words.push(flag.clone()),
                toml::Value::Boolean(false) => {}
                toml::Value::String(t) => words.extend([flag.clone(), mask(&t)]),
                v => words.extend([flag.clone(), v.to_string()]),
            }
        }
    }
    let written = s.decide.iter().flatten().any(|(k, _)| k == "out");
    if let Some(out) = args.out.as_ref().filter(|_| !written) {
        words.extend(["--out".into(), out.display().to_string()]);
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;

    /// `[decide]` gives the same arguments as the flags its keys name.
    #[test]
    fn a_table_is_the_flags_it_names() {
        let s = crate::modes::study::parse(
            "name = \"d\"\n[decide]\nrps = 20000\np99_ms = 5\nquick = true\nkeys = 5000\n\
             value_size = 1024\nrtt = 0.5\nserver_opt = [\"io-threads=2\", \"maxmemory=1gb\"]\n\
             cache = \"valkey\"\ntls_insecure = true\nmachine_cores = 8\nconnections = 16\n",
            "test",
        )
        .unwrap();
        let from_table = args_of(&s, Path::new("o")).unwrap();
        let argv = "decide --rps 20000 --p99-ms 5 --quick --keys 5000 --value-size 1024 --rtt 0.5 \
                    --server-opt io-threads=2 --server-opt maxmemory=1gb --cache valkey \
                    --tls-insecure --machine-cores 8 --connections 16 --out o";
        let m = decide_command()
            .try_get_matches_from(argv.split(' ').filter(|w| !w.is_empty()))
            .unwrap();
        let mut flags = DecideArgs::from_arg_matches(&m).unwrap();
        flags.given = crate::cli::given(&m);
        flags.given.retain(|id| id != "out");
        let mut from_table = from_table;
        from_table.given.sort();
        flags.given.sort();
        assert_eq!(
            serde_json::to_value(&from_table).unwrap(),
            serde_json::to_value(&flags).unwrap()
        );
    }

    /// Every flag of `kvlab decide` can be a key: its type is one a key's
    /// value fills.
    #[test]
    fn flags_in_a_message_read_as_keys() {
        assert_eq!(
            keyed("--resume/--out: no; give --tls-cert FILE, e.g. --rps 5 (or --from-x)"),
            "resume/out: no; give tls_cert FILE, e.g. rps 5 (or from_x)"
        );
        assert_eq!(keyed("a -- b --9"), "a -- b --9");
    }

    #[test]
    fn every_flag_is_a_key() {
        for arg in decide_command().get_arguments() {
            if matches!(arg.get_action(), ArgAction::SetTrue) || arg.get_long().is_none() {
                continue;
            }
            let v = match one(arg, &toml::Value::Integer(1)) {
                Err(e) if e.contains("KEY=VALUE") => one(arg, &toml::Value::String("a=1".into())),
                r => r,
            };
            assert!(v.is_ok(), "{:?}: {v:?}", arg.get_id());
        }
    }
}
