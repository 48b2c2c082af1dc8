//! A decision's measurements on disk, each step saved as it finishes:
//! `DIR/manifest.json` (what was asked, the copy measured, the steps
//! finished) and `DIR/steps/NN-STEP.json` (the step's measurements and the
//! plan they were made for). An error or Ctrl-C in a later step keeps the
//! earlier ones; `--resume` reuses each finished step whose plan matches
//! and whose measurements held (see [`super::held`]): a step that did not
//! hold is saved with why, ends the decision (exit 5), and is measured
//! again on `--resume`, with every step after it; `--from` reads them all
//! back (see [`load`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, anyhow, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ask::Asked;
use super::held::Holds;
use super::host::HostLog;
use super::measure::Measured;
use super::steps::{ReadStep, Step, Steps};
use crate::results::decide::DataCopy;

/// What a saved decision was asked, and how far it got.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// Version of kvlab that measured.
    pub kvlab_version: String,
    /// The ask: the workload and servers (passwords masked), the load as
    /// stated.
    pub ask: Asked,
    /// The copy measured.
    pub scaled: DataCopy,
    /// The steps finished, in order.
    pub finished: Vec<String>,
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
    /// Why its measurements did not hold, when they did not: `--resume`
    /// measures it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unheld: Option<String>,
    measured: T,
}

/// The steps of one decision under its directory.
pub struct Store<'a> {
    dir: PathBuf,
    shutdown: &'a AtomicBool,
    manifest: Manifest,
    /// Resuming: reuse what matches.
    resume: bool,
    /// A step that did not hold was measured again: every later step is
    /// too (each depends on those before it).
    redo: bool,
    /// The steps the host was busy in, said.
    busy: Vec<(&'static str, String)>,
}

fn step_path(dir: &Path, step: Step) -> PathBuf {
    dir.join("steps")
        .join(format!("{:02}-{}.json", step.index() + 1, step.file()))
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

/// `value` written to `path` whole (kvlab's one JSON write).
fn write<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    crate::results::write_json_atomic(value, path)
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
        ask: &Asked,
        copy: &DataCopy,
        (resume, shutdown): (bool, &'a AtomicBool),
    ) -> Result<Store<'a>> {
        let steps = dir.join("steps");
        if resume {
            resumable(dir)?;
        }
        if !resume {
            for &step in Step::ALL {
                let _ = std::fs::remove_file(step_path(dir, step));
            }
        }
        std::fs::create_dir_all(&steps).with_context(|| steps.display().to_string())?;
        // Resuming, the steps finished before stay listed until each is
        // reused or measured again: a Ctrl-C before then loses none.
        let before: Vec<String> = match resume {
            true => read::<Manifest>(&dir.join("manifest.json"))
                .map(|m| m.finished)
                .unwrap_or_default(),
            false => Vec::new(),
        };
        let mut store = Store {
            dir: dir.to_path_buf(),
            shutdown,
            manifest: Manifest {
                kvlab_version: env!("CARGO_PKG_VERSION").into(),
                ask: ask.clone(),
                scaled: copy.clone(),
                finished: Vec::new(),
            },
            resume,
            redo: false,
            busy: Vec::new(),
        };
        // Those saved for the plan they have now (a step of other flags is
        // measured again).
        store.manifest.finished = before
            .into_iter()
            .filter(|f| {
                Step::ALL
                    .iter()
                    .any(|&s| s.file() == f && store.reusable::<Value>(s).is_some())
            })
            .collect();
        store.save_manifest()?;
        Ok(store)
    }

    fn save_manifest(&self) -> Result<()> {
        write(&self.dir.join("manifest.json"), &self.manifest)
    }

    /// Whether every step is there to reuse (no server needed).
    pub fn complete(&self) -> bool {
        self.resume
            && Step::ALL
                .iter()
                .all(|&s| self.reusable::<Value>(s).is_some())
    }

    /// `step` as saved, if resuming, saved for the plan it has now, its
    /// measurements held, and no step before it measured again for not
    /// holding.
    fn reusable<T: DeserializeOwned>(&self, step: Step) -> Option<StepFile<T>> {
        let f: StepFile<T> = read(&step_path(&self.dir, step))
            .ok()
            .filter(|_| self.resume && !self.redo)?;
        (f.plan == step.plan_key(&self.manifest.ask) && f.unheld.is_none()).then_some(f)
    }

    /// The steps the host was busy in, said.
    pub fn busy(&self) -> Vec<(&'static str, String)> {
        self.busy.clone()
    }

    /// `step`: reused (resuming, the same plan) or run by `run` and saved.
    /// Stopped (Ctrl-C) during it: nothing saved, and an error naming it and
    /// the steps before it.
    pub fn step<T: Serialize + DeserializeOwned + Holds>(
        &mut self,
        step: Step,
        host: &mut HostLog,
        say: &mut dyn FnMut(&str),
        run: impl FnOnce(&mut dyn FnMut(&str)) -> Result<T>,
    ) -> Result<T> {
        let name = step.said();
        if let Some(f) = self.reusable::<T>(step) {
            say(&format!(
                "kvlab decide: {name}: reused, as measured before ({})\n",
                step_path(&self.dir, step).display()
            ));
            host.skip();
            if let Some(b) = f.host_busy {
                self.busy.push((step.file(), b));
            }
            return self.finished(step, f.measured);
        }
        self.said_again(step, say);
        let measured = match run(say) {
            Ok(m) if !self.shutdown.load(Ordering::SeqCst) => m,
            Ok(_) => bail!(self.cut(step)),
            Err(e) if self.shutdown.load(Ordering::SeqCst) => {
                return Err(e.context(self.cut(step)));
            }
            Err(e) if step.index() > 0 => {
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
            self.busy.push((step.file(), line.clone()));
        }
        let contended = host_busy.as_deref().filter(|b| super::host::contended(b));
        let unheld = measured.unheld(&self.manifest.ask, contended);
        let file = StepFile {
            step: name.into(),
            plan: step.plan_key(&self.manifest.ask),
            host_busy,
            unheld: unheld.as_ref().map(|u| u.said()),
            measured,
        };
        write(&step_path(&self.dir, step), &file)?;
        if let Some(u) = unheld {
            return Err(crate::error::NotMeasured(format!(
                "{name} could not be measured: {}; no decision is made from it ({}). What held is saved in {}: kvlab decide --resume {} measures it again, and the steps after it",
                u.why,
                u.fix,
                self.dir.display(),
                self.dir.display()
            ))
            .into());
        }
        self.finished(step, file.measured)
    }

    /// Resuming, why `step` is measured again where it was saved.
    fn said_again(&mut self, step: Step, say: &mut dyn FnMut(&str)) {
        let name = step.said();
        let Some(f) = read::<StepFile<Value>>(&step_path(&self.dir, step))
            .ok()
            .filter(|_| self.resume)
        else {
            return;
        };
        let why = match (&f.unheld, self.redo) {
            (Some(u), _) => {
                self.redo = true;
                format!("its measurements did not hold ({u})")
            }
            (None, true) => "a step before it was measured again".into(),
            (None, false) => "saved for another plan (other flags)".into(),
        };
        say(&format!("kvlab decide: {name}: {why}: measured again\n"));
    }

    /// `step` cut short by Ctrl-C, in words: which, what finished, how to
    /// go on.
    fn cut(&self, step: Step) -> String {
        let finished = match step.index() {
            0 => "none".to_string(),
            n => Step::ALL[..n]
                .iter()
                .map(|s| s.said())
                .collect::<Vec<_>>()
                .join(", "),
        };
        format!(
            "stopped (Ctrl-C) during the runs of {}; finished: {finished}; no decision from runs cut short; the finished steps are saved in {}: kvlab decide --resume {} with the same flags measures the rest",
            step.said(),
            self.dir.display(),
            self.dir.display()
        )
    }

    fn finished<T>(&mut self, step: Step, t: T) -> Result<T> {
        let name = step.file().to_string();
        self.manifest.finished.retain(|f| *f != name);
        self.manifest.finished.push(name);
        self.save_manifest()?;
        Ok(t)
    }
}

