//! `rtlab campaign status`: where a campaign is — the step running (attempt, measured and
//! remaining), what is done (run ids, worst latency, verdict), what is left, the boots — as
//! lines or as the `rtlab.campaign/1` document; and the campaign's verdict at its end.

use std::path::Path;

use anyhow::Result;
use model::Nanos;
use model::campaign::{PhaseKind, Plan};
use model::campaign_state::{
    CampaignState, CampaignStatus, STATUS_SCHEMA, StepStatus, StepStatusDoc,
};
use model::gate::Outcome;

use super::judge::StepRuns;

use super::Ctx;
use crate::exit::Exit;
use crate::flags::CampaignFormat;

/// Prints the status of the campaign in `dir` (no lock taken: it reads a consistent state
/// file while the campaign runs).
pub(crate) fn run(dir: &Path, format: CampaignFormat, root: &sys::Root) -> Result<Exit> {
    let (plan, state) = read_existing(dir)?;
    let mut doc = document(&plan, &state, &super::judge::stored_runs(&state));
    live(&mut doc, dir, &state, root);
    let text = match format {
        CampaignFormat::Json => {
            serde_json::to_string_pretty(&doc).expect("the status serializes") + "\n"
        }
        CampaignFormat::Text => text(&doc),
    };
    crate::console::print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// Adds what the open attempts show now to the running steps: the time their checkpoints
/// measured (the state file records an attempt's time only once it ends), and whether their
/// process is gone (killed, or the power went: the next `rtlab campaign run` resumes).
fn live(doc: &mut CampaignStatus, dir: &Path, state: &CampaignState, root: &sys::Root) {
    let boot = sys::host::boot(root).map(|(id, _)| id).unwrap_or_default();
    for (d, s) in doc.steps.iter_mut().zip(&state.steps) {
        for a in s.attempts.iter().filter(|a| a.outcome.is_none()) {
            let (measured, alive) = super::step::open_attempt(root, (dir, &boot), a);
            d.measured_ns = d.measured_ns.saturating_add(measured);
            if let (Some(left), Some(duration)) = (d.remaining_ns.as_mut(), d.duration_ns) {
                *left = duration.saturating_sub(d.measured_ns);
            }
            d.stopped |= !alive;
        }
    }
}

/// The plan and state of the campaign in `dir`; a usage error (exit 2) when none was started
/// there.
fn read_existing(dir: &Path) -> Result<(Plan, CampaignState)> {
    if !dir.join(super::STATE_FILE).exists() {
        return Err(crate::exit::UsageError(format!(
            "{}: no campaign here (no {}); give the --state DIR a campaign was started with",
            dir.display(),
            super::STATE_FILE
        ))
        .into());
    }
    super::read(dir)
}

/// `rtlab campaign report`: every run the campaign stored, in step order, in one HTML report
/// (`rtlab report`'s, each run's plots), each judged against its phase's budget: the one it
/// was measured with (a run stored before runs carried theirs is given its phase's).
pub(crate) fn report(args: &crate::flags::CampaignReportArgs) -> Result<Exit> {
    let dir = &args.state;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| dir.join("report.html"));
    let check = || {
        files::check_creatable(&output)
            .map_err(|e| crate::exit::UsageError(format!("--output {}: {e}", output.display())))
    };
    // A named output first, as every command checks its outputs; the default one lies in the
    // state directory, which must be a campaign's.
    if args.output.is_some() {
        check()?;
    }
    let (plan, state) = read_existing(dir)?;
    check()?;
    let store = crate::runs::open_existing(Some(Path::new(&state.options.db)))?;
    let mut named = Vec::new();
    for (k, (step, planned)) in state.steps.iter().zip(plan.steps()).enumerate() {
        let budget = match &plan.phases[planned.phase].kind {
            PhaseKind::Measure(m) => Some(m.budget),
            PhaseKind::RebootTest { .. } => None,
        };
        for a in &step.attempts {
            let Some(id) = a.run_id.as_deref() else {
                continue;
            };
            let run_id = crate::runs::resolve(&store, id)?;
            let mut run = store.load_measure(&run_id)?;
            if run.params.budget_ns.is_none() {
                run.params.budget_ns = budget;
            }
            let interrupted = a.outcome != Some(model::campaign_state::Outcome::Complete);
            named.push(crate::runs::NamedRun {
                run,
                name: if interrupted {
                    format!("{} (attempt {}, interrupted)", step.label, a.n)
                } else {
                    step.label.clone()
                },
                source: format!(
                    "step {} of campaign {}, attempt {}, run {id}",
                    k + 1,
                    state.name,
                    a.n
                ),
                key: format!("{:03}-{}-{}", k + 1, a.n, id),
            });
        }
    }
    if named.is_empty() {
        return Err(crate::exit::UsageError(format!(
            "campaign {} has stored no run yet: nothing to report",
            state.name
        ))
        .into());
    }
    let options = report::html::ReportOptions {
        budget: None,
        timeline: true,
    };
    crate::report_cmd::write(&named, &options, &output, None)?;
    crate::console::print_stdout(&format!(
        "report of {} runs: {}\n",
        named.len(),
        output.display()
    ))?;
    Ok(Exit::Ok)
}

