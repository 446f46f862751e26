//! How a tuning stands: each journal step compared with the machine now (`tune status`), and
//! the RT cpuset a tuning created (for `run --tuned` and `tune run`).

use sys::Root;

use crate::journal::{self, Entry};
use crate::outcome::{Standing, tasks};
use crate::plan::equivalent;
use crate::tasks::pids;
use crate::threads::{self, Knob};

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
                state: tasks(pids(root, to).len()),
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
