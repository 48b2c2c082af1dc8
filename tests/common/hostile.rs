//! A hostile proxy for the tests of replies no server should send
//! (`tests/hostile.rs`, and CQL in the contract's Cassandra checks): on a free
//! loopback port in front of a real server it forwards faithfully, then, at
//! set-up (its first byte) or mid-run (after a while), misbehaves. `kvlab run`
//! through it must exit non-zero within its timeout plus a few seconds, with
//! a one-line error, no panic, and its peak RSS under 128 MiB. One act breaks
//! no protocol ([`flood_pushes`]): it answers every request right and floods
//! a tracking connection with valid invalidations between its replies; the
//! run must still end on time.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kvlab::plan::{Endpoint, TargetKind};

/// What the proxy does once its trigger time has come.
#[derive(Clone, Copy, Debug)]
enum Act {
    /// Bytes that are no reply of the protocol, then faithful again.
    Garbage,
    /// Half of the next reply, then the connection closed.
    CloseMidFrame,
    /// Half of the next reply, its other half never sent, then faithful
    /// again: a truncated frame the following replies run into.
    Truncate,
    /// A frame header declaring a huge length, then silence.
    HugeLength,
    /// A frame header declaring a huge length, then bytes without end.
    Endless,
    /// Nothing for longer than kvlab's timeout (at set-up, its login's
    /// 10 s), then the replies.
    Late,
    /// The last reply sent again: the right reply to the wrong request, and
    /// every later one a reply to the request before its own (out of order).
    Repeat,
    /// Every reply faithfully, and between them, on a connection that turned
    /// RESP3 client tracking on, valid invalidation pushes without end (for
    /// [`FLOOD_FOR`]): no protocol broken, only more than a client can read.
    FloodPushes,
}

/// How long [`Act::FloodPushes`] floods a connection: far past the end of a
/// run that looks at its clock while it reads.
const FLOOD_FOR: Duration = Duration::from_secs(30);

const ACTS: [Act; 7] = [
    Act::Garbage,
    Act::CloseMidFrame,
    Act::Truncate,
    Act::HugeLength,
    Act::Endless,
    Act::Late,
    Act::Repeat,
];

/// Acts run side by side (each in both phases) in [`every_act`] against
/// `kind`: a cache's runs each under a key prefix of their own; a
/// database's share kvlab's one table, so one act at a time there.
fn acts_at_once(kind: TargetKind) -> usize {
    if is_cache(kind) { ACTS.len() } else { 1 }
}

/// A cache here (each run under a key prefix of its own, nothing loaded
/// into a table); else a database, whose runs share kvlab's one table.
pub fn is_cache(kind: TargetKind) -> bool {
    matches!(kind, TargetKind::Redis | TargetKind::Memcached)
}

/// How long after a database's table is loaded a mid-run act begins: past
/// its set-up and the run's warm-up (0.5 s) on a slow host, within its 5 s.
const MID_RUN: Duration = Duration::from_millis(2500);

/// The measured window of these runs, seconds.
const RUN_S: f64 = 5.0;

/// kvlab's `--timeout` in these runs, seconds.
const TIMEOUT_S: u64 = 1;

/// A frame header of `kind`'s protocol (in query mode `mode`) declaring a
/// reply of 2 GiB.
fn huge_header(kind: TargetKind, mode: Option<&str>) -> &'static [u8] {
    match kind {
        TargetKind::Memcached if mode == Some("meta") => b"VA 2147483647 v\r\n",
        TargetKind::Memcached => b"VALUE kvlab:1 0 2147483647\r\n",
        TargetKind::Postgres => b"D\x7f\xff\xff\xff",
        TargetKind::Mariadb => b"\xff\xff\xff\x01",
        TargetKind::Tarantool => b"\xce\x7f\xff\xff\xff",
        // v4 RESULT on stream 0.
        TargetKind::Cassandra => b"\x84\x00\x00\x00\x08\x7f\xff\xff\xff",
        _ => b"$2147483647\r\n",
    }
}

