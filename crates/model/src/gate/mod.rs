//! The gate: whether a run passes, and every reason it does not. The one place a verdict on a
//! run is made: every command, export, report and page renders the [`Verdict`] that [`judge`]
//! returns (`rtlab measure`, `noise`, `run`, `campaign`, `show`, `export` and its JUnit and LAVA
//! documents, `report`, `compare`, `serve`'s pages), and none adds a rule of its own.
//!
//! The criteria travel with the run: a run is judged against the budget it was measured (or
//! imported) with, `params.budget_ns`. A budget given later (`report --budget`, `export
//! --budget`, a campaign phase's) is an explicit re-judgement, and the verdict's [`Criteria`]
//! say so in words ("judged against 100us given now; measured with 50us"). A run measured
//! without a budget is judged on completeness (and its deadlines) only, everywhere alike.
//!
//! The rules:
//!
//! * a run that cannot be judged ([`MeasureRun::unjudgeable`]: it did not finish, was
//!   interrupted, stopped at `--break`, or measured nothing on some CPU) never passes;
//! * with a budget, a CPU fails when its worst figure is greater than the budget (equal
//!   passes): the maximum wake-up latency (or response time), or for a noise run the longest
//!   single interruption. A missed period (an overrun: the thread woke after its next
//!   deadline) is no failure of its own: its late sample is in the maximum, over the budget
//!   whenever the budget is shorter than the period;
//! * a `--workload` job that missed its deadline (recorded with the run) fails the run;
//! * a hardware-latency run fails when a sample reached its `--budget` (recorded with it).
//!
//! A failed criterion outranks "cannot be judged": a run with a CPU over the budget is FAIL
//! even when another CPU measured nothing ([`Outcome`]).
//!
//! A [`Verdict`] is data: its [`Reason`]s say what failed with the figures, its per-CPU checks
//! what each CPU was held to, and the words are made where they are shown. Mapping a verdict to
//! an exit status is the command line's.

use crate::Nanos;
use crate::hwlat::HwlatRun;
use crate::measure::{CpuResult, MeasureRun};
use crate::noise::NoiseCpu;

/// The budget when none is given where one is needed (`rtlab run`, a campaign plan).
pub const DEFAULT_BUDGET: Nanos = Nanos::from_us(100);

/// The budget rule itself: a figure of `ns` is over `budget` when it is greater (equal
/// passes). The gate's verdicts and every count of wake-ups over a budget (`rtlab monitor`'s
/// breaches) hold to it.
pub fn over_budget(ns: u64, budget: Nanos) -> bool {
    ns > budget.get()
}

/// The budget rule inside [`judge`]: whether a CPU's worst figure is over the budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Gate {
    /// The budget; `None` holds no figure to one.
    budget: Option<Nanos>,
}

impl Gate {
    /// A rule holding figures to `budget` (none: nothing is over).
    const fn new(budget: Option<Nanos>) -> Gate {
        Gate { budget }
    }

    /// Whether a worst figure of `ns` is over the budget (never without one; equal passes).
    fn over(&self, ns: u64) -> bool {
        self.budget.is_some_and(|b| over_budget(ns, b))
    }
}

/// Where the budget a run was judged against came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BudgetFrom {
    /// The run's own, recorded when it was measured or imported.
    Run,
    /// Given now (`--budget` of `report`, `export`, `worst`; a campaign phase's), `measured`
    /// being the run's own when it had one.
    Given {
        /// The budget the run was measured with, if any.
        measured: Option<Nanos>,
    },
    /// Neither: the run was measured without one and none was given.
    #[default]
    Nowhere,
    /// A hardware-latency run: held to its own `--budget` (hwlatdetect's `--hardlimit`), never
    /// to one given later.
    HardLimit,
}

