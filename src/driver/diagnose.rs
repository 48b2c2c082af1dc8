//! One-line errors for connections that fail, in words a user can act on:
//! refused logins, wrong ports, TLS mix-ups, servers that do not answer.

use std::io;
use std::time::Duration;

use crate::driver::product::Connector;
use crate::transport::TlsStart;

impl Connector {
    /// A one-line error for a connection that could not be opened (or whose
    /// login was refused): what to check.
    pub fn connect_error(&self, e: io::Error) -> anyhow::Error {
        self.known(&e).unwrap_or_else(|| {
            anyhow::anyhow!(
                "cannot connect to {}: {e}; is the server running and is the port right?",
                self.display
            )
        })
    }

    /// A one-line error for a failed set-up session on a server whose protocol
    /// starts with a handshake (the server speaks first): what to check.
    pub fn setup_error(&self, e: io::Error) -> anyhow::Error {
        self.known(&e).unwrap_or_else(|| match e.kind() {
            io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable => anyhow::anyhow!(
                "cannot connect to {}: {e}; is the server running and is the port right?",
                self.display
            ),
            _ => anyhow::anyhow!("{}: {e}", self.display),
        })
    }

    /// Where a password not in the URL came from, as said: ` (the password
    /// was read from PGPASSWORD)`; empty where it was in the URL or none.
    fn password_source(&self) -> String {
        let var = self.product.facts().password_env;
        match var.filter(|v| {
            std::env::var(v).ok().as_deref() == self.password.as_deref().filter(|p| !p.is_empty())
        }) {
            Some(v) => format!(" (the password was read from {v}, as the URL has none)"),
            None => String::new(),
        }
    }

    /// The failures both kinds of set-up explain alike: TLS, refused
    /// logins, replies of another protocol, silence, a missing socket.
    fn known(&self, e: &io::Error) -> Option<anyhow::Error> {
        if let Some(why) = crate::transport::tls::explain(e) {
            return Some(anyhow::anyhow!("{}: {why}", self.display));
        }
        let (tls, what) = (self.tls_hint(), self.product.facts().title);
        Some(match e.kind() {
            io::ErrorKind::PermissionDenied => anyhow::anyhow!(
                "{}: {e}; check the user and password in --target{}",
                self.display,
                self.password_source()
            ),
            // The login itself got a reply that is not this protocol's.
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => anyhow::anyhow!(
                "{} does not answer as a {what} server should: {e}; check the scheme and port of --target{tls}",
                self.display
            ),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => anyhow::anyhow!(
                "{} does not answer as a {what} server should: no reply in time; check the scheme and port of --target{tls}",
                self.display
            ),
            io::ErrorKind::NotFound if self.transport.unix.is_some() => anyhow::anyhow!(
                "cannot connect to {}: no unix socket there; is the server running and is the path right?",
                self.display
            ),
            _ => return None,
        })
    }

    /// A one-line error for a server that accepted the connection but did not
    /// answer the probe as the product should.
    pub fn probe_error(&self, e: anyhow::Error, waited: Duration) -> anyhow::Error {
        // A TLS alert can come with the first reply (TLS 1.3 client auth).
        if let Some(why) = e
            .downcast_ref::<io::Error>()
            .and_then(crate::transport::tls::explain)
        {
            return anyhow::anyhow!("{}: {why}", self.display);
        }
        let e = if is_timeout(&e) {
            anyhow::anyhow!("no reply within {waited:.0?}")
        } else {
            e
        };
        anyhow::anyhow!(
            "{} does not answer as a {} server should: {e:#}; check the scheme and port of --target{}",
            self.display,
            self.product.facts().title,
            self.tls_hint()
        )
    }

    /// The other half of a TLS mix-up, for messages about a server that
    /// does not answer as expected.
    fn tls_hint(&self) -> &'static str {
        match (self.tls(), self.product.facts().tls_start) {
            (_, TlsStart::Unsupported(_)) => "",
            (true, _) => " (a plain port? then drop --tls)",
            (false, _) => " (a TLS port? then add --tls)",
        }
    }
}

fn is_timeout(e: &anyhow::Error) -> bool {
    e.downcast_ref::<io::Error>().is_some_and(|e| {
        matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        )
    })
}
