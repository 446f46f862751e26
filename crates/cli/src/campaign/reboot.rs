//! A campaign across boots: the reboot it asks for after a step (the plan's
//! `reboot_command`, `systemctl reboot` by default), what a resume makes of a reboot asked for
//! (seen: go on; not seen: ask again), the reboot test (a check at every boot: the state and
//! the store read back intact and the audit's verdict unchanged — data loss is tolerable,
//! corruption is not), and the tuning of tuned phases (`rtlab tune apply` before, `rtlab tune
//! revert` after, both as child commands with the journal in the state directory; a tuning
//! left applied by a crash is reverted first on resume).

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use model::campaign_state::{BootCheck, RebootRequest, StepStatus};

use super::{Ctx, StepEnd, now};
use crate::exit::{Exit, UsageError};

/// The reboot command when the plan gives none.
const DEFAULT_REBOOT: &str = "systemctl reboot";
/// How long to wait for a reboot the command asked for before giving up.
const REBOOT_WAIT: Duration = Duration::from_secs(300);

/// On (re)start: a reboot asked for and seen is cleared; one not seen is asked for again.
/// Some exit when this process asked for it again.
pub(crate) fn after_boot(ctx: &mut Ctx<'_>) -> Result<Option<Exit>> {
    let Some(req) = ctx.state.reboot.clone() else {
        return Ok(None);
    };
    if req.from_boot != ctx.boot {
        ctx.note(&format!(
            "rebooted (asked at {} after step {}): going on",
            req.at,
            req.after_step + 1
        ));
        ctx.state.reboot = None;
        ctx.save()?;
        return Ok(None);
    }
    ctx.note("the reboot asked for has not happened: asking again");
    ask(ctx, req.after_step).map(Some)
}

/// Asks for a reboot after step `i`: recorded first, then the reboot command; waits for the
/// signal that ends this process.
pub(crate) fn ask(ctx: &mut Ctx<'_>, i: usize) -> Result<Exit> {
    ctx.state.reboot = Some(RebootRequest {
        from_boot: ctx.boot.clone(),
        at: now(),
        after_step: i,
    });
    ctx.save()?;
    let command = ctx
        .plan
        .reboot_command
        .clone()
        .unwrap_or_else(|| DEFAULT_REBOOT.to_string());
    ctx.console.verdict(&format!(
        "rebooting after step {} ({}): `{command}`; the campaign continues at boot (rtlab-campaign@.service) or with `rtlab campaign resume --state {}`",
        i + 1,
        ctx.steps[i].label,
        ctx.dir.display()
    ));
    let status = Command::new("/bin/sh")
        .arg("-c")
        .arg(&command)
        .env("RTLAB_CAMPAIGN_PID", std::process::id().to_string())
        .env("RTLAB_CAMPAIGN_STATE", &ctx.dir)
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running the reboot command `{command}`"))?;
    if !status.success() {
        return Err(UsageError(format!(
            "the reboot command `{command}` failed ({status}); fix it (reboot_command in the plan) and `rtlab campaign resume --state {}` asks again",
            ctx.dir.display()
        ))
        .into());
    }
    match ctx.signals().wait(REBOOT_WAIT) {
        Some(_) => Ok(Exit::Interrupted),
        None => Err(UsageError(format!(
            "`{command}` did not reboot the machine in {} s; `rtlab campaign resume --state {}` asks again",
            REBOOT_WAIT.as_secs(),
            ctx.dir.display()
        ))
        .into()),
    }
}

/// The reboot test of step `i`: a check in this boot (once per boot), then a reboot until
/// `reboots` reboots have been checked.
pub(crate) fn test(ctx: &mut Ctx<'_>, i: usize, reboots: u32, audit: bool) -> Result<StepEnd> {
    if ctx.state.steps[i].status != StepStatus::Running {
        ctx.state.steps[i].status = StepStatus::Running;
        ctx.save()?;
    }
    let checked = ctx.state.steps[i]
        .checks
        .iter()
        .any(|c| c.boot_id == ctx.boot);
    if !checked {
        let check = check(ctx, audit);
        if let Some(problem) = &check.problem {
            ctx.console.verdict(&format!(
                "{}: boot {}: {problem}",
                ctx.steps[i].label, ctx.boot
            ));
        } else {
            ctx.note(&format!(
                "{}: boot {} checked",
                ctx.steps[i].label, ctx.boot
            ));
        }
        ctx.state.steps[i].checks.push(check);
        ctx.save()?;
    }
    let first_audit = ctx.state.steps[i].checks.first().and_then(|c| c.audit_exit);
    if let Some(last) = ctx.state.steps[i].checks.last_mut()
        && last.problem.is_none()
        && last.audit_exit != first_audit
    {
        last.problem = Some(format!(
            "the audit's verdict changed across the reboot (exit {:?}, first boot {:?})",
            last.audit_exit, first_audit
        ));
        ctx.save()?;
    }
    if ctx.state.steps[i].checks.len() > reboots as usize {
        ctx.state.steps[i].status = StepStatus::Done;
        ctx.save()?;
        return Ok(StepEnd::Done);
    }
    ask(ctx, i)?;
    Ok(StepEnd::Stopped)
}

