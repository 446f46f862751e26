//! Runs as LAVA test cases: every figure of a run as one `lava-test-case` with a result, a
//! measurement and units, in the naming Linaro's test-definitions use for rt-tests
//! (`t0-max-latency pass 12 us` there, `cpu0-max-latency` here, named by CPU number), and the
//! repeated-runs baseline verdict of their cyclicdeadline definition.
//!
//! Two forms of the same cases ([`Form`]): the commands LAVA's test shell runs
//! (`lava-test-case cpu0-max-latency --result pass --measurement 66.000 --units us`), and the
//! result-file lines test-definitions' `send-to-lava.sh` reads (`cpu0-max-latency pass 66.000
//! us`).
//!
//! What a case's result says, each rendering the gate's one verdict on the run
//! ([`model::gate::judge`]: the run's own criteria, or a budget given now):
//! * a figure is reported, not gated: `pass` when the run can be judged
//!   ([`MeasureRun::unjudgeable`] is `None`), `unknown` when it cannot (its figures stop early
//!   or a CPU measured nothing), never `pass` then;
//! * with a budget, each CPU's maximum (for a noise run: its longest single interruption) is
//!   `fail` where the verdict found it over (even in a run that cannot be judged: what it
//!   measured is already over), and the `all-` maximum where any CPU's is; `pass` at or below
//!   it in a run that can be judged, `unknown` in one that cannot;
//! * with `--workload`, each CPU's `deadline-misses` count is `fail` when a job missed;
//! * `run-status` is `pass` when the run can be judged and `fail` when not;
//! * `verdict`, the last of a run's cases, is the verdict itself: `pass`, or `fail` for a run
//!   that failed or cannot be judged, so a job failing on any case fails exactly where the
//!   exit status does.
//!
//! Baseline ([`baseline`]): of at least three runs, the lowest maximum is the baseline, a run
//! exceeds it when its maximum is greater (no margin), and the verdict fails when the runs over
//! it number `runs / 2` (integer division) or more — exactly the rule of test-definitions'
//! `cyclicdeadline.sh`, which only applies it to more than two iterations. A given baseline
//! replaces the lowest maximum (their `USER_BASELINE`). A run that cannot be judged sets no
//! baseline and counts as over it: its maximum is not known to be under.
//!
//! Pure: runs in, text out. Names are LAVA-safe (`[A-Za-z0-9._-]`), so neither form needs
//! quoting; the caller checks a prefix with [`check_name`].

use model::Nanos;
use model::gate::Verdict;
use model::imported::Quantity;
use model::measure::MeasureRun;
use model::noise::NoiseCpu;
use model::stats::LatencyStats;

/// A LAVA test case result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed (for a reported figure: reported, from a run that can be judged).
    Pass,
    /// Failed.
    Fail,
    /// Could not be judged.
    Unknown,
}

impl Outcome {
    /// The word LAVA takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unknown => "unknown",
        }
    }
}

/// One test case: a name, a result and, for a figure, its measurement and units.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// LAVA-safe name.
    pub name: String,
    /// Its result.
    pub outcome: Outcome,
    /// The measurement and its units; `None` for a verdict, or a figure the run lacks.
    pub measurement: Option<(String, &'static str)>,
}

/// Which of the two forms to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `lava-test-case NAME --result R [--measurement V --units U]`, a shell script.
    Commands,
    /// `NAME R [V U]`, the result-file lines `send-to-lava.sh` reads.
    Results,
}

/// The longest prefix. LAVA takes test case names of up to 100 characters; the longest name
/// after the prefix is about 45 (`iteration-12345-cpu4095-max-period-noise`), so 48 leaves room.
pub const MAX_PREFIX: usize = 48;

/// Checks a name or prefix is LAVA-safe: 1 to [`MAX_PREFIX`] characters of `[A-Za-z0-9._-]`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_PREFIX {
        return Err(format!("'{name}' must have 1 to {MAX_PREFIX} characters"));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        Some(bad) => Err(format!(
            "'{name}' has '{bad}'; LAVA test case names take only letters, digits, '.', '_' and '-'"
        )),
        None => Ok(()),
    }
}

