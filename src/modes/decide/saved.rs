//! A decision's measurements on disk, each step saved as it finishes:
//! `DIR/manifest.json` (what was asked, the copy measured, the steps
//! finished) and `DIR/steps/NN-STEP.json` (the step's measurements and the
//! plan they were made for). An error or Ctrl-C in a later step keeps the
//! earlier ones; `--resume` reuses each finished step whose plan matches;
//! `--from` reads them all back (see [`load`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, anyhow, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Ask;
use super::host::HostLog;
use super::measure::{AsideRun, CurveRun, Measured, Searched};
use super::others::Other;
use crate::results::decide::{CacheLoss, DataCopy, Scaled, StatedLoad};

/// The steps of a decision: file name, and as said.
pub const STEPS: [(&str, &str); 8] = [
    ("database", "the database alone"),
    ("cache", "the cache alone"),
    ("curve", "the miss-ratio curve"),
    ("cache-aside", "the cache-aside confirmation"),
    ("cache-loss", "the cache loss"),
    ("replicas", "the database with a read replica"),
    ("near-aside", "cache-aside with a near cache"),
    ("near-database", "the database with a near cache"),
];

/// What a saved decision was asked, and how far it got.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// Version of kvlab that measured.
    pub kvlab_version: String,
    /// The ask: the workload and servers (passwords masked), the load as
    /// stated.
    pub ask: Ask,
    /// The copy measured.
    pub scaled: DataCopy,
    /// The steps finished, in order.
    pub finished: Vec<String>,
}

/// The cache-aside step: the rate of the fixed-rate runs, why, and the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AsideStep {
    /// The rate of the fixed-rate runs, req/s.
    pub rate: f64,
    /// Why that rate.
    pub rate_why: String,
    /// The configuration chosen and its confirmation.
    pub run: Option<AsideRun>,
}

/// What the eight steps measured, as they finish or are read back.
pub struct Steps {
    /// The database alone's search.
    pub db: Searched,
    /// The cache alone's search.
    pub cache: Searched,
    /// The miss-ratio curve's runs.
    pub curve: Vec<CurveRun>,
    /// The cache-aside step.
    pub aside: AsideStep,
    /// The cache loss.
    pub loss: Option<CacheLoss>,
    /// The other architectures' runs.
    pub others: Vec<Other>,
}

impl Steps {
    /// The measurements of a decision of `load` on the copy `scaled`.
    pub fn measured(self, load: &StatedLoad, copy: DataCopy, host_busy: Vec<String>) -> Measured {
        Measured {
            scaled: Scaled {
                keys: copy.keys,
                factor: copy.factor(load.keys),
                why: copy.why,
                rate: self.aside.rate,
                rate_why: self.aside.rate_why,
            },
            db: self.db,
            cache: self.cache,
            curve: self.curve,
            aside: self.aside.run,
            loss: self.loss,
            others: self.others,
            host_busy,
            measured_for: load.clone(),
        }
    }
}

/// One step's file.
#[derive(Serialize, Deserialize)]
struct StepFile<T> {
    step: String,
    /// The plan the step was measured for (what `--resume` compares).
    plan: Value,
    /// The host's load during it, when busy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host_busy: Option<String>,
    measured: T,
}

/// The steps of one decision under its directory.
pub struct Store<'a> {
    dir: PathBuf,
    shutdown: &'a AtomicBool,
    manifest: Manifest,
    /// Resuming: reuse what matches.
    resume: bool,
}

fn step_path(dir: &Path, i: usize) -> PathBuf {
    dir.join("steps")
        .join(format!("{:02}-{}.json", i + 1, STEPS[i].0))
}

fn read<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a step kvlab decide saved (or from another version)",
            path.display()
        )
    })
}

/// `value` written to `path` whole (a temporary file renamed over it).
fn write<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let tmp = path.with_extension("json.part");
    let f = std::fs::File::create(&tmp).with_context(|| tmp.display().to_string())?;
    serde_json::to_writer(std::io::BufWriter::new(f), value)?;
    std::fs::rename(&tmp, path).with_context(|| path.display().to_string())
}

/// Whether `dir` holds a saved decision to resume; else why not.
pub fn resumable(dir: &Path) -> Result<()> {
    match dir.join("manifest.json").exists() {
        true => Ok(()),
        false => bail!(
            "--resume: {} holds no saved decision (no manifest.json); run kvlab decide without --resume",
            dir.display()
        ),
    }
}

impl<'a> Store<'a> {
    /// The store of a decision of `ask` under `dir`: a new one (the steps of
    /// an earlier decision there removed), or with `resume` the one there.
    pub fn open(
        dir: &Path,
        ask: &Ask,
        copy: &DataCopy,
        (resume, shutdown): (bool, &'a AtomicBool),
    ) -> Result<Store<'a>> {
        let steps = dir.join("steps");
        if resume {
            resumable(dir)?;
        }
        if !resume {
            for i in 0..STEPS.len() {
                let _ = std::fs::remove_file(step_path(dir, i));
            }
        }
        std::fs::create_dir_all(&steps).with_context(|| steps.display().to_string())?;
        let store = Store {
            dir: dir.to_path_buf(),
            shutdown,
            manifest: Manifest {
                kvlab_version: env!("CARGO_PKG_VERSION").into(),
                ask: ask.clone(),
                scaled: copy.clone(),
                finished: Vec::new(),
            },
            resume,
        };
        store.save_manifest()?;
        Ok(store)
    }

