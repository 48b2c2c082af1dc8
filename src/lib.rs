//! kvlab: one tool that drives caches and databases with the same key-value
//! workload and measures them the same way.
//!
//! # Layout
//! - [`cli`]: the command line (clap) → a [`plan::RunPlan`].
//! - [`plan`]: what one run is: target, workload, load shape (serde, reusable by study files).
//! - [`error`]: mistakes a user can fix, each naming the flag and the fix.
//! - [`workload`]: key choice, GET/SET mix, deterministic values and their verification.
//! - [`wire`]: the sans-IO codec interface every protocol implements.
//! - [`target`]: what every target shares: endpoint, connector, the product traits,
//!   managed server processes, /proc usage, counters, kvlab's table in general.
//! - [`transport`]: TCP or unix sockets, plain or TLS (rustls), and throwaway certificates.
//! - [`products`]: the registry and one folder per product family (codec, set-up,
//!   managed server, counters, data loading).
//! - [`engine`]: runs one point on T threads; [`engine::worker`] and [`engine::aside`] are the hot loops; [`engine::pacer`] the open-loop schedule.
//! - [`consistency`]: versions of written values and stale-read detection.
//! - [`stats`]: outcome counters and HDR histograms.
//! - [`progress`]: the progress line and notes on stderr.
//! - [`launch`]: starts the managed servers a plan asks for.
//! - [`dataset`]: loads the keys (caches: pipelined SETs; databases: their own table load).
//! - [`runner`]: one run from plan to [`results::RunResult`].
//! - [`cacheaside`]: the cache of a cache-aside run: set-up, consistent start, its report.
//! - [`capacity`]: the highest rate within a p99 limit, by bisection over `--rate`.
//! - [`fill`]: memory efficiency: items a cache holds per GiB, bytes per row of a database.
//! - [`study`]: study files, their expansion into points, and running them.
//! - [`shard`]: sharded runs: `--shard I/N` and `--start-at`, a client's part of the load.
//! - [`merge`]: one exact result from the results of a sharded run's clients.
//! - [`results`]: the result as data (JSON).
//! - [`output`]: progress display and the human summary.
//! - [`report`]: study results -> verdict, tables and SVG charts as Markdown and HTML.

pub mod cacheaside;
pub mod capacity;
pub mod cli;
pub mod consistency;
pub mod dataset;
pub mod engine;
pub mod error;
pub mod fill;
pub mod launch;
pub mod merge;
pub mod output;
pub mod plan;
pub mod products;
pub mod progress;
pub mod report;
pub mod results;
pub mod runner;
pub mod shard;
pub mod stats;
pub mod study;
pub mod target;
pub mod transport;
pub mod wire;
pub mod workload;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

