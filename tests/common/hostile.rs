//! A hostile proxy for the tests of replies no server should send
//! (`tests/hostile.rs`, and CQL in the contract's Cassandra checks): on a free
//! loopback port in front of a real server it forwards faithfully, then, at
//! set-up (its first byte) or mid-run (after a while), misbehaves. `kvlab run`
//! through it must exit non-zero within its timeout plus a few seconds, with
//! a one-line error, no panic, and its peak RSS under 128 MiB.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
}

const ACTS: [Act; 7] = [
    Act::Garbage,
    Act::CloseMidFrame,
    Act::Truncate,
    Act::HugeLength,
    Act::Endless,
    Act::Late,
    Act::Repeat,
];

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

/// A proxy to `upstream` that does `act` from `after` on.
struct Hostile {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Hostile {
    fn start(upstream: SocketAddr, act: Act, after: Duration, header: &'static [u8]) -> Hostile {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let at = Instant::now() + after;
        std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(upstream) else {
                            continue;
                        };
                        let flag = Arc::clone(&flag);
                        let late = match after.is_zero() {
                            true => Duration::from_secs(12),
                            false => Duration::from_secs(TIMEOUT_S + 1),
                        };
                        std::thread::spawn(move || {
                            relay(client, server, (act, late), at, header, &flag)
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
    at: Instant,
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
        if done || Instant::now() < at {
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
        };
        if ok.is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
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
    stderr: String,
    peak_rss_kb: i64,
}

// The child is reaped by `wait4` (for its peak RSS), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run_through(url: &str, args: &[&str]) -> Outcome {
    let t0 = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_kvlab"))
        .args(["run", "--target", url, "--duration", "3", "--warmup", "0.5"])
        .args(["--keys", "2000", "--connections", "2", "--threads", "1"])
        .args(["--timeout", &TIMEOUT_S.to_string(), "--ratio", "1:4"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut err = child.stderr.unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let (mut status, mut ru): (libc::c_int, libc::rusage) = (0, unsafe { std::mem::zeroed() });
    // SAFETY: waits for our own child and fills the two values we pass.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    Outcome {
        ok: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        secs: t0.elapsed().as_secs_f64(),
        stderr: reader.join().unwrap(),
        peak_rss_kb: ru.ru_maxrss,
    }
}

/// Every act against `kind`'s server at `e` (plain TCP on loopback), at
/// set-up and mid-run; panics naming every case that failed.
pub fn every_act(kind: TargetKind, e: &Endpoint) {
    every_act_in(kind, e, None);
}

/// [`every_act`] with `--query-mode mode` (a protocol of its own, such as
/// memcached's meta protocol).
pub fn every_act_in(kind: TargetKind, e: &Endpoint, mode: Option<&str>) {
    let args: Vec<&str> = mode.map(|m| vec!["--query-mode", m]).unwrap_or_default();
    let upstream: SocketAddr = format!("127.0.0.1:{}", e.port).parse().unwrap();
    let mut failures = Vec::new();
    for act in ACTS {
        for (phase, after) in [
            ("set-up", Duration::ZERO),
            ("mid-run", Duration::from_secs(3)),
        ] {
            let proxy = Hostile::start(upstream, act, after, huge_header(kind, mode));
            let o = run_through(&url_via(e, kind, proxy.port), &args);
            drop(proxy);
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
            // a run its 3.5 s, a drain and the timeout.
            if o.ok {
                failures.push(format!("{what}: exited 0\n{}", o.stderr));
            } else if o.stderr.contains("panicked") || o.stderr.contains("RUST_BACKTRACE") {
                failures.push(format!("{what}: panicked\n{}", o.stderr));
            } else if !last.starts_with("Error: ") || last.len() > 600 {
                failures.push(format!(
                    "{what}: no one-line error at the end\n{}",
                    o.stderr
                ));
            } else if o.secs > 25.0 {
                failures.push(format!("{what}: took {:.1} s\n{last}", o.secs));
            } else if matches!(act, Act::HugeLength)
                && !after.is_zero()
                && !last.contains("protocol")
            {
                // A length no reply of the run can have is an error at
                // once, not a wait for the timeout.
                failures.push(format!("{what}: not a protocol error\n{last}"));
            } else if o.peak_rss_kb > 128 * 1024 {
                failures.push(format!("{what}: peak RSS {} KiB", o.peak_rss_kb));
            }
            eprintln!("{what}: {:.1} s, {} KiB: {last}", o.secs, o.peak_rss_kb);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
