//! The machine a run or study is measured on, read from /proc and /sys: the
//! description results embed ([`Machine`]).

use crate::results::study::Machine;
use crate::system::procfs;

/// Reads this machine's description from /proc and /sys.
pub fn this() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let memory_mib = procfs::meminfo("MemTotal").map_or(0, |b| b >> 20);
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_mib,
        kernel: read("/proc/sys/kernel/osrelease"),
        host: read("/proc/sys/kernel/hostname"),
        governor: Some(read(
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
        ))
        .filter(|g| !g.is_empty()),
        // "always [madvise] never": the bracketed one is in use.
        thp: read("/sys/kernel/mm/transparent_hugepage/enabled")
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[')?.strip_suffix(']').map(String::from)),
        llc_kib: last_level_cache_kib(),
    }
}

/// The size of CPU 0's highest-level cache, KiB (`None` where sysfs lacks it).
fn last_level_cache_kib() -> Option<u64> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let level: u32 = read(e.path().join("level"))?.trim().parse().ok()?;
            let size = read(e.path().join("size"))?;
            let kib: u64 = size.trim().trim_end_matches('K').parse().ok()?;
            Some((level, kib))
        })
        .max()
        .map(|(_, kib)| kib)
}