/// The status document; `runs` are the attempts' stored runs, which the steps' verdicts are
/// made of ([`super::judge`]).
pub(crate) fn document(plan: &Plan, state: &CampaignState, runs: &StepRuns) -> CampaignStatus {
    let steps: Vec<StepStatusDoc> = plan
        .steps()
        .iter()
        .zip(&state.steps)
        .map(|(step, s)| {
            let measured: u64 = s.attempts.iter().map(|a| a.elapsed_ns).sum();
            let max_ns = s.attempts.iter().filter_map(|a| a.max_ns).max();
            let (kind, duration, budget) = match &plan.phases[step.phase].kind {
                PhaseKind::Measure(m) => ("measure", Some(m.duration.get()), Some(m.budget.get())),
                PhaseKind::RebootTest { .. } => ("reboot-test", None, None),
            };
            let judged = (s.status == StepStatus::Done).then(|| match budget {
                Some(b) => super::judge::measuring_step(&s.attempts, Nanos(b), runs),
                None if s.checks.iter().any(|c| c.problem.is_some()) => {
                    (Outcome::Fail, vec!["a boot check failed".to_string()])
                }
                None => (Outcome::Pass, Vec::new()),
            });
            let (verdict, reasons) = match judged {
                Some((o, reasons)) => (Some(o.as_str().to_string()), reasons),
                None => (None, Vec::new()),
            };
            StepStatusDoc {
                label: s.label.clone(),
                kind: kind.to_string(),
                status: s.status,
                duration_ns: duration,
                measured_ns: measured,
                remaining_ns: duration.map(|d| {
                    if s.status == StepStatus::Done {
                        0
                    } else {
                        d.saturating_sub(measured)
                    }
                }),
                budget_ns: budget,
                max_ns,
                verdict,
                reasons,
                attempts: s.attempts.clone(),
                checks: s.checks.clone(),
                stopped: false,
            }
        })
        .collect();
    let done = steps
        .iter()
        .filter(|s| s.status == StepStatus::Done)
        .count();
    let current = steps.iter().position(|s| s.status != StepStatus::Done);
    CampaignStatus {
        schema: STATUS_SCHEMA.to_string(),
        name: state.name.clone(),
        session: state.session.clone(),
        status: if done == steps.len() {
            StepStatus::Done
        } else if steps.iter().all(|s| s.status == StepStatus::Pending) {
            StepStatus::Pending
        } else {
            StepStatus::Running
        },
        steps_done: done,
        steps_total: steps.len(),
        current: current.map(|c| c + 1),
        steps,
        boots: state.boots.clone(),
        reboot: state.reboot.clone(),
        tuning_applied: state.tuning_applied,
    }
}

