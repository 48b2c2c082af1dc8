//! Helpers shared by the integration tests: plans, in-process runs, raw commands.
#![allow(dead_code)]

pub mod decisions;
pub mod hostile;
pub mod lru;
pub mod prometheus;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use assert_cmd::Command;

use kvlab::plan::{
    Endpoint, KeyDistribution, LoadShape, Ratio, RunPlan, Stop, TargetKind, TargetSpec, Workload,
};
use kvlab::results::RunResult;
use kvlab::runner::{RunOptions, run};
use kvlab::servers::ManagedServer;

// Not every test binary runs a decision.
#[allow(unused_imports)]
pub use decisions::{QUICK_DECIDE, SMALL_DECISION, decide_quick, resumed, said_not_measured};

/// A small, fast plan against an external endpoint (a server the test started).
pub fn plan(kind: TargetKind, endpoint: Endpoint) -> RunPlan {
    RunPlan {
        near: None,
        shared: Default::default(),
        cache: None,
        target: TargetSpec {
            kind,
            external: Some(endpoint),
            server_opts: BTreeMap::new(),
            schema: Default::default(),
            consistency: None,
            query_mode: None,
            pooler: None,
            pooler_opts: Default::default(),
            read_replicas: Vec::new(),
            read_from: None,
        },
        workload: Workload {
            keys: 2_000,
            value_size: 100,
            value_sizes: None,
            ratio: Ratio { set: 0, get: 1 },
            distribution: KeyDistribution::Uniform,
            key_prefix: "kvlab:".into(),
            load: true,
            seed: 7,
            background_writes: None,
            ttl_s: 0,
            profile: None,
            batch: None,
            trace: None,
        },
        load: LoadShape {
            connections: 4,
            threads: 2,
            pipeline: 4,
            stop: Stop::Requests(20_000),
            warmup_s: 0.2,
            rate: None,
            timeout_s: 5.0,
            shard: None,
            start_at_ms: None,
            events: Vec::new(),
            timeline_seconds: kvlab::plan::TIMELINE_SECONDS,
            arrivals: kvlab::workload::Arrivals::Poisson,
            rate_shape: Default::default(),
            send_slack: Default::default(),
            conn_life: None,
            hot_keys: None,
            rtt: None,
            cache_rtt: None,
            io: Default::default(),
        },
    }
}

/// The I/O interfaces the engine's tests run under: epoll, and io_uring
/// where this kernel allows it (else said once on stderr).
pub fn transports() -> Vec<kvlab::plan::io::IoChoice> {
    use kvlab::plan::io::IoChoice;
    match kvlab::engine::reactor::uring_refused() {
        None => vec![IoChoice::Epoll, IoChoice::Uring],
        Some(why) => {
            eprintln!("io_uring refused here ({why}): the engine's tests run over epoll only");
            vec![IoChoice::Epoll]
        }
    }
}

/// The run went over the interface `io` asked for.
pub fn ran_over(r: &RunResult, io: kvlab::plan::io::IoChoice) {
    let want = match io {
        kvlab::plan::io::IoChoice::Epoll => "epoll",
        _ => "io_uring",
    };
    assert_eq!(r.client.client_io.as_deref(), Some(want), "{io:?}");
}

/// Starts a managed server of `kind` with no options.
pub fn server(kind: TargetKind) -> ManagedServer {
    ManagedServer::start(
        kind,
        &BTreeMap::new(),
        kvlab::driver::Sizing {
            data_bytes: 64 << 20,
            connections: 100,
        },
    )
    .expect("managed server starts")
}

/// Runs `plan` in-process, quietly.
pub fn measure(plan: &RunPlan) -> RunResult {
    let stop = AtomicBool::new(false);
    run(plan, RunOptions::default(), &stop).expect("run succeeds")
}

/// Runs `plan` in-process, quietly, and fails unless it ends within `limit`.
pub fn measure_within(plan: &RunPlan, limit: Duration) -> RunResult {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = plan.clone();
    std::thread::spawn(move || {
        let _ = tx.send(measure(&p));
    });
    let started = std::time::Instant::now();
    let r = match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the run did not end within {limit:?}")
        }
        Err(e) => panic!("the run failed: {e}"),
    };
    eprintln!("the run ended in {:?}", started.elapsed());
    r
}

