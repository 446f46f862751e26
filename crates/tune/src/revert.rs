//! Taking a tuning back: `revert` walks the journal backwards — tasks back to their group
//! (with their CPU affinity), files back to their original (skipping those already back),
//! created cgroups removed, threads given their policy and affinity back — and restarts the
//! services last, once the files they read are back. The journal is closed only when nothing
//! was refused, so a second revert can finish the job.
//!
//! On a captured tree (a [`Root`] that is not the host) originals are restored byte for byte
//! and files a change created are deleted.

use sys::Root;

use crate::journal::{self, Entry};
use crate::outcome::{Outcome, tasks};
use crate::plan::equivalent;
use crate::tasks::{allowed, describe, drain};
use crate::threads::{self, Knob};

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
    // Threads with an affinity step of their own: that step gives them their original; a
    // cpuset move recorded the affinity they had then, already narrowed.
    let own: Vec<u32> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Affinity { tid, .. } => Some(*tid),
            _ => None,
        })
        .collect();
    let ctx = Ctx {
        created: &created,
        own: &own,
    };
    let mut out = Outcome::default();
    // kthreadd first: a kernel thread the revert starts again (khugepaged, when transparent
    // hugepages come back on) is born with kthreadd's affinity, which must be back by then.
    let kthreadd = |e: &&Entry| matches!(e, Entry::Affinity { comm, .. } | Entry::Policy { comm, .. } if comm == "kthreadd");
    for e in entries.iter().rev().filter(kthreadd) {
        step_back(root, e, &ctx, &mut out, &mut Vec::new());
    }
    // Services restart last, once the files they read are back.
    let mut restarts = Vec::new();
    for e in entries.iter().rev().filter(|e| !kthreadd(e)) {
        step_back(root, e, &ctx, &mut out, &mut restarts);
    }
    // The machine as it was: whatever a later step undid (a thread narrowed again by a
    // cpuset move, a kernel thread started again meanwhile) is set back once more, and what
    // still differs is named.
    for e in &entries {
        verify(root, e, &created, &mut out);
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

/// What every step of a revert needs to know of the whole journal.
struct Ctx<'a> {
    /// The cgroups the tuning created.
    created: &'a [&'a str],
    /// The threads with an affinity step of their own.
    own: &'a [u32],
}

/// One journal step taken back (a service to restart is noted in `restarts`, for the end).
fn step_back(root: &Root, e: &Entry, ctx: &Ctx<'_>, out: &mut Outcome, restarts: &mut Vec<String>) {
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
            let in_created = in_created(ctx.created, path);
            let file = File {
                path,
                original: original.as_deref(),
                restore: restore.as_deref(),
                in_created,
            };
            file_back(root, &file, out);
        }
        Entry::Mkdir { path } => remove_group(root, path, out),
        Entry::Policy {
            tid,
            comm,
            original,
            ..
        } => threads::revert_step(root, Knob::Policy, *tid, comm, original, out),
        Entry::Affinity {
            tid,
            comm,
            original,
            ..
        } => threads::revert_step(root, Knob::Affinity, *tid, comm, original, out),
        Entry::MoveTasks {
            from, to, affinity, ..
        } => tasks_back(root, (from, to), affinity, ctx.own, out),
    }
}

/// Whether `path` lies in one of the cgroups the tuning `created` (it goes with the group).
fn in_created(created: &[&str], path: &str) -> bool {
    created
        .iter()
        .any(|d| path.strip_prefix(d).is_some_and(|r| r.starts_with('/')))
}

/// After every step: a thread or file the journal changed that is not its original now is
/// set back once more (named as done), or named as refused where that fails.
fn verify(root: &Root, e: &Entry, created: &[&str], out: &mut Outcome) {
    match e {
        Entry::Affinity {
            tid,
            comm,
            original,
            ..
        } => threads::recheck(root, Knob::Affinity, (*tid, comm), original, out),
        Entry::Policy {
            tid,
            comm,
            original,
            ..
        } => threads::recheck(root, Knob::Policy, (*tid, comm), original, out),
        Entry::Write {
            path,
            original: Some(o),
            ..
        } if root.is_host() && !in_created(created, path) => {
            let Some(now) = root.read_opt(path).ok().flatten() else {
                return;
            };
            if now != *o && !equivalent(path, &now, o) {
                out.refused.push(format!(
                    "{path}: is {} after the revert, was {} before the tuning",
                    now.trim(),
                    o.trim()
                ));
            }
        }
        _ => {}
    }
}