/// This boot's check: the state and plan read back, the store opens and loads every run the
/// campaign stored, and (with `audit`) `rtlab audit` runs.
fn check(ctx: &mut Ctx<'_>, audit: bool) -> BootCheck {
    let mut problems = Vec::new();
    let state_ok = match super::read(&ctx.dir) {
        Ok((_, state)) if state == ctx.state => true,
        Ok(_) => {
            problems.push("the state on disk differs from the state read at start".to_string());
            false
        }
        Err(e) => {
            problems.push(format!("{e:#}"));
            false
        }
    };
    let store_ok = match store_intact(ctx) {
        Ok(()) => true,
        Err(e) => {
            problems.push(format!("the run store: {e:#}"));
            false
        }
    };
    let audit_exit = audit.then(|| audit_exit(ctx)).transpose();
    let audit_exit = audit_exit.unwrap_or_else(|e| {
        problems.push(format!("{e:#}"));
        None
    });
    BootCheck {
        boot_id: ctx.boot.clone(),
        at: now(),
        audit_exit,
        state_ok,
        store_ok,
        problem: (!problems.is_empty()).then(|| problems.join("; ")),
    }
}

/// Opens the store and loads every run this campaign stored.
fn store_intact(ctx: &Ctx<'_>) -> Result<()> {
    let store = crate::runs::open_existing(Some(std::path::Path::new(&ctx.state.options.db)))?;
    store.count()?;
    for id in ctx
        .state
        .steps
        .iter()
        .flat_map(|s| &s.attempts)
        .filter_map(|a| a.run_id.as_deref())
    {
        let id = crate::runs::resolve(&store, id)?;
        store
            .load_measure(&id)
            .with_context(|| format!("run {id}"))?;
    }
    Ok(())
}

/// `rtlab audit --format json`'s exit status (0 or 1); an audit that cannot run is an error.
fn audit_exit(ctx: &Ctx<'_>) -> Result<i32> {
    let mut cmd = crate::run_session::rtlab_command(ctx.root, None)?;
    let out = cmd
        .args(["audit", "--format", "json"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("starting rtlab audit")?;
    let parsed = serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok();
    match out.status.code() {
        Some(code @ (0 | 1)) if parsed => Ok(code),
        code => Err(anyhow::anyhow!(
            "rtlab audit did not run to a verdict (exit {code:?})"
        )),
    }
}

/// Runs `rtlab tune ARGS --journal JOURNAL` (the campaign's journal) to its end, its output
/// shown unless quiet.
fn tune_child(ctx: &Ctx<'_>, args: &[&str]) -> Result<std::process::ExitStatus> {
    crate::run_session::rtlab_command(ctx.root, None)?
        .arg("tune")
        .args(args)
        .arg("--journal")
        .arg(ctx.journal())
        .stdin(Stdio::null())
        .stdout(if ctx.quiet {
            Stdio::null()
        } else {
            Stdio::inherit()
        })
        .status()
        .with_context(|| format!("starting rtlab tune {}", args[0]))
}

/// Applies the plan's tuning (`rtlab tune apply --rt-cpus … --yes`), recorded as applied
/// first so that a crash at any point is reverted on resume.
pub(crate) fn apply(ctx: &mut Ctx<'_>) -> Result<()> {
    let rt_cpus = ctx.plan.rt_cpus.clone().expect("the plan checks it");
    ctx.state.tuning_applied = true;
    ctx.save()?;
    let status = tune_child(ctx, &["apply", "--yes", "--rt-cpus", &rt_cpus])?;
    if !status.success() {
        revert(ctx)?;
        return Err(UsageError(format!(
            "rtlab tune apply --rt-cpus {rt_cpus} failed ({status}; its message is above); the tuning was reverted"
        ))
        .into());
    }
    Ok(())
}

/// Reverts the tuning (`rtlab tune revert`) when one is recorded as applied.
pub(crate) fn revert(ctx: &mut Ctx<'_>) -> Result<()> {
    if !ctx.state.tuning_applied {
        return Ok(());
    }
    let journal = ctx.journal();
    if journal.exists() {
        let status = tune_child(ctx, &["revert"])?;
        if !status.success() {
            return Err(UsageError(format!(
                "rtlab tune revert --journal {} failed ({status}; its message is above); fix it and resume",
                journal.display()
            ))
            .into());
        }
    }
    ctx.state.tuning_applied = false;
    ctx.save()
}
