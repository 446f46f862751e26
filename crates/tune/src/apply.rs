//! Carrying a plan out: `apply` goes through the plan's changes in order with one generic
//! step per kind — a file write reads the original, records it in the [`Journal`] (on disk
//! before anything changes), writes, reads back and verifies; a cgroup is recorded then
//! created; tasks are recorded then moved — and reports what the kernel refused without
//! stopping; `tune::revert` takes it back.
//!
//! A captured tree (a [`Root`] that is not the host) is plain files: tasks are not moved
//! (there is no cgroupfs to move them in), services not restarted, threads not changed.

use model::tune::{Action, Change, TunePlan};
use sys::Root;

use crate::journal::{Entry, Journal};
use crate::outcome::{Outcome, tasks};
use crate::plan::irqbalance::set_env;
use crate::plan::{equivalent, selected};
use crate::tasks::{allowed, drain, move_pids, pids};
use crate::threads::{self, Knob};

/// Applies `plan`, recording every original in a new journal at `journal_path`.
/// `crash_after`: stop the process (abort, as a crash would) after that many changes — for
/// the test that reverts a half-applied plan.
pub fn apply(
    root: &Root,
    plan: &TunePlan,
    journal_path: &std::path::Path,
    crash_after: Option<usize>,
) -> Result<Outcome, String> {
    let mut journal = Journal::create(journal_path)?;
    apply_changes(root, &plan.changes, &mut journal, crash_after)
}

/// Carries `changes` out, each original recorded in `journal` first.
pub fn apply_changes(
    root: &Root,
    changes: &[Change],
    journal: &mut Journal,
    crash_after: Option<usize>,
) -> Result<Outcome, String> {
    let mut out = Outcome::default();
    for (n, c) in changes.iter().enumerate() {
        if crash_after == Some(n) {
            std::process::abort();
        }
        match c.action {
            Action::Write => write(root, c, journal, &mut out)?,
            Action::Mkdir => mkdir(root, c, journal, &mut out)?,
            Action::SetPolicy => threads::apply_step(root, c, Knob::Policy, journal, &mut out)?,
            Action::SetAffinity => threads::apply_step(root, c, Knob::Affinity, journal, &mut out)?,
            Action::SetEnv => set_env_line(root, c, journal, &mut out)?,
            Action::Restart => restart(root, c, journal, &mut out)?,
            Action::MoveTasks => move_tasks(root, c, journal, &mut out)?,
        }
    }
    Ok(out)
}

/// A kernel file: skipped when already at the value; else the original recorded, the value
/// written and read back.
fn write(root: &Root, c: &Change, journal: &mut Journal, out: &mut Outcome) -> Result<(), String> {
    let new = c.new.clone().unwrap_or_default();
    let original = root.read_opt(&c.path).ok().flatten();
    if original
        .as_deref()
        .is_some_and(|o| equivalent(&c.path, o, &new))
    {
        out.skipped.push(format!("{}: already {new}", c.path));
        return Ok(());
    }
    let restore = original.as_deref().map(|o| restore_value(&c.path, o));
    journal.record(&Entry::Write {
        path: c.path.clone(),
        original,
        restore,
        new: new.clone(),
    })?;
    match root.write(&c.path, &new) {
        Ok(()) => verify(root, &c.path, &new, out),
        // An IRQ the kernel will not let go of (managed, per-CPU): reported, not failed; it
        // keeps its affinity.
        Err(_) if c.path.starts_with("/proc/irq/") && c.path.ends_with("/smp_affinity_list") => {
            out.skipped.push(format!(
                "{}: the kernel refuses to move this IRQ (managed or per-CPU); \
                 `isolcpus=managed_irq,...` on the boot line keeps such IRQs off the RT CPUs",
                c.path
            ));
        }
        Err(e) => out.refused.push(format!("{}: {e}", c.path)),
    }
    Ok(())
}

/// Reads `path` back after writing `new`: done when it reads the same, refused otherwise.
fn verify(root: &Root, path: &str, new: &str, out: &mut Outcome) {
    match root.read_trimmed(path) {
        Some(now) if equivalent(path, &now, new) => out.done.push(format!("{path}: {new}")),
        now => out.refused.push(format!(
            "{path}: wrote {new} but it reads {}",
            now.as_deref().unwrap_or("nothing")
        )),
    }
}