/// The cases of one run rendering `verdict` (the gate's on it), every name after `prefix` (and
/// a `-`) when given.
pub fn cases(run: &MeasureRun, verdict: &Verdict, prefix: Option<&str>) -> Vec<Case> {
    let mut out = Vec::new();
    out.push(Case {
        name: "run-status".into(),
        outcome: if verdict.judgeable() {
            Outcome::Pass
        } else {
            Outcome::Fail
        },
        measurement: None,
    });
    let judge = Judge { verdict };
    match &run.noise {
        Some(noise) => {
            for c in &noise.cpus {
                noise_cases(&mut out, Who::Cpu(c.cpu), c, judge);
            }
            noise_cases(&mut out, Who::All, &noise.total(), judge);
        }
        None => {
            let quantity = quantity_word(run);
            for c in &run.cpus {
                latency_cases(&mut out, Who::Cpu(c.cpu), quantity, &c.stats, judge);
            }
            latency_cases(&mut out, Who::All, quantity, &run.all.stats, judge);
        }
    }
    if let Some(w) = &run.workload {
        for c in &w.cpus {
            let outcome = match c.misses {
                0 => judge.reported(),
                _ => Outcome::Fail,
            };
            count(
                &mut out,
                &Who::Cpu(c.cpu).name(),
                "deadline-misses",
                c.misses,
                outcome,
            );
        }
    }
    out.push(Case {
        name: "verdict".into(),
        outcome: if verdict.passed() {
            Outcome::Pass
        } else {
            Outcome::Fail
        },
        measurement: None,
    });
    if let Some(p) = prefix {
        for case in &mut out {
            case.name = format!("{p}-{}", case.name);
        }
    }
    out
}

/// What a run's loop figures are named after: `latency` (wake-up latency), `response`
/// (response time, with `--workload`), `noise` (an imported oslat's loop gaps).
fn quantity_word(run: &MeasureRun) -> &'static str {
    match run.quantity() {
        Quantity::WakeupLatency => "latency",
        Quantity::ResponseTime => "response",
        Quantity::OsNoise => "noise",
    }
}

/// Whose figures a case is of: one CPU, or all of them.
#[derive(Clone, Copy)]
enum Who {
    Cpu(u32),
    All,
}

impl Who {
    fn name(self) -> String {
        match self {
            Who::Cpu(cpu) => format!("cpu{cpu}"),
            Who::All => "all".to_string(),
        }
    }
}

/// How a run's figures are judged: as the verdict found them.
#[derive(Clone, Copy)]
struct Judge<'a> {
    verdict: &'a Verdict,
}

impl Judge<'_> {
    /// A reported figure's result.
    fn reported(self) -> Outcome {
        if self.verdict.judgeable() {
            Outcome::Pass
        } else {
            Outcome::Unknown
        }
    }

    /// A maximum's result: `fail` where the verdict found it over the budget.
    fn maximum(self, who: Who, ns: Option<u64>) -> Outcome {
        let over = self.verdict.cpus.iter().any(|c| match who {
            Who::Cpu(cpu) => c.cpu == cpu && c.over,
            Who::All => c.over,
        });
        match ns {
            None => Outcome::Unknown,
            Some(_) if over => Outcome::Fail,
            Some(_) => self.reported(),
        }
    }
}