/// The status as lines.
fn text(doc: &CampaignStatus) -> String {
    let mut out = format!(
        "campaign {} (session {}): {} of {} steps done\n",
        doc.name, doc.session, doc.steps_done, doc.steps_total
    );
    for (n, s) in doc.steps.iter().enumerate() {
        let runs: Vec<&str> = s
            .attempts
            .iter()
            .filter_map(|a| a.run_id.as_deref())
            .collect();
        let what = match s.status {
            StepStatus::Pending => "pending".to_string(),
            StepStatus::Running if s.stopped => format!(
                "stopped (no process: `rtlab campaign run` resumes it), attempt {}{}",
                s.attempts.len().max(1),
                s.remaining_ns
                    .map(|r| format!(", measured {}, {} left", Nanos(s.measured_ns), Nanos(r)))
                    .unwrap_or_default()
            ),
            StepStatus::Running => format!(
                "running, attempt {}{}",
                s.attempts.len().max(1),
                s.remaining_ns
                    .map(|r| format!(", measured {}, {} left", Nanos(s.measured_ns), Nanos(r)))
                    .unwrap_or_default()
            ),
            StepStatus::Done => format!("done, {}", s.verdict.as_deref().unwrap_or("")),
        };
        out.push_str(&format!("  {:>3}  {:<24} {what}", n + 1, s.label));
        if let Some(max) = s.max_ns {
            out.push_str(&format!(", max {} us", report::format_us(max)));
        }
        if !runs.is_empty() {
            out.push_str(&format!(", runs {}", runs.join(" ")));
        }
        if s.kind == "reboot-test" && !s.checks.is_empty() {
            out.push_str(&format!(", {} boots checked", s.checks.len()));
        }
        out.push('\n');
    }
    out.push_str(&format!("boots: {}\n", doc.boots.len()));
    for b in &doc.boots {
        out.push_str(&format!(
            "  {} {} {}\n",
            b.first_seen_at, b.boot_id, b.kernel
        ));
    }
    if let Some(r) = &doc.reboot {
        out.push_str(&format!(
            "a reboot was asked at {} after step {}\n",
            r.at,
            r.after_step + 1
        ));
    }
    if doc.tuning_applied {
        out.push_str("a tuning is applied (journal in the state directory)\n");
    }
    out
}

/// Why a step did not pass, in words.
fn failure(s: &StepStatusDoc) -> String {
    format!("{}: {}", s.label, s.reasons.join("; "))
}