/// What writing back restores `original` on a live kernel.
fn restore_value(path: &str, original: &str) -> String {
    if path.ends_with("cgroup.subtree_control") {
        return "-cpuset".to_string();
    }
    if path.ends_with("transparent_hugepage/enabled") {
        return selected(original).to_string();
    }
    // `root invalid (reason)` reads back; `root` is what can be written.
    if path.ends_with("cpuset.cpus.partition") {
        return original
            .split_whitespace()
            .next()
            .unwrap_or("member")
            .to_string();
    }
    original.trim().to_string()
}

/// A cgroup directory: recorded, then created (skipped when it exists).
fn mkdir(root: &Root, c: &Change, journal: &mut Journal, out: &mut Outcome) -> Result<(), String> {
    if root.exists(&c.path) {
        out.skipped.push(format!("{}: exists", c.path));
        return Ok(());
    }
    journal.record(&Entry::Mkdir {
        path: c.path.clone(),
    })?;
    match root.create_dir(&c.path) {
        Ok(()) => out.done.push(format!("created {}", c.path)),
        Err(e) => out.refused.push(format!("{}: {e}", c.path)),
    }
    Ok(())
}

/// One `KEY=value` line in a configuration file (irqbalance's): the whole file recorded,
/// then the line set.
fn set_env_line(
    root: &Root,
    c: &Change,
    journal: &mut Journal,
    out: &mut Outcome,
) -> Result<(), String> {
    let assign = c.new.clone().unwrap_or_default();
    let Some(original) = root.read_opt(&c.path).ok().flatten() else {
        out.refused
            .push(format!("{}: not there to set {assign} in", c.path));
        return Ok(());
    };
    let text = set_env(&original, &assign);
    if text == original {
        out.skipped.push(format!("{}: already {assign}", c.path));
        return Ok(());
    }
    journal.record(&Entry::Write {
        path: c.path.clone(),
        original: Some(original.clone()),
        restore: Some(original),
        new: text.clone(),
    })?;
    match root.write(&c.path, &text) {
        Ok(()) => out.done.push(format!("{}: {assign}", c.path)),
        Err(e) => out.refused.push(format!("{}: {e}", c.path)),
    }
    Ok(())
}

/// A service restart, so it reads what was written (recorded so revert restarts it again).
fn restart(
    root: &Root,
    c: &Change,
    journal: &mut Journal,
    out: &mut Outcome,
) -> Result<(), String> {
    if !root.is_host() {
        out.skipped.push(format!(
            "restarting {}: a captured tree has no services",
            c.path
        ));
        return Ok(());
    }
    journal.record(&Entry::Restart {
        service: c.path.clone(),
    })?;
    match sys::service::try_restart(&c.path) {
        Ok(()) => out.done.push(format!("restarted {}", c.path)),
        Err(e) => out.refused.push(e.to_string()),
    }
    Ok(())
}

/// Every task of one group into another: their ids and CPU affinities recorded, then moved,
/// then the group drained of tasks forked meanwhile.
fn move_tasks(
    root: &Root,
    c: &Change,
    journal: &mut Journal,
    out: &mut Outcome,
) -> Result<(), String> {
    let from = c.current.clone().unwrap_or_default();
    if !root.is_host() {
        out.skipped.push(format!(
            "moving tasks to {}: a captured tree has no cgroupfs",
            c.path
        ));
        return Ok(());
    }
    let pids = pids(root, &from);
    let affinity = pids
        .iter()
        .filter_map(|&p| Some((p, allowed(root, p)?)))
        .collect();
    journal.record(&Entry::MoveTasks {
        from: from.clone(),
        to: c.path.clone(),
        pids: pids.clone(),
        affinity,
    })?;
    let (moved, _) = move_pids(root, &pids, &c.path);
    // Tasks forked while the others moved follow; what is left cannot move.
    let (late, stayed) = drain(root, &from, &c.path, false);
    let (moved, stayed) = (moved + late, stayed.len());
    out.done.push(format!(
        "moved {} to {} ({stayed} cannot move: kernel threads bound to CPUs, or gone)",
        tasks(moved),
        c.path
    ));
    Ok(())
}
