//! The host's load over a span (a run, a decision's step), read from /proc:
//! its busy and stolen CPU ticks, the CPU of kvlab and every process it
//! started, and the load average; [`between`] two readings is a
//! [`HostLoad`], which says whether the span was busy.

use std::collections::HashMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The host's load over a span, as read here (kept in a run's result).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// Cores kept busy by processes other than kvlab and those it started.
    pub others_cores: f64,
    /// The share of the host's CPU stolen (by a VM's hypervisor).
    pub steal_share: f64,
    /// The 1-minute load average at its start.
    pub load_avg: f64,
    /// The host's cores.
    pub cores: f64,
    /// Seconds it spans.
    pub seconds: f64,
}

impl HostLoad {
    /// Why it was busy: other work took CPU past `limits` (other processes'
    /// cores, the steal share), with the load average beside where it was
    /// past the cores; `None` where it was not. A load average alone says
    /// nothing: it counts kvlab's own threads and its servers' too.
    pub fn busy(&self, (others, steal): (f64, f64)) -> Option<String> {
        let mut why = Vec::new();
        if self.others_cores > others {
            why.push(format!(
                "other processes used {:.2} cores",
                self.others_cores
            ));
        }
        if self.steal_share > steal {
            why.push(format!(
                "{:.0}% of the CPU was stolen",
                self.steal_share * 100.0
            ));
        }
        if !why.is_empty() && self.load_avg > self.cores + 0.5 {
            why.push(format!(
                "the load average was {:.1} on {:.0} cores",
                self.load_avg, self.cores
            ));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
}

/// One reading of the host.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    at: Instant,
    /// Host CPU ticks busy (all but idle and iowait), and stolen.
    busy: u64,
    steal: u64,
    total: u64,
    /// Ticks of kvlab and every process it started.
    ours: u64,
    /// The 1-minute load average.
    load: f64,
}

/// A reading of /proc, `None` where it cannot be read.
pub fn sample() -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let (busy, steal, total) = cpu_line(stat.lines().next()?)?;
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(Sample {
        at: Instant::now(),
        busy,
        steal,
        total,
        ours: tree_ticks(std::process::id()),
        load,
    })
}

/// The host's load from `a` to `b`.
pub fn between(a: &Sample, b: &Sample) -> HostLoad {
    let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-3);
    // SAFETY: sysconf has no preconditions.
    let ticks = (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64;
    let others = (b.busy.saturating_sub(a.busy) as f64 - b.ours.saturating_sub(a.ours) as f64)
        .max(0.0)
        / ticks
        / secs;
    let steal =
        b.steal.saturating_sub(a.steal) as f64 / b.total.saturating_sub(a.total).max(1) as f64;
    HostLoad {
        others_cores: others,
        steal_share: steal,
        load_avg: a.load,
        cores: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
        seconds: secs,
    }
}

/// (busy, steal, total) ticks of the `cpu` line of /proc/stat.
fn cpu_line(line: &str) -> Option<(u64, u64, u64)> {
    let mut f = line.split_whitespace();
    (f.next()? == "cpu").then_some(())?;
    let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest counted in user)
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    let steal = v.get(7).copied().unwrap_or(0);
    Some((total.saturating_sub(idle + steal), steal, total))
}

/// CPU ticks of `root` and every living process under it, each with its
/// reaped children's (a server stopped in a step counts in its parent's).
fn tree_ticks(root: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut procs: HashMap<u32, (u32, u64)> = HashMap::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(p) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| stat_fields(&s))
        {
            procs.insert(pid, p);
        }
    }
    procs
        .iter()
        .filter(|(pid, _)| {
            let mut p = **pid;
            for _ in 0..64 {
                if p == root {
                    return true;
                }
                match procs.get(&p) {
                    Some(&(parent, _)) if parent != p => p = parent,
                    _ => return false,
                }
            }
            false
        })
        .map(|(_, &(_, t))| t)
        .sum()
}

/// (parent pid, utime + stime + cutime + cstime) of a /proc/PID/stat line.
fn stat_fields(s: &str) -> Option<(u32, u64)> {
    // The command is in parentheses and may hold spaces: fields follow the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ppid = f.get(1)?.parse().ok()?;
    let ticks = (11..15)
        .map(|i| f.get(i)?.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some((ppid, ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_lines_are_read_as_the_kernel_writes_them() {
        let (busy, steal, total) = cpu_line("cpu  100 5 50 800 20 1 2 30 0 0").expect("a cpu line");
        assert_eq!((busy, steal, total), (158, 30, 1008));
        assert_eq!(cpu_line("cpu0 1 2 3 4"), None);
        let stat =
            "4242 (kvlab worker (x)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 75 5 10 20 0 8 0 1";
        assert_eq!(stat_fields(stat), Some((17, 340)));
    }

    #[test]
    fn kvlab_counts_its_own_cpu_as_its_own() {
        let t0 = tree_ticks(std::process::id());
        let until = Instant::now() + std::time::Duration::from_millis(300);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(tree_ticks(std::process::id()) > t0);
    }
}
