//! A database's blocking set-up connection, in general (never on the hot
//! path): the [`SetupConn`] each database's session implements, and the steps
//! every database's set-up shares — a session for long work (creating, loading
//! and scanning kvlab's table), and a set-up connection handed over to the
//! engine.

use std::io;
use std::time::Duration;

use anyhow::Result;

use crate::driver::product::Connector;
use crate::driver::wire::Session;
use crate::transport::Stream;

/// How long a set-up session may take to connect and log in before long work.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A database's blocking set-up connection: login, queries, bulk loads.
pub trait SetupConn: Sized {
    /// Its socket.
    fn stream(&self) -> &Stream;
    /// Opens one on `c` (dial, TLS, login) within `timeout`.
    fn open(c: &Connector, timeout: Duration) -> io::Result<Self>;
    /// Sets the socket's read and write timeouts (`None`: wait for ever).
    fn set_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.stream().set_timeout(t)
    }
}

/// How long one reply of long work may take (a load's batch, a scan of
/// every row): long, never unbounded, so a server that stops answering
/// mid-load ends the run instead of hanging it.
pub const LONG_WORK: Duration = Duration::from_secs(600);

/// A session on `c` for long work (a load, a scan of every row): logged in
/// within 10 s, then each reply within [`LONG_WORK`].
pub fn untimed<C: SetupConn>(c: &Connector) -> io::Result<C> {
    let conn = C::open(c, LOGIN_TIMEOUT)?;
    conn.set_timeout(Some(LONG_WORK))?;
    Ok(conn)
}

/// [`untimed`] for the set-up of kvlab's table, its error naming `c`.
pub fn table_session<C: SetupConn>(c: &Connector) -> Result<C> {
    untimed(c).map_err(|e| anyhow::anyhow!("{}: {e}", c.display))
}

/// The socket of a set-up connection handed to the engine with the `session`
/// its requests need, without a timeout (the engine times requests itself).
pub fn hand_over(stream: Stream, session: Session) -> io::Result<(Stream, Session)> {
    stream.set_timeout(None)?;
    Ok((stream, session))
}