/// When a proxy's act begins: unset until the moment is known (a
/// database's run under way after its load).
type ActAt = Arc<std::sync::OnceLock<Instant>>;

/// A proxy to `upstream` that does `act` from `at` on.
struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    fn start(upstream: SocketAddr, act: Act, at: ActAt, header: &'static [u8]) -> Hostile {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let setup = at.get().is_some_and(|t| *t <= Instant::now());
        std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(upstream) else {
                            continue;
                        };
                        let flag = Arc::clone(&flag);
                        let late = match setup {
                            true => Duration::from_secs(12),
                            false => Duration::from_secs(TIMEOUT_S + 1),
                        };
                        let at = Arc::clone(&at);
                        std::thread::spawn(move || match act {
                            Act::FloodPushes => flood(client, server, &at, &flag),
                            _ => relay(client, server, (act, late), &at, header, &flag),
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Hostile { port, stop }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Client to server faithfully (in a thread of its own); server to client
/// faithfully until `at`, then as `act` says.
fn relay(
    client: TcpStream,
    mut server: TcpStream,
    (act, late): (Act, Duration),
    at: &ActAt,
    header: &'static [u8],
    stop: &AtomicBool,
) {
    let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = c_in.read(&mut buf) {
            if n == 0 || s_out.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = s_out.shutdown(Shutdown::Both);
    });
    let mut client = client;
    let mut buf = vec![0u8; 16384];
    let mut last: Vec<u8> = Vec::new();
    let mut done = false;
    while let Ok(n) = server.read(&mut buf) {
        if n == 0 || stop.load(Ordering::SeqCst) {
            break;
        }
        let chunk = &buf[..n];
        if done || at.get().is_none_or(|t| Instant::now() < *t) {
            if client.write_all(chunk).is_err() {
                break;
            }
            last = chunk.to_vec();
            continue;
        }
        done = true;
        let ok = match act {
            Act::Garbage => client
                .write_all(b"\x00\x9fgarbage that no protocol frames \xff\xfe\r\n")
                .and_then(|()| client.write_all(chunk)),
            Act::CloseMidFrame => {
                let _ = client.write_all(&chunk[..n.div_ceil(2)]);
                let _ = client.shutdown(Shutdown::Both);
                break;
            }
            Act::Truncate => client.write_all(&chunk[..n.div_ceil(2)]),
            Act::HugeLength => {
                let _ = client.write_all(header);
                // Silence, the connection open, until kvlab gives up on it.
                while server.read(&mut buf).is_ok_and(|n| n > 0) && !stop.load(Ordering::SeqCst) {}
                break;
            }
            Act::Endless => {
                let _ = client.write_all(header);
                let junk = vec![b'x'; 65536];
                while client.write_all(&junk).is_ok() && !stop.load(Ordering::SeqCst) {}
                break;
            }
            Act::Late => {
                std::thread::sleep(late);
                client.write_all(chunk)
            }
            Act::Repeat => client
                .write_all(if last.is_empty() { chunk } else { &last })
                .and_then(|()| client.write_all(chunk)),
            Act::FloodPushes => unreachable!("relayed by `flood`"),
        };
        if ok.is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
}

/// [`Act::FloodPushes`]: client to server faithfully, noting whether the
/// client turned tracking on; server to client whole RESP frames only, so
/// that from `at` a thread of its own can put invalidations between them.
fn flood(client: TcpStream, mut server: TcpStream, at: &ActAt, stop: &Arc<AtomicBool>) {
    let at = *at.get().expect("a flood's moment is set at its start");
    let tracking = Arc::new(AtomicBool::new(false));
    let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let heard = Arc::clone(&tracking);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = c_in.read(&mut buf) {
            if n == 0 || s_out.write_all(&buf[..n]).is_err() {
                break;
            }
            if buf[..n].windows(8).any(|w| w == b"TRACKING") {
                heard.store(true, Ordering::SeqCst);
            }
        }
        let _ = s_out.shutdown(Shutdown::Both);
    });
    let out = Arc::new(Mutex::new(client));
    let (pushes, flag) = (Arc::clone(&out), Arc::clone(stop));
    std::thread::spawn(move || {
        // Valid invalidations of the run's keys, 8,000 (about 256 KiB) to a
        // write: more than the client reads between two of its reads.
        let batch: Vec<u8> = (0..8000)
            .flat_map(|i| {
                let key = format!("kvlab:{i}");
                format!(
                    ">2\r\n$10\r\ninvalidate\r\n*1\r\n${}\r\n{key}\r\n",
                    key.len()
                )
                .into_bytes()
            })
            .collect();
        while Instant::now() < at && !flag.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        while Instant::now() < at + FLOOD_FOR && !flag.load(Ordering::SeqCst) {
            if !tracking.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            } else if pushes.lock().unwrap().write_all(&batch).is_err() {
                break;
            } else {
                // The replies get their turn between batches.
                std::thread::yield_now();
            }
        }
    });
    let (mut buf, mut pending) = (vec![0u8; 16384], Vec::new());
    while let Ok(n) = server.read(&mut buf) {
        if n == 0 || stop.load(Ordering::SeqCst) {
            break;
        }
        pending.extend_from_slice(&buf[..n]);
        let mut whole = 0;
        while let Some(len) = resp_len(&pending[whole..]) {
            whole += len;
        }
        if whole > 0 && out.lock().unwrap().write_all(&pending[..whole]).is_err() {
            break;
        }
        pending.drain(..whole);
    }
    let _ = out.lock().unwrap().shutdown(Shutdown::Both);
}

