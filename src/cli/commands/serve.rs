//! `kvlab serve`: starts a managed server, prints its URL, and keeps it until
//! Ctrl-C (for driving it with other tools beside kvlab).

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use crate::plan;

/// Runs a managed server until `shutdown`, printing its URL on stdout.
pub fn exec(target: &plan::TargetSpec, shutdown: &AtomicBool) -> Result<()> {
    use std::io::Write;
    let sizing = crate::driver::Sizing {
        data_bytes: 256 << 20,
        connections: 200,
    };
    let mut s = crate::servers::ManagedServer::start(target.kind, &target.server_opts, sizing)?;
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
    for (r, pid) in s.replica_endpoints().iter().zip(s.replica_pids()) {
        eprintln!(
            "kvlab: read replica {scheme}://{auth}{}:{}{db} (pid {pid})",
            r.host, r.port
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
