//! Moving tasks between cgroups for `tune apply` and `revert`: the task list of a group,
//! each task's CPU affinity, moving them (a thread the kernel will not move alone goes with its
//! process) and draining a group until it is empty while tasks fork and exit around the move.

use std::time::Duration;

use sys::Root;

/// The task ids listed in a cgroup's `tasks` or `cgroup.procs` file.
pub(crate) fn pids(root: &Root, procs: &str) -> Vec<u32> {
    root.read_opt(procs)
        .ok()
        .flatten()
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// A field of a thread's `/proc/TID/status`, trimmed.
fn status_field(root: &Root, tid: u32, key: &str) -> Option<String> {
    let status = root
        .read_opt(format!("/proc/{tid}/status"))
        .ok()
        .flatten()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// A thread's `Cpus_allowed_list`.
pub(crate) fn allowed(root: &Root, tid: u32) -> Option<String> {
    status_field(root, tid, "Cpus_allowed_list")
}

/// Writes each pid into `procs`; (moved, refused). A task that exited meanwhile is neither.
///
/// A thread the kernel will not move alone (an io_uring worker, say, with PF_NO_SETAFFINITY)
/// moves with its whole process through the group's `cgroup.procs`.
pub(crate) fn move_pids(root: &Root, pids: &[u32], procs: &str) -> (usize, Vec<u32>) {
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
    status_field(root, tid, "Tgid")?.parse().ok()
}

/// Empties the group whose task list is `from` into `procs`, again while tasks forked during
/// the move keep appearing; (moved, the tasks still there). `patient` waits out tasks that are
/// exiting (they leave the list on their own shortly) and keeps up with a machine that forks
/// fast (a build moved into the group goes on forking into it), for at most [`PATIENCE`];
/// otherwise it stops at the first pass that moves nothing, or after [`PASSES`].
pub(crate) fn drain(root: &Root, from: &str, procs: &str, patient: bool) -> (usize, Vec<u32>) {
    let deadline = std::time::Instant::now() + if patient { PATIENCE } else { Duration::ZERO };
    let mut moved = 0;
    let mut left = pids(root, from);
    let mut passes = 0;
    while !left.is_empty() {
        let (m, _) = move_pids(root, &left, procs);
        moved += m;
        passes += 1;
        left = pids(root, from);
        let out_of_time = std::time::Instant::now() >= deadline;
        if left.is_empty() || (out_of_time && (m == 0 || passes >= PASSES)) {
            break;
        }
        if m == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    (moved, left)
}

/// How long a patient drain keeps at a group that is not empty yet.
const PATIENCE: Duration = Duration::from_secs(3);

/// Passes an impatient drain makes while each moves something (tasks forking into the group).
const PASSES: usize = 20;

/// `pid (comm)` for a message.
pub(crate) fn describe(root: &Root, pids: &[u32]) -> String {
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
