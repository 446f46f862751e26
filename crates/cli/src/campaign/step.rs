//! One measuring step of a campaign, exactly once: an attempt is recorded as running before
//! its child `rtlab measure --no-store -o FILE` starts; its result file (rewritten atomically
//! at every checkpoint) is saved to the store — idempotently, the run's id being the digest of
//! its document — and only then is the attempt marked. A complete run makes the step done; what
//! an interrupted attempt measured is stored as an interrupted run and the step goes on for
//! the rest of its duration as a new attempt. On resume an attempt marked running is settled
//! from its file the same way, so a kill at any moment neither loses nor repeats a run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Result;
use model::Nanos;
use model::campaign::{MIN_PHASE, MeasurePhase};
use model::campaign_state::{Attempt, MAX_ATTEMPTS, Outcome, StepStatus};
use model::limits::MAX_RESULT_BYTES;
use model::measure::{MeasureRun, RunStatus, Warning};

use super::{Ctx, StepEnd, now};
use crate::exit::UsageError;

/// Runs step `i` until it is done or stopped.
pub(crate) fn run(ctx: &mut Ctx<'_>, i: usize, phase: &MeasurePhase) -> Result<StepEnd> {
    settle(ctx, i)?;
    loop {
        if ctx.state.steps[i].status == StepStatus::Done {
            return Ok(StepEnd::Done);
        }
        let measured: u64 = ctx.state.steps[i]
            .attempts
            .iter()
            .map(|a| a.elapsed_ns)
            .sum();
        let remaining = phase.duration.get().saturating_sub(measured);
        if remaining < MIN_PHASE.get() {
            // Its interrupted attempts measured the whole duration between them.
            ctx.state.steps[i].status = StepStatus::Done;
            ctx.save()?;
            return Ok(StepEnd::Done);
        }
        let n = ctx.state.steps[i].attempts.len() as u32 + 1;
        if n > MAX_ATTEMPTS {
            return Err(UsageError(format!(
                "step {} ({}) was attempted {MAX_ATTEMPTS} times without finishing; look at its result files in {}",
                i + 1,
                ctx.steps[i].label,
                ctx.dir.display()
            ))
            .into());
        }
        if phase.tuned {
            super::reboot::apply(ctx)?;
        }
        let stopped = attempt(ctx, i, n, Nanos(remaining), phase)?;
        if phase.tuned {
            super::reboot::revert(ctx)?;
        }
        if stopped {
            return Ok(StepEnd::Stopped);
        }
        // An attempt that failed or was lost without a signal: the measure's message is above.
        if ctx.state.steps[i].status != StepStatus::Done
            && ctx.state.steps[i].attempts.last().and_then(|a| a.outcome) == Some(Outcome::Lost)
        {
            return Err(UsageError(format!(
                "step {} ({}) measured nothing (its rtlab measure failed; the message is above); `rtlab campaign resume --state {}` tries it again",
                i + 1,
                ctx.steps[i].label,
                ctx.dir.display()
            ))
            .into());
        }
    }
}