/// Sends raw bytes and reads until `done(reply)` (blocking, 5 s timeout).
pub fn raw(port: u16, req: &[u8], done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    while !done(&buf) {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
    buf
}

/// Whether a process with this pid still exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// Starts a managed server of `kind` with `opts`, sized for `connections`.
pub fn server_with(kind: TargetKind, opts: &[(&str, &str)], connections: usize) -> ManagedServer {
    let opts: BTreeMap<String, String> = opts
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let sizing = kvlab::driver::Sizing {
        data_bytes: 64 << 20,
        connections,
    };
    ManagedServer::start(kind, &opts, sizing).expect("managed server starts")
}

/// Runs `plan` in-process and returns the error it fails with.
pub fn measure_err(plan: &RunPlan) -> String {
    let stop = AtomicBool::new(false);
    match run(plan, RunOptions::default(), &stop) {
        Ok(_) => panic!("run should fail"),
        Err(e) => format!("{e:#}"),
    }
}

/// Runs a 2 s load against the managed `server` as an external target and
/// checks that the CPU it reports of itself agrees with /proc within 5%.
pub fn cpu_sources_agree(kind: TargetKind, server: &ManagedServer) {
    let c = kvlab::driver::Connector::new(kind, &server.endpoint()).unwrap();
    let mut p = plan(kind, server.endpoint());
    p.load.stop = Stop::Duration(2.0);
    p.load.pipeline = 1;
    p.load.connections = 8;
    let _ = measure(&p); // loads the keys, so the next run reads hits
    p.workload.load = false;
    let (proc0, rep0) = (server.usage().unwrap(), c.reported_usage().unwrap());
    let r = measure(&p);
    let (proc1, rep1) = (server.usage().unwrap(), c.reported_usage().unwrap());
    let (by_proc, by_report) = (proc1.cpu_s - proc0.cpu_s, rep1.cpu_s - rep0.cpu_s);
    assert!(by_proc > 0.3, "{kind:?}: the server worked ({by_proc} s)");
    let diff = (by_report - by_proc).abs() / by_proc;
    assert!(
        diff < 0.05,
        "{kind:?}: /proc {by_proc:.3} s vs its own report {by_report:.3} s"
    );
    // The run against it, as a server kvlab did not start, used the report.
    assert!(r.server.server_cpu_s.is_some_and(|s| s > 0.0), "{kind:?}");
    assert!(rep1.memory_bytes.is_some_and(|b| b > 0), "{kind:?}");
    // Its peak RSS is the largest resident memory it reported, near what
    // /proc saw; a server that reports no resident memory has none (not 0).
    let report = kind.product().facts().usage_report.unwrap();
    let peak = r.server.server_peak_rss_kb;
    let u = &r.server.servers[0];
    match report.resident {
        true => {
            let (peak, hwm) = (peak.expect("a peak RSS"), proc1.peak_rss_kb);
            assert!(
                peak > 0 && peak <= 2 * hwm && 4 * peak >= hwm,
                "{kind:?}: {peak} KiB reported, {hwm} KiB by /proc"
            );
            assert_eq!(u.rss_source.as_deref(), report.memory);
        }
        false => assert_eq!((peak, u.rss_source.as_deref()), (None, None), "{kind:?}"),
    }
    assert_eq!(u.cpu_source.as_deref(), Some(report.cpu), "{kind:?}");
    let text = kvlab::report::summary::summary(&r);
    assert!(
        text.contains(&format!("as the server reports it ({})", report.cpu)),
        "{text}"
    );
}

/// Starts `kind` with `opts` (e.g. `tls=on`, `socket=on`), runs a load
/// against it as a server kvlab did not start, with its endpoint changed by
/// `edit` (e.g. a URL's options), and checks the counts agree with the
/// server's own, nothing failed, and the result says how it was reached.
/// Returns the result.
pub fn transport_counts_agree(
    kind: TargetKind,
    opts: &[(&str, &str)],
    edit: impl FnOnce(&mut Endpoint, &ManagedServer),
) -> RunResult {
    let s = server_with(kind, opts, 20);
    let mut ep = s.endpoint();
    edit(&mut ep, &s);
    let mut p = plan(kind, ep);
    p.workload.ratio = Ratio { set: 1, get: 3 };
    p.load.pipeline = 8;
    let r = measure(&p);
    assert_eq!(
        r.totals.errors, 0,
        "{kind:?} {opts:?}: {:?}",
        r.totals.errors_by_kind
    );
    assert_eq!(r.totals.misses, 0);
    assert_eq!(r.totals.requests, 20_000);
    assert!(r.valid, "{:?}", r.problems);
    let check = r.server_counters.as_ref().expect("the server's counters");
    assert!(check.agrees(), "{kind:?} {opts:?}: {check:?}");
    let t = r.target.transport.clone().expect("transport recorded");
    let tls = opts.contains(&("tls", "on"));
    assert_eq!(t.tls.is_some(), tls, "{t:?}");
    if let Some(info) = &t.tls {
        assert!(info.version.starts_with("TLS 1."), "{info:?}");
        assert!(!info.cipher.is_empty() && info.cipher != "?", "{info:?}");
    }
    let unix = opts.contains(&("socket", "on"));
    assert_eq!(t.socket, if unix { "unix" } else { "tcp" }, "{t:?}");
    r
}

/// The kvlab binary as a command.
pub fn kvlab() -> Command {
    Command::cargo_bin("kvlab").unwrap()
}

/// Runs kvlab with `args`, expects failure, returns stderr.
pub fn fails(args: &[&str]) -> String {
    let out = kvlab()
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("RUST_BACKTRACE"), "{err}");
    err
}

