//! Initialised data directories kept between starts: a database's
//! `initdb` (or `mariadb-install-db`) runs once per installed tool and
//! system user into a cache outside the repository
//! (`$KVLAB_CACHE_DIR`, else `${XDG_CACHE_HOME:-$HOME/.cache}/kvlab`, under
//! `data-templates/`), and each managed start copies it (`cp -a`, owners
//! and modes kept). A template being made by another kvlab beside is never
//! read half-written: it is made aside and renamed into place.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};

/// The cache's root, where a home or `KVLAB_CACHE_DIR` says (`None`: no
/// cache; every start initialises its own).
fn root() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let base = var("KVLAB_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| var("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("kvlab")))
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache/kvlab")))?;
    Some(base.join("data-templates"))
}

/// The template's name for `what` made by `tool` (its path, size and
/// modification time: another installed version makes another) as `user`.
fn key(what: &str, tool: &Path, user: Option<&str>) -> String {
    let meta = std::fs::metadata(tool).ok();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    tool.hash(&mut h);
    meta.as_ref().map(|m| m.len()).hash(&mut h);
    meta.and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .hash(&mut h);
    user.hash(&mut h);
    format!("{what}-{:016x}", h.finish())
}

/// `cp -a FROM/. TO` (`to` made where missing): the tree with its owners and
/// modes.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| to.display().to_string())?;
    let out = Command::new("cp")
        .arg("-a")
        .arg(from.join("."))
        .arg(to)
        .output()
        .context("cannot run cp")?;
    if !out.status.success() {
        bail!(
            "cp -a {} {}: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// `data` initialised as `init` does it, `what` by `tool` as `user`: from
/// the template in the cache where there is one, else by `init`, whose
/// result becomes the template. The cache is an aid: where it cannot be
/// read or written, `init` runs as without it.
pub fn initialised(
    (what, tool, user): (&str, &Path, Option<&str>),
    data: &Path,
    init: impl Fn(&Path) -> Result<()>,
) -> Result<()> {
    initialised_in(root(), (what, tool, user), data, init)
}

/// [`initialised`] with the cache at `root`.
fn initialised_in(
    root: Option<PathBuf>,
    (what, tool, user): (&str, &Path, Option<&str>),
    data: &Path,
    init: impl Fn(&Path) -> Result<()>,
) -> Result<()> {
    let Some(root) = root else {
        return init(data);
    };
    let template = root.join(key(what, tool, user));
    if template.is_dir() {
        if copy_tree(&template, data).is_ok() {
            return Ok(());
        }
        // A template that cannot be copied: made again below.
        let _ = std::fs::remove_dir_all(data);
    }
    init(data)?;
    // Kept for the next start: made aside (a directory of its own, as
    // servers start side by side), then renamed into place; one made beside
    // first stays.
    let Ok(aside) = std::fs::create_dir_all(&root).and_then(|()| {
        tempfile::Builder::new()
            .prefix(".making-")
            .tempdir_in(&root)
    }) else {
        return Ok(());
    };
    if copy_tree(data, aside.path()).is_ok() {
        let _ = std::fs::rename(aside.path(), &template);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_directory_is_initialised_once_then_copied() {
        let cache = tempfile::tempdir().unwrap();
        let runs = tempfile::tempdir().unwrap();
        let tool = runs.path().join("initdb");
        std::fs::write(&tool, "v1").unwrap();
        let inits = Cell::new(0);
        let init = |d: &Path| {
            inits.set(inits.get() + 1);
            std::fs::create_dir_all(d.join("base"))?;
            Ok(std::fs::write(d.join("PG_VERSION"), "15")?)
        };
        let root = Some(cache.path().to_path_buf());
        for i in 0..3 {
            let data = runs.path().join(format!("data{i}"));
            initialised_in(root.clone(), ("pg", &tool, Some("postgres")), &data, init).unwrap();
            assert_eq!(
                std::fs::read_to_string(data.join("PG_VERSION")).unwrap(),
                "15"
            );
            assert!(data.join("base").is_dir());
        }
        assert_eq!(inits.get(), 1);
        // Another user, or another installed tool, makes its own.
        let data = runs.path().join("other");
        initialised_in(root.clone(), ("pg", &tool, None), &data, init).unwrap();
        assert_eq!(inits.get(), 2);
        std::fs::write(&tool, "version 2").unwrap();
        initialised_in(root, ("pg", &tool, None), &runs.path().join("v2"), init).unwrap();
        assert_eq!(inits.get(), 3);
        // No cache: every start initialises.
        initialised_in(None, ("pg", &tool, None), &runs.path().join("n"), init).unwrap();
        assert_eq!(inits.get(), 4);
    }
}
