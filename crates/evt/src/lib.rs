//! rtlab's worst-case statistics: how bad can the latency get, and was the run long enough to
//! say?
//!
//! Extreme-value theory on what a run keeps: a GEV fitted to block maxima (the per-second
//! maxima of the series, grouped into blocks), a GPD fitted to the declustered exceedances of
//! a threshold chosen by a stated rule, profile-likelihood intervals for the shape, the return
//! levels and the probability of exceeding a budget, and the checks (independence,
//! stationarity, goodness of fit, a back-test) that decide whether a fit may be trusted.
//! Data in ([`model::measure::MeasureRun`]), data out ([`model::worst`]); no I/O.
//!
//! The method, its assumptions and where it fails: `docs/worst-case.md`.

// `!(x > 0.0)` is the test that refuses NaN as well as non-positive values, on purpose.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod binned;
pub mod dist;
pub mod fits;
pub mod gev;
pub mod gof;
pub mod gpd;
mod group;
mod optim;
pub mod pot;
pub mod profile;
mod rng;
pub mod support;
pub mod tests_stat;
pub mod top;
pub mod verdict;

pub use group::{analyse, analyse_each};

/// The largest shape a fit may take. A latency tail with a shape of 5 would have no finite
/// fifth root of a moment; data that ask for more are outliers the checks will flag, and an
/// unbounded search would only chase them.
pub const MAX_SHAPE: f64 = 5.0;

/// What the analysis is asked.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Confidence of every interval (0.95).
    pub confidence: f64,
    /// The latency budget whose exceedance risk is wanted.
    pub budget_ns: Option<u64>,
    /// The highest acceptable probability per hour of exceeding the budget.
    pub per_hour: f64,
    /// The width the once-per-day level's interval should have (default: a tenth of it).
    pub width_ns: Option<u64>,
    /// Pool runs of different conditions.
    pub pool: bool,
    /// Each CPU as well as all together.
    pub per_cpu: bool,
    /// Bootstrap refits per goodness-of-fit p-value ([`gof::BOOTSTRAP`] by default).
    pub bootstrap: usize,
}

impl Settings {
    /// All CPUs together, no budget, the defaults of `rtlab worst` otherwise: what a summary
    /// beside other figures (`compare --worst`, a host's page) asks.
    pub fn all_cpus() -> Settings {
        Settings {
            confidence: 0.95,
            budget_ns: None,
            per_hour: 1e-6,
            width_ns: None,
            pool: false,
            per_cpu: false,
            bootstrap: gof::BOOTSTRAP,
        }
    }
}