/// The length of the whole RESP2/RESP3 frame at the front of `b`, once it
/// is all there.
fn resp_len(b: &[u8]) -> Option<usize> {
    let eol = b.windows(2).position(|w| w == b"\r\n")? + 2;
    let n = || -> Option<i64> { std::str::from_utf8(&b[1..eol - 2]).ok()?.parse().ok() };
    match b[0] {
        b'$' | b'!' | b'=' => match n()? {
            ..0 => Some(eol),
            n => Some(eol + n as usize + 2).filter(|&end| end <= b.len()),
        },
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let pairs = if matches!(b[0], b'%' | b'|') { 2 } else { 1 };
            let mut at = eol;
            for _ in 0..n()?.max(0) * pairs {
                at += resp_len(&b[at..])?;
            }
            Some(at)
        }
        _ => Some(eol),
    }
}

/// `kind`'s URL through the proxy on `port`, with `e`'s credentials and
/// database, in plain TCP (the proxy garbles bytes, not TLS records).
fn url_via(e: &Endpoint, kind: TargetKind, port: u16) -> String {
    let auth = match (&e.user, &e.password) {
        (Some(u), Some(p)) => format!("{u}:{}@", p.expose()),
        (Some(u), None) => format!("{u}@"),
        _ => String::new(),
    };
    let db = e
        .database
        .as_ref()
        .map(|d| format!("/{d}"))
        .unwrap_or_default();
    format!(
        "{}://{auth}127.0.0.1:{port}{db}",
        e.scheme_for(kind.product())
    )
}

/// What one run through a hostile proxy did.
struct Outcome {
    ok: bool,
    secs: f64,
    /// Seconds from kvlab's "loaded" (or "reusing") line to its exit, where
    /// it said one: the run's own time, however long a busy host took to
    /// load the table.
    since_loaded: Option<f64>,
    stderr: String,
    peak_rss_kb: i64,
}