/// Runs one attempt of step `i`; true when a signal stopped it.
fn attempt(
    ctx: &mut Ctx<'_>,
    i: usize,
    n: u32,
    duration: Nanos,
    phase: &MeasurePhase,
) -> Result<bool> {
    let file = format!("step-{:03}-attempt-{n}.json", i + 1);
    let path = ctx.dir.join(&file);
    // A file of an attempt that never got recorded (a kill between writing and recording).
    let _ = std::fs::remove_file(&path);
    let step = &mut ctx.state.steps[i];
    step.status = StepStatus::Running;
    step.attempts.push(Attempt {
        n,
        started_at: now(),
        boot_id: ctx.boot.clone(),
        duration_ns: duration.get(),
        file: file.clone(),
        pid: None,
        outcome: None,
        run_id: None,
        elapsed_ns: 0,
        max_ns: None,
    });
    ctx.save()?;
    ctx.note(&format!(
        "{}: attempt {n}, measuring for {duration}",
        ctx.steps[i].label
    ));
    let journal = tuned_journal(ctx, phase);
    let cmd = measure_command(ctx, phase, duration, &path, journal.as_deref())?;
    let signals = ctx.signals.take().expect("blocked in drive");
    let label = ctx.steps[i].label.clone();
    let result = {
        let (state, dir) = (&mut ctx.state, &ctx.dir);
        crate::run_session::run_child(
            cmd,
            &label,
            &signals,
            &mut ctx.console,
            journal.is_some(),
            &mut |pid| {
                if let Some(a) = state.steps[i].attempts.last_mut() {
                    a.pid = Some(pid);
                }
                super::write_state(dir, state)
            },
        )
    };
    ctx.signals = Some(signals);
    let stopped = match result {
        Ok((_, code, signal)) => signal.is_some() || code == Some(130),
        // The child failed: what its file holds (if anything) is still kept.
        Err(e) => {
            ctx.console.warn(&format!("{e:#}"));
            false
        }
    };
    settle(ctx, i)?;
    Ok(stopped)
}

/// The journal of the tuning a tuned phase measures under, when it made an RT cpuset to
/// measure in (`rtlab tune run`); where there is no cpuset controller the tuning's other
/// changes still hold, and the phase measures on its CPUs without one.
fn tuned_journal(ctx: &mut Ctx<'_>, phase: &MeasurePhase) -> Option<PathBuf> {
    phase
        .tuned
        .then(|| ctx.journal())
        .filter(|j| match tune::rt_group(j) {
            Ok(_) => true,
            Err(why) => {
                ctx.console.warn(&format!(
                    "{why}: the tuned phase measures on its CPUs without an RT cpuset"
                ));
                false
            }
        })
}

/// The child `rtlab measure` of one attempt, writing its result (and checkpoints) to `path`.
fn measure_command(
    ctx: &Ctx<'_>,
    phase: &MeasurePhase,
    duration: Nanos,
    path: &Path,
    journal: Option<&Path>,
) -> Result<Command> {
    let mut cmd = crate::run_session::rtlab_command(ctx.root, journal)?;
    cmd.args([
        "measure",
        "--format",
        "json",
        "--no-store",
        "--checkpoint",
        "1s",
    ])
    .arg("--duration")
    .arg(duration.to_string())
    // The run carries the budget it is judged against (`campaign status`, `show`, `report`).
    .arg("--budget")
    .arg(phase.budget.to_string())
    .arg("--output")
    .arg(path);
    if let Some(cpus) = &phase.cpus {
        cmd.args(["--cpus", cpus]);
    }
    if let Some(interval) = ctx.plan.interval {
        cmd.arg("--interval").arg(interval.to_string());
    }
    if let Some(load) = &phase.load {
        cmd.args(["--load", load]);
        if let Some(j) = journal
            && let Ok(rt) = tune::rt_group(j)
            && let Some((parent, _)) = rt.rsplit_once('/')
        {
            cmd.arg("--load-join")
                .arg(format!("{parent}/rtlab-housekeeping"));
        }
    }
    if let Some(script) = &ctx.state.options.fake_clock {
        cmd.args(["--fake-clock", script]);
    }
    if ctx.quiet {
        cmd.arg("--quiet");
    }
    Ok(cmd)
}

