//! What `rtlab worst` says about the worst case: extreme-value fits per CPU and for all CPUs of
//! a group of runs made under one set of conditions, their return levels and budget risk with
//! confidence intervals, the checks that decide whether a fit may be trusted, and how much
//! longer a run would have to be. Schema `rtlab.worst/1` (docs/output-schemas.md).
//!
//! Latencies are nanoseconds as floats: a return level is an estimate, not a sample.

use serde::{Deserialize, Serialize};

/// The schema name and version of [`WorstDoc`].
pub const SCHEMA: &str = "rtlab.worst/1";

/// The whole answer over the runs given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorstDoc {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// rtlab version that wrote it.
    pub rtlab_version: String,
    /// Confidence of every interval (0.95).
    pub confidence: f64,
    /// `--budget`, when given.
    pub budget_ns: Option<u64>,
    /// The highest acceptable probability per hour of exceeding the budget (`--per-hour`).
    pub per_hour_target: f64,
    /// One entry per set of conditions (runs of different conditions are never pooled unless
    /// asked).
    pub groups: Vec<WorstGroup>,
}

/// Runs analysed together and what was found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorstGroup {
    /// What the runs share.
    pub conditions: Conditions,
    /// The runs, by name, in time order.
    pub runs: Vec<String>,
    /// All CPUs together first (`cpu` absent), then each CPU.
    pub cpus: Vec<WorstCpu>,
}

/// The conditions that make runs comparable.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// What measured (`user`, `timerlat`, or the imported tool).
    pub engine: String,
    /// The load during the run (`idle` when none ran).
    pub load: String,
    /// The measuring period.
    pub interval_ns: u64,
}

/// The analysis of one CPU (or all together).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorstCpu {
    /// The CPU; absent for all CPUs together.
    pub cpu: Option<u32>,
    /// Samples measured.
    pub samples: u64,
    /// Time covered by the per-second series (the seconds that have samples).
    pub measured_ns: u64,
    /// The largest latency measured.
    pub observed_max_ns: u64,
    /// Block maxima (GEV), when it could be fitted.
    pub block_maxima: Option<TailFit>,
    /// Peaks over threshold (GPD), when it could be fitted.
    pub peaks_over_threshold: Option<TailFit>,
    /// Why a method was not fitted, one line each.
    pub not_fitted: Vec<String>,
    /// The verdict.
    pub verdict: WorstVerdict,
    /// How much longer to run for a stated precision.
    pub run_longer: Vec<RunLonger>,
}

/// Which extreme-value method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Generalised extreme value distribution fitted to block maxima.
    BlockMaxima,
    /// Generalised Pareto distribution fitted to declustered exceedances of a threshold.
    PeaksOverThreshold,
}

/// An estimate with its standard error and confidence interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Estimate {
    /// Maximum-likelihood estimate.
    pub value: f64,
    /// Standard error from the observed information, when it is positive definite.
    pub se: Option<f64>,
    /// Lower end of the profile-likelihood interval (absent: not limited by the data).
    pub lower: Option<f64>,
    /// Upper end (absent: not limited by the data).
    pub upper: Option<f64>,
}

/// What the shape says about the tail.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Tail {
    /// The interval of the shape lies below 0: the latency has an upper bound.
    Bounded {
        /// The estimated upper end of the distribution.
        upper_end_ns: f64,
    },
    /// The interval of the shape lies above 0: no upper bound, the worst grows with time.
    Unbounded,
    /// The interval of the shape contains 0.
    Undecided,
}

/// One fitted method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailFit {
    /// The method.
    pub method: Method,
    /// What was fitted, in words.
    pub data: String,
    /// Block length (block maxima).
    pub block_ns: Option<u64>,
    /// Threshold (peaks over threshold).
    pub threshold_ns: Option<f64>,
    /// How the threshold or block was chosen.
    pub rule: String,
    /// Values fitted: maxima, or cluster maxima above the threshold.
    pub n: u64,
    /// Exceedance clusters per hour (peaks over threshold).
    pub clusters_per_hour: Option<f64>,
    /// GEV location (block maxima).
    pub location_ns: Option<Estimate>,
    /// Scale.
    pub scale_ns: Estimate,
    /// Shape (xi > 0: heavy tail; SciPy's genextreme `c` is -xi).
    pub shape: Estimate,
    /// What the shape says.
    pub tail: Tail,
    /// Latencies exceeded once per hour, day and year of operation at the run's rate.
    pub return_levels: Vec<ReturnLevel>,
    /// The return-level curve with its band, from the shortest period the method resolves to
    /// ten years (for the return-level plot).
    pub curve: Vec<CurvePoint>,
    /// The probability per hour of exceeding the budget.
    pub budget: Option<BudgetRisk>,
    /// The checks.
    pub checks: Vec<Check>,
    /// Every check passed.
    pub trusted: bool,
    /// The values fitted, in time order (for plots).
    pub values_ns: Vec<f64>,
    /// Threshold candidates considered (peaks over threshold).
    pub candidates: Vec<Candidate>,
}

