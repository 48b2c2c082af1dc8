//! TLS for kvlab's connections: the user's options (`--tls*` flags and the
//! URL's own settings), the rustls client configuration built from them, and
//! one-line messages for the handshake failures a user can fix.
//! Certificates are verified unless the options say otherwise.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use pki_types::pem::PemObject;
use pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms, ring};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct as Signed, Error as TlsError,
    RootCertStore, SignatureScheme,
};
use serde::{Deserialize, Serialize};

/// How much of the server's certificate is checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verify {
    /// Chain to a trusted CA and the name the client asked for (the default;
    /// libpq `verify-full`, MySQL `VERIFY_IDENTITY`).
    #[default]
    Full,
    /// Chain to a trusted CA, any name (libpq `verify-ca`, MySQL `VERIFY_CA`).
    Chain,
    /// Nothing: encrypted, but anyone may answer (`--tls-insecure`, libpq
    /// `sslmode=require`, MySQL `ssl-mode=REQUIRED`).
    None,
}

impl Verify {
    /// How the summary names it.
    pub fn describe(self) -> &'static str {
        match self {
            Verify::Full => "certificate verified",
            Verify::Chain => "certificate chain verified, host name not checked",
            Verify::None => "certificate NOT verified",
        }
    }
}

/// What a user asked of TLS for one target.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsOptions {
    /// CA certificates (PEM) to trust instead of the system's (`--tls-ca`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
    /// Client certificate chain (PEM, `--tls-cert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// Client private key (PEM, `--tls-key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// The name to check the certificate against, when not the URL's host
    /// (`--tls-server-name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// How much of the certificate is checked.
    #[serde(default)]
    pub verify: Verify,
}

/// A ready client configuration and the name its handshakes present.
#[derive(Clone)]
pub struct TlsClient {
    /// The rustls configuration (shared by every connection of a run).
    pub config: Arc<ClientConfig>,
    /// The server name sent (SNI) and checked.
    pub name: ServerName<'static>,
    /// How much of the certificate is checked.
    pub verify: Verify,
}

impl fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsClient")
            .field("name", &self.name)
            .field("verify", &self.verify)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

impl TlsClient {
    /// The configuration `opts` describe for a server reached as `host`;
    /// fails with one line naming the flag when a file cannot be used.
    pub fn new(opts: &TlsOptions, host: &str) -> Result<TlsClient> {
        let name_text = opts.server_name.as_deref().unwrap_or(host);
        let name = ServerName::try_from(name_text.to_string()).map_err(|_| {
            anyhow::anyhow!(
                "--tls-server-name: '{name_text}' is not a host name or address; give the name on the server's certificate"
            )
        })?;
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("TLS set-up")?;
        let ca = opts.ca.as_deref();
        let builder = match opts.verify {
            Verify::Full => builder.with_webpki_verifier(webpki(ca)?),
            Verify::Chain | Verify::None => {
                let chain = (opts.verify == Verify::Chain)
                    .then(|| webpki(ca))
                    .transpose()?;
                let relaxed = Relaxed {
                    chain,
                    algorithms: provider().signature_verification_algorithms,
                };
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(relaxed))
            }
        };
        let config = match (&opts.cert, &opts.key) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_file_iter(cert)
                    .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| {
                        anyhow::anyhow!(
                            "--tls-cert {}: cannot read a PEM certificate: {e}",
                            cert.display()
                        )
                    })?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    anyhow::anyhow!(
                        "--tls-key {}: cannot read a PEM private key: {e}",
                        key.display()
                    )
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    anyhow::anyhow!(
                        "--tls-cert/--tls-key: {e}; give a matching certificate and key"
                    )
                })?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => bail!("--tls-cert and --tls-key go together; give both or neither"),
        };
        Ok(TlsClient {
            config: Arc::new(config),
            name,
            verify: opts.verify,
        })
    }
}

/// rustls's full verifier (chain and name) over the CA certificates in `ca`,
/// or the system's.
fn webpki(ca: Option<&Path>) -> Result<Arc<WebPkiServerVerifier>> {
    let roots = Arc::new(roots(ca)?);
    WebPkiServerVerifier::builder_with_provider(roots, provider())
        .build()
        .context("TLS set-up")
}

/// The CA certificates to trust: the file given, or the system's.
fn roots(ca: Option<&Path>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match ca {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    anyhow::anyhow!(
                        "--tls-ca {}: cannot read PEM certificates: {e}",
                        path.display()
                    )
                })?;
            if certs.is_empty() {
                bail!(
                    "--tls-ca {}: holds no PEM certificate; give the CA's certificate file",
                    path.display()
                );
            }
            for c in certs {
                store.add(c).map_err(|e| {
                    anyhow::anyhow!("--tls-ca {}: not a usable CA: {e}", path.display())
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                bail!(
                    "TLS: the system has no CA certificates to verify the server with; give --tls-ca FILE (or install ca-certificates)"
                );
            }
        }
    }
    Ok(store)
}

/// A verifier weaker than rustls's default: with `chain`, checks the chain
/// but accepts any name (libpq `verify-ca`); without, accepts any certificate
/// (`--tls-insecure`). The handshake's signatures are checked either way.
#[derive(Debug)]
struct Relaxed {
    /// The full verifier whose chain checks are kept, if any.
    chain: Option<Arc<WebPkiServerVerifier>>,
    /// The provider's algorithms, which check the signatures.
    algorithms: WebPkiSupportedAlgorithms,
}

/// What checking a handshake's signature gives.
type Checked = Result<HandshakeSignatureValid, TlsError>;

impl ServerCertVerifier for Relaxed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(TlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }
    fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &Signed) -> Checked {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.algorithms)
    }
    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &Signed) -> Checked {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The handshake failure `e` in words a user can act on, if it is one.
pub fn explain(e: &io::Error) -> Option<String> {
    let tls = e.get_ref()?.downcast_ref::<TlsError>()?;
    Some(match tls {
        TlsError::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "its TLS certificate is signed by a CA kvlab does not trust; give that CA with --tls-ca FILE (or, knowingly, --tls-insecure)".into()
        }
        TlsError::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "its TLS certificate is not valid for this host name; give the name on the certificate with --tls-server-name NAME".into(),
        TlsError::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
            "its TLS certificate has expired; renew it (or, knowingly, --tls-insecure)".into()
        }
        TlsError::InvalidCertificate(c) => format!(
            "its TLS certificate was refused ({c:?}); check --tls-ca (or, knowingly, --tls-insecure)"
        ),
        TlsError::InvalidMessage(_) | TlsError::InappropriateMessage { .. } => {
            "it does not speak TLS on this port; use a plain URL without --tls, or the server's TLS port".into()
        }
        TlsError::AlertReceived(a) => format!(
            "the server refused the TLS handshake ({a:?}); if it wants a client certificate give --tls-cert and --tls-key"
        ),
        other => format!("TLS failed: {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_one_line_errors() {
        let opts = TlsOptions {
            ca: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        };
        let e = TlsClient::new(&opts, "localhost").unwrap_err().to_string();
        assert!(e.starts_with("--tls-ca /nonexistent/ca.pem"), "{e}");
        let opts = TlsOptions {
            cert: Some("/x".into()),
            verify: Verify::None,
            ..TlsOptions::default()
        };
        let e = TlsClient::new(&opts, "localhost").unwrap_err().to_string();
        assert!(e.contains("go together"), "{e}");
        let opts = TlsOptions {
            server_name: Some("bad name!".into()),
            ..TlsOptions::default()
        };
        assert!(TlsClient::new(&opts, "h").is_err());
    }
}
