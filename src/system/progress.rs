//! What a person sees while kvlab works: the live progress line (only on a
//! terminal), and notes on stderr, both switched by [`RunOptions`].

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Options of a run that do not change what is measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Show progress on a terminal.
    pub progress: bool,
    /// Print notes (server started, loading...) on stderr.
    pub notes: bool,
}

/// Prints a note on stderr when notes are on.
pub fn note(opts: RunOptions, msg: String) {
    if opts.notes {
        eprintln!("{msg}");
    }
}

/// A progress display that does nothing unless stdout is a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A spinner line for a phase called `what`; hidden when stdout is not a terminal.
    pub fn spinner(what: &str, show: bool) -> Progress {
        if !show || !std::io::stdout().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix} {elapsed:>4} {msg}")
                .expect("valid template"),
        );
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// A bar counting to `total` items (e.g. keys loaded).
    pub fn counter(what: &str, total: u64, show: bool) -> Progress {
        if !show || !std::io::stdout().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        Progress { bar: Some(bar) }
    }

    /// Replaces the message.
    pub fn message(&self, msg: String) {
        if let Some(b) = &self.bar {
            b.set_message(msg);
        }
    }

    /// Advances a counter.
    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    /// Removes the line.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Makes a closed standard output (`kvlab study --dry-run | head`) end the
/// process quietly: the write's panic still unwinds, so every server kvlab
/// started is stopped on the way out, but no panic message is printed.
pub fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let text = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !text.contains("Broken pipe") {
            default(info);
        }
    }));
}
