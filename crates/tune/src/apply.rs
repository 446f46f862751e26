//! Carrying a plan out and taking it back.
//!
//! `apply` goes through the plan's changes in order with one generic step per kind — a file
//! write reads the original, records it in the [`Journal`] (on disk before anything changes),
//! writes, reads back and verifies; a cgroup is recorded then created; tasks are recorded
//! then moved — and reports what the kernel refused without stopping. `revert` walks the
//! journal backwards: tasks back, files back to their original (skipping those already back),
//! created cgroups removed. `status` compares the machine with the journal.
//!
//! A captured tree (a [`Root`] that is not the host) is plain files: its originals are
//! restored byte for byte, files a change created are deleted, and tasks are not moved (there
//! is no cgroupfs to move them in).

use model::tune::{Action, Change, TunePlan};
use serde::Serialize;
use sys::Root;

use crate::journal::{self, Entry, Journal};
use crate::plan::{equivalent, selected, set_env};
use crate::tasks::{allowed, describe, drain, move_pids, pids};
use crate::threads::{self, Knob};

/// What an apply or a revert did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Steps done (files written, groups created or removed, tasks moved).
    pub done: Vec<String>,
    /// Steps skipped, and why (already at the value, nothing to move).
    pub skipped: Vec<String>,
    /// What the kernel refused, with its error.
    pub refused: Vec<String>,
}

/// How a step of the journal stands now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// The path.
    pub path: String,
    /// `applied`, `drifted` (something else changed it since), `original` (back as before),
    /// `created`, `gone`.
    pub state: String,
    /// Its value now, for files.
    pub now: Option<String>,
}

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
            Action::Write => {
                let new = c.new.clone().unwrap_or_default();
                let original = root.read_opt(&c.path).ok().flatten();
                if original
                    .as_deref()
                    .is_some_and(|o| equivalent(&c.path, o, &new))
                {
                    out.skipped.push(format!("{}: already {new}", c.path));
                    continue;
                }
                let restore = original.as_deref().map(|o| restore_value(&c.path, o));
                journal.record(&Entry::Write {
                    path: c.path.clone(),
                    original,
                    restore,
                    new: new.clone(),
                })?;
                match root.write(&c.path, &new) {
                    Ok(()) => match root.read_trimmed(&c.path) {
                        Some(now) if equivalent(&c.path, &now, &new) => {
                            out.done.push(format!("{}: {new}", c.path));
                        }
                        now => out.refused.push(format!(
                            "{}: wrote {new} but it reads {}",
                            c.path,
                            now.as_deref().unwrap_or("nothing")
                        )),
                    },
                    // An IRQ the kernel will not let go of (managed, per-CPU): reported, not
                    // failed; it keeps its affinity.
                    Err(_)
                        if c.path.starts_with("/proc/irq/")
                            && c.path.ends_with("/smp_affinity_list") =>
                    {
                        out.skipped.push(format!(
                            "{}: the kernel refuses to move this IRQ (managed or per-CPU); \
                             `isolcpus=managed_irq,...` on the boot line keeps such IRQs off the RT CPUs",
                            c.path
                        ));
                    }
                    Err(e) => out.refused.push(format!("{}: {e}", c.path)),
                }
            }
            Action::Mkdir => {
                if root.exists(&c.path) {
                    out.skipped.push(format!("{}: exists", c.path));
                    continue;
                }
                journal.record(&Entry::Mkdir {
                    path: c.path.clone(),
                })?;
                match root.create_dir(&c.path) {
                    Ok(()) => out.done.push(format!("created {}", c.path)),
                    Err(e) => out.refused.push(format!("{}: {e}", c.path)),
                }
            }
            Action::SetPolicy => threads::apply_step(root, c, Knob::Policy, journal, &mut out)?,
            Action::SetAffinity => threads::apply_step(root, c, Knob::Affinity, journal, &mut out)?,
            Action::SetEnv => {
                let assign = c.new.clone().unwrap_or_default();
                let Some(original) = root.read_opt(&c.path).ok().flatten() else {
                    out.refused
                        .push(format!("{}: not there to set {assign} in", c.path));
                    continue;
                };
                let text = set_env(&original, &assign);
                if text == original {
                    out.skipped.push(format!("{}: already {assign}", c.path));
                    continue;
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
            }
            Action::Restart => {
                if !root.is_host() {
                    out.skipped.push(format!(
                        "restarting {}: a captured tree has no services",
                        c.path
                    ));
                    continue;
                }
                journal.record(&Entry::Restart {
                    service: c.path.clone(),
                })?;
                match sys::service::try_restart(&c.path) {
                    Ok(()) => out.done.push(format!("restarted {}", c.path)),
                    Err(e) => out.refused.push(e.to_string()),
                }
            }
            Action::MoveTasks => {
                let from = c.current.clone().unwrap_or_default();
                if !root.is_host() {
                    out.skipped.push(format!(
                        "moving tasks to {}: a captured tree has no cgroupfs",
                        c.path
                    ));
                    continue;
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
                    "moved {moved} tasks to {} ({stayed} cannot move: kernel threads bound to CPUs, or gone)",
                    c.path
                ));
            }
        }
    }
    Ok(out)
}