    fn save_manifest(&self) -> Result<()> {
        write(&self.dir.join("manifest.json"), &self.manifest)
    }

    /// Whether every step is there to reuse (no server needed).
    pub fn complete(&self, keys: &[Value; 8]) -> bool {
        self.resume && (0..STEPS.len()).all(|i| self.reusable::<Value>(i, &keys[i]).is_some())
    }

    /// Step `i` saved under the plan `key`, if resuming and it matches.
    fn reusable<T: DeserializeOwned>(&self, i: usize, key: &Value) -> Option<StepFile<T>> {
        let f: StepFile<T> = read(&step_path(&self.dir, i))
            .ok()
            .filter(|_| self.resume)?;
        (f.plan == *key).then_some(f)
    }

    /// Step `i` for the plan `key`: reused (resuming, the same plan) or run
    /// by `run` and saved. Stopped (Ctrl-C) during it: nothing saved, and
    /// an error naming it and the steps before it.
    pub fn step<T: Serialize + DeserializeOwned>(
        &mut self,
        (i, key): (usize, &Value),
        host: &mut HostLog,
        say: &mut dyn FnMut(&str),
        run: impl FnOnce(&mut dyn FnMut(&str)) -> Result<T>,
    ) -> Result<T> {
        let name = STEPS[i].1;
        if let Some(f) = self.reusable::<T>(i, key) {
            say(&format!(
                "kvlab decide: {name}: reused, as measured before ({})\n",
                step_path(&self.dir, i).display()
            ));
            host.skip();
            if let Some(b) = &f.host_busy {
                host.busy.push(b.clone());
            }
            return self.finished(i, f.measured);
        }
        if self.resume && step_path(&self.dir, i).exists() {
            say(&format!(
                "kvlab decide: {name}: saved for another plan (other flags), measured again\n"
            ));
        }
        let measured = match run(say) {
            Ok(m) if !self.shutdown.load(Ordering::SeqCst) => m,
            Ok(_) => bail!(self.cut(i)),
            Err(e) if self.shutdown.load(Ordering::SeqCst) => return Err(e.context(self.cut(i))),
            Err(e) if i > 0 => {
                return Err(e.context(format!(
                    "{name}: the steps before it are saved in {}: kvlab decide --resume {} with the same flags measures the rest",
                    self.dir.display(),
                    self.dir.display()
                )));
            }
            Err(e) => return Err(e),
        };
        let host_busy = host.mark(name);
        if let Some(line) = &host_busy {
            say(&format!("  NOTE: {line}\n"));
        }
        let file = StepFile {
            step: name.into(),
            plan: key.clone(),
            host_busy,
            measured,
        };
        write(&step_path(&self.dir, i), &file)?;
        self.finished(i, file.measured)
    }

    /// Step `i` cut short by Ctrl-C, in words: which, what finished, how to
    /// go on.
    fn cut(&self, i: usize) -> String {
        let finished = match i {
            0 => "none".to_string(),
            n => STEPS[..n]
                .iter()
                .map(|s| s.1)
                .collect::<Vec<_>>()
                .join(", "),
        };
        format!(
            "stopped (Ctrl-C) during the runs of {}; finished: {finished}; no decision from runs cut short; the finished steps are saved in {}: kvlab decide --resume {} with the same flags measures the rest",
            STEPS[i].1,
            self.dir.display(),
            self.dir.display()
        )
    }

    fn finished<T>(&mut self, i: usize, t: T) -> Result<T> {
        self.manifest.finished.push(STEPS[i].0.into());
        self.save_manifest()?;
        Ok(t)
    }
}

/// A saved decision under `dir`, read back: what was asked and what the
/// steps measured. An unfinished one is refused, naming the steps missing.
pub fn load(dir: &Path) -> Result<(Ask, Measured)> {
    load_for(dir, "--from")
}

/// [`load`] for the flag `flag` (`--from`, `--check`), which its errors name.
pub fn load_for(dir: &Path, flag: &str) -> Result<(Ask, Measured)> {
    let manifest: Manifest = read(&dir.join("manifest.json")).map_err(|e| {
        anyhow!(
            "{flag}: {} holds no saved decision ({e:#}); give the --out of an earlier kvlab decide",
            dir.display()
        )
    })?;
    let missing: Vec<&str> = (0..STEPS.len())
        .filter(|&i| !step_path(dir, i).exists())
        .map(|i| STEPS[i].1)
        .collect();
    if !missing.is_empty() {
        bail!(
            "{flag}: the decision saved in {} is unfinished (missing: {}); measure the rest with kvlab decide --resume {} and the flags it was started with",
            dir.display(),
            missing.join(", "),
            dir.display()
        );
    }
    fn get<T: DeserializeOwned>(dir: &Path, i: usize, notes: &mut Vec<String>) -> Result<T> {
        let f: StepFile<T> = read(&step_path(dir, i))?;
        notes.extend(f.host_busy);
        Ok(f.measured)
    }
    let mut notes = Vec::new();
    let steps = Steps {
        db: get(dir, 0, &mut notes)?,
        cache: get(dir, 1, &mut notes)?,
        curve: get(dir, 2, &mut notes)?,
        aside: get(dir, 3, &mut notes)?,
        loss: get(dir, 4, &mut notes)?,
        others: (5..8)
            .map(|i| get(dir, i, &mut notes))
            .collect::<Result<_>>()?,
    };
    let measured = steps.measured(&manifest.ask.load, manifest.scaled, notes);
    Ok((manifest.ask, measured))
}
