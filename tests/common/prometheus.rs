//! Debian's `prometheus`, started for a test on a free loopback port in a
//! temporary directory with a scrape config the test writes (every second),
//! queried through its HTTP API, and stopped by its pid on drop.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use kvlab::system::process::{free_port, spawn_owned, stop_child};

/// A Prometheus server of this test's own.
pub struct Prometheus {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts one scraping `targets` (`HOST:PORT`) every second; waits until
    /// it is ready.
    pub fn start(targets: &[String]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port().unwrap();
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: kvlab\n    static_configs:\n      - targets: [{}]\n",
                list.join(", ")
            ),
        )
        .unwrap();
        let bin = std::path::Path::new("prometheus");
        let mut cmd = Command::new(bin);
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn");
        let log = dir.path().join("prometheus.log");
        let child = spawn_owned(&mut cmd, dir.path(), &log, bin)
            .expect("prometheus starts (make deps installs Debian's package)");
        let p = Prometheus { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !p.get("/-/ready").starts_with("HTTP/1.0 200")
            && !p.get("/-/ready").starts_with("HTTP/1.1 200")
        {
            assert!(
                Instant::now() < deadline,
                "prometheus not ready: {}",
                std::fs::read_to_string(p.dir.path().join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The raw HTTP response to `GET path` (empty when it cannot connect).
    fn get(&self, path: &str) -> String {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return String::new();
        };
        let _ = s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes());
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// The instant query `q`'s first value now, if it has one.
    pub fn query(&self, q: &str) -> Option<f64> {
        let enc: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
        let res = self.get(&format!("/api/v1/query?query={enc}"));
        let body = res.split_once("\r\n\r\n")?.1;
        let v: serde_json::Value = serde_json::from_str(body).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }

    /// Polls `q` until `ok` holds of its value or `within` passes; the last
    /// value seen.
    pub fn wait_for(&self, q: &str, within: Duration, ok: impl Fn(f64) -> bool) -> Option<f64> {
        let deadline = Instant::now() + within;
        let mut last = None;
        while Instant::now() < deadline {
            last = self.query(q).or(last);
            if last.is_some_and(&ok) {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        last
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        stop_child(&mut self.child);
    }
}
