//! Live metrics (`--metrics ADDR`): an HTTP endpoint in the OpenMetrics text
//! format that Prometheus scrapes while kvlab runs. The engine's ticks (one
//! per worker per second) feed running totals and the HDR histograms; the
//! hot path is untouched. One endpoint per process, for its whole life (a
//! study's every point, a capacity search's every step): the command line
//! starts it and [`install`]s it, and each run looks it up with
//! [`installed`] (the endpoint is a port of the process, so one handle per
//! process, never a registry of counters: nothing on the hot path sees it).
//!
//! - `series.rs`: the running totals per label set.
//! - `expose.rs`: those totals as OpenMetrics text, and the list of metrics.

pub mod expose;
pub mod series;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

pub use expose::METRICS;
pub use series::PointLabels;

use crate::engine::{Beat, Tick};
use crate::system::ProcUsage;
use crate::workload::RateShape;
use series::State;

static ENDPOINT: OnceLock<Exporter> = OnceLock::new();

/// Makes `ex` the endpoint every later run of this process reports to, for
/// as long as the process lives (one a process: where one was installed
/// before, `ex` is dropped and that one stays).
pub fn install(ex: Exporter) -> &'static Exporter {
    ENDPOINT.get_or_init(|| ex)
}

/// The endpoint runs report to, if one was installed.
pub fn installed() -> Option<&'static Exporter> {
    ENDPOINT.get()
}

/// What `--metrics` and its companions ask for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsConfig {
    /// `HOST:PORT` to listen on (`:PORT`: every interface; port 0: any free one).
    pub addr: String,
    /// The `run` label (the same on every client of a sharded run).
    pub run: String,
    /// The `shard` label: this client's index (`0` when not sharded).
    pub shard: String,
    /// How long to keep serving after the work ends, so the last scrape
    /// sees the final figures.
    pub hold: Duration,
}

