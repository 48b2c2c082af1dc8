//! The load engine: runs one point (one load shape against one target) on T
//! threads and merges what they measured. Knows nothing of sweeps, servers or
//! products: it is generic over the codec the registry picks.
//!
//! Data flow: [`execute_with_codec`] (or the cache-aside
//! [`aside::execute_with_codecs`]) spawns T threads, each running the one
//! [`request_loop`] with a client: [`plain`] or [`aside`]. Each thread owns its
//! connections and its tally; once a second it sends a [`Tick`] (a value, not
//! a shared counter) that the calling thread merges into the timeline and
//! shows through an [`Observer`]; at the end their reports merge into one
//! [`EngineReport`].
//!
//! # Layout
//! - [`spec`]: the point ([`Spec`]), its ticks, observer and report.
//! - [`clock`]: the start line, the run's instants, the once-a-second tick.
//! - [`run`]: threads, ticks and the merge; `timeline`: the ticks as the
//!   timeline (per second, then per minute; entries sealed once left behind).
//! - [`request_loop`]: the one hot loop (sockets, schedule, window, timeouts,
//!   back-off, drain, accounting), generic over a [`request_loop::Client`].
//! - [`plain`]: the client that sends one command per request (pipelined,
//!   routed by slot on a sharded target); [`aside`]: the cache-aside client.
//! - [`near`]: a near cache in each worker (`--near-cache`), read first;
//!   [`counts`]: what a worker counts beside its requests (the near cache's,
//!   each replicated server's).
//! - `pipe`: one socket with its buffers; `link`: the round trip kvlab
//!   emulates on it; [`pacer`]: the open-loop schedule.
//! - [`reactor`]: how a worker's sends, receives and waits reach the kernel
//!   (`--io`: io_uring or epoll).

pub mod aside;
pub mod clock;
pub mod counts;
pub mod dispatch;
mod link;
pub mod near;
pub mod pacer;
mod pipe;
pub mod plain;
pub mod reactor;
pub mod request_loop;
pub mod run;
pub mod spec;
mod timeline;

pub use clock::{StartLine, Timing};
pub use dispatch::execute;
pub use run::execute_with_codec;
pub use spec::{AsideSpec, Beat, EngineReport, Observer, Quiet, Spec, StartReport, Tick};