/// Settles step `i`'s last attempt if it is not settled: its measuring process gone, its
/// result file saved to the store (idempotently) and the outcome recorded.
pub(crate) fn settle(ctx: &mut Ctx<'_>, i: usize) -> Result<()> {
    let Some(a) = ctx.state.steps[i].attempts.last().cloned() else {
        return Ok(());
    };
    if a.outcome.is_some() {
        return Ok(());
    }
    // A process id of another boot names nothing of this campaign's.
    if let Some(pid) = a.pid.filter(|_| a.boot_id == ctx.boot) {
        gone(pid);
    }
    let path = ctx.dir.join(&a.file);
    let Some(mut run) = read_run(&path) else {
        let last = ctx.state.steps[i]
            .attempts
            .last_mut()
            .expect("there is one");
        last.outcome = Some(Outcome::Lost);
        ctx.save()?;
        return Ok(());
    };
    let outcome = match run.status {
        RunStatus::Complete | RunStatus::BrokeThreshold => Outcome::Complete,
        RunStatus::Interrupted => Outcome::Interrupted,
        RunStatus::Running => {
            // The campaign (and with it the measurement) was killed, or the power went:
            // the checkpoint is what it measured, up to its end time.
            run.status = RunStatus::Interrupted;
            run.warnings.push(Warning::new(
                "campaign-killed",
                "the campaign stopped while this run measured (killed, or the power went); the run ends at its last checkpoint",
            ));
            Outcome::Interrupted
        }
    };
    let label = ctx.steps[i].label.clone();
    let saved = save(ctx, &run, &label)?;
    let last = ctx.state.steps[i]
        .attempts
        .last_mut()
        .expect("there is one");
    last.outcome = Some(outcome);
    last.run_id = Some(saved.id.to_string());
    last.elapsed_ns = run.elapsed_ns.get();
    last.max_ns = run.all.stats.max_ns;
    if outcome == Outcome::Complete {
        ctx.state.steps[i].status = StepStatus::Done;
    }
    ctx.save()?;
    let what = match outcome {
        Outcome::Complete => "stored",
        _ => "stored as an interrupted run",
    };
    ctx.note(&format!("{label}: {what} ({})", saved.id));
    Ok(())
}

/// Saves `run` in the campaign's store under its session with `label`, and pushes it when the
/// run is new there.
fn save(ctx: &mut Ctx<'_>, run: &MeasureRun, label: &str) -> Result<store::Saved> {
    let db = Path::new(&ctx.state.options.db);
    let mut store = crate::runs::open(Some(db))?;
    let saved = store.save(run, Some(label), Some(&ctx.state.session))?;
    // A push never stops the campaign: the run is stored here, and `rtlab push` sends it later.
    match crate::push_to::prepare(&super::push_args(ctx.state.options.push.clone())) {
        Ok(Some(mut pusher)) => {
            let id = saved.id.to_string();
            pusher.push(
                run,
                Some(&id),
                Some(label),
                Some(&ctx.state.session),
                &mut ctx.console,
            );
        }
        Ok(None) => {}
        Err(e) => ctx.console.warn(&format!(
            "run {} was not pushed: {e:#}; `rtlab push {} --to {}` sends it",
            saved.id,
            saved.id,
            ctx.state.options.push.as_deref().unwrap_or("URL")
        )),
    }
    Ok(saved)
}

/// What an attempt still open (no outcome yet) shows now: how long its last checkpoint says
/// it measured (0 before its first), and whether its measuring process still runs (in this
/// boot; a zombie nobody reaped does not).
pub(crate) fn open_attempt(
    root: &sys::Root,
    (dir, boot): (&Path, &str),
    a: &model::campaign_state::Attempt,
) -> (u64, bool) {
    let measured = read_run(&dir.join(&a.file)).map_or(0, |r| r.elapsed_ns.get());
    let alive = a.boot_id == boot
        && a.pid
            .is_some_and(|pgid| sys::process::group_running(root, pgid) > 0);
    (measured, alive)
}

/// The result document in `path`, or none (missing: killed before its first checkpoint).
fn read_run(path: &Path) -> Option<MeasureRun> {
    let text = files::read_input_text(path, MAX_RESULT_BYTES).ok()?;
    MeasureRun::from_json(&text).ok()
}

/// Waits (up to 5 s, then kills) until the process group `pgid` of an earlier attempt is gone,
/// so its file does not change once it is read.
fn gone(pgid: u32) {
    let until = Instant::now() + Duration::from_secs(5);
    while sys::process::group_alive(pgid) {
        if Instant::now() > until {
            let _ = sys::process::signal_group(pgid, sys::process::StopSignal::Kill);
            std::thread::sleep(Duration::from_millis(100));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
