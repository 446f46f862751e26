//! A campaign step's verdict, made by the gate ([`model::gate::judge`]) on the runs its attempts
//! stored, as `rtlab show` would judge each of them: the step's own rule is only how the
//! attempts' verdicts combine (any failed run fails the step; a step that stored nothing, or a
//! run that cannot be judged, cannot be judged). A reboot test's step fails on a bad boot.

use std::collections::BTreeMap;
use std::path::Path;

use model::Nanos;
use model::campaign_state::{Attempt, CampaignState, Outcome as AttemptOutcome};
use model::gate::Outcome;
use model::measure::{MeasureRun, RunStatus};

/// The stored runs of a campaign's attempts, by the id its state records.
pub(crate) type StepRuns = BTreeMap<String, MeasureRun>;

/// Every attempt's run as the campaign's store holds it; one it cannot load is left out (the
/// step's verdict then says so).
pub(crate) fn stored_runs(state: &CampaignState) -> StepRuns {
    let mut runs = BTreeMap::new();
    let ids: Vec<&str> = state
        .steps
        .iter()
        .flat_map(|s| &s.attempts)
        .filter_map(|a| a.run_id.as_deref())
        .collect();
    if ids.is_empty() {
        return runs;
    }
    let Ok(store) = crate::runs::open_existing(Some(Path::new(&state.options.db))) else {
        return runs;
    };
    for id in ids {
        let run = crate::runs::resolve(&store, id).and_then(|r| Ok(store.load_measure(&r)?));
        if let Ok(run) = run {
            runs.insert(id.to_string(), run);
        }
    }
    runs
}

/// A measuring step's verdict and its reasons in words (`attempt 1: CPU 0: max latency
/// 60.0us exceeds --budget 50us`): each attempt's run against the budget it was measured with
/// (the phase's, given to its `rtlab measure`), or the phase's `budget` for a run that carries
/// another or none (stored before runs carried theirs).
pub(crate) fn measuring_step(
    attempts: &[Attempt],
    budget: Nanos,
    runs: &StepRuns,
) -> (Outcome, Vec<String>) {
    let mut outcomes = Vec::new();
    let mut reasons = Vec::new();
    // A lost attempt (killed before its first checkpoint) stored no run: nothing to judge.
    for a in attempts {
        let Some(id) = a.run_id.as_deref() else {
            continue;
        };
        let Some(run) = runs.get(id) else {
            outcomes.push(Outcome::CannotJudge);
            reasons.push(format!("attempt {}: its run {id} is not in the store", a.n));
            continue;
        };
        // An attempt a signal cut short, after which the step went on for what was left, is
        // one part of the step's measurement: held to the budget on what it measured. The
        // last attempt cut short leaves the step unfinished, and the gate says so.
        let continued = attempts.iter().any(|b| b.n > a.n);
        let verdict = if continued && run.status == RunStatus::Interrupted {
            let mut part = run.clone();
            part.status = RunStatus::Complete;
            model::gate::judge_held_to(&part, budget)
        } else {
            model::gate::judge_held_to(run, budget)
        };
        // An attempt stopped before its first sample (its checkpoint was written, nothing
        // measured yet) measured nothing, as a lost one: the step went on without it.
        let nothing = verdict.cpus.iter().all(|c| c.ns.is_none());
        if nothing && a.outcome != Some(AttemptOutcome::Complete) {
            continue;
        }
        outcomes.push(verdict.outcome());
        reasons.extend(
            verdict
                .reasons
                .iter()
                .map(|r| format!("attempt {}: {}", a.n, report::story::verdict::words(r))),
        );
    }
    let outcome = if outcomes.contains(&Outcome::Fail) {
        Outcome::Fail
    } else if outcomes.is_empty() {
        reasons.push("nothing was measured".to_string());
        Outcome::CannotJudge
    } else if outcomes.contains(&Outcome::CannotJudge) {
        Outcome::CannotJudge
    } else {
        Outcome::Pass
    };
    (outcome, reasons)
}