/// The head of a study file: its name and description, and each point's
/// measured window and warm-up, in seconds.
pub fn study_head(name: &str, description: &str, duration: f64, warmup: f64) -> String {
    format!(
        "name = \"{name}\"\ndescription = \"{description}\"\nduration = {duration}\nwarmup = {warmup}\n"
    )
}

/// A study's `[[target]]` of a cache-aside run, `name`: `cache` in front of a
/// managed postgres, with `more` keys (`key = value`, a line each).
pub fn aside_target(name: &str, cache: &str, more: &[&str]) -> String {
    let head =
        format!("[[target]]\nname = \"{name}\"\ntarget = \"postgres\"\ncache = \"{cache}\"\n");
    more.iter().fold(head, |t, line| t + line + "\n")
}

/// Runs kvlab with each of `cases`, a command line (split at spaces; `''` is
/// an empty argument) and what its error must say: each fails, saying it in
/// one line.
pub fn each_fails_in_one_line(cases: &[(&str, &str)]) {
    for (line, says) in cases {
        let args: Vec<&str> = line
            .split(' ')
            .map(|a| if a == "''" { "" } else { a })
            .collect();
        let err = fails(&args);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// Runs `p` with `--requests 1000000` against a server whose pid is `pid`,
/// killed 1.5 s in, so every reconnection is refused: the run must end on its
/// own (connections are given up after 8 failed attempts in a row), within
/// 90 s, with the failures counted and the shortfall said.
pub fn ends_when_its_server_is_killed(p: &mut RunPlan, pid: u32) {
    const N: u64 = 1_000_000;
    p.load.warmup_s = 0.0;
    p.load.timeout_s = 1.0;
    p.load.stop = Stop::Requests(N);
    let pid = pid as libc::pid_t;
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let r = measure_within(p, Duration::from_secs(90));
    killer.join().unwrap();
    assert!(r.connections.failures > 0, "{:?}", r.connections);
    assert!(
        r.totals.requests < N && r.totals.requests > 0,
        "{}",
        r.totals.requests
    );
    let said = format!("of the {N} requests asked for");
    assert!(
        r.problems.iter().any(|m| m.contains(&said)),
        "{:?}",
        r.problems
    );
}

/// A small plan of `kind` against a server the run starts itself (its
/// endpoint is never dialled).
pub fn managed_plan(kind: TargetKind) -> RunPlan {
    let nowhere = Endpoint {
        host: "127.0.0.1".into(),
        port: 1,
        user: None,
        password: None,
        database: None,
        socket: None,
        tls: None,
    };
    let mut p = plan(kind, nowhere);
    p.target = kind.name().parse().unwrap();
    p
}

/// Fails unless the command that gave `out` succeeded (showing its stderr).
pub fn succeeds(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `kvlab run` that gave `out` succeeded, or failed only because the
/// rate it offered was not sustained (a busy host's outcome; it still wrote
/// its results and cleaned up): for tests of what a run leaves behind, not
/// of the rate it carried.
pub fn ran(out: &std::process::Output) {
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success()
            || said.contains("Error: the run is not a valid measurement: not sustained"),
        "{said}"
    );
}

/// Runs kvlab with `args`, expects failure, and checks that the error says
/// each of `says`; returns stderr.
pub fn fails_saying(args: &[&str], says: &[&str]) -> String {
    let e = fails(args);
    assert!(says.iter().all(|s| e.contains(s)), "{says:?}: {e}");
    e
}

/// Runs `plan` in-process and checks that it caught wrong values and is
/// therefore not a valid measurement.
pub fn catches_wrong_values(plan: &RunPlan) -> RunResult {
    let r = measure(plan);
    assert!(
        r.totals.errors_by_kind["wrong_value"] > 0,
        "{:?}",
        r.totals.errors_by_kind
    );
    assert!(!r.valid);
    r
}

/// Sends process `pid` each of `steps` (a wait in ms since the previous
/// step, then a signal) from a thread; join it after the run.
pub fn signals(pid: u32, steps: &[(u64, libc::c_int)]) -> std::thread::JoinHandle<()> {
    let (pid, steps) = (pid as libc::pid_t, steps.to_vec());
    std::thread::spawn(move || {
        for (ms, signal) in steps {
            std::thread::sleep(Duration::from_millis(ms));
            unsafe { libc::kill(pid, signal) };
        }
    })
}

/// Kills the Redis at `port` (pid `pid`) once it has processed `commands`
/// commands (its `INFO stats`): mid-run on a host of any speed, never while
/// a run's connections are still opening. Gives up after 60 s.
pub fn kill_when_redis_has_served(
    port: u16,
    pid: u32,
    commands: u64,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < until {
            let info = raw(port, b"INFO stats\r\n", |b| {
                std::str::from_utf8(b).is_ok_and(|s| s.ends_with("\r\n\r\n") || s.starts_with('-'))
            });
            let served = String::from_utf8_lossy(&info)
                .lines()
                .find_map(|l| {
                    l.strip_prefix("total_commands_processed:")?
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .unwrap_or(0);
            if served >= commands {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    })
}

/// A valid run with reads and writes, every one answered: no errors, no misses.
pub fn every_request_clean(r: &RunResult) {
    assert!(r.valid, "{:?}", r.problems);
    assert_eq!(
        (r.totals.errors, r.totals.misses),
        (0, 0),
        "{:?}",
        r.totals.errors_by_kind
    );
    assert!(r.totals.hits > 0 && r.totals.sets > 0);
}

/// Runs kvlab with `args`, sends it SIGINT (Ctrl-C) once a line of its
/// stdout satisfies `when`, and waits: what it said on stdout (all of it:
/// the reading goes on after the signal, so a line printed after it never
/// meets a closed pipe), and its exit code and stderr.
pub fn interrupted_when(
    args: &[&str],
    when: impl Fn(&str) -> bool,
) -> (String, Option<i32>, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kvlab"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = String::new();
    for line in rx.iter() {
        said.push_str(&line);
        said.push('\n');
        if when(&line) {
            break;
        }
    }
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    reader.join().unwrap();
    said.extend(rx.try_iter().map(|l| l + "\n"));
    (
        said,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kvlab serve --target KIND`: the child and the URL it printed.
pub fn serve(kind: &str) -> (std::process::Child, String) {
    serve_with(kind, &[])
}

/// [`serve`] with more of `kvlab serve`'s flags (e.g. `--server-opt K=V`).
pub fn serve_with(kind: &str, more: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kvlab"))
        .args(["serve", "--target", kind])
        .args(more)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("://"), "{kind}: {line}");
    (child, line.trim().to_string())
}

/// Ctrl-C to a `kvlab serve`, which stops the server it started.
pub fn stop(mut child: std::process::Child) {
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let _ = child.wait();
}

/// Why the host was busy during the run `r` (other processes' cores or
/// steal, as `kvlab compare` judges it), noted on the test's stderr; `None`
/// where it was not.
pub fn host_busy(r: &RunResult) -> Option<String> {
    let busy = r
        .host
        .host_load
        .as_ref()
        .and_then(kvlab::results::host_load::busy_by_kvlab);
    if let Some(why) = &busy {
        eprintln!("the host was busy during this run: {why}");
    }
    busy
}

/// `f`'s value, and why the host was busy while it ran (other processes
/// than this test and what it started took cores, or CPU was stolen, as
/// `kvlab compare` judges it), said on stderr; `None` where it was not.
pub fn busy_while<T>(f: impl FnOnce() -> T) -> (T, Option<String>) {
    let before = kvlab::system::host_load::sample();
    let value = f();
    let busy = before
        .zip(kvlab::system::host_load::sample())
        .and_then(|(a, b)| {
            kvlab::results::host_load::busy_by_kvlab(&kvlab::system::host_load::between(&a, &b))
        });
    if let Some(why) = &busy {
        eprintln!("the host was busy: {why}");
    }
    (value, busy)
}

/// The run `r` is a valid measurement, or its only problem is a rate not
/// sustained on a host other processes kept busy (said by the run): the
/// outcome a rate test asserts where the host could not carry it.
pub fn valid_unless_host_busy(r: &RunResult) {
    if r.valid {
        return;
    }
    let unsustained = r.problems.iter().all(|p| p.starts_with("not sustained"));
    assert!(
        unsustained && host_busy(r).is_some(),
        "{:?} (host: {:?})",
        r.problems,
        r.host.host_load
    );
}

/// Held, shared or alone, by the tests of one binary whose figures another
/// test's load beside them would move (on 2 cores, a decision's capacity
/// search, a load whose rate or hit ratio a test checks, a cluster's
/// failover).
static HOST: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The host to this test alone among those that take [`HOST`], even after
/// one that held it failed.
pub fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    HOST.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A share of the host beside other tests that share it, never beside one
/// that has it [`alone`].
pub fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    HOST.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