/// What a run was held to: the budget and where it came from, the deadline of its
/// `--workload` jobs, a hardware-latency run's hard limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Criteria {
    /// The budget each CPU's worst figure was held to; `None`: no figure was.
    pub budget: Option<Nanos>,
    /// Where the budget came from.
    pub from: BudgetFrom,
    /// The `--workload` jobs' relative deadline, when the run had jobs.
    pub deadline: Option<Nanos>,
    /// A hardware-latency run's `--budget` (hwlatdetect's `--hardlimit`).
    pub hardlimit: Option<Nanos>,
}

impl Criteria {
    /// The criteria of `run`, with a budget `given` now (re-judging it) or else its own.
    pub fn of(run: &MeasureRun, given: Option<Nanos>) -> Criteria {
        let measured = run.params.budget_ns;
        let (budget, from) = match (given, measured) {
            (Some(b), m) => (Some(b), BudgetFrom::Given { measured: m }),
            (None, Some(m)) => (Some(m), BudgetFrom::Run),
            (None, None) => (None, BudgetFrom::Nowhere),
        };
        Criteria {
            budget,
            from,
            deadline: run.workload.as_ref().map(|w| w.deadline_ns),
            hardlimit: None,
        }
    }

    /// The criteria in words, the same on every surface: `budget 50us, as measured`, `judged
    /// against 100us given now; measured with 50us`, `measured without a budget: judged on
    /// completeness only`; then the jobs' deadline or the hard limit when there is one.
    pub fn describe(&self) -> String {
        let budget = match (self.budget, self.from) {
            (Some(b), BudgetFrom::Run) => Some(format!("budget {b}, as measured")),
            (Some(b), BudgetFrom::Given { measured: Some(m) }) if m == b => Some(format!(
                "judged against {b} given now, the budget it was measured with"
            )),
            (Some(b), BudgetFrom::Given { measured: Some(m) }) => {
                Some(format!("judged against {b} given now; measured with {m}"))
            }
            (Some(b), _) => Some(format!(
                "judged against {b} given now; measured without a budget"
            )),
            (None, BudgetFrom::HardLimit) if self.hardlimit.is_some() => None,
            (None, BudgetFrom::HardLimit) => {
                Some("measured without --budget: its samples are reported, not judged".to_string())
            }
            (None, _) if self.deadline.is_some() => Some(
                "measured without a budget: judged on completeness and deadlines only".to_string(),
            ),
            (None, _) => Some("measured without a budget: judged on completeness only".to_string()),
        };
        let deadline = self
            .deadline
            .map(|d| format!("jobs held to their {d} deadline"));
        let hardlimit = self.hardlimit.map(|h| format!("hard limit {h}"));
        [budget, deadline, hardlimit]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// A run's verdict in one word. A failed criterion outranks a run that cannot be judged.
/// Serialized as [`Outcome::as_str`] (`pass`, `fail`, `unjudgeable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Outcome {
    /// Every criterion held and the run can be judged.
    #[serde(rename = "pass")]
    Pass,
    /// A criterion failed.
    #[serde(rename = "fail")]
    Fail,
    /// Nothing failed, but the run cannot be judged (never a pass).
    #[serde(rename = "unjudgeable")]
    CannotJudge,
}

impl Outcome {
    /// `PASS`, `FAIL`, `CANNOT JUDGE`: the word every surface shows.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::CannotJudge => "CANNOT JUDGE",
        }
    }

    /// `pass`, `fail`, `unjudgeable`: the word in machine-read documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::CannotJudge => "unjudgeable",
        }
    }

    /// The outcome [`Outcome::as_str`] wrote, read back.
    pub fn parse(word: &str) -> Option<Outcome> {
        [Outcome::Pass, Outcome::Fail, Outcome::CannotJudge]
            .into_iter()
            .find(|o| o.as_str() == word)
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

/// What one CPU was held to and how it fared: the rows of a per-CPU document (JUnit, LAVA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCheck {
    /// The CPU.
    pub cpu: u32,
    /// Which figure it is held to.
    pub worst: Worst,
    /// That figure; `None` when the CPU measured nothing.
    pub ns: Option<u64>,
    /// Whether it is over the budget.
    pub over: bool,
}

