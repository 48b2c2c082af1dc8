//! CPU and memory of server processes from /proc: one process, or a process
//! tree (servers that run one process per connection), exactly enough that a
//! thousand short-lived backends still add up.

use serde::{Deserialize, Serialize};

/// CPU and memory a process used, from /proc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcUsage {
    /// User plus system CPU seconds so far.
    pub cpu_s: f64,
    /// Peak resident set size so far, in KiB.
    pub peak_rss_kb: u64,
}

struct Stat {
    ticks: u64,
    child_ticks: u64,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name: utime, stime, cutime, cstime
    // are fields 14 to 17 of the whole line.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse().ok())
        .collect();
    (f.len() == 4).then(|| Stat {
        ticks: f[0] + f[1],
        child_ticks: f[2] + f[3],
    })
}

fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn clock_hz() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// CPU seconds (user + system) and peak RSS of process `pid`, from /proc.
/// The CPU is the exact on-CPU time of its threads (schedstat, ns) where the
/// kernel keeps it: clock ticks would round a short run's 50 ms to 10 ms steps.
pub fn proc_usage(pid: u32) -> Option<ProcUsage> {
    let st = read_stat(pid)?;
    Some(ProcUsage {
        cpu_s: exact_cpu_s(pid, &st),
        peak_rss_kb: status_kb(pid, "VmHWM:"),
    })
}

/// CPU seconds of process `pid` itself (not its children): the exact on-CPU
/// time of its live threads, never less than its clock ticks `st` (a thread
/// that exited is in those only).
fn exact_cpu_s(pid: u32, st: &Stat) -> f64 {
    let ticks_s = st.ticks as f64 / clock_hz();
    threads_ns(pid).map_or(ticks_s, |ns| (ns / 1e9).max(ticks_s))
}

/// On-CPU nanoseconds of every live thread of `pid` (Linux schedstat), summed.
fn threads_ns(pid: u32) -> Option<f64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum = 0.0;
    for task in dir.flatten() {
        let s = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        sum += s.split_whitespace().next()?.parse::<f64>().ok()?;
    }
    Some(sum)
}

/// CPU seconds of `pid`, its reaped children and its live children, and the
/// memory of the tree now: private memory of every process plus the largest
/// shared segment once (shared buffers are mapped by every backend).
pub fn proc_tree_usage(pid: u32) -> Option<ProcUsage> {
    proc_tree_usage_inner(pid)
}

/// Process ids whose parent is `pid` (a scan of /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s[s.rfind(')')? + 2..]
                        .split_whitespace()
                        .nth(1)?
                        .parse::<u32>()
                        .ok()
                })
                == Some(pid)
        })
        .collect()
}

fn proc_tree_usage_inner(pid: u32) -> Option<ProcUsage> {
    // Live processes by their exact on-CPU time (schedstat, ns): /proc's clock
    // ticks truncate each process to 10 ms, and a thousand backends each doing a
    // millisecond of work would add up to nothing. Exited children arrive in the
    // parent's reaped-children time, rounded once.
    let root = read_stat(pid)?;
    let mut cpu_s = exact_cpu_s(pid, &root) + root.child_ticks as f64 / clock_hz();
    let mut private = status_kb(pid, "RssAnon:") + status_kb(pid, "RssFile:");
    let mut shared = status_kb(pid, "RssShmem:");
    // Every process whose parent is `pid`, from /proc itself: the kernel's
    // `children` file can miss entries while a thousand backends come and go.
    for child in children_of(pid) {
        if let Some(st) = read_stat(child) {
            cpu_s += exact_cpu_s(child, &st) + st.child_ticks as f64 / clock_hz();
            // Program text (RssFile) is shared by every backend: counted once, above.
            private += status_kb(child, "RssAnon:");
            shared = shared.max(status_kb(child, "RssShmem:"));
        }
    }
    Some(ProcUsage {
        cpu_s,
        peak_rss_kb: private + shared,
    })
}

/// A field of `/proc/meminfo` (`MemTotal`, `MemAvailable`, …), bytes.
pub fn meminfo(field: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb << 10)
}

/// Bytes free to an unprivileged user on the file system holding `dir`.
pub fn disk_free(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a struct statvfs fills.
    match unsafe { libc::statvfs(path.as_ptr(), &mut st) } {
        0 => Some(st.f_bavail as u64 * st.f_frsize as u64),
        _ => None,
    }
}

/// CPU seconds (user + system) of this whole process so far.
pub fn self_cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Peak resident memory of this process, KiB.
pub fn self_peak_rss_kb() -> u64 {
    // SAFETY: as above.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss.max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_usage() {
        let u = proc_usage(std::process::id()).unwrap();
        assert!(u.peak_rss_kb > 0);
    }

    #[test]
    fn a_process_cpu_is_exact_not_in_clock_ticks() {
        // A single-threaded child kept busy: its threads' exact time, which
        // agrees with its clock ticks to within two.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150));
        let ticks = read_stat(child.id()).unwrap().ticks as f64 / clock_hz();
        let exact = proc_usage(child.id()).unwrap().cpu_s;
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(exact > 0.005, "{exact}");
        // Within the ticks' truncation and the running thread's share not
        // yet added to its schedstat (a tick each).
        assert!(
            exact >= ticks && exact - ticks < 0.021,
            "{exact} against {ticks}"
        );
        let ns = threads_ns(std::process::id()).unwrap();
        assert!(ns % 10e6 != 0.0, "{ns} ns is whole ticks");
    }
}