/// The campaign's verdict once every step is done: 0 when every step passed, 1 otherwise (a
/// step that failed or cannot be judged).
pub(crate) fn verdict(ctx: &mut Ctx<'_>) -> Exit {
    let doc = document(
        &ctx.plan,
        &ctx.state,
        &super::judge::stored_runs(&ctx.state),
    );
    let failed: Vec<String> = doc
        .steps
        .iter()
        .filter(|s| s.verdict.as_deref() != Some("pass"))
        .map(failure)
        .collect();
    let _ = crate::console::print_stdout(&text(&doc));
    if failed.is_empty() {
        ctx.console
            .verdict(&format!("campaign {} done: every step passed", doc.name));
        Exit::Ok
    } else {
        ctx.console.verdict(&format!(
            "campaign {} done: {}",
            doc.name,
            failed.join(", ")
        ));
        Exit::VerdictFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::campaign_state::{Attempt, Options, Outcome, STATE_SCHEMA, StepState};

    fn attempt(n: u32, outcome: Outcome, elapsed_s: u64, max_us: u64) -> Attempt {
        Attempt {
            n,
            started_at: "2026-11-24T00:00:00Z".into(),
            boot_id: "b".into(),
            duration_ns: 8 * 3600 * 1_000_000_000,
            file: format!("step-001-attempt-{n}.json"),
            pid: None,
            outcome: Some(outcome),
            run_id: Some(format!("{n:012}")),
            elapsed_ns: elapsed_s * 1_000_000_000,
            max_ns: Some(max_us * 1000),
        }
    }

    /// A campaign state with `steps`, as started.
    fn state_of(steps: Vec<StepState>) -> CampaignState {
        CampaignState {
            schema: STATE_SCHEMA.into(),
            name: "c".into(),
            session: "s".into(),
            created_at: "2026-11-24T00:00:00Z".into(),
            options: Options::default(),
            tuning_applied: false,
            steps,
            boots: vec![],
            reboot: None,
            finished_at: None,
        }
    }

    /// The stored runs of `attempts` (by their ids): one CPU whose worst is the attempt's
    /// `max_ns`, measured with `budget`.
    fn runs_of<'a>(
        attempts: impl IntoIterator<Item = &'a Attempt>,
        budget: Option<Nanos>,
    ) -> StepRuns {
        attempts
            .into_iter()
            .filter_map(|a| {
                let max = a.max_ns?;
                let mut run =
                    testkit::runs::run_of(vec![testkit::runs::cpu(0, None, &[5_000, max], 0)]);
                run.params.budget_ns = budget;
                Some((a.run_id.clone()?, run))
            })
            .collect()
    }

    #[test]
    fn a_step_is_judged_by_the_gate_on_the_runs_it_stored() {
        let plan = Plan::parse(
            "budget = \"50us\"\n[[phase]]\nname = \"a\"\nduration = \"1h\"\n",
            "p.toml",
        )
        .unwrap();
        let step = |attempts: Vec<Attempt>| StepState {
            label: "a".into(),
            status: StepStatus::Done,
            attempts,
            checks: vec![],
        };
        let mut lost = attempt(1, Outcome::Lost, 0, 0);
        (lost.run_id, lost.max_ns) = (None, None);
        let mut gone = attempt(1, Outcome::Complete, 3600, 0);
        gone.max_ns = None;
        for (attempts, verdict, words) in [
            (vec![attempt(1, Outcome::Complete, 3600, 50)], "pass", ""),
            (
                vec![
                    attempt(1, Outcome::Interrupted, 1800, 51),
                    attempt(2, Outcome::Complete, 1800, 20),
                ],
                "fail",
                "a: attempt 1: CPU 0: max latency 51.0us exceeds --budget 50us",
            ),
            (vec![lost], "unjudgeable", "a: nothing was measured"),
            (
                vec![gone],
                "unjudgeable",
                "a: attempt 1: its run 000000000001 is not in the store",
            ),
        ] {
            for budget in [None, Some(Nanos::from_us(50))] {
                let runs = runs_of(&attempts, budget);
                let state = state_of(vec![step(attempts.clone())]);
                let doc = document(&plan, &state, &runs);
                assert_eq!(doc.steps[0].verdict.as_deref(), Some(verdict));
                if verdict != "pass" {
                    assert_eq!(failure(&doc.steps[0]), words);
                }
            }
        }
        // A run stopped at --break counts as a complete attempt, and cannot be judged.
        let broken = attempt(1, Outcome::Complete, 3600, 20);
        let mut runs = runs_of([&broken], None);
        runs.values_mut().for_each(|r| {
            r.status = model::measure::RunStatus::BrokeThreshold;
        });
        let doc = document(&plan, &state_of(vec![step(vec![broken])]), &runs);
        assert_eq!(doc.steps[0].verdict.as_deref(), Some("unjudgeable"));
        // An attempt stopped before its first sample measured nothing, as a lost one does:
        // the step is judged on the rest.
        let first = attempt(1, Outcome::Interrupted, 0, 0);
        let second = attempt(2, Outcome::Complete, 3600, 20);
        let mut runs = runs_of([&second], None);
        let mut empty = testkit::runs::run_of(vec![testkit::runs::cpu(0, None, &[], 0)]);
        empty.status = model::measure::RunStatus::Interrupted;
        runs.insert(first.run_id.clone().unwrap(), empty);
        let doc = document(&plan, &state_of(vec![step(vec![first, second])]), &runs);
        assert_eq!(doc.steps[0].verdict.as_deref(), Some("pass"));
    }

    #[test]
    fn a_step_is_judged_over_all_its_attempts_and_says_what_is_left() {
        let plan = Plan::parse(
            "budget = \"50us\"\n[[phase]]\nname = \"RT-#2\"\nduration = \"8h\"\n[[phase]]\nname = \"idle\"\nduration = \"1h\"\n",
            "p.toml",
        )
        .unwrap();
        let state = state_of(vec![
            StepState {
                label: "RT-#2".into(),
                status: StepStatus::Done,
                // Killed at 7 h with a 60 us spike, then the last hour within budget.
                attempts: vec![
                    attempt(1, Outcome::Interrupted, 7 * 3600, 60),
                    attempt(2, Outcome::Complete, 3600, 20),
                ],
                checks: vec![],
            },
            StepState {
                label: "idle".into(),
                status: StepStatus::Running,
                attempts: vec![Attempt {
                    run_id: Some("idle00000001".into()),
                    ..attempt(1, Outcome::Interrupted, 600, 10)
                }],
                checks: vec![],
            },
        ]);
        let runs = runs_of(state.steps.iter().flat_map(|s| &s.attempts), None);
        let doc = document(&plan, &state, &runs);
        assert_eq!(doc.status, StepStatus::Running);
        assert_eq!(
            (doc.steps_done, doc.steps_total, doc.current),
            (1, 2, Some(2))
        );
        assert_eq!(doc.steps[0].max_ns, Some(60_000));
        assert_eq!(doc.steps[0].verdict.as_deref(), Some("fail"));
        assert_eq!(doc.steps[1].remaining_ns, Some(3000 * 1_000_000_000));
        assert_eq!(doc.steps[1].verdict, None);
        let text = text(&doc);
        assert!(text.contains("1 of 2 steps done"), "{text}");
        assert!(
            text.contains("running, attempt 1, measured 10m, 50m left"),
            "{text}"
        );
    }
}