fn latency_cases(out: &mut Vec<Case>, whose: Who, quantity: &str, s: &LatencyStats, j: Judge) {
    let who = &whose.name();
    let figure = |out: &mut Vec<Case>, what: &str, value: Option<String>, outcome| {
        out.push(Case {
            name: format!("{who}-{what}-{quantity}"),
            outcome: if value.is_some() {
                outcome
            } else {
                Outcome::Unknown
            },
            measurement: value.map(|v| (v, "us")),
        });
    };
    figure(out, "min", s.min_ns.map(us), j.reported());
    figure(out, "avg", s.mean_ns.map(us_f64), j.reported());
    for (what, value) in [("p99", s.p99_ns), ("p99.99", s.p99_99_ns)] {
        if let Some(ns) = value {
            figure(out, what, Some(us(ns)), j.reported());
        }
    }
    figure(out, "max", s.max_ns.map(us), j.maximum(whose, s.max_ns));
    count(out, who, "samples", s.count, j.reported());
    count(out, who, "overruns", s.overruns, j.reported());
}

fn noise_cases(out: &mut Vec<Case>, whose: Who, c: &NoiseCpu, j: Judge) {
    let who = &whose.name();
    let measured = c.runtime_ns > 0;
    let max = measured.then_some(c.max_single_ns);
    out.push(Case {
        name: format!("{who}-max-noise"),
        outcome: j.maximum(whose, max),
        measurement: max.map(|ns| (us(ns), "us")),
    });
    let period = measured.then_some(c.max_period_noise_ns);
    out.push(Case {
        name: format!("{who}-max-period-noise"),
        outcome: if measured {
            j.reported()
        } else {
            Outcome::Unknown
        },
        measurement: period.map(|ns| (us(ns), "us")),
    });
    let share = c.available_pct().map(|a| format!("{:.3}", 100.0 - a));
    out.push(Case {
        name: format!("{who}-noise"),
        outcome: if share.is_some() {
            j.reported()
        } else {
            Outcome::Unknown
        },
        measurement: share.map(|p| (p, "%")),
    });
    count(out, who, "interruptions", c.interruptions, j.reported());
}

fn count(out: &mut Vec<Case>, who: &str, what: &str, n: u64, outcome: Outcome) {
    out.push(Case {
        name: format!("{who}-{what}"),
        outcome,
        measurement: Some((n.to_string(), "count")),
    });
}

/// Nanoseconds as microseconds with three decimals (exact): `66.000`, `12.345`.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A mean in nanoseconds as microseconds with three decimals.
fn us_f64(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

/// The repeated-runs verdict (see the module's documentation for the rule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Baseline {
    /// The runs judged.
    pub runs: usize,
    /// The baseline: the given one, else the lowest maximum of the runs that can be judged
    /// (`None` when none can).
    pub baseline_ns: Option<u64>,
    /// Whether the baseline was given rather than found.
    pub given: bool,
    /// Runs whose maximum is over the baseline, or that cannot be judged.
    pub over: usize,
    /// Whether it passed: fewer than `runs / 2` runs over.
    pub passed: bool,
    /// `max-latency`, `max-response` or `max-noise`, after the runs' quantity.
    figure: String,
}

/// The fewest runs the rule applies to (test-definitions: more than two iterations).
pub const MIN_BASELINE_RUNS: usize = 3;

