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
            "Every run judged against {b} given now (`--budget`); what each was measured with is in its row."
        ),
        (None, _) => "Each run is judged against the criteria it was measured with (its row says \
                      which); `rtlab report --budget TIME` judges them all against one budget."
            .to_string(),
    };
    let runs_word = |k: usize| if k == 1 { "run" } else { "runs" };
    let class = match (failed, unjudged) {
        (0, 0) => "pass",
        (0, _) => "unjudged",
        _ => "fail",
    };
    let headline = match (&verdicts[..], failed, unjudged) {
        ([one], _, _) => crate::story::verdict::line(one),
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
    }
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
        reasons: verdict.reasons.iter().map(words).collect(),
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
