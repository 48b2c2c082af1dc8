//! The steps of a decision, declared once: each step's name in code, the
//! field of [`Steps`] it fills and its type, its file, how it is said, and
//! what its plan holds (`--resume` reuses a step saved for the same plan).
//! Saving, resuming, `--from` and the messages of a cut run all read this
//! table: a new step is one line of it, and its runs in `measure_all`.

use anyhow::Result;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::ask::Asked;
use super::measure::{AsideRun, CurveRun, Measured, Searched};
use super::others::Other;
use crate::results::decide::{CacheLoss, DataCopy, StatedLoad};

/// What a step's plan holds beside the workload, the servers and the goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Nothing more: its runs are capacity searches or at rates of their own.
    Goal,
    /// The stated rate and the application's instances: it runs at a fixed
    /// rate from them.
    Rated,
}

/// Declares the steps: `Variant field: Type = "file", "as said", Plan;`.
macro_rules! steps {
    ($( $(#[$doc:meta])* $variant:ident $field:ident: $ty:ty = $file:literal, $said:literal, $plan:ident; )*) => {
        /// A step of a decision, in the order they run.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Step {
            $( $(#[$doc])* $variant, )*
        }

        impl Step {
            /// Every step, in order.
            pub const ALL: &[Step] = &[$(Step::$variant),*];

            /// Its file's name (`steps/NN-FILE.json`).
            pub fn file(self) -> &'static str {
                match self { $(Step::$variant => $file,)* }
            }

            /// The step in words.
            pub fn said(self) -> &'static str {
                match self { $(Step::$variant => $said,)* }
            }

            fn plan(self) -> Plan {
                match self { $(Step::$variant => Plan::$plan,)* }
            }
        }

        /// What the steps measured, as they finish or are read back.
        pub struct Steps {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        impl Steps {
            /// Every step as `saved` reads it back.
            pub fn read(saved: &mut impl ReadStep) -> Result<Steps> {
                Ok(Steps { $($field: saved.read(Step::$variant)?,)* })
            }
        }
    };
}

steps! {
    /// The database alone's capacity search.
    Database db: Searched = "database", "the database alone", Goal;
    /// The cache alone's capacity search.
    Cache cache: Searched = "cache", "the cache alone", Goal;
    /// The miss-ratio curve's runs.
    Curve curve: Vec<CurveRun> = "curve", "the miss-ratio curve", Goal;
    /// The cache-aside configuration and its confirmation.
    CacheAside aside: AsideStep = "cache-aside", "the cache-aside confirmation", Rated;
    /// The cache lost under load.
    CacheLoss loss: Option<CacheLoss> = "cache-loss", "the cache loss", Rated;
    /// The database with a read replica.
    Replicas replicas: Other = "replicas", "the database with a read replica", Rated;
    /// Cache-aside with a near cache.
    NearAside near_aside: Other = "near-aside", "cache-aside with a near cache", Rated;
    /// The database with a near cache.
    NearDatabase near_db: Other = "near-database", "the database with a near cache", Rated;
}

/// How a saved decision's steps are read back, each as its own type.
pub trait ReadStep {
    /// `step`'s measurements.
    fn read<T: DeserializeOwned>(&mut self, step: Step) -> Result<T>;
}

impl Step {
    /// Its place in the run, from 0.
    pub fn index(self) -> usize {
        self as usize
    }

    /// What its measurements depend on, saved beside them: the searches and
    /// the curve on the workload, the servers and the goal; the fixed-rate
    /// runs also on the stated rate and the application's instances.
    pub fn plan_key(self, ask: &Asked) -> serde_json::Value {
        let l = &ask.load;
        // kvlab's own threads change what it can offer, not what a server
        // does: a step that did not hold for want of them is measured again
        // with more, the others reused. The bounds on servers kvlab did not
        // start are in the connections and rates they give, not their own.
        let mut plan = ask.plan.clone();
        plan.load.threads = 0;
        plan.shared.max_rps = None;
        plan.shared.max_connections = None;
        plan.load.rate = None;
        let mut key = serde_json::json!({
            "plan": plan,
            "cache": ask.cache,
            "goal": [l.p99_ms, l.p50_ms, l.p999_ms],
            "cores": [l.target_cores, l.cache_cores],
            "quick": ask.quick,
            "run_secs": ask.run_secs,
            "keys": l.keys,
        });
        if self.plan() == Plan::Rated {
            key["rps"] = serde_json::json!(l.rps);
            key["app_instances"] = serde_json::json!(l.app_instances);
        }
        key
    }
}

/// The cache-aside step: the rate of the fixed-rate runs, why, and the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AsideStep {
    /// The rate of the fixed-rate runs, req/s.
    pub rate: f64,
    /// Why that rate.
    pub rate_why: String,
    /// The configuration chosen and its confirmation.
    pub run: Option<AsideRun>,
}

impl Steps {
    /// The measurements of a decision of `load` on the copy `copy`.
    pub fn measured(
        self,
        load: &StatedLoad,
        copy: DataCopy,
        host_busy: Vec<(&'static str, String)>,
    ) -> Measured {
        Measured {
            copy,
            rate: self.aside.rate,
            rate_why: self.aside.rate_why,
            db: self.db,
            cache: self.cache,
            curve: self.curve,
            aside: self.aside.run,
            loss: self.loss,
            others: vec![self.replicas, self.near_aside, self.near_db],
            host_busy,
            measured_for: load.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_keep_their_files_order_and_plans() {
        let files: Vec<&str> = Step::ALL.iter().map(|s| s.file()).collect();
        assert_eq!(
            files,
            [
                "database",
                "cache",
                "curve",
                "cache-aside",
                "cache-loss",
                "replicas",
                "near-aside",
                "near-database"
            ]
        );
        let rated: Vec<bool> = Step::ALL.iter().map(|s| s.plan() == Plan::Rated).collect();
        assert_eq!(rated, [false, false, false, true, true, true, true, true]);
        assert!(Step::ALL.iter().enumerate().all(|(i, s)| s.index() == i));
    }
}