// The child is reaped by `wait4` (for its peak RSS), which clippy cannot see.
#[allow(clippy::zombie_processes)]
/// `kvlab run` through the proxy at `url`; where `on_loaded` is given, its
/// act begins its delay after kvlab says its table is loaded or reused (the
/// run under way, however slow the host).
fn run_through(url: &str, args: &[&str], on_loaded: Option<(&ActAt, Duration)>) -> Outcome {
    let t0 = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_kvlab"))
        .args(["run", "--target", url, "--duration", &RUN_S.to_string()])
        .args(["--warmup", "0.5"])
        .args(["--keys", "2000", "--connections", "2", "--threads", "1"])
        .args(["--timeout", &TIMEOUT_S.to_string(), "--ratio", "1:4"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let err = child.stderr.unwrap();
    let on_loaded = on_loaded.map(|(at, after)| (Arc::clone(at), after));
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let (mut s, mut loaded) = (String::new(), None);
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if line.starts_with("kvlab: loaded ") || line.starts_with("kvlab: reusing ") {
                loaded = Some(Instant::now());
                if let Some((at, after)) = &on_loaded {
                    let _ = at.set(Instant::now() + *after);
                }
            }
            s.push_str(&line);
            s.push('\n');
        }
        (s, loaded)
    });
    let (mut status, mut ru): (libc::c_int, libc::rusage) = (0, unsafe { std::mem::zeroed() });
    // SAFETY: waits for our own child and fills the two values we pass.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    let (stderr, loaded) = reader.join().unwrap();
    Outcome {
        ok: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        secs: t0.elapsed().as_secs_f64(),
        since_loaded: loaded.map(|l| l.elapsed().as_secs_f64()),
        stderr,
        peak_rss_kb: ru.ru_maxrss,
    }
}

/// A 5-second run with a near cache invalidated as `invalidation` says
/// (`tracking`, `bcast`), through a proxy to the Redis at `e` that answers
/// right and, after 1.5 s, floods the tracking connections with valid
/// invalidations: the run must end within its warm-up, duration and timeout
/// plus `margin_s`, without a panic, having heard at least 100,000 of them
/// (the flood reached it). Returns how long it took, the invalidations it
/// heard and its stderr.
pub fn flood_pushes(e: &Endpoint, invalidation: &str, margin_s: f64) -> (f64, u64, String) {
    let upstream: SocketAddr = format!("127.0.0.1:{}", e.port).parse().unwrap();
    let at = Arc::new(std::sync::OnceLock::from(
        Instant::now() + Duration::from_millis(1500),
    ));
    let proxy = Hostile::start(upstream, Act::FloodPushes, at, b"");
    let url = url_via(e, TargetKind::Redis, proxy.port);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("flood.json");
    let args = [
        "--near-cache",
        "100",
        "--near-invalidation",
        invalidation,
        "--json",
        json.to_str().unwrap(),
    ];
    let o = run_through(&url, &args, None);
    drop(proxy);
    let what = format!("a flood of invalidations ({invalidation})");
    assert!(
        !o.stderr.contains("panicked") && !o.stderr.contains("RUST_BACKTRACE"),
        "{what}: panicked\n{}",
        o.stderr
    );
    let limit = 0.5 + RUN_S + TIMEOUT_S as f64 + margin_s;
    assert!(
        o.secs <= limit,
        "{what}: took {:.1} s, over {limit} s\n{}",
        o.secs,
        o.stderr
    );
    // The result is written before its validity is checked.
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let heard = v["near_cache"]["invalidation_messages"]
        .as_u64()
        .unwrap_or(0);
    assert!(heard >= 100_000, "{what}: heard {heard}\n{}", o.stderr);
    (o.secs, heard, o.stderr)
}

/// Every act against `kind`'s servers at `es` (plain TCP on loopback), at
/// set-up and mid-run; panics naming every case that failed. A database's
/// acts share its one kvlab table, so one act at a time on each of `es`.
pub fn every_act(kind: TargetKind, es: &[Endpoint]) {
    every_act_in(kind, es, None);
}

