//! The results of a study run, one JSON file rewritten after every point:
//! the study as written, the machine, each point's run (or fill, or error),
//! and the capacity searches.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::RunResult;
use super::capacity::Capacity;
use super::fill::FillResult;
use crate::plan::study::StudyFile;

/// Version of the study results layout.
pub const STUDY_SCHEMA: u32 = 1;

/// The machine a study ran on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs.
    pub cores: usize,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// Kernel release.
    pub kernel: String,
    /// Host name.
    pub host: String,
    /// The CPU frequency governor of CPU 0 (`None`: no cpufreq, e.g. a VM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// Transparent huge pages: the mode in use (`always`, `madvise`, `never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<String>,
    /// The size of CPU 0's last-level cache, KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_kib: Option<u64>,
}

impl Machine {
    /// What makes this machine's figures suspect, one sentence each: a
    /// frequency governor other than `performance` (clock speed varies with
    /// load), and `data_bytes` of data that fit in the last-level cache (reads
    /// then never wait for memory, unlike a data set of production size).
    pub fn suspicions(&self, data_bytes: u64) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(g) = self.governor.as_deref().filter(|g| *g != "performance") {
            out.push(format!(
                "the CPU frequency governor is '{g}', not 'performance': clock speed follows the load, so figures vary between runs"
            ));
        }
        if let Some(llc) = self.llc_kib.filter(|&l| l > 0 && data_bytes <= l * 1024) {
            out.push(format!(
                "the data set ({:.1} MiB) fits in the CPU's last-level cache ({:.1} MiB): reads never wait for memory, so figures are better than for a data set of production size",
                data_bytes as f64 / (1 << 20) as f64,
                llc as f64 / 1024.0
            ));
        }
        out
    }
}

/// One point's outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PointResult {
    /// Position in the plan.
    pub index: usize,
    /// Target label.
    pub target: String,
    /// Repetition, from 1.
    pub repetition: usize,
    /// Swept axis values.
    pub params: BTreeMap<String, String>,
    /// The run, when it completed.
    pub result: Option<RunResult>,
    /// A fill's outcome (mode = "fill").
    #[serde(default)]
    pub fill: Option<FillResult>,
    /// Cut short by Ctrl-C (its error or partial result says how far it got):
    /// interrupted, not failed.
    #[serde(default)]
    pub interrupted: bool,
    /// Why it did not, if it did not.
    pub error: Option<String>,
}

/// Everything a study run produced; one JSON file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StudyResult {
    /// Layout version.
    pub schema_version: u32,
    /// kvlab's version.
    pub kvlab_version: String,
    /// Start, seconds since the Unix epoch.
    pub started_unix_s: u64,
    /// The study as written.
    pub study: StudyFile,
    /// Where it ran.
    pub machine: Machine,
    /// Points planned.
    pub planned: usize,
    /// Finished points (in plan order).
    pub points: Vec<PointResult>,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// Capacity searches (`goal.capacity`), one per target.
    #[serde(default)]
    pub capacity: Vec<TargetCapacity>,
    /// What the study cannot show on this machine (more client threads,
    /// server threads or server processes than cores), one sentence each;
    /// found when the study ran.
    #[serde(default)]
    pub caveats: Vec<String>,
}

/// A target's highest rate within the study's p99 goal.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetCapacity {
    /// Target label (with swept server settings, if any).
    pub target: String,
    /// The search and its runs.
    pub search: Capacity,
}

impl PointResult {
    /// Failed: an error, or a result that is not a valid measurement (errors,
    /// an offered rate not sustained); an interrupted point is not failed.
    pub fn failed(&self) -> bool {
        !self.interrupted
            && (self.error.is_some() || self.result.as_ref().is_some_and(|r| !r.valid))
    }
}

impl PointResult {
    /// The point as text: its target and every parameter (`redis
    /// connections=4 pipeline=1`), the same for each of its repetitions.
    pub fn label(&self) -> String {
        std::iter::once(self.target.clone())
            .chain(self.params.iter().map(|(k, v)| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl StudyResult {
    /// Every point ran and failed (none was interrupted): the reason of the
    /// first, when so.
    pub fn all_failed(&self) -> Option<String> {
        let all = !self.points.is_empty() && self.points.iter().all(PointResult::failed);
        all.then(|| {
            let p = &self.points[0];
            p.error.clone().unwrap_or_else(|| {
                p.result
                    .as_ref()
                    .and_then(|r| r.problems.first().cloned())
                    .unwrap_or_else(|| "not a valid measurement".into())
            })
        })
    }

    /// Writes the results atomically (temp file, rename).
    pub fn write(&self, path: &Path) -> Result<()> {
        super::write_json_atomic(self, path)
    }

    /// Reads a results file.
    pub fn read(path: &Path) -> Result<StudyResult> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a kvlab study results file", path.display()))
    }

    /// Why `self` and `other` cannot share one report (`None`: they can): the
    /// same results given twice, or a different study, workload, load, goal or
    /// definition of a target of the same name. The names are the files'.
    pub fn differs(&self, name: &str, other: &StudyResult, other_name: &str) -> Option<String> {
        let (a, b) = (&self.study, &other.study);
        if self.started_unix_s == other.started_unix_s
            && a.name == b.name
            && self.machine.host == other.machine.host
        {
            return Some(format!(
                "{name} and {other_name} are the same results (study '{}' started at {} on {}): give each once",
                a.name, self.started_unix_s, self.machine.host
            ));
        }
        // The sections have no `PartialEq`: compare their JSON forms.
        fn json<T: Serialize>(v: &T) -> serde_json::Value {
            serde_json::to_value(v).unwrap_or_default()
        }
        let what = if a.name != b.name {
            Some(format!("study '{}' vs '{}'", a.name, b.name))
        } else if json(&a.workload) != json(&b.workload) {
            Some("a different [workload]".to_string())
        } else if json(&a.load) != json(&b.load) {
            Some("a different [load]".to_string())
        } else if a.goal != b.goal {
            Some("a different [goal]".to_string())
        } else {
            a.targets.iter().find_map(|t| {
                let label = t.name.as_deref().unwrap_or(&t.target);
                b.targets
                    .iter()
                    .find(|u| u.name.as_deref().unwrap_or(&u.target) == label)
                    .filter(|u| json(u) != json(t))
                    .map(|_| format!("a different definition of target '{label}'"))
            })
        }?;
        Some(format!(
            "{name} and {other_name} are results of different studies ({what}); one report would mix them: report them one at a time, or with --separate"
        ))
    }
}
