//! How a fixed rate moves over a run (`--rate-shape`): steady, a step, a
//! ramp, or a daily-like sine. The run's rate (`--rate`) is the peak; the
//! shape says which share of it is offered at each second of the measured
//! window (the warm-up runs at the window's first share). A plain serde value
//! with one-line parse errors; the pacer applies it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// Peak over trough unless the shape says (`ratio=`).
pub const DEFAULT_RATIO: f64 = 2.0;

/// Seconds of a day: the window a decision's stated shape is drawn over.
pub const DAY_S: f64 = 86_400.0;

/// The rate's course over the measured window, as a share of the peak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "lowercase")]
pub enum RateShape {
    /// The rate all along.
    #[default]
    Steady,
    /// The trough until `at_s` seconds into the window, the peak after.
    Step {
        /// Seconds into the window of the step.
        at_s: f64,
        /// Peak over trough.
        ratio: f64,
    },
    /// From the trough up to the peak over `over_s` seconds, the peak after.
    Ramp {
        /// Seconds the ramp lasts.
        over_s: f64,
        /// Peak over trough.
        ratio: f64,
    },
    /// A day compressed into `period_s`: the trough at the window's start,
    /// the peak half a period later, the trough again a period later.
    Sine {
        /// Seconds of one cycle.
        period_s: f64,
        /// Peak over trough.
        ratio: f64,
    },
}

impl RateShape {
    /// Whether the rate is the same all along.
    pub fn is_steady(&self) -> bool {
        *self == RateShape::Steady
    }

    /// The share of the peak offered `t_s` seconds into the window (before
    /// it, the share at its start).
    #[inline]
    pub fn factor(&self, t_s: f64) -> f64 {
        let t = t_s.max(0.0);
        match *self {
            RateShape::Steady => 1.0,
            RateShape::Step { at_s, ratio } => match t < at_s {
                true => 1.0 / ratio,
                false => 1.0,
            },
            RateShape::Ramp { over_s, ratio } => {
                let low = 1.0 / ratio;
                low + (1.0 - low) * (t / over_s).min(1.0)
            }
            RateShape::Sine { period_s, ratio } => {
                let low = 1.0 / ratio;
                let phase = std::f64::consts::TAU * t / period_s;
                low + (1.0 - low) * (1.0 - phase.cos()) / 2.0
            }
        }
    }

    /// The mean share of the peak from `from_s` to `to_s` seconds into the
    /// window (the share at `from_s` when the span is empty).
    pub fn mean(&self, from_s: f64, to_s: f64) -> f64 {
        const STEPS: usize = 256;
        if self.is_steady() || to_s <= from_s {
            return self.factor(from_s);
        }
        let dt = (to_s - from_s) / STEPS as f64;
        (0..STEPS)
            .map(|i| self.factor(from_s + (i as f64 + 0.5) * dt))
            .sum::<f64>()
            / STEPS as f64
    }

    /// Reads `steady`, `step`, `ramp` or `sine`, each with optional
    /// `:key=value,…` parts (`at`, `over`, `period` in seconds, `s` or `m`
    /// after the number; `ratio`: peak over trough, default 2). The times
    /// default from the window (`window_s`, `None` when the run stops after
    /// a count of requests): the step at its middle, the ramp over all of
    /// it, one sine cycle over it.
    pub fn parse(s: &str, window_s: Option<f64>) -> Result<RateShape, UsageError> {
        let fix =
            "give steady, step, ramp or sine, with optional parts, e.g. sine:period=60s,ratio=2";
        let bad = |what: String| UsageError::bad("--rate-shape", what, fix);
        let (name, parts) = s.trim().split_once(':').unwrap_or((s.trim(), ""));
        let (mut time, mut ratio) = (None, DEFAULT_RATIO);
        let key = match name.to_ascii_lowercase().as_str() {
            "steady" | "constant" => {
                return no_parts(parts).map_err(bad).map(|_| RateShape::Steady);
            }
            "step" => "at",
            "ramp" => "over",
            "sine" | "daily" => "period",
            _ => return Err(bad(format!("unknown shape '{name}'"))),
        };
        for p in parts.split(',').filter(|p| !p.trim().is_empty()) {
            match p.trim().split_once('=') {
                Some((k, v)) if k.trim() == key => {
                    time = Some(
                        seconds(v)
                            .filter(|t| *t > 0.0)
                            .ok_or_else(|| bad(format!("'{v}' is no time")))?,
                    )
                }
                Some(("ratio", v)) => {
                    ratio = v
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|r| r.is_finite() && (1.0..=1000.0).contains(r))
                        .ok_or_else(|| bad(format!("ratio '{v}': give a number from 1 to 1000")))?
                }
                _ => {
                    return Err(bad(format!(
                        "unknown part '{p}' of {name} (it takes {key}= and ratio=)"
                    )));
                }
            }
        }
        let default = match key {
            "at" => window_s.map(|w| w / 2.0),
            _ => window_s,
        };
        let t = time.or(default).ok_or_else(|| {
            bad(format!(
                "{name} needs its {key}= when the run stops after a count of requests"
            ))
        })?;
        Ok(match key {
            "at" => RateShape::Step { at_s: t, ratio },
            "over" => RateShape::Ramp { over_s: t, ratio },
            _ => RateShape::Sine { period_s: t, ratio },
        })
    }
}

