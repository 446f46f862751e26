//! Trees made from the captured ones for the plan tests.

use std::path::{Path, PathBuf};

/// A copy of `vm-x86_64-2cpu` under `dir` with its v1 cpuset root filled in as this VM has it
/// (the capture recorded what the audit read, and the audit never read these): what `tune
/// plan` reads to plan v1 cpusets. `tasks` and `cgroup.procs` list the captured /proc's
/// threads and processes. A tree only for planning: `tune apply` on a copy cannot make a
/// cgroup (mkdir gives no control files outside cgroupfs).
pub(crate) fn vm_with_v1_cpusets(dir: &Path) -> PathBuf {
    let root = dir.join("vm-v1-cpusets");
    testkit::copy_tree(&testkit::fixtures_dir().join("vm-x86_64-2cpu"), &root);
    let cpuset = root.join("sys/fs/cgroup/cpuset");
    for (file, value) in [
        ("cgroup.clone_children", "0"),
        ("cgroup.sane_behavior", "0"),
        ("cpuset.cpu_exclusive", "1"),
        ("cpuset.cpus", "0-1"),
        ("cpuset.effective_cpus", "0-1"),
        ("cpuset.effective_mems", "0"),
        ("cpuset.mem_exclusive", "1"),
        ("cpuset.mems", "0"),
        ("cpuset.sched_load_balance", "1"),
        ("notify_on_release", "0"),
    ] {
        std::fs::write(cpuset.join(file), format!("{value}\n")).unwrap();
    }
    let mut pids = Vec::new();
    let mut tids = Vec::new();
    for e in std::fs::read_dir(root.join("proc")).unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        pids.push(pid);
        for t in std::fs::read_dir(e.path().join("task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            tids.extend(t.file_name().to_string_lossy().parse::<u32>());
        }
    }
    pids.sort_unstable();
    tids.sort_unstable();
    let lines = |v: &[u32]| v.iter().map(|n| format!("{n}\n")).collect::<String>();
    std::fs::write(cpuset.join("cgroup.procs"), lines(&pids)).unwrap();
    std::fs::write(cpuset.join("tasks"), lines(&tids)).unwrap();
    root
}
