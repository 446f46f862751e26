//! The first screen of a report: the verdict for the whole report, then per run with what it was
//! held to, its worst figure and every reason in words (`report::story::verdict`), readable
//! without colour (the words PASS, FAIL and CANNOT JUDGE, not only a colour); then the runs
//! compared, Min / Avg / p99.9 / Max per CPU with the change against the first
//! (`compare_html`). Each run's verdict is the gate's ([`model::gate::judge`]): against the
//! criteria it was measured with, or the report's `--budget`, which then says it re-judges.

use minijinja::value::Value;
use model::gate::{Outcome, judge};
use model::measure::MeasureRun;
use serde::Serialize;

use super::{ReportOptions, ReportRun};
use crate::compare::{Comparison, compare_html};
use crate::story::verdict::words;

/// The verdict section.
#[derive(Debug, Serialize)]
pub(super) struct VerdictCtx {
    /// `pass`, `fail` or `unjudged`: the section's style.
    pub class: &'static str,
    /// `FAIL: 2 of 3 runs failed against the 100us budget`.
    pub headline: String,
    /// What the budget was, or that none was given.
    pub budget: String,
    /// One row per run, in the report's order.
    pub rows: Vec<VerdictRow>,
    /// The runs compared (an HTML table, escaped where it was built), for two runs or more.
    pub comparison: Option<Value>,
    /// What the comparison warns of (other machines, other quantities).
    pub warnings: Vec<String>,
    /// What the comparison shows that a reader would not expect (idle worse than loaded).
    pub remarks: Vec<String>,
    /// What rtlab found in the way of these figures (the audit's failures and the runs'
    /// warnings, each once), on the first screen beside the verdict.
    pub causes: Vec<Cause>,
    /// The causes' heading: what stands in the way of a failed verdict, else what affects
    /// the figures.
    pub causes_heading: &'static str,
}

/// One thing rtlab found in the way, with its fix where the audit has one.
#[derive(Debug, Serialize)]
pub(super) struct Cause {
    pub what: String,
    pub fix: Option<String>,
}

/// One run's verdict.
#[derive(Debug, Serialize)]
pub(super) struct VerdictRow {
    pub name: String,
    pub anchor: String,
    /// `PASS`, `FAIL` or `CANNOT JUDGE`.
    pub word: &'static str,
    pub class: &'static str,
    /// `max 4915.7 us (CPU 1)`.
    pub worst: String,
    /// What it was held to: `budget 50us, as measured`.
    pub criteria: String,
    /// Every reason against it, in words.
    pub reasons: Vec<String>,
}