/// `Err` naming the parts given to a shape that takes none.
fn no_parts(parts: &str) -> Result<(), String> {
    match parts.trim().is_empty() {
        true => Ok(()),
        false => Err(format!("steady takes no parts ('{parts}')")),
    }
}

/// `30`, `30s` or `2m` as seconds, finite and not negative (also
/// `--hot-keys`' times).
pub(super) fn seconds(v: &str) -> Option<f64> {
    let v = v.trim();
    let (n, scale) = match v.strip_suffix('m') {
        Some(n) => (n, 60.0),
        None => (v.strip_suffix('s').unwrap_or(v), 1.0),
    };
    n.trim()
        .parse::<f64>()
        .ok()
        .map(|x| x * scale)
        .filter(|x| x.is_finite() && *x >= 0.0)
}

impl fmt::Display for RateShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RateShape::Steady => write!(f, "steady"),
            RateShape::Step { at_s, ratio } => {
                write!(f, "step at {at_s} s, peak {ratio}x the trough")
            }
            RateShape::Ramp { over_s, ratio } => {
                write!(f, "ramp over {over_s} s, peak {ratio}x the trough")
            }
            RateShape::Sine { period_s, ratio } => {
                write!(f, "sine of {period_s} s, peak {ratio}x the trough")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_with_defaults_from_the_window_and_one_line_errors() {
        assert_eq!(RateShape::parse("steady", None).unwrap(), RateShape::Steady);
        assert_eq!(
            RateShape::parse("sine", Some(60.0)).unwrap(),
            RateShape::Sine {
                period_s: 60.0,
                ratio: 2.0
            }
        );
        assert_eq!(
            RateShape::parse("step:at=10s,ratio=3", Some(60.0)).unwrap(),
            RateShape::Step {
                at_s: 10.0,
                ratio: 3.0
            }
        );
        assert_eq!(
            RateShape::parse("ramp:over=2m", None).unwrap(),
            RateShape::Ramp {
                over_s: 120.0,
                ratio: 2.0
            }
        );
        assert_eq!(
            RateShape::parse("step", Some(30.0)).unwrap(),
            RateShape::Step {
                at_s: 15.0,
                ratio: 2.0
            }
        );
        for bad in [
            "wave",
            "sine:period=0",
            "sine:at=3",
            "step:ratio=0.5",
            "steady:x=1",
            "sine:period=x",
        ] {
            let e = RateShape::parse(bad, Some(60.0)).unwrap_err().to_string();
            assert!(e.starts_with("--rate-shape:") && !e.contains('\n'), "{e}");
        }
        let e = RateShape::parse("sine", None).unwrap_err().to_string();
        assert!(e.contains("period="), "{e}");
    }

    #[test]
    fn the_sine_runs_from_trough_to_peak_and_back_its_mean_three_quarters() {
        let s = RateShape::Sine {
            period_s: 60.0,
            ratio: 2.0,
        };
        assert!((s.factor(0.0) - 0.5).abs() < 1e-12);
        assert!((s.factor(30.0) - 1.0).abs() < 1e-12);
        assert!((s.factor(-5.0) - 0.5).abs() < 1e-12);
        assert!((s.mean(0.0, 60.0) - 0.75).abs() < 1e-4);
        let step = RateShape::Step {
            at_s: 10.0,
            ratio: 4.0,
        };
        assert_eq!((step.factor(9.9), step.factor(10.0)), (0.25, 1.0));
        assert!((step.mean(0.0, 20.0) - 0.625).abs() < 1e-9);
        let ramp = RateShape::Ramp {
            over_s: 10.0,
            ratio: 2.0,
        };
        assert_eq!((ramp.factor(5.0), ramp.factor(20.0)), (0.75, 1.0));
        assert_eq!(RateShape::Steady.mean(0.0, 10.0), 1.0);
    }

    #[test]
    fn a_shape_round_trips_through_json() {
        let s = RateShape::Sine {
            period_s: 60.0,
            ratio: 2.0,
        };
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, r#"{"shape":"sine","period_s":60.0,"ratio":2.0}"#);
        assert_eq!(serde_json::from_str::<RateShape>(&j).unwrap(), s);
    }
}