/// What writing back restores `original` on a live kernel.
fn restore_value(path: &str, original: &str) -> String {
    if path.ends_with("cgroup.subtree_control") {
        return "-cpuset".to_string();
    }
    if path.ends_with("transparent_hugepage/enabled") {
        return selected(original).to_string();
    }
    original.trim().to_string()
}

/// Reverts what the journal at `journal_path` records, newest first, then closes it.
pub fn revert(root: &Root, journal_path: &std::path::Path) -> Result<Outcome, String> {
    let _held = journal::hold(journal_path)?;
    let entries = journal::read(journal_path)?;
    let created: Vec<&str> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Mkdir { path } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Outcome::default();
    // Services restart last, once the files they read are back.
    let mut restarts = Vec::new();
    for e in entries.iter().rev() {
        match e {
            Entry::Restart { service } => {
                if !restarts.contains(service) {
                    restarts.push(service.clone());
                }
            }
            Entry::Write {
                path,
                original,
                restore,
                ..
            } => {
                let in_created = created
                    .iter()
                    .any(|d| path.strip_prefix(d).is_some_and(|r| r.starts_with('/')));
                let now = root.read_opt(path).ok().flatten();
                match (original, now) {
                    (_, Some(_)) if (in_created || original.is_none()) && !root.is_host() => {
                        match root.remove_file(path) {
                            Ok(()) => out.done.push(format!("removed {path}")),
                            Err(e) => out.refused.push(format!("{path}: {e}")),
                        }
                    }
                    _ if in_created || original.is_none() => {
                        out.skipped.push(format!("{path}: goes with its cgroup"));
                    }
                    (Some(o), now) if now.as_deref() == Some(o.as_str()) => {
                        out.skipped.push(format!("{path}: already back"));
                    }
                    (Some(o), now)
                        if root.is_host()
                            && now.as_deref().is_some_and(|n| equivalent(path, n, o)) =>
                    {
                        out.skipped.push(format!("{path}: already back"));
                    }
                    (None, _) => out.skipped.push(format!("{path}: absent, as it was")),
                    (Some(o), _) => {
                        let value = if root.is_host() {
                            restore.clone().unwrap_or_else(|| o.trim().to_string())
                        } else {
                            o.clone()
                        };
                        let shown = if value.trim().contains('\n') {
                            "its original text"
                        } else {
                            value.trim()
                        };
                        match root.write(path, &value) {
                            Ok(()) => out.done.push(format!("{path}: back to {shown}")),
                            Err(e) => out.refused.push(format!("{path}: {e}")),
                        }
                    }
                }
            }
            Entry::Mkdir { path } => {
                if !root.exists(path) {
                    out.skipped.push(format!("{path}: already gone"));
                    continue;
                }
                match root.remove_dir(path) {
                    Ok(()) => out.done.push(format!("removed {path}")),
                    Err(e) => out.refused.push(format!("{path}: {e}")),
                }
            }
            Entry::Policy {
                tid,
                comm,
                original,
                ..
            } => threads::revert_step(root, Knob::Policy, *tid, comm, original, &mut out),
            Entry::Affinity {
                tid,
                comm,
                original,
                ..
            } => threads::revert_step(root, Knob::Affinity, *tid, comm, original, &mut out),
            Entry::MoveTasks {
                from, to, affinity, ..
            } => {
                // Every task in the group goes back: the recorded ones, their children, and
                // any forked while the others were moving.
                let (moved, stayed) = drain(root, to, from, true);
                if !stayed.is_empty() {
                    out.refused.push(format!(
                        "{} tasks stayed in {to}: {}",
                        stayed.len(),
                        describe(root, &stayed)
                    ));
                }
                out.done.push(format!("moved {moved} tasks back to {from}"));
                // The cpuset narrowed their affinity; moving back widens it to the parent's,
                // not to what each had.
                let mut restored = 0;
                for (tid, list) in affinity {
                    let Some(now) = allowed(root, *tid) else {
                        continue;
                    };
                    if now == *list {
                        continue;
                    }
                    let Ok(cpus) = list.parse::<model::CpuSet>() else {
                        continue;
                    };
                    if sys::sched::set_thread_affinity(*tid, &cpus).is_ok() {
                        restored += 1;
                    }
                }
                if restored > 0 {
                    out.done
                        .push(format!("gave {restored} tasks their CPU affinity back"));
                }
            }
        }
    }
    for service in restarts {
        match sys::service::try_restart(&service) {
            Ok(()) => out.done.push(format!("restarted {service}")),
            Err(e) => out.refused.push(e.to_string()),
        }
    }
    if out.refused.is_empty() {
        journal::close(journal_path)?;
    }
    Ok(out)
}