/// Runs a parsed command line. `shutdown` is set by Ctrl-C (or a test) to stop
/// early; partial results are still reported.
pub fn run(cli: cli::Cli, shutdown: Arc<AtomicBool>) -> Result<()> {
    match cli.command {
        cli::Command::Run(args) => {
            let plan = args.to_plan()?;
            if let Some(path) = &args.json {
                check_writable(path)?;
            }
            let opts = runner::RunOptions {
                progress: true,
                notes: true,
            };
            let result = runner::run(&plan, opts, &shutdown)?;
            print!("{}", output::summary(&result));
            if let Some(path) = &args.json {
                result.write_json(path)?;
                eprintln!("kvlab: wrote {}", path.display());
            }
            if !result.valid {
                bail!(
                    "the run is not a valid measurement: {}",
                    result
                        .problems
                        .first()
                        .map_or("no requests finished", String::as_str)
                );
            }
            Ok(())
        }
        cli::Command::Serve(args) => serve(&args.to_target()?, &shutdown),
        cli::Command::Study(args) => {
            let study = study::load(&args.file, args.scale)?;
            let out = args
                .out
                .clone()
                .or_else(|| study.output.clone())
                .unwrap_or_else(|| std::path::PathBuf::from("results").join(&study.name));
            run_study(&study, &out, args.dry_run, &shutdown)
        }
        cli::Command::Merge(args) => {
            if let Some(path) = &args.json {
                check_writable(path)?;
            }
            merged(&merge::merge_files(&args.results)?, args.json.as_deref())
        }
        cli::Command::Report(args) if merge::file_is_run_result(&args.results[0]) => {
            merged(&merge::merge_files(&args.results)?, None)
        }
        cli::Command::Report(args) => {
            let results: Vec<study::exec::StudyResult> = args
                .results
                .iter()
                .map(|p| study::exec::StudyResult::read(p))
                .collect::<Result<_>>()?;
            let out = args.out.clone().unwrap_or_else(|| {
                args.results[0]
                    .parent()
                    .map(|p| p.to_path_buf())
                    .unwrap_or_default()
            });
            let path = write_report(&results, &out)?;
            println!("kvlab: wrote {}", path.display());
            Ok(())
        }
        cli::Command::Capacity(args) => {
            let mut plan = args.run.to_plan()?;
            if let Some(path) = &args.run.json {
                check_writable(path)?;
            }
            if args.run.rate.is_some() {
                bail!("--rate: kvlab capacity chooses the rates itself; drop --rate");
            }
            if args.run.shard.is_some() || args.run.start_at.is_some() {
                bail!(
                    "--shard/--start-at: kvlab capacity runs one client through many runs; drop them (or run `kvlab run --shard` at chosen rates and merge)"
                );
            }
            if plan.load.stop == plan::Stop::Duration(10.0) && args.run.duration.is_none() {
                plan.load.stop = plan::Stop::Duration(5.0);
            }
            let opts = runner::RunOptions {
                progress: true,
                notes: true,
            };
            let mut on_step = |s: &capacity::Step| {
                let r = &s.result;
                let what = s
                    .rate
                    .map_or("closed loop".to_string(), |x| format!("{x:.0} req/s"));
                let verdict = if s.rate.is_none() {
                    "bound".to_string()
                } else if s.passed {
                    "pass".to_string()
                } else {
                    format!("fail: {}", s.reason.clone().unwrap_or_default())
                };
                println!(
                    "  {what:>14}: served {:.0} req/s, p99 {:.0} µs, errors {} -> {verdict}",
                    r.throughput_rps, r.latency_us.p99, r.errors
                );
            };
            println!(
                "kvlab capacity: highest rate with p99 <= {} ms and no errors",
                args.p99_ms
            );
            let c = capacity::search(
                &plan,
                args.p99_ms,
                args.steps,
                opts,
                &shutdown,
                &mut on_step,
            )?;
            match c.capacity_rps.and_then(|rate| {
                c.steps
                    .iter()
                    .rev()
                    .find(|s| s.passed && s.rate == Some(rate))
                    .map(|s| (rate, s))
            }) {
                Some((rate, s)) => {
                    let r = &s.result;
                    println!(
                        "capacity: {rate:.0} req/s within p99 {} ms (p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs{})",
                        args.p99_ms,
                        r.latency_us.p50,
                        r.latency_us.p99,
                        r.latency_us.p999,
                        r.server_cpu_s
                            .map(|cpu| format!(", server CPU {:.2} cores", cpu / r.duration_s))
                            .unwrap_or_default()
                    );
                }
                None => println!(
                    "capacity: no tried rate met p99 <= {} ms without errors",
                    args.p99_ms
                ),
            }
            if let Some(path) = &args.run.json {
                std::fs::write(path, serde_json::to_vec_pretty(&c)?)?;
                eprintln!("kvlab: wrote {}", path.display());
            }
            Ok(())
        }
        cli::Command::Demo(args) => {
            let study = study::parse(DEMO, "built-in demo study")?;
            run_study(&study, &args.out, false, &shutdown)
        }
    }
}

/// Prints (and writes, with `json`) a merged result; an invalid one is an error.
fn merged(result: &results::RunResult, json: Option<&std::path::Path>) -> Result<()> {
    print!("{}", output::summary(result));
    if let Some(path) = json {
        result.write_json(path)?;
        eprintln!("kvlab: wrote {}", path.display());
    }
    if !result.valid {
        bail!(
            "the merged run is not a valid measurement: {}",
            result
                .problems
                .first()
                .map_or("no requests finished", String::as_str)
        );
    }
    Ok(())
}

/// The built-in demo study.
pub const DEMO: &str = include_str!("../studies/demo.toml");