/// The endpoint: started once, alive until the process ends.
pub struct Exporter {
    state: Arc<Mutex<State>>,
    addr: SocketAddr,
    hold: Duration,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Exporter {
    /// Listens on `cfg.addr` and serves `/metrics` from a thread of its own.
    /// [`install`] keeps it for the process's life: every run of the
    /// process feeds it.
    pub fn start(cfg: &MetricsConfig) -> Result<Exporter> {
        let addr = parse_addr(&cfg.addr)?;
        let server = tiny_http::Server::http(addr).map_err(|e| {
            anyhow!(
                "--metrics {}: cannot listen there ({e}); give a free HOST:PORT (port 0 picks one)",
                cfg.addr
            )
        })?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| anyhow!("--metrics {}: not an IP address", cfg.addr))?;
        let state = Arc::new(Mutex::new(State {
            run: cfg.run.clone(),
            shard: cfg.shard.clone(),
            point: "run".into(),
            series: Vec::new(),
            client_cpu_s: crate::system::procfs::self_cpu_s,
        }));
        let shared = Arc::clone(&state);
        std::thread::Builder::new()
            .name("kvlab-metrics".into())
            .spawn(move || serve(&server, &shared))
            .map_err(|e| anyhow!("cannot start the metrics thread: {e}"))?;
        Ok(Exporter {
            state,
            addr,
            hold: cfg.hold,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Names the point the next runs belong to (a study point, a capacity step).
    pub fn set_point(&self, point: &str) {
        lock(&self.state).point = point.to_string();
    }

    /// A run of `target` (`product`) begins: its feed, in the series of the
    /// point named last; `offered`: a paced run's peak rate and how it moves
    /// (the offered gauge follows it second by second).
    pub fn begin(&self, target: &str, product: &str, offered: Option<(f64, RateShape)>) -> Feed {
        let mut st = lock(&self.state);
        let point = st.point.clone();
        let index = st.series_for(PointLabels {
            target: target.to_string(),
            product: product.to_string(),
            point,
        });
        let s = &mut st.series[index];
        s.running = true;
        s.offered_rps = offered.map(|(peak, shape)| peak * shape.factor(0.0));
        Feed {
            state: Arc::clone(&self.state),
            index,
            offered,
        }
    }

    /// Keeps serving for the hold (`--metrics-hold`) so that the last scrape
    /// sees the final figures; Ctrl-C ends the wait.
    pub fn hold(&self, shutdown: &AtomicBool) {
        if self.hold.is_zero() {
            return;
        }
        eprintln!(
            "kvlab: serving the final metrics at http://{}/metrics for {:.0?} more (--metrics-hold)",
            self.addr, self.hold
        );
        let end = Instant::now() + self.hold;
        while Instant::now() < end && !shutdown.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One run's link to its series: told each tick, second and usage sample.
pub struct Feed {
    state: Arc<Mutex<State>>,
    index: usize,
    offered: Option<(f64, RateShape)>,
}

impl Feed {
    /// A worker's second.
    pub fn tick(&self, tick: &Tick) {
        lock(&self.state).series[self.index].add(tick);
    }

    /// A complete second, as the progress line sees it, and the rate the
    /// schedule offered in it.
    pub fn beat(&self, beat: &Beat) {
        let s = &mut lock(&self.state).series[self.index];
        s.achieved_rps = beat.requests as f64;
        if let Some((peak, shape)) = self.offered {
            let at = beat.second as f64;
            s.offered_rps = Some(peak * shape.mean(at, at + 1.0));
        }
    }

    /// Connections opened so far.
    pub fn connections(&self, n: usize) {
        lock(&self.state).series[self.index].connections = n as u64;
    }

    /// A managed process's use now (`role`: server, cache, pooler).
    pub fn usage(&self, role: &'static str, u: ProcUsage) {
        lock(&self.state).series[self.index].usage(role, u);
    }

    /// What a server kvlab did not start reports of itself now.
    pub fn reported(&self, cpu_s: f64, memory_bytes: Option<u64>) {
        lock(&self.state).series[self.index].set_server(
            "reported",
            cpu_s,
            memory_bytes.unwrap_or(0),
        );
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        lock(&self.state).series[self.index].running = false;
    }
}

/// `HOST:PORT`, or `:PORT` for every interface.
fn parse_addr(s: &str) -> Result<SocketAddr> {
    let full = match s.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => s.to_string(),
    };
    full.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            anyhow!("--metrics {s}: not an address; give HOST:PORT, e.g. 127.0.0.1:9464 or :9464")
        })
}

/// Answers `GET /metrics` (and `/`) until the process ends.
fn serve(server: &tiny_http::Server, state: &Arc<Mutex<State>>) {
    let kind: tiny_http::Header =
        "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"
            .parse()
            .expect("a valid header");
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("");
        let res = if matches!(path, "/metrics" | "/") && *req.method() == tiny_http::Method::Get {
            let body = expose::render(state);
            req.respond(tiny_http::Response::from_string(body).with_header(kind.clone()))
        } else {
            req.respond(
                tiny_http::Response::from_string("kvlab serves /metrics\n").with_status_code(404),
            )
        };
        let _ = res;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_or_say_how() {
        assert_eq!(parse_addr(":9464").unwrap().to_string(), "0.0.0.0:9464");
        assert_eq!(parse_addr("127.0.0.1:0").unwrap().port(), 0);
        let e = parse_addr("9464").unwrap_err().to_string();
        assert!(e.contains("HOST:PORT"), "{e}");
    }

    #[test]
    fn an_endpoint_serves_what_its_feeds_were_told() {
        let cfg = MetricsConfig {
            addr: "127.0.0.1:0".into(),
            run: "t".into(),
            shard: "0".into(),
            hold: Duration::ZERO,
        };
        let ex = Exporter::start(&cfg).unwrap();
        ex.set_point("p1");
        let sine = RateShape::Sine {
            period_s: 10.0,
            ratio: 2.0,
        };
        let feed = ex.begin("redis", "redis", Some((1000.0, sine)));
        assert!(get(ex.addr()).contains(r#"kvlab_offered_requests_per_second{run="t",shard="0",target="redis",product="redis",point="p1"} 500"#));
        let beat = |second| Beat {
            second,
            elapsed: Duration::ZERO,
            requests: 600,
            p99_us: 0.0,
            errors: 0,
            cache: None,
        };
        feed.beat(&beat(4));
        let body = get(ex.addr());
        let offered = 1000.0 * sine.mean(4.0, 5.0);
        assert!(
            body.contains(&format!("point=\"p1\"}} {offered}")),
            "{offered} {body}"
        );
        let mut tick = Tick {
            second: 0,
            measured: Default::default(),
            warmup: Default::default(),
        };
        tick.measured.counts.gets = 7;
        feed.tick(&tick);
        feed.connections(4);
        let body = get(ex.addr());
        assert!(
            body.contains(r#"point="p1",phase="measured",op="get"} 7"#),
            "{body}"
        );
        assert!(
            body.contains("kvlab_running{") && body.contains("kvlab_connections{"),
            "{body}"
        );
        drop(feed);
        assert!(get(ex.addr()).contains(r#"point="p1"} 0"#));
        let taken = Exporter::start(&MetricsConfig {
            addr: ex.addr().to_string(),
            ..cfg
        });
        let e = taken.err().unwrap().to_string();
        assert!(
            e.starts_with("--metrics") && e.contains("cannot listen"),
            "{e}"
        );
    }

    fn get(addr: SocketAddr) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }
}