/// How each step of the journal stands now.
pub fn status(root: &Root, journal_path: &std::path::Path) -> Result<Vec<Standing>, String> {
    let entries = journal::read(journal_path)?;
    Ok(entries
        .iter()
        .map(|e| match e {
            Entry::Write {
                path,
                original,
                new,
                ..
            } => {
                let now = root.read_trimmed(path);
                let state = match (&now, original) {
                    (Some(n), _) if equivalent(path, n, new) => "applied",
                    (Some(n), Some(o)) if equivalent(path, n, o) => "original",
                    (None, _) => "gone",
                    _ => "drifted",
                };
                Standing {
                    path: path.clone(),
                    state: state.to_string(),
                    // A whole configuration file is not a value to show.
                    now: now.filter(|n| !n.contains('\n')),
                }
            }
            Entry::Mkdir { path } => Standing {
                path: path.clone(),
                state: if root.exists(path) { "created" } else { "gone" }.to_string(),
                now: None,
            },
            Entry::Policy {
                tid,
                comm,
                original,
                new,
            } => threads::standing(root, Knob::Policy, *tid, comm, original, new),
            Entry::Affinity {
                tid,
                comm,
                original,
                new,
            } => threads::standing(root, Knob::Affinity, *tid, comm, original, new),
            Entry::Restart { service } => Standing {
                path: service.clone(),
                state: "restarted".to_string(),
                now: None,
            },
            Entry::MoveTasks { to, .. } => Standing {
                path: to.clone(),
                state: format!("{} tasks", pids(root, to).len()),
                now: None,
            },
        })
        .collect())
}

/// The RT cpuset the journal at `journal_path` created (`.../rtlab-rt`).
pub fn rt_group(journal_path: &std::path::Path) -> Result<String, String> {
    let entries = journal::read(journal_path)
        .map_err(|e| format!("{e}; `rtlab tune apply` creates the RT cpuset and this journal"))?;
    entries
        .iter()
        .find_map(|e| match e {
            Entry::Mkdir { path } if path.ends_with("/rtlab-rt") => Some(path.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            format!(
                "{}: this tuning created no RT cpuset (no cpuset controller here?)",
                journal_path.display()
            )
        })
}
