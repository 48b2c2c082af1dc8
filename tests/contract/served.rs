//! A server started by `kvlab serve` (kvlab's own managed-server code, in the
//! binary a user runs): its endpoint as the URL it prints says, the pids it
//! names, and Ctrl-C, after which none of them may be left.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use kvlab::plan::{Endpoint, Secret, TargetKind, TargetSpec};

use crate::common::alive;

/// A running `kvlab serve`.
pub struct Served {
    pub kind: TargetKind,
    child: Child,
    stderr: BufReader<ChildStderr>,
    /// Where its server listens, with the credentials and CA a client needs.
    pub endpoint: Endpoint,
    /// The server's processes, as `kvlab serve` names them.
    pub pids: Vec<u32>,
}

impl Served {
    /// Starts `kvlab serve --target KIND --server-opt K=V…`; `password`: the
    /// one the options set (the printed URL hides it).
    pub fn start(kind: TargetKind, opts: &[(&str, &str)], password: Option<&str>) -> Served {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvlab"));
        cmd.args(["serve", "--target", kind.name()]);
        for (k, v) in opts {
            cmd.args(["--server-opt", &format!("{k}={v}")]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kvlab serve starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        let mut said = String::new();
        let mut ca = None;
        let pids: Vec<u32> = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("{kind:?}: kvlab serve ended before its server was up:\n{url}{said}");
            }
            said.push_str(&line);
            if let Some(rest) = line.split("--tls-ca ").nth(1) {
                ca = rest.split(' ').next().map(std::path::PathBuf::from);
            }
            if line.contains("Ctrl-C stops it") {
                let list = line.split("(pid ").nth(1).unwrap().split(')').next();
                break list
                    .unwrap()
                    .split(' ')
                    .map(|p| p.parse().unwrap())
                    .collect();
            }
        };
        // A password the test set is shown masked: the URL as given back.
        let given = match password {
            Some(pw) => url.trim().replacen(":***@", &format!(":{pw}@"), 1),
            None => url.trim().to_string(),
        };
        let t: TargetSpec = given.parse().unwrap_or_else(|e| panic!("{url}: {e}"));
        let mut endpoint = t.external.expect("an external endpoint");
        if let Some(pw) = password {
            endpoint.password = Some(Secret(pw.into()));
        }
        if let Some(ca) = ca {
            endpoint.tls.get_or_insert_with(Default::default).ca = Some(ca);
        }
        assert!(!pids.is_empty() && pids.iter().all(|p| alive(*p)), "{said}");
        Served {
            kind,
            child,
            stderr,
            endpoint,
            pids,
        }
    }

    /// Ctrl-C: `kvlab serve` ends on its own, within seconds, and none of
    /// the server's processes is left.
    pub fn interrupt(mut self) {
        let started = Instant::now();
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{:?}: kvlab serve still running 30 s after Ctrl-C",
                self.kind
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        assert!(status.success(), "{:?}: {status}: {rest}", self.kind);
        assert!(rest.contains("kvlab: stopped"), "{:?}: {rest}", self.kind);
        for pid in &self.pids {
            assert!(!alive(*pid), "{:?}: server {pid} left running", self.kind);
        }
    }
}

impl Drop for Served {
    /// A failed check still stops the server.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
            let _ = self.child.wait();
        }
    }
}