/// The verdict on `runs` (anchored by `keys`): each against its own criteria, or the report's
/// budget when one is given.
pub(super) fn verdict(
    runs: &[ReportRun<'_>],
    keys: &[String],
    options: &ReportOptions,
) -> VerdictCtx {
    let verdicts: Vec<_> = runs.iter().map(|r| judge(r.run, options.budget)).collect();
    let rows: Vec<VerdictRow> = runs
        .iter()
        .zip(keys)
        .zip(&verdicts)
        .map(|((r, key), v)| row(v, r, key))
        .collect();
    let count = |o: Outcome| verdicts.iter().filter(|v| v.outcome() == o).count();
    let (failed, unjudged) = (count(Outcome::Fail), count(Outcome::CannotJudge));
    let n = rows.len();
    let noise = runs.iter().any(|r| r.run.noise.is_some());
    let budget = match (options.budget, &verdicts[..]) {
        (_, [one]) => held_to(&one.criteria.describe(), noise),
        (Some(b), _) => format!(
            "Every run judged against a budget of {b}, given when this report was made; what each \
             was measured with is in its row."
        ),
        (None, _) => "Each run is judged against the criteria it was measured with (its row says \
                      which)."
            .to_string(),
    };
    let runs_word = |k: usize| if k == 1 { "run" } else { "runs" };
    let class = match (failed, unjudged) {
        (0, 0) => "pass",
        (0, _) => "unjudged",
        _ => "fail",
    };
    let headline = match (&verdicts[..], failed, unjudged) {
        ([one], _, _) => page_words(&crate::story::verdict::line(one)),
        (_, 0, 0) => format!("PASS: all {n} runs passed"),
        (_, 0, _) => format!(
            "CANNOT JUDGE: {unjudged} of {n} {} cannot be judged",
            runs_word(n)
        ),
        _ => format!("FAIL: {failed} of {n} {} failed", runs_word(n)),
    };
    let measured: Vec<(String, &MeasureRun)> = runs
        .iter()
        .filter(|r| r.run.noise.is_none())
        .map(|r| (r.name.to_string(), r.run))
        .collect();
    let compared = (measured.len() > 1).then(|| Comparison::new(&measured));
    let warnings = compared
        .as_ref()
        .map(Comparison::warnings)
        .unwrap_or_default();
    let comparison = compared.map(|c| Value::from_safe_string(compare_html(&c)));
    VerdictCtx {
        class,
        headline,
        budget,
        rows,
        comparison,
        warnings,
        remarks: idle_worse(&measured).into_iter().collect(),
        causes: causes(runs),
        causes_heading: match failed {
            0 => "What affects these figures",
            _ => "What stands in the way",
        },
    }
}

/// A verdict's words as the page says them: the budget by name, not by the flag that sets it
/// (`exceeds --budget 100us` reads `exceeds the budget of 100us`), as a report is read by
/// people who did not type the command.
fn page_words(text: &str) -> String {
    text.replace("without --budget", "without a budget")
        .replace("--budget ", "the budget of ")
}

/// The remark when a run without load (idle) was worse, at p99.9 and at its maximum, than
/// every run under load: the opposite of what a reader expects, and a sign of power
/// management (2148 us idle against 287 us under full load went unremarked; issue #48).
fn idle_worse(measured: &[(String, &MeasureRun)]) -> Option<String> {
    let figures = |r: &MeasureRun| Some((r.all.stats.p99_9_ns?, r.all.stats.max_ns?));
    let (idle_name, idle) = measured.iter().find(|(_, r)| r.load.is_none())?;
    let (idle_p, idle_max) = figures(idle)?;
    let loaded: Vec<(&String, (u64, u64))> = measured
        .iter()
        .filter(|(_, r)| r.load.is_some())
        .filter_map(|(n, r)| Some((n, figures(r)?)))
        .collect();
    let (best_name, (best_p, _)) = loaded.iter().min_by_key(|(_, (p, _))| *p)?;
    let worse = loaded
        .iter()
        .all(|(_, (p, m))| idle_p > *p && idle_max > *m);
    worse.then(|| {
        format!(
            "{idle_name} was worse than every run under load: p99.9 {} us against {} us under \
             {best_name}, as when idle CPUs save power (idle states, frequency scaling)",
            crate::format_us(idle_p),
            crate::format_us(*best_p)
        )
    })
}

/// A run's warning codes and the audit finding each restates.
const SAME_AS_AUDIT: &[(&str, &str)] = &[
    ("not-preempt-rt", "kernel.preempt_rt"),
    ("rt-throttling", "sched.rt_throttling"),
    ("cpu-not-isolated", "cpu.isolation"),
];

/// The most causes the first screen lists; the machine's section has every finding.
const MAX_CAUSES: usize = 6;

/// What rtlab knows stands in the way of low latency on these runs' machines: each failed
/// audit check with its fix, then each warning the runs carry (not PREEMPT_RT, RT throttling,
/// CPUs not isolated, ...), each once, in the runs' order.
fn causes(runs: &[ReportRun<'_>]) -> Vec<Cause> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let audit_fails = runs.iter().flat_map(|r| r.run.audit.iter()).flat_map(|a| {
        a.top
            .iter()
            .filter(|t| t.status == model::audit::Status::Fail)
    });
    for t in audit_fails {
        if !seen.contains(&t.id) {
            seen.push(t.id.clone());
            out.push(Cause {
                what: t.summary.clone(),
                fix: t.fix.clone(),
            });
        }
    }
    for w in runs.iter().flat_map(|r| &r.run.warnings) {
        // A warning that restates an audit finding listed already is said once, with the
        // finding's fix.
        let restated = SAME_AS_AUDIT
            .iter()
            .any(|(code, id)| *code == w.code && seen.iter().any(|s| s == id));
        if !seen.contains(&w.code) && !restated {
            seen.push(w.code.clone());
            out.push(Cause {
                what: w.message.clone(),
                fix: None,
            });
        }
    }
    out.truncate(MAX_CAUSES);
    out
}

/// A run's reasons in words, its CPUs over budget said once (the worst column has the figure):
/// `CPUs 0, 1 over the 100us budget`.
fn reasons(verdict: &model::gate::Verdict) -> Vec<String> {
    let mut over: Vec<u32> = Vec::new();
    let mut budget = None;
    let mut out = Vec::new();
    for r in &verdict.reasons {
        match r {
            model::gate::Reason::OverBudget { cpu, budget: b, .. } => {
                over.push(*cpu);
                budget = Some(*b);
            }
            other => out.push(page_words(&words(other))),
        }
    }
    if let Some(b) = budget {
        let cpus: Vec<String> = over.iter().map(ToString::to_string).collect();
        let which = match cpus.as_slice() {
            [one] => format!("CPU {one}"),
            _ => format!("CPUs {}", cpus.join(", ")),
        };
        out.insert(0, format!("{which} over the {b} budget"));
    }
    out
}

fn row(verdict: &model::gate::Verdict, r: &ReportRun<'_>, key: &str) -> VerdictRow {
    let outcome = verdict.outcome();
    let class = match outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::CannotJudge => "unjudged",
    };
    VerdictRow {
        name: r.name.to_string(),
        anchor: format!("run-{key}"),
        word: outcome.word(),
        class,
        worst: worst(r.run),
        criteria: verdict.criteria.describe(),
        reasons: reasons(verdict),
    }
}

/// The criteria line of a one-run report: `Held to: budget 50us, as measured (of wake-up
/// latency).`
fn held_to(criteria: &str, noise: bool) -> String {
    let of = if noise {
        " (a noise run: its longest interruption is held to the budget)"
    } else {
        ""
    };
    format!("Held to: {criteria}{of}.")
}

/// The run's largest figure and where: `max 4915.7 us (CPU 1)`; `-` when it measured nothing.
fn worst(run: &MeasureRun) -> String {
    let what = if run.noise.is_some() {
        "longest interruption"
    } else {
        "max"
    };
    run.cpus
        .iter()
        .filter_map(|c| c.stats.max_ns.map(|m| (m, c.cpu)))
        .max()
        .map_or("-".to_string(), |(max, cpu)| {
            format!("{what} {} us (CPU {cpu})", crate::format_us(max))
        })
}
