//! The load engine: runs one point (one load shape against one target) on T
//! threads and merges what they measured. Knows nothing of sweeps, servers or
//! products: it is generic over the codec the registry picks.
//!
//! Data flow: [`execute_with_codec`] spawns workers ([`worker::run`], or the
//! cache-aside loop in [`aside`]), each owning its connections and recorders;
//! once a second each sends a [`Tick`] (a value, not a shared counter) that the
//! calling thread merges into the timeline and shows through an [`Observer`]; at
//! the end their reports merge into one [`EngineReport`].
//!
//! # Layout
//! - [`spec`]: the point ([`Spec`]), its ticks, observer and report.
//! - [`clock`]: the start line, the run's instants, the once-a-second tick.
//! - [`run`]: threads, ticks and the merge.
//! - [`worker`]: the plain hot loop; [`aside`]: the cache-aside hot loop.
//! - [`rhythm`]: what both loops share; `link`: one connection; [`pacer`]: the
//!   open-loop schedule; `route`: the node of each request on a sharded target.

pub mod aside;
pub mod clock;
mod link;
pub mod pacer;
pub mod rhythm;
mod route;
pub mod run;
pub mod spec;
pub mod worker;

pub use clock::{StartLine, Timing};
pub use run::execute_with_codec;
pub use spec::{AsideSpec, EngineReport, Observer, Quiet, Second, Share, Spec, StartReport, Tick};
