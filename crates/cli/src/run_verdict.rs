//! The end of `rtlab run`: each phase judged against --budget through the gate, and the
//! verdict said two ways — the lines that end standard output (`verdict: FAIL: ...`), or the
//! `rtlab.evaluation/1` document with `--format json` — plus the line per phase printed as it
//! ends when standard output is not a terminal.

use std::io::IsTerminal;

use model::evaluation::{self, Evaluation, Outcome, PhaseKind};
use model::gate::{Reason, Verdict};
use model::measure::MeasureRun;

use crate::console;
use crate::exit::Exit;

/// One phase measured, with its verdict (`None`: not judged).
pub(crate) struct Judged<'a> {
    pub label: &'a str,
    pub run: &'a MeasureRun,
    pub kind: PhaseKind,
    pub verdict: Option<Verdict>,
}

/// Judges the latency phases whose label `judged` accepts against `budget` (which they were
/// measured with); the noise phases are listed unjudged.
pub(crate) fn judge<'a>(
    runs: &'a [(String, MeasureRun)],
    noise_runs: &'a [(String, MeasureRun)],
    budget: model::Nanos,
    judged: &dyn Fn(&str) -> bool,
) -> Vec<Judged<'a>> {
    let latency = runs.iter().map(|(label, run)| Judged {
        label,
        run,
        kind: PhaseKind::Latency,
        // Against the budget the phase was measured with (--budget, passed on to it); a run
        // that carries another (or none) is re-judged against it, and its verdict says so.
        verdict: judged(label).then(|| model::gate::judge_held_to(run, budget)),
    });
    let noise = noise_runs.iter().map(|(label, run)| Judged {
        label,
        run,
        kind: PhaseKind::Noise,
        verdict: None,
    });
    latency.chain(noise).collect()
}

/// A judged phase's outcome: the gate's (a failed criterion outranks "cannot be judged").
pub(crate) fn outcome(v: &Verdict) -> Outcome {
    match v.outcome() {
        model::gate::Outcome::Pass => Outcome::Pass,
        model::gate::Outcome::Fail => Outcome::Fail,
        model::gate::Outcome::CannotJudge => Outcome::CannotJudge,
    }
}

/// The verdict's lines that end standard output, and the exit status:
/// `verdict: FAIL: over the 100us budget: idle max 900.0 us`.
pub(crate) fn text(phases: &[Judged], budget: model::Nanos, tuned: bool) -> (Exit, String) {
    let what = if tuned { "tuned phase" } else { "phase" };
    let mut lines = String::new();
    let mut over = Vec::new();
    for p in phases {
        let Some(v) = &p.verdict else { continue };
        match outcome(v) {
            // A phase that measured nothing cannot be within the budget.
            Outcome::CannotJudge => {
                if let Some(Reason::Unjudgeable { why }) =
                    v.reasons.iter().find(|r| r.is_unjudgeable())
                {
                    lines += &format!("verdict: CANNOT JUDGE: {what} {}: {why}\n", p.label);
                }
            }
            // Over the budget: the phase's maximum; another failed criterion (a missed
            // deadline): its words.
            Outcome::Fail => {
                let over_budget = v.failures().any(|r| matches!(r, Reason::OverBudget { .. }));
                if over_budget {
                    let max = p.run.all.stats.max_ns.unwrap_or_default();
                    over.push(format!("{} max {} us", p.label, report::format_us(max)));
                }
                for r in v
                    .failures()
                    .filter(|r| !matches!(r, Reason::OverBudget { .. }))
                {
                    lines += &format!(
                        "verdict: FAIL: {what} {}: {}\n",
                        p.label,
                        report::story::verdict::words(r)
                    );
                }
            }
            Outcome::Pass | Outcome::Interrupted => {}
        }
    }
    if !over.is_empty() {
        lines += &format!(
            "verdict: FAIL: over the {budget} budget: {}\n",
            over.join(", ")
        );
    }
    if lines.is_empty() {
        let line = format!("verdict: PASS: every {what} stayed within the {budget} budget\n");
        return (Exit::Ok, line);
    }
    (Exit::VerdictFailed, lines)
}

/// What the document needs besides the phases.
pub(crate) struct About<'a> {
    pub session: &'a str,
    pub budget: model::Nanos,
    pub tuned: bool,
    pub audit: model::audit::Counts,
    pub report: Option<String>,
    pub interrupted: bool,
}

/// The `rtlab.evaluation/1` document, and the exit status it stands for.
pub(crate) fn document(phases: &[Judged], about: About) -> (Exit, Evaluation) {
    let phases: Vec<evaluation::Phase> = phases
        .iter()
        .map(|p| {
            let stats = &p.run.all.stats;
            evaluation::Phase {
                label: p.label.to_string(),
                kind: p.kind,
                status: p.run.status,
                verdict: p.verdict.as_ref().map(outcome),
                reasons: p
                    .verdict
                    .iter()
                    .flat_map(|v| &v.reasons)
                    .map(report::story::verdict::words)
                    .collect(),
                samples: stats.count,
                max_ns: stats.max_ns,
                p99_9_ns: stats.p99_9_ns,
            }
        })
        .collect();
    let verdict = Evaluation::overall(&phases, about.interrupted);
    let exit = match verdict {
        Outcome::Pass => Exit::Ok,
        Outcome::Fail | Outcome::CannotJudge => Exit::VerdictFailed,
        Outcome::Interrupted => Exit::Interrupted,
    };
    let doc = Evaluation {
        schema: evaluation::SCHEMA.to_string(),
        session: about.session.to_string(),
        verdict,
        budget_ns: about.budget,
        tuned: about.tuned,
        audit: about.audit,
        report: about.report,
        phases,
    };
    (exit, doc)
}

/// With standard output not a terminal (a script, a log file): one line per phase as it
/// ends, so what a run measured is there before the end, and even if it never comes.
pub(crate) fn phase_line(
    n: usize,
    of: usize,
    label: &str,
    run: Option<&MeasureRun>,
    interrupted: bool,
) -> anyhow::Result<()> {
    if std::io::stdout().is_terminal() {
        return Ok(());
    }
    let figures = run.map_or("nothing measured".to_string(), |r| {
        let s = &r.all.stats;
        let us = |v: Option<u64>| v.map_or("-".to_string(), |v| report::format_us(v) + " us");
        format!(
            "max {}, p99.9 {}, {} sample{}",
            us(s.max_ns),
            us(s.p99_9_ns),
            s.count,
            if s.count == 1 { "" } else { "s" }
        )
    });
    let status = if interrupted { " (interrupted)" } else { "" };
    console::print_stdout(&format!(
        "phase {} of {of}: {label}: {figures}{status}\n",
        n + 1
    ))?;
    Ok(())
}
