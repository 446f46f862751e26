//! The gate: whether a run passes, and every reason it does not.
//!
//! One rule for every command and exporter that judges a run (`rtlab measure`, `noise`,
//! `run`, `campaign`, `show`, `export` and its JUnit and LAVA documents, `compare`):
//!
//! * a run that cannot be judged ([`MeasureRun::unjudgeable`]: it did not finish, stopped at
//!   `--break`, or measured nothing on some CPU) never passes;
//! * with a budget, a CPU fails when its worst figure is greater than the budget (equal
//!   passes): the maximum wake-up latency (or response time), or for a noise run the longest
//!   single interruption. A missed period (an overrun: the thread woke after its next
//!   deadline) is no failure of its own: its late sample is in the maximum, over the budget
//!   whenever the budget is shorter than the period;
//! * a `--workload` job that missed its deadline fails the run;
//! * a hardware-latency run fails when a sample reached its `--hardlimit`.
//!
//! A [`Verdict`] is data: its [`Reason`]s say what failed with the figures, and the words are
//! made where they are shown. Mapping a verdict to an exit status is the command line's.

use crate::Nanos;
use crate::hwlat::HwlatRun;
use crate::measure::{CpuResult, MeasureRun};
use crate::noise::NoiseCpu;

/// The budget when none is given where one is needed (`rtlab run`, a campaign plan, JUnit).
pub const DEFAULT_BUDGET: Nanos = Nanos::from_us(100);

/// What a run is held to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    /// The budget each CPU's worst figure is held to; `None` judges no figure.
    pub budget: Option<Nanos>,
}

impl Gate {
    /// A gate holding every CPU to `budget` (none: only whether the run can be judged).
    pub const fn new(budget: Option<Nanos>) -> Gate {
        Gate { budget }
    }

    /// Whether a worst figure of `ns` is over the budget (never without one).
    pub fn over(&self, ns: u64) -> bool {
        self.budget.is_some_and(|b| ns > b.get())
    }
}

/// Which figure of a CPU was over the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Worst {
    /// The maximum wake-up latency, or response time with `--workload`.
    Maximum,
    /// The longest single interruption of a noise run.
    Interruption,
}

/// One reason a run did not pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The run cannot be judged; `why` says what is missing.
    Unjudgeable {
        /// Why (from [`MeasureRun::unjudgeable`]).
        why: String,
    },
    /// A CPU's worst figure is over the budget.
    OverBudget {
        /// The CPU.
        cpu: u32,
        /// Which figure.
        worst: Worst,
        /// Its value.
        ns: u64,
        /// The budget.
        budget: Nanos,
    },
    /// A `--workload` job missed its deadline on a CPU.
    DeadlineMissed {
        /// The CPU.
        cpu: u32,
        /// Jobs that missed.
        misses: u64,
        /// Jobs run.
        jobs: u64,
        /// Of the misses: started late, ran long, both.
        late_start: u64,
        /// See `late_start`.
        long_execution: u64,
        /// See `late_start`.
        both: u64,
        /// The jobs' relative deadline.
        deadline: Nanos,
    },
    /// Hardware-latency samples reached the hard limit.
    HardLimit {
        /// How many.
        samples: usize,
        /// The worst sample.
        worst_ns: u64,
        /// The limit.
        limit: Nanos,
    },
}

impl Reason {
    /// Whether this reason only says the run cannot be judged (rather than that it failed
    /// a criterion).
    pub fn is_unjudgeable(&self) -> bool {
        matches!(self, Reason::Unjudgeable { .. })
    }
}

/// A run's verdict: passed when there is no reason against it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Every reason the run did not pass, in the order: judgeability, CPUs, workload.
    pub reasons: Vec<Reason>,
}

impl Verdict {
    /// Whether the run passed.
    pub fn passed(&self) -> bool {
        self.reasons.is_empty()
    }

    /// Whether the run can be judged at all.
    pub fn judgeable(&self) -> bool {
        !self.reasons.iter().any(Reason::is_unjudgeable)
    }

    /// The reasons that are failed criteria (not "cannot be judged").
    pub fn failures(&self) -> impl Iterator<Item = &Reason> {
        self.reasons.iter().filter(|r| !r.is_unjudgeable())
    }
}

impl Gate {
    /// Judges a measured, noise or imported run.
    pub fn judge(&self, run: &MeasureRun) -> Verdict {
        let mut reasons = Vec::new();
        if let Some(why) = run.unjudgeable() {
            reasons.push(Reason::Unjudgeable { why });
        }
        match &run.noise {
            Some(noise) => {
                for c in &noise.cpus {
                    reasons.extend(self.judge_noise_cpu(c));
                }
            }
            None => {
                for c in &run.cpus {
                    reasons.extend(self.judge_cpu(c));
                }
            }
        }
        if let Some(w) = &run.workload {
            reasons.extend(w.cpus.iter().filter(|c| c.misses > 0).map(|c| {
                Reason::DeadlineMissed {
                    cpu: c.cpu,
                    misses: c.misses,
                    jobs: c.jobs,
                    late_start: c.late_start,
                    long_execution: c.long_execution,
                    both: c.both,
                    deadline: w.deadline_ns,
                }
            }));
        }
        Verdict { reasons }
    }

    /// One CPU of a latency (or response-time) run: its maximum.
    pub fn judge_cpu(&self, c: &CpuResult) -> Option<Reason> {
        let budget = self.budget?;
        (c.raw.count > 0 && self.over(c.raw.max_ns)).then_some(Reason::OverBudget {
            cpu: c.cpu,
            worst: Worst::Maximum,
            ns: c.raw.max_ns,
            budget,
        })
    }

    /// One CPU of a noise run: its longest single interruption.
    pub fn judge_noise_cpu(&self, c: &NoiseCpu) -> Option<Reason> {
        let budget = self.budget?;
        (c.runtime_ns > 0 && self.over(c.max_single_ns)).then_some(Reason::OverBudget {
            cpu: c.cpu,
            worst: Worst::Interruption,
            ns: c.max_single_ns,
            budget,
        })
    }
}

/// Judges a hardware-latency run against its own `--hardlimit` (hwlatdetect's rule: a sample
/// at or above the limit fails).
pub fn judge_hwlat(run: &HwlatRun) -> Verdict {
    let mut reasons = Vec::new();
    let samples = run.over_hardlimit();
    if let (true, Some(limit)) = (samples > 0, run.params.hardlimit_ns) {
        reasons.push(Reason::HardLimit {
            samples,
            worst_ns: run.max_ns(),
            limit,
        });
    }
    Verdict { reasons }
}

#[cfg(test)]
mod tests;