/// A written file as the journal recorded it.
struct File<'a> {
    path: &'a str,
    /// Its text before the change; `None` when the change created it.
    original: Option<&'a str>,
    /// What writing back restores the original on a live kernel.
    restore: Option<&'a str>,
    /// Whether it lies in a cgroup the tuning created (it goes with the group).
    in_created: bool,
}

/// One written file back to its original: removed from a captured tree when the change made
/// it, left to its cgroup's removal on a live kernel, skipped when already back.
fn file_back(root: &Root, f: &File, out: &mut Outcome) {
    let path = f.path;
    let made = f.in_created || f.original.is_none();
    let now = root.read_opt(path).ok().flatten();
    match (f.original, now) {
        (_, Some(_)) if made && !root.is_host() => match root.remove_file(path) {
            Ok(()) => out.done.push(format!("removed {path}")),
            Err(e) => out.refused.push(format!("{path}: {e}")),
        },
        _ if made => out.skipped.push(format!("{path}: goes with its cgroup")),
        (Some(o), now) if now.as_deref() == Some(o) => {
            out.skipped.push(format!("{path}: already back"));
        }
        (Some(o), now)
            if root.is_host() && now.as_deref().is_some_and(|n| equivalent(path, n, o)) =>
        {
            out.skipped.push(format!("{path}: already back"));
        }
        (None, _) => out.skipped.push(format!("{path}: absent, as it was")),
        (Some(o), _) => {
            let value = if root.is_host() {
                f.restore
                    .map_or_else(|| o.trim().to_string(), str::to_string)
            } else {
                o.to_string()
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

/// How long a cgroup's removal waits for its ending tasks to be reaped.
const REMOVE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// A cgroup the tuning created, removed (its tasks went back first). A task that was ending as
/// they moved (a killed program's child) cannot move and still counts until it is reaped: the
/// kernel answers EBUSY meanwhile, so the removal is tried again for up to two seconds (found
/// in the lab: a revert right after killing a program started in the RT cpuset was refused).
fn remove_group(root: &Root, path: &str, out: &mut Outcome) {
    if !root.exists(path) {
        out.skipped.push(format!("{path}: already gone"));
        return;
    }
    match sys::cgroup::remove(root, std::path::Path::new(path), REMOVE_PATIENCE) {
        Ok(()) => out.done.push(format!("removed {path}")),
        Err(e) => out.refused.push(format!("{path}: {e}")),
    }
}

/// Every task in group `to` back to `from` — the recorded ones, their children, any forked
/// while the others were moving — and each recorded task its CPU affinity.
fn tasks_back(
    root: &Root,
    (from, to): (&str, &str),
    affinity: &[(u32, String)],
    own: &[u32],
    out: &mut Outcome,
) {
    let (moved, stayed) = drain(root, to, from, true);
    if !stayed.is_empty() {
        out.refused.push(format!(
            "{} stayed in {to}: {}",
            tasks(stayed.len()),
            describe(root, &stayed)
        ));
    }
    out.done
        .push(format!("moved {} back to {from}", tasks(moved)));
    let restored = affinities_back(root, affinity, own);
    if restored > 0 {
        out.done
            .push(format!("gave {} their CPU affinity back", tasks(restored)));
    }
}

/// The cpuset narrowed the tasks' affinity; moving back widens it to the parent's, not to
/// what each had: each recorded task still there gets its own back (but those whose own
/// affinity step gives them their original). How many did.
fn affinities_back(root: &Root, affinity: &[(u32, String)], own: &[u32]) -> usize {
    let mut restored = 0;
    for (tid, list) in affinity.iter().filter(|(tid, _)| !own.contains(tid)) {
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
    restored
}
