//! A throwaway certificate authority for managed servers (`--server-opt
//! tls=on`): a CA, a server certificate for `localhost` and `127.0.0.1`
//! signed by it, and a client certificate, written as PEM files into the
//! server's temporary directory (keys readable by their owner only). kvlab
//! trusts exactly this CA for that server.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// The PEM files of a throwaway CA and the certificates it signed.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The CA's certificate (what clients trust).
    pub ca: PathBuf,
    /// The server's certificate.
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
    /// The server's certificate followed by its key, in one file (for
    /// servers that read both from one file).
    pub combined: PathBuf,
    /// A client certificate signed by the same CA.
    pub client_cert: PathBuf,
    /// The client certificate's key.
    pub client_key: PathBuf,
}

impl TlsFiles {
    /// Makes a new CA and its certificates under `dir`, `name` naming the CA.
    pub fn generate(dir: &Path, name: &str) -> Result<TlsFiles> {
        let fail = |e: rcgen::Error| anyhow::anyhow!("cannot make TLS certificates: {e}");
        let ca_key = KeyPair::generate().map_err(fail)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, name);
        ca.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca.self_signed(&ca_key).map_err(fail)?;
        let issuer = Issuer::new(ca, ca_key);
        let leaf =
            |names: Vec<String>, usage: ExtendedKeyUsagePurpose| -> Result<(String, String)> {
                let key = KeyPair::generate().map_err(fail)?;
                let mut p = CertificateParams::new(names).map_err(fail)?;
                p.distinguished_name.push(DnType::CommonName, "localhost");
                p.use_authority_key_identifier_extension = true;
                p.key_usages = vec![
                    KeyUsagePurpose::DigitalSignature,
                    KeyUsagePurpose::KeyEncipherment,
                ];
                p.extended_key_usages = vec![usage];
                let cert = p.signed_by(&key, &issuer).map_err(fail)?;
                Ok((cert.pem(), key.serialize_pem()))
            };
        let (server_pem, server_key) = leaf(
            vec!["localhost".into(), "127.0.0.1".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let (client_pem, client_key) =
            leaf(vec!["kvlab".into()], ExtendedKeyUsagePurpose::ClientAuth)?;
        let files = TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
            combined: dir.join("server-combined.pem"),
            client_cert: dir.join("client.pem"),
            client_key: dir.join("client.key"),
        };
        write(&files.ca, &ca_cert.pem(), 0o644)?;
        write(&files.cert, &server_pem, 0o644)?;
        write(&files.key, &server_key, 0o600)?;
        write(&files.combined, &format!("{server_key}{server_pem}"), 0o600)?;
        write(&files.client_cert, &client_pem, 0o644)?;
        write(&files.client_key, &client_key, 0o600)?;
        Ok(files)
    }

    /// Every file, for handing them to the server's system user.
    pub fn all(&self) -> [&Path; 6] {
        [
            &self.ca,
            &self.cert,
            &self.key,
            &self.combined,
            &self.client_cert,
            &self.client_key,
        ]
    }
}

fn write(path: &Path, text: &str, mode: u32) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}