/// A run's verdict: passed when there is no reason against it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// What the run was held to.
    pub criteria: Criteria,
    /// Every reason the run did not pass, in the order: judgeability, CPUs, workload.
    pub reasons: Vec<Reason>,
    /// Each CPU's figure against the budget, in the run's order.
    pub cpus: Vec<CpuCheck>,
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

    /// Why the run cannot be judged, when it cannot.
    pub fn unjudgeable(&self) -> Option<&str> {
        self.reasons.iter().find_map(|r| match r {
            Reason::Unjudgeable { why } => Some(why.as_str()),
            _ => None,
        })
    }

    /// The verdict in one word.
    pub fn outcome(&self) -> Outcome {
        if self.failures().next().is_some() {
            Outcome::Fail
        } else if !self.judgeable() {
            Outcome::CannotJudge
        } else {
            Outcome::Pass
        }
    }
}

/// Judges a measured, noise or imported run against its own criteria, or against a budget
/// `given` now (which the verdict's [`Criteria`] say).
pub fn judge(run: &MeasureRun, given: Option<Nanos>) -> Verdict {
    let criteria = Criteria::of(run, given);
    let gate = Gate::new(criteria.budget);
    let mut reasons = Vec::new();
    if let Some(why) = run.unjudgeable() {
        reasons.push(Reason::Unjudgeable { why });
    }
    let cpus: Vec<CpuCheck> = match &run.noise {
        Some(noise) => noise.cpus.iter().map(|c| noise_cpu(&gate, c)).collect(),
        None => run.cpus.iter().map(|c| latency_cpu(&gate, c)).collect(),
    };
    if let Some(budget) = criteria.budget {
        reasons.extend(cpus.iter().filter(|c| c.over).map(|c| Reason::OverBudget {
            cpu: c.cpu,
            worst: c.worst,
            ns: c.ns.unwrap_or_default(),
            budget,
        }));
    }
    if let Some(w) = &run.workload {
        reasons.extend(
            w.cpus
                .iter()
                .filter(|c| c.misses > 0)
                .map(|c| Reason::DeadlineMissed {
                    cpu: c.cpu,
                    misses: c.misses,
                    jobs: c.jobs,
                    late_start: c.late_start,
                    long_execution: c.long_execution,
                    both: c.both,
                    deadline: w.deadline_ns,
                }),
        );
    }
    Verdict {
        criteria,
        reasons,
        cpus,
    }
}

/// Judges a run a command holds to `budget` (an `rtlab run` phase, a campaign step): against
/// its own criteria when it was measured with that budget, else re-judged against it (which
/// the verdict's [`Criteria`] say).
pub fn judge_held_to(run: &MeasureRun, budget: Nanos) -> Verdict {
    judge(
        run,
        Some(budget).filter(|b| run.params.budget_ns != Some(*b)),
    )
}

/// One CPU of a latency (or response-time) run: its maximum.
fn latency_cpu(gate: &Gate, c: &CpuResult) -> CpuCheck {
    let ns = (c.raw.count > 0).then_some(c.raw.max_ns);
    CpuCheck {
        cpu: c.cpu,
        worst: Worst::Maximum,
        ns,
        over: ns.is_some_and(|ns| gate.over(ns)),
    }
}

/// One CPU of a noise run: its longest single interruption.
fn noise_cpu(gate: &Gate, c: &NoiseCpu) -> CpuCheck {
    let ns = (c.runtime_ns > 0).then_some(c.max_single_ns);
    CpuCheck {
        cpu: c.cpu,
        worst: Worst::Interruption,
        ns,
        over: ns.is_some_and(|ns| gate.over(ns)),
    }
}

/// Judges a hardware-latency run against its own `--budget` (hwlatdetect's `--hardlimit` rule: a sample
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
    Verdict {
        criteria: Criteria {
            hardlimit: run.params.hardlimit_ns,
            from: BudgetFrom::HardLimit,
            ..Criteria::default()
        },
        reasons,
        cpus: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