/// [`every_act`] with `--query-mode mode` (a protocol of its own, such as
/// memcached's meta protocol).
pub fn every_act_in(kind: TargetKind, es: &[Endpoint], mode: Option<&str>) {
    let args: Vec<&str> = mode.map(|m| vec!["--query-mode", m]).unwrap_or_default();
    let upstream = |i: usize| -> (SocketAddr, &Endpoint) {
        let e = &es[i % es.len()];
        (format!("127.0.0.1:{}", e.port).parse().unwrap(), e)
    };
    let mut failures = Vec::new();
    // The two phases of an act, each through its own proxy.
    let phases = [
        ("set-up", Duration::ZERO),
        ("mid-run", Duration::from_secs(3)),
    ];
    // Every act and phase side by side, a few acts at a time: a run mostly
    // waits (on a reply, a timeout, a login), and its limits (25 s, one
    // line, 128 MiB) leave room for a shared core.
    let cases: Vec<(Act, (&str, Duration))> = ACTS
        .iter()
        .flat_map(|&act| phases.iter().map(move |&p| (act, p)))
        .collect();
    let mut outcomes: Vec<Outcome> = Vec::new();
    for (g, group) in cases.chunks(2 * acts_at_once(kind) * es.len()).enumerate() {
        outcomes.extend(std::thread::scope(|sc| {
            let runs: Vec<_> = group
                .iter()
                .enumerate()
                .map(|(i, &(act, (_, after)))| {
                    let args = &args;
                    sc.spawn(move || {
                        let prefix = format!("kvlab:h{g}-{i}:");
                        let mut args = args.clone();
                        if is_cache(kind) {
                            args.extend(["--key-prefix", prefix.as_str()]);
                        }
                        // Both phases of an act on one server.
                        let (upstream, e) = upstream(i / 2);
                        // At set-up at once; mid-run a while into the run: for
                        // a database, after kvlab says its table is loaded.
                        let at: ActAt = Arc::default();
                        let loads = !is_cache(kind);
                        if after.is_zero() || !loads {
                            let _ = at.set(Instant::now() + after);
                        }
                        let on_loaded = (loads && !after.is_zero()).then_some((&at, MID_RUN));
                        let proxy =
                            Hostile::start(upstream, act, Arc::clone(&at), huge_header(kind, mode));
                        let o = run_through(&url_via(e, kind, proxy.port), &args, on_loaded);
                        drop(proxy);
                        o
                    })
                })
                .collect::<Vec<_>>();
            runs.into_iter()
                .map(|r| r.join().unwrap())
                .collect::<Vec<_>>()
        }));
    }
    for ((act, (phase, after)), o) in cases.into_iter().zip(outcomes) {
        let last = o
            .stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let what = format!(
            "{kind:?} {}{act:?} {phase}",
            mode.map(|m| format!("{m} ")).unwrap_or_default()
        );
        // Set-up may wait for a login (10 s) or a reply (the timeout);
        // a run its 5.5 s, a drain and the timeout.
        if o.ok {
            failures.push(format!("{what}: exited 0\n{}", o.stderr));
        } else if o.stderr.contains("panicked") || o.stderr.contains("RUST_BACKTRACE") {
            failures.push(format!("{what}: panicked\n{}", o.stderr));
        } else if !last.starts_with("Error: ") || last.len() > 600 {
            failures.push(format!(
                "{what}: no one-line error at the end\n{}",
                o.stderr
            ));
        } else if o.since_loaded.unwrap_or(o.secs) > 25.0 {
            // Past its table's load where it said one: a busy host took 25.4 s
            // in all, most of it loading Cassandra's.
            failures.push(format!("{what}: took {:.1} s\n{last}", o.secs));
        } else if matches!(act, Act::HugeLength) && !after.is_zero() && !last.contains("protocol") {
            // A length no reply of the run can have is an error at
            // once, not a wait for the timeout.
            failures.push(format!("{what}: not a protocol error\n{last}"));
        } else if o.peak_rss_kb > 128 * 1024 {
            failures.push(format!("{what}: peak RSS {} KiB", o.peak_rss_kb));
        }
        eprintln!("{what}: {:.1} s, {} KiB: {last}", o.secs, o.peak_rss_kb);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
