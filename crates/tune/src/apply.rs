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

use model::tune::{Action, TunePlan};
use serde::Serialize;
use sys::Root;

use crate::journal::{self, Entry, Journal};
use crate::plan::{equivalent, selected};

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
    let mut out = Outcome::default();
    for (n, c) in plan.changes.iter().enumerate() {
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

fn pids(root: &Root, procs: &str) -> Vec<u32> {
    root.read_opt(procs)
        .ok()
        .flatten()
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// A thread's `Cpus_allowed_list`.
fn allowed(root: &Root, tid: u32) -> Option<String> {
    let status = root
        .read_opt(format!("/proc/{tid}/status"))
        .ok()
        .flatten()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// Writes each pid into `procs`; (moved, refused). A task that exited meanwhile is neither.
///
/// A thread the kernel will not move alone (an io_uring worker, say, with PF_NO_SETAFFINITY)
/// moves with its whole process through the group's `cgroup.procs`.
fn move_pids(root: &Root, pids: &[u32], procs: &str) -> (usize, Vec<u32>) {
    let whole = procs
        .rsplit_once('/')
        .map(|(dir, _)| format!("{dir}/cgroup.procs"));
    let mut moved = 0;
    let mut refused = Vec::new();
    for &p in pids {
        if root.write(procs, &p.to_string()).is_ok() {
            moved += 1;
            continue;
        }
        if !root.exists(format!("/proc/{p}")) {
            continue;
        }
        let by_process = whole
            .as_ref()
            .zip(tgid(root, p))
            .is_some_and(|(w, g)| root.write(w, &g.to_string()).is_ok());
        if by_process {
            moved += 1;
        } else {
            refused.push(p);
        }
    }
    (moved, refused)
}

/// The process a thread belongs to.
fn tgid(root: &Root, tid: u32) -> Option<u32> {
    let status = root
        .read_opt(format!("/proc/{tid}/status"))
        .ok()
        .flatten()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Empties the group whose task list is `from` into `procs`, again while tasks forked during
/// the move keep appearing; (moved, the tasks still there). `patient` waits out tasks that are
/// exiting (they leave the list on their own shortly) instead of giving up on them at once.
fn drain(root: &Root, from: &str, procs: &str, patient: bool) -> (usize, Vec<u32>) {
    let mut moved = 0;
    let mut left = pids(root, from);
    for round in 0..20 {
        if left.is_empty() {
            break;
        }
        let (m, _) = move_pids(root, &left, procs);
        moved += m;
        left = pids(root, from);
        if m == 0 {
            if !patient || round >= 5 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    (moved, left)
}

/// `pid (comm)` for a message.
fn describe(root: &Root, pids: &[u32]) -> String {
    pids.iter()
        .take(5)
        .map(|p| {
            let comm = root
                .read_trimmed(format!("/proc/{p}/comm"))
                .unwrap_or_else(|| "gone".to_string());
            format!("{p} ({comm})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reverts what the journal at `journal_path` records, newest first, then closes it.
pub fn revert(root: &Root, journal_path: &std::path::Path) -> Result<Outcome, String> {
    let entries = journal::read(journal_path)?;
    let created: Vec<&str> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Mkdir { path } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Outcome::default();
    for e in entries.iter().rev() {
        match e {
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
                        match root.write(path, &value) {
                            Ok(()) => out.done.push(format!("{path}: back to {}", value.trim())),
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
                    now,
                }
            }
            Entry::Mkdir { path } => Standing {
                path: path.clone(),
                state: if root.exists(path) { "created" } else { "gone" }.to_string(),
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
