//! The JSON layout of a run result: a result file read and written back is
//! the same document, keys in the same order at every depth.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::events::EventReport;
use super::replay::ReplayReport;
use super::study::{Machine, StudyResult};
use super::usage::{Role, ServerUse};
use super::{ClientReport, PoolerReport, ProfileNote, RunResult};

const CLIENT: &str = include_str!("../../tests/fixtures/client-result.json");
const STUDY: &str = include_str!("../../tests/fixtures/study.json");

/// A JSON document with its objects' keys in the order written (serde_json's
/// `Value` sorts them without the `preserve_order` feature).
#[derive(Debug, PartialEq)]
enum Doc {
    Object(Vec<(String, Doc)>),
    Array(Vec<Doc>),
    Scalar(Value),
}

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Doc, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Doc;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Doc, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    out.push((k, m.next_value()?));
                }
                Ok(Doc::Object(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Doc, A::Error> {
                let mut out = Vec::new();
                while let Some(x) = s.next_element()? {
                    out.push(x);
                }
                Ok(Doc::Array(out))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Doc, E> {
                Ok(Doc::Scalar(b.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Doc, E> {
                Ok(Doc::Scalar(n.into()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Doc, E> {
                Ok(Doc::Scalar(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Doc, E> {
                Ok(Doc::Scalar(n.into()))
            }
            fn visit_str<E>(self, s: &str) -> Result<Doc, E> {
                Ok(Doc::Scalar(s.into()))
            }
            fn visit_unit<E>(self) -> Result<Doc, E> {
                Ok(Doc::Scalar(Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

impl Doc {
    /// Checks that `self`, a file written back, holds `old` (every key of
    /// every object in the same order, every value the same) and puts in
    /// `added` each key it has beyond them, as `path-of-the-key-before +
    /// key` (array indices left out); `Err`: the first place it does not.
    fn holds(&self, old: &Doc, at: &str, added: &mut Vec<String>) -> Result<(), String> {
        match (self, old) {
            (Doc::Object(new), Doc::Object(old)) => {
                let mut next = old.iter().peekable();
                let mut before = "^";
                for (k, v) in new {
                    match next.next_if(|(o, _)| o == k) {
                        Some((_, o)) => v.holds(o, &format!("{at}.{k}"), added)?,
                        None => added.push(format!("{at}.{before} + {k}")),
                    }
                    before = k;
                }
                match next.next() {
                    Some((k, _)) => Err(format!("{at}.{k}: missing or out of order")),
                    None => Ok(()),
                }
            }
            (Doc::Array(new), Doc::Array(old)) if new.len() == old.len() => new
                .iter()
                .zip(old)
                .try_for_each(|(n, o)| n.holds(o, &format!("{at}[]"), added)),
            _ if self == old => Ok(()),
            _ => Err(format!("{at}: {self:?}, was {old:?}")),
        }
    }
}

/// `text` read as `T` and written back as pretty JSON.
fn written_back<T: serde::Serialize + serde::de::DeserializeOwned>(text: &str) -> String {
    let t: T = serde_json::from_str(text).unwrap();
    serde_json::to_string_pretty(&t).unwrap()
}

/// The keys `back` adds to `old` (see [`Doc::holds`]), each once (in the
/// order met), after
/// checking that `back` holds all of `old` unchanged.
fn additions(old: &str, back: &str) -> Vec<String> {
    let doc = |t: &str| serde_json::from_str::<Doc>(t).unwrap();
    let mut added = Vec::new();
    if let Err(e) = doc(back).holds(&doc(old), "$", &mut added) {
        panic!("the file written back differs: {e}");
    }
    let mut seen = std::collections::HashSet::new();
    added.retain(|a| seen.insert(a.clone()));
    added
}

#[test]
fn a_result_file_is_written_back_as_read() {
    let back = written_back::<RunResult>(CLIENT);
    // Fields newer than the fixture, written with their defaults in their place.
    let added = [
        "$.config.workload.background_writes + ttl_s",
        "$.config.load.rate + arrivals",
        "$.config.load.start_at_ms + timeline_seconds",
        "$.config.cache + shared",
        "$.errors_by_kind + value_bytes",
        "$.warmup.stale_versions_max + value_bytes",
        "$.warmup.value_bytes + expired",
        "$.warmup.expired + keys",
        "$.timeline[].p99_us + p999_us",
    ];
    assert_eq!(additions(CLIENT, &back), added);
    assert_eq!(written_back::<RunResult>(&back), back);
}

#[test]
fn a_study_file_is_written_back_as_read() {
    let back = written_back::<StudyResult>(STUDY);
    // The fields newer than the fixture each run result gets, in their place
    // (those of the sections inside it and of the study are theirs).
    let added: Vec<String> = additions(STUDY, &back)
        .into_iter()
        .filter_map(|a| Some(a.strip_prefix("$.points[].result.")?.to_string()))
        .filter(|a| !a.contains(['.', '[']))
        .collect();
    let expected = [
        "errors_by_kind + value_bytes",
        "server_peak_rss_kb + server_cpu_source",
        "timeline + background",
        "background + consistency",
        "consistency + cache_aside",
    ];
    assert_eq!(added, expected);
    assert_eq!(written_back::<StudyResult>(&back), back);
}

/// Every key a run result can have, in the order written.
const KEYS: [&str; 58] = [
    "schema_version",
    "kvlab_version",
    "started_unix_s",
    "config",
    "target",
    "valid",
    "problems",
    "interrupted",
    "duration_s",
    "throughput_rps",
    "requests",
    "gets",
    "sets",
    "hits",
    "misses",
    "keys_read",
    "errors",
    "errors_by_kind",
    "value_bytes",
    "expired_misses",
    "latency_start",
    "latency_us",
    "service_time_us",
    "schedule",
    "client_cpu_s",
    "client_cpu_us_per_request",
    "client_busy",
    "client_saturated",
    "client_peak_rss_kb",
    "server_cpu_s",
    "server_cpu_us_per_request",
    "server_peak_rss_kb",
    "servers",
    "server_cpu_source",
    "server_reported_memory",
    "load",
    "warmup",
    "connections",
    "server_counters",
    "timeline",
    "background",
    "events",
    "machine",
    "suspect",
    "shared_cores",
    "host_load",
    "replay",
    "consistency",
    "cache_aside",
    "query_mode",
    "profile",
    "pooler",
    "shard",
    "window",
    "start",
    "clients",
    "histogram",
    "service_histogram",
];

#[test]
fn a_result_with_every_field_is_written_back_in_order() {
    let mut r: RunResult = serde_json::from_str(CLIENT).unwrap();
    r.totals.keys_read = Some(7);
    r.totals.expired_misses = Some(0);
    r.server.servers = vec![ServerUse::new(Role::Cache, "redis", Some(1.0), Some(2), 3)];
    r.events = vec![EventReport::default()];
    r.host.machine = Some(Machine::default());
    r.host.suspect = vec!["suspect".into()];
    r.host.shared_cores = Some(true);
    r.host.host_load = Some(super::host_load::HostLoad {
        others_cores: 0.1,
        steal_share: 0.0,
        load_avg: 0.5,
        cores: 2.0,
        seconds: 5.0,
    });
    r.replay = Some(ReplayReport::default());
    r.query_mode = Some("prepared".into());
    r.profile = Some(ProfileNote {
        name: "twitter-c1".into(),
        source: "source".into(),
        not_reproduced: "nothing".into(),
    });
    r.pooler = Some(PoolerReport {
        name: "pgbouncer".into(),
        version: "1".into(),
        settings: Default::default(),
        pid: 1,
        pooler_cpu_s: None,
        pooler_cpu_us_per_request: None,
        pooler_peak_rss_kb: None,
        counters: None,
    });
    r.clients = vec![ClientReport {
        shard: r.shard.unwrap(),
        status: "ok".into(),
        requests: 1,
        throughput_rps: 1.0,
        window: r.window,
        start_late_ms: None,
        client_busy: None,
        client_saturated: false,
        client_cpu_s: 1.0,
        problems: Vec::new(),
    }];
    let text = serde_json::to_string_pretty(&r).unwrap();
    let Doc::Object(o) = serde_json::from_str::<Doc>(&text).unwrap() else {
        panic!("not an object")
    };
    let keys: Vec<&str> = o.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, KEYS);
    // Read back (from text and from a `Value`, as `kvlab merge` reads), the same.
    assert_eq!(written_back::<RunResult>(&text), text);
    let value: Value = serde_json::from_str(&text).unwrap();
    let again: RunResult = serde_json::from_value(value).unwrap();
    assert_eq!(serde_json::to_string_pretty(&again).unwrap(), text);
}