/// Runs a study, then writes and summarises its report.
fn run_study(
    s: &study::StudyFile,
    out: &std::path::Path,
    dry_run: bool,
    shutdown: &AtomicBool,
) -> Result<()> {
    let points = study::expand(s)?;
    println!(
        "kvlab study {}{}: {} points over {} target(s), about {:.0} s of load",
        s.name,
        if s.scale.is_some() {
            " at the original's scale"
        } else {
            ""
        },
        points.len(),
        s.targets.len(),
        points.len() as f64 * (s.duration + s.warmup)
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for c in study::core_caveats(s, cores) {
        eprintln!("kvlab: warning: {c}");
    }
    if dry_run {
        for p in &points {
            let params: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let cache = p
                .plan
                .cache
                .as_ref()
                .map(|c| {
                    format!(
                        " (behind {} {}, ttl {} s)",
                        c.cache.kind.name(),
                        c.policy.name(),
                        c.ttl_s
                    )
                })
                .unwrap_or_default();
            println!(
                "  {:>3} {}{cache} #{} {}",
                p.index + 1,
                p.target,
                p.repetition,
                params.join(" ")
            );
        }
        return Ok(());
    }
    let opts = runner::RunOptions {
        progress: true,
        notes: false,
    };
    let total = points.len();
    let swept = study::swept_axes(s);
    let mut on_point = |p: &study::Point, r: &study::exec::PointResult| {
        let params: Vec<String> = p
            .params
            .iter()
            .filter(|(k, _)| swept.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        match (&r.result, &r.error) {
            (Some(x), _) => println!(
                "  [{}/{total}] {} {}: {:.0} req/s, p99 {:.0} µs, errors {}{}",
                p.index + 1,
                p.target,
                params.join(" "),
                x.throughput_rps,
                x.latency_us.p99,
                x.errors,
                x.server_cpu_us_per_request
                    .map(|u| format!(", server {u:.1} µs/req"))
                    .unwrap_or_default()
                    + &x.cache_aside
                        .as_ref()
                        .map(|a| format!(", hit ratio {:.1}%", a.hit_ratio * 100.0))
                        .unwrap_or_default()
                    + &x.consistency
                        .as_ref()
                        .map(|c| format!(", {} stale reads", c.stale_reads))
                        .unwrap_or_default()
            ),
            (None, None) if r.fill.is_some() => {
                let f = r.fill.as_ref().expect("checked");
                println!(
                    "  [{}/{total}] {}: {} items held, {:.0} items per GiB of {} ({:.0} B per item), stopped by {}",
                    p.index + 1,
                    p.target,
                    f.items,
                    f.items_per_gib,
                    f.basis,
                    f.bytes_per_item,
                    f.stopped_by
                );
            }
            (None, Some(e)) => println!(
                "  [{}/{total}] {} {}: FAILED: {e}",
                p.index + 1,
                p.target,
                params.join(" ")
            ),
            _ => {}
        }
    };
    let path = study::exec::run(s, out, opts, shutdown, &mut on_point)?;
    println!("kvlab: results in {}", path.display());
    let results = vec![study::exec::StudyResult::read(&path)?];
    let report = write_report(&results, out)?;
    let r = report::build(&results);
    println!("\nVerdict:");
    for v in &r.verdict {
        println!("  - {v}");
    }
    for c in &r.caveats {
        println!("  ({c})");
    }
    println!("\nkvlab: report in {}", report.display());
    Ok(())
}

/// Writes report.html and report.md for `results` into `out`; returns the HTML path.
fn write_report(
    results: &[study::exec::StudyResult],
    out: &std::path::Path,
) -> Result<std::path::PathBuf> {
    std::fs::create_dir_all(out)?;
    let r = report::build(results);
    let html = out.join("report.html");
    std::fs::write(&html, report::html::render(&r))?;
    std::fs::write(out.join("report.md"), report::markdown::render(&r))?;
    Ok(html)
}

/// Fails before any work when the result file could not be written.
fn check_writable(path: &std::path::Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "--json: directory '{}' does not exist; create it or choose another path",
            dir.display()
        );
    }
    if path.is_dir() {
        bail!(
            "--json: '{}' is a directory; give a file name such as result.json",
            path.display()
        );
    }
    Ok(())
}

/// Runs a managed server until `shutdown`, printing its URL on stdout.
fn serve(target: &plan::TargetSpec, shutdown: &AtomicBool) -> Result<()> {
    use std::io::Write;
    let sizing = crate::target::Sizing {
        data_bytes: 256 << 20,
        connections: 200,
    };
    let mut s = crate::target::ManagedServer::start(target.kind, &target.server_opts, sizing)?;
    // The URL in full when the credentials are kvlab's own throwaway ones (managed
    // databases); a password the user set (e.g. requirepass) is never printed.
    let e = s.endpoint();
    let pass = |p: &plan::Secret| {
        let users = target
            .server_opts
            .iter()
            .any(|(k, v)| plan::is_secret_key(k) && v == p.expose());
        if users { "***" } else { p.expose() }.to_string()
    };
    let auth = match (&e.user, &e.password) {
        (Some(u), Some(p)) => format!("{u}:{}@", pass(p)),
        (Some(u), None) => format!("{u}@"),
        (None, Some(p)) => format!(":{}@", pass(p)),
        (None, None) => String::new(),
    };
    let db = e
        .database
        .as_ref()
        .map(|d| format!("/{d}"))
        .unwrap_or_default();
    let product = target.kind.product();
    let scheme = e.scheme_for(product);
    match &e.socket {
        // A cache on a socket may listen on nothing else: give the socket URL.
        Some(path) if !product.facts().url_database => {
            println!("{scheme}+unix://{auth}{}", path.display())
        }
        _ => println!("{scheme}://{auth}{}:{}{db}", e.host, e.port),
    }
    std::io::stdout().flush()?;
    if let Some(f) = s.tls_files() {
        eprintln!(
            "kvlab: it speaks TLS only, with a throwaway CA: give kvlab --tls-ca {} (client certificate: {} and {})",
            f.ca.display(),
            f.client_cert.display(),
            f.client_key.display()
        );
    }
    if let Some(sock) = &e.socket {
        eprintln!("kvlab: it listens on the unix socket {}", sock.display());
    }
    eprintln!(
        "kvlab: {} {} (pid {}) in {}; Ctrl-C stops it",
        s.info.product,
        s.info.version,
        s.pids()
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" "),
        s.dir().display()
    );
    while !shutdown.load(std::sync::atomic::Ordering::SeqCst) {
        if !s.running() {
            bail!("the managed {} exited on its own", target.kind.name());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s.stop();
    eprintln!("kvlab: stopped {}", target.kind.name());
    Ok(())
}
