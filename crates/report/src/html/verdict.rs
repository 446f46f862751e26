//! The first screen of a report: the verdict against the budget for the whole report, then per
//! run with its worst figure and every reason in words (`report::story::verdict`), readable
//! without colour (the words PASS, FAIL and CANNOT JUDGE, not only a colour); then the runs
//! compared, Min / Avg / p99.9 / Max per CPU with the change against the first
//! (`compare_html`).

use minijinja::value::Value;
use model::gate::Gate;
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
    /// Every reason against it, in words.
    pub reasons: Vec<String>,
}

/// The verdict on `runs` (anchored by `keys`) against the report's budget.
pub(super) fn verdict(
    runs: &[ReportRun<'_>],
    keys: &[String],
    options: &ReportOptions,
) -> VerdictCtx {
    let gate = Gate::new(options.budget);
    let rows: Vec<VerdictRow> = runs
        .iter()
        .zip(keys)
        .map(|(r, key)| row(&gate, r, key))
        .collect();
    let failed = rows.iter().filter(|r| r.word == "FAIL").count();
    let unjudged = rows.iter().filter(|r| r.word == "CANNOT JUDGE").count();
    let n = rows.len();
    let noise = runs.iter().any(|r| r.run.noise.is_some());
    let budget = match options.budget {
        Some(b) if noise => {
            format!("Budget: {b} of wake-up latency (a noise run: of its longest interruption).")
        }
        Some(b) => format!("Budget: {b} of wake-up latency."),
        None => "No budget was given: only what cannot be judged or missed a deadline fails \
                 (`rtlab report --budget TIME` judges the latencies)."
            .to_string(),
    };
    let runs_word = |k: usize| if k == 1 { "run" } else { "runs" };
    let (class, headline) = if failed > 0 {
        (
            "fail",
            format!("FAIL: {failed} of {n} {} failed", runs_word(n)),
        )
    } else if unjudged > 0 {
        (
            "unjudged",
            format!(
                "CANNOT JUDGE: {unjudged} of {n} {} cannot be judged",
                runs_word(n)
            ),
        )
    } else if n == 1 {
        ("pass", "PASS: the run passed".to_string())
    } else {
        ("pass", format!("PASS: all {n} runs passed"))
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

fn row(gate: &Gate, r: &ReportRun<'_>, key: &str) -> VerdictRow {
    let verdict = gate.judge(r.run);
    let (word, class) = if verdict.failures().next().is_some() {
        ("FAIL", "fail")
    } else if !verdict.judgeable() {
        ("CANNOT JUDGE", "unjudged")
    } else {
        ("PASS", "pass")
    };
    VerdictRow {
        name: r.name.to_string(),
        anchor: format!("run-{key}"),
        word,
        class,
        worst: worst(r.run),
        reasons: verdict.reasons.iter().map(words).collect(),
    }
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
