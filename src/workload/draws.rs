//! Fresh draws in every phase: each phase of a run (the settling of a cache,
//! the measured window, the background writer) and each point of a mode that
//! runs many (a capacity step, a curve size, a decide step, a study point)
//! draws its keys and operations from its own seed, derived from the run's
//! seed and the phase. No phase replays the key sequence of another, and the
//! seeds are written into the results, so a run is reproducible.
//!
//! The warm-up and the measured window are one stream: the window continues
//! where the warm-up's draws end (a worker's generator is never reset).

use serde::{Deserialize, Serialize};

/// The seeds one run drew from, as written into its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draws {
    /// The run's seed (`--seed`, or the point's seed in a mode that runs
    /// several; a client process of a split run adds its shard).
    pub run: u64,
    /// The settling of the cache, when it settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<u64>,
    /// The warm-up and measured window.
    pub window: u64,
    /// The background writer, when there was one (derived from the
    /// window's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<u64>,
}

impl Draws {
    /// The seeds of a run seeded with `run`, every phase's.
    pub fn of(run: u64) -> Draws {
        let window = seed(run, Phase::Window);
        Draws {
            run,
            settle: Some(seed(run, Phase::Settle)),
            window,
            background: Some(seed(window, Phase::Background)),
        }
    }
}

/// A phase or point that draws its own keys and operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A cache warmed by the workload before the window.
    Settle,
    /// The warm-up and measured window.
    Window,
    /// The background writer beside the window.
    Background,
    /// Step `n` of a capacity search (the closed loop is step 0).
    Step(u32),
    /// Point `n` of a mode that runs several (a curve size, a decide step, a
    /// study point).
    Point(u32),
}

impl Phase {
    /// A distinct 64-bit tag per phase.
    fn tag(self) -> u64 {
        let (kind, n) = match self {
            Phase::Settle => (1, 0),
            Phase::Window => (2, 0),
            Phase::Background => (3, 0),
            Phase::Step(n) => (4, n),
            Phase::Point(n) => (5, n),
        };
        (kind << 32) | u64::from(n)
    }
}

/// The seed of `phase` of a run seeded with `run`: a SplitMix64 finish of
/// the two, so neighbouring seeds and phases give unrelated streams.
pub fn seed(run: u64, phase: Phase) -> u64 {
    let mut z = run
        .wrapping_add(phase.tag().wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x632b_e59b_d9b4_e019);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{KeyDistribution, KeyGen, rng};

    #[test]
    fn every_phase_has_its_own_seed() {
        let phases = [
            Phase::Settle,
            Phase::Window,
            Phase::Background,
            Phase::Step(0),
            Phase::Step(1),
            Phase::Point(0),
            Phase::Point(1),
        ];
        let mut seeds: Vec<u64> = phases.iter().map(|&p| seed(1, p)).collect();
        seeds.extend(phases.iter().map(|&p| seed(2, p)));
        let n = seeds.len();
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), n);
        // Reproducible.
        assert_eq!(seed(7, Phase::Window), seed(7, Phase::Window));
    }

    #[test]
    fn the_window_does_not_replay_the_settling() {
        let draw = |s: u64| {
            let mut g = KeyGen::new(KeyDistribution::Uniform, 1_000_000, 0, 1);
            let mut r = rng(s);
            (0..1000).map(|_| g.next(&mut r)).collect::<Vec<u64>>()
        };
        let (a, b) = (draw(seed(1, Phase::Settle)), draw(seed(1, Phase::Window)));
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        assert!(same < 5, "{same} of 1000 draws repeated");
    }
}
