//! `--tls*`: TLS to the target, as flags; applied to a URL target's TLS
//! options, or as `--server-opt tls=on` for a server kvlab starts.

use std::path::PathBuf;

use clap::Args;

use crate::error::UsageError;
use crate::plan::TargetSpec;

/// TLS to the target (`--tls*`).
#[derive(Clone, Debug, Args, Default, serde::Serialize, serde::Deserialize)]
pub struct TlsArgs {
    /// Speak TLS to the target (also implied by a TLS URL scheme or URL
    /// option, and by the other --tls flags); on a server kvlab starts:
    /// --server-opt tls=on.
    #[arg(long)]
    pub tls: bool,
    /// CA certificates (PEM) to verify the server with, instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Client certificate (PEM), for servers that ask for one.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// The name the server's certificate must carry, when not the URL's host.
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// Do not verify the server's certificate (printed in the summary).
    #[arg(long)]
    pub tls_insecure: bool,
}

impl TlsArgs {
    /// Whether a flag beyond `--tls` was given (each implies TLS).
    fn settings(&self) -> bool {
        self.tls_ca.is_some()
            || self.tls_cert.is_some()
            || self.tls_key.is_some()
            || self.tls_server_name.is_some()
            || self.tls_insecure
    }

    /// Applies the flags to `t`: a URL target's TLS options, or `tls=on`
    /// for a server kvlab starts.
    pub fn apply(&self, t: &mut TargetSpec) -> Result<(), UsageError> {
        if !self.tls && !self.settings() {
            return Ok(());
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err(UsageError::bad(
                "--tls-cert/--tls-key",
                "a client certificate needs its key and a key its certificate",
                "give both --tls-cert FILE and --tls-key FILE",
            ));
        }
        let Some(ep) = t.external.as_mut() else {
            if self.settings() {
                return Err(UsageError::bad(
                    "--tls-ca/--tls-cert/--tls-server-name/--tls-insecure",
                    "a server kvlab starts gets a throwaway CA that kvlab trusts itself",
                    "give only --tls (or --server-opt tls=on), or a URL target",
                ));
            }
            if let crate::transport::TlsStart::Unsupported(why) = t.kind.product().facts().tls_start
            {
                return Err(UsageError::bad(
                    "--tls",
                    format!("a managed {}: {why}", t.kind.name()),
                    "remove --tls (or give the URL of a server that speaks TLS)",
                ));
            }
            t.server_opts.insert("tls".into(), "on".into());
            return Ok(());
        };
        let tls = ep.tls.get_or_insert_with(Default::default);
        if let Some(ca) = &self.tls_ca {
            tls.ca = Some(ca.clone());
        }
        if let (Some(c), Some(k)) = (&self.tls_cert, &self.tls_key) {
            tls.cert = Some(c.clone());
            tls.key = Some(k.clone());
        }
        if let Some(n) = &self.tls_server_name {
            tls.server_name = Some(n.clone());
        }
        if self.tls_insecure {
            tls.verify = crate::transport::Verify::None;
        }
        Ok(())
    }
}