/// A saved decision under `dir`, read back: what was asked and what the
/// steps measured. An unfinished one is refused, naming the steps missing.
pub fn load(dir: &Path) -> Result<(Asked, Measured)> {
    load_for(dir, "--from")
}

/// [`load`] for the flag `flag` (`--from`, `--check`), which its errors name.
pub fn load_for(dir: &Path, flag: &str) -> Result<(Asked, Measured)> {
    let manifest: Manifest = read(&dir.join("manifest.json")).map_err(|e| {
        anyhow!(
            "{flag}: {} holds no saved decision ({e:#}); give the --out of an earlier kvlab decide",
            dir.display()
        )
    })?;
    let missing: Vec<&str> = Step::ALL
        .iter()
        .filter(|&&s| !step_path(dir, s).exists())
        .map(|s| s.said())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{flag}: the decision saved in {} is unfinished (missing: {}); measure the rest with kvlab decide --resume {} and the flags it was started with",
            dir.display(),
            missing.join(", "),
            dir.display()
        );
    }
    let mut saved = Saved {
        dir,
        busy: Vec::new(),
    };
    let steps = Steps::read(&mut saved)?;
    // A copy saved before its bytes per key were written: as its load gives them.
    let per_key =
        super::copy::key_bytes(manifest.ask.load.value_size, &manifest.ask.assumed.method);
    let copy = manifest.scaled.settled(per_key);
    let measured = steps.measured(&manifest.ask.load, copy, saved.busy);
    Ok((manifest.ask, measured))
}

/// The steps saved under `dir` as they are read back, and the host's notes
/// saved beside them.
struct Saved<'a> {
    dir: &'a Path,
    busy: Vec<(&'static str, String)>,
}

impl ReadStep for Saved<'_> {
    fn read<T: DeserializeOwned>(&mut self, step: Step) -> Result<T> {
        let f: StepFile<T> = read(&step_path(self.dir, step))?;
        self.busy.extend(f.host_busy.map(|b| (step.file(), b)));
        Ok(f.measured)
    }
}
