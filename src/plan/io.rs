//! How kvlab's engine issues its requests (`--io`): io_uring where the
//! kernel allows it, else epoll, or one of them by name. A plain serde value
//! with a one-line parse error; the engine resolves it once per point.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// The `--io` a plan asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoChoice {
    /// io_uring where the kernel allows it and the run has no TLS, else epoll.
    #[default]
    Auto,
    /// io_uring: every due send, receive and the next wake in one submission.
    Uring,
    /// epoll (mio): a readiness poll, then a syscall per read and per write.
    Epoll,
}

impl IoChoice {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            IoChoice::Auto => "auto",
            IoChoice::Uring => "uring",
            IoChoice::Epoll => "epoll",
        }
    }

    /// Whether it is the default (left out of results files).
    pub fn is_auto(&self) -> bool {
        *self == IoChoice::Auto
    }
}

impl fmt::Display for IoChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IoChoice {
    type Err = UsageError;

    fn from_str(s: &str) -> Result<IoChoice, UsageError> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(IoChoice::Auto),
            "uring" | "io_uring" | "io-uring" => Ok(IoChoice::Uring),
            "epoll" => Ok(IoChoice::Epoll),
            _ => Err(UsageError::bad(
                "--io",
                format!("unknown I/O interface '{s}'"),
                "use uring, epoll or auto (io_uring where the kernel allows it)",
            )),
        }
    }
}

/// The error of `--io uring` for a run with TLS.
pub fn uring_with_tls() -> UsageError {
    UsageError::bad(
        "--io",
        "io_uring does not carry TLS in kvlab",
        "give --io epoll or leave --io out (TLS runs then use epoll)",
    )
}

impl super::RunPlan {
    /// Refuses `--io uring` for a run whose target or cache uses TLS (a
    /// URL's TLS or a managed server's `tls=on`) before any server starts.
    pub fn check_io(&self) -> Result<(), UsageError> {
        let any = self.target.uses_tls() || self.cache.as_ref().is_some_and(|c| c.cache.uses_tls());
        match self.load.io == IoChoice::Uring && any {
            true => Err(uring_with_tls()),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_a_one_line_error() {
        assert_eq!("io_uring".parse::<IoChoice>().unwrap(), IoChoice::Uring);
        assert_eq!("EPOLL".parse::<IoChoice>().unwrap(), IoChoice::Epoll);
        let e = "kqueue".parse::<IoChoice>().unwrap_err().to_string();
        assert!(e.contains("--io") && !e.contains('\n'), "{e}");
    }
}