/// A return level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReturnLevel {
    /// The period, in words (`hour`, `day`, `year`).
    pub per: String,
    /// The period in hours.
    pub hours: f64,
    /// The level (absent where the method cannot give it, e.g. a period shorter than a block).
    pub level_ns: Option<Estimate>,
    /// Why the level is no estimate although the fit gave a number: the fit failed its checks,
    /// it sits at a bound of its parameters, the interval has no width or the estimate sits on its end, or the level
    /// lies orders of magnitude beyond the data. Absent when the level is an estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
}

impl ReturnLevel {
    /// The level, where it is an estimate the data support.
    pub fn supported(&self) -> Option<&Estimate> {
        self.level_ns.as_ref().filter(|_| self.withheld.is_none())
    }
}

/// A point of the return-level curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurvePoint {
    /// The return period in hours.
    pub hours: f64,
    /// The level exceeded once in that period.
    pub level_ns: f64,
    /// Lower end of its interval.
    pub lower_ns: Option<f64>,
    /// Upper end of its interval.
    pub upper_ns: Option<f64>,
}

/// The risk of exceeding the budget.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRisk {
    /// The budget.
    pub budget_ns: u64,
    /// Probability per hour of operation that the budget is exceeded at least once.
    pub per_hour: f64,
    /// Lower end of its interval.
    pub lower: f64,
    /// Upper end of its interval.
    pub upper: f64,
}

/// One check of the assumptions or of the fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Its name (`ljung-box`, `runs`, `split-half`, `kpss`, `anderson-darling`,
    /// `cramer-von-mises`, `back-test`).
    pub name: String,
    /// The test statistic.
    pub statistic: f64,
    /// The p-value (for the back-test: where the second half's maximum fell in the first
    /// half's predictive distribution).
    pub p_value: f64,
    /// Passed at the 1 % level.
    pub passed: bool,
    /// What a failure means, in words.
    pub says: String,
}

/// A threshold candidate of the peaks-over-threshold method.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// Threshold.
    pub threshold_ns: f64,
    /// Clusters above it.
    pub clusters: u64,
    /// Mean excess of the cluster maxima above it (the mean-residual-life plot).
    pub mean_excess_ns: f64,
    /// Shape fitted above it.
    pub shape: f64,
    /// Standard error of that shape.
    pub shape_se: Option<f64>,
}

/// The verdict on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorstVerdict {
    /// The answer and the next step, in one sentence a person acts on: the once-per-day level
    /// with its interval (and how often the budget is exceeded), or how much longer to measure,
    /// or that the run is over budget already and the machine needs tuning first.
    #[serde(default)]
    pub headline: String,
    /// A fit passed every check.
    pub trusted: bool,
    /// The method the headline figures come from (peaks over threshold when both are trusted).
    pub method: Option<Method>,
    /// The verdict in sentences, the most important first.
    pub says: Vec<String>,
    /// With `--budget`: whether the trusted fit bounds the per-hour risk below the target.
    pub budget_met: Option<bool>,
}

impl WorstVerdict {
    /// The one rule of a worst-case verdict, which `rtlab worst`'s exit status, text, page and
    /// exports all render: a fit passed every check, and with a budget it bounds the per-hour
    /// risk below the target.
    pub fn passed(&self) -> bool {
        self.trusted && self.budget_met.unwrap_or(true)
    }

    /// The verdict in the words every surface prints beside a CPU: `PASS`, or `FAIL` with its
    /// reason.
    pub fn word(&self) -> &'static str {
        match (self.passed(), self.trusted) {
            (true, _) => "PASS",
            (false, false) => "FAIL: no fit is trusted",
            (false, true) => "FAIL: the budget's risk is over its target",
        }
    }
}

/// How long a run would have to be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLonger {
    /// The goal, in words.
    pub goal: String,
    /// The total measured time needed (absent where running longer cannot reach it, or it is
    /// reached).
    pub needed_ns: Option<u64>,
    /// The answer, in words.
    pub says: String,
}

impl WorstDoc {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
