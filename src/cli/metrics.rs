//! `--metrics*`: the live endpoint Prometheus scrapes while kvlab runs (see
//! [`crate::runner::metrics`]); started once per command and kept for its whole life.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use crate::error::UsageError;
use crate::plan::shard::Shard;
use crate::runner::metrics::{self, Exporter, MetricsConfig};

/// The live metrics endpoint (`--metrics*`).
#[derive(Debug, Args, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct MetricsArgs {
    /// Serve live metrics for Prometheus at HOST:PORT/metrics while running
    /// (OpenMetrics text; `:PORT` listens on every interface, port 0 on any
    /// free one).
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics: Option<String>,
    /// The `run` label of the metrics, the same on every client of a sharded
    /// run [default: the study's name, else kvlab].
    #[arg(long, value_name = "NAME")]
    pub metrics_run: Option<String>,
    /// Keep serving the final metrics this long after the work ends, so the
    /// last scrape sees them (give at least the scrape interval).
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub metrics_hold: f64,
}

impl MetricsArgs {
    /// Starts and installs the endpoint when asked (`addr` from the flag, else
    /// `from_file`, a study's `metrics`), labelled `run` (unless
    /// `--metrics-run` says otherwise) and this client's shard.
    pub fn start(
        &self,
        from_file: Option<&str>,
        run: &str,
        shard: Option<Shard>,
    ) -> Result<Option<&'static Exporter>> {
        let Some(addr) = self.metrics.as_deref().or(from_file) else {
            if self.metrics_run.is_some() || self.metrics_hold != 0.0 {
                return Err(UsageError::bad(
                    "--metrics-run/--metrics-hold",
                    "they shape the live metrics endpoint",
                    "give --metrics HOST:PORT too",
                )
                .into());
            }
            return Ok(None);
        };
        if !(self.metrics_hold.is_finite() && (0.0..=86_400.0).contains(&self.metrics_hold)) {
            return Err(UsageError::bad(
                "--metrics-hold",
                "it is a number of seconds",
                "give 0 to 86400, e.g. --metrics-hold 30",
            )
            .into());
        }
        let ex = Exporter::start(&MetricsConfig {
            addr: addr.to_string(),
            run: self.metrics_run.clone().unwrap_or_else(|| run.to_string()),
            shard: shard.map_or(0, |s| s.index).to_string(),
            hold: Duration::from_secs_f64(self.metrics_hold),
        })?;
        let ex = metrics::install(ex);
        eprintln!("kvlab: live metrics at http://{}/metrics", ex.addr());
        Ok(Some(ex))
    }
}

/// After a command's work: keeps the endpoint up for `--metrics-hold`.
pub fn hold(shutdown: &AtomicBool) {
    if let Some(ex) = metrics::installed() {
        ex.hold(shutdown);
    }
}