/// The baseline verdict over `runs`: against `given`, else their lowest maximum. Refused for
/// fewer than [`MIN_BASELINE_RUNS`] runs and for runs of different quantities (noise and
/// latency).
pub fn baseline(runs: &[MeasureRun], given: Option<Nanos>) -> Result<Baseline, String> {
    if runs.len() < MIN_BASELINE_RUNS {
        return Err(format!(
            "a baseline needs at least {MIN_BASELINE_RUNS} runs, got {}: with fewer, the lowest maximum leaves nothing to judge (give more RUNs, or leave --baseline out)",
            runs.len()
        ));
    }
    let quantity = runs[0].quantity();
    if runs.iter().any(|r| r.quantity() != quantity) {
        return Err(format!(
            "the runs measure different things ({} and {}) and share no baseline; give runs of one kind",
            quantity.describe(),
            runs.iter()
                .map(MeasureRun::quantity)
                .find(|q| *q != quantity)
                .map_or("", |q| q.describe())
        ));
    }
    // The one comparability rule of `rtlab compare`: runs measured otherwise (another
    // interval) share no baseline either.
    let labelled: Vec<(String, &MeasureRun)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("run {}", i + 1), r))
        .collect();
    let laid = crate::compare::Comparison::new(&labelled);
    if let Some(row) = (1..runs.len()).find(|&row| !laid.comparable(row)) {
        return Err(format!(
            "the runs were not all measured alike and share no baseline: {}; give runs of one setting",
            laid.warnings()
                .into_iter()
                .find(|w| w.starts_with(&format!("run {} ", row + 1)))
                .unwrap_or_default()
        ));
    }
    let maxima: Vec<Option<u64>> = runs.iter().map(run_max).collect();
    let baseline_ns = match given {
        Some(b) => Some(b.get()),
        None => maxima.iter().flatten().min().copied(),
    };
    let over = maxima
        .iter()
        .filter(|m| match (m, baseline_ns) {
            // Over the baseline: worse than it by more than 0 %, the regression rule of
            // `rtlab compare --fail-if-worse 0`.
            (Some(m), Some(b)) => crate::compare::verdict::worse_by_more_than(b, *m, 0.0),
            _ => true,
        })
        .count();
    let figure = format!("max-{}", quantity_word(&runs[0]));
    Ok(Baseline {
        runs: runs.len(),
        baseline_ns,
        given: given.is_some(),
        over,
        passed: baseline_ns.is_some() && over < runs.len() / 2,
        figure,
    })
}

/// A run's maximum as the baseline judges it: all CPUs' maximum latency (for a noise run, the
/// longest single interruption); `None` for a run that cannot be judged.
fn run_max(run: &MeasureRun) -> Option<u64> {
    if run.unjudgeable().is_some() {
        return None;
    }
    match &run.noise {
        Some(noise) => noise
            .cpus
            .iter()
            .filter(|c| c.runtime_ns > 0)
            .map(|c| c.max_single_ns)
            .max(),
        None => run.all.stats.max_ns,
    }
}

impl Baseline {
    /// Its two cases: `baseline-max-latency` (the baseline, reported) and
    /// `runs-over-baseline` (the verdict, measured in runs).
    pub fn cases(&self, prefix: Option<&str>) -> Vec<Case> {
        let p = prefix.map(|p| format!("{p}-")).unwrap_or_default();
        vec![
            Case {
                name: format!("{p}baseline-{}", self.figure),
                outcome: if self.baseline_ns.is_some() {
                    Outcome::Pass
                } else {
                    Outcome::Unknown
                },
                measurement: self.baseline_ns.map(|ns| (us(ns), "us")),
            },
            Case {
                name: format!("{p}runs-over-baseline"),
                outcome: if self.passed {
                    Outcome::Pass
                } else {
                    Outcome::Fail
                },
                measurement: Some((self.over.to_string(), "runs")),
            },
        ]
    }

    /// The verdict for a person, one line.
    pub fn describe(&self) -> String {
        let base = match self.baseline_ns {
            Some(ns) => format!(
                "the baseline {} us ({})",
                us(ns),
                if self.given {
                    "given"
                } else {
                    "the lowest maximum"
                }
            ),
            None => "no baseline (no run can be judged)".to_string(),
        };
        format!(
            "{} of {} runs over {base}; the verdict fails at {} or more",
            self.over,
            self.runs,
            self.runs / 2
        )
    }
}

/// The cases as text in `form`, one line each.
pub fn render(cases: &[Case], form: Form) -> String {
    let mut out = String::new();
    for c in cases {
        let line = match (form, &c.measurement) {
            (Form::Commands, Some((v, u))) => format!(
                "lava-test-case {} --result {} --measurement {v} --units {u}",
                c.name,
                c.outcome.as_str()
            ),
            (Form::Commands, None) => {
                format!("lava-test-case {} --result {}", c.name, c.outcome.as_str())
            }
            (Form::Results, Some((v, u))) => {
                format!("{} {} {v} {u}", c.name, c.outcome.as_str())
            }
            (Form::Results, None) => format!("{} {}", c.name, c.outcome.as_str()),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
