//! cgroup v2 cpuset partitions (`cpuset.cpus.partition`): which cgroups own CPUs exclusively
//! (`root`, `isolated`), and whether the kernel accepted them (`root invalid (reason)`).
//!
//! The unified hierarchy is found in `/proc/self/mountinfo` (else `/sys/fs/cgroup` when it
//! holds `cgroup.controllers`); the walk below it is bounded in depth and size.

use std::path::{Path, PathBuf};

use model::CpuSet;

use crate::Root;

/// How deep below the mount point the walk goes.
const MAX_DEPTH: usize = 6;
/// How many cgroups the walk visits at most.
const MAX_CGROUPS: usize = 20_000;

/// One cgroup whose `cpuset.cpus.partition` is not `member`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Kernel path of the cgroup directory.
    pub path: PathBuf,
    /// `root` or `isolated`.
    pub kind: String,
    /// The kernel's reason when it marked the partition invalid; `None` when valid.
    pub invalid: Option<String>,
    /// `cpuset.cpus.effective` (else `cpuset.cpus`).
    pub cpus: CpuSet,
    /// The raw `cpuset.cpus.partition` text.
    pub raw: String,
}

impl Partition {
    /// Whether the kernel accepted the partition.
    pub fn is_valid(&self) -> bool {
        self.invalid.is_none()
    }
}

/// Parses `cpuset.cpus.partition` text: `(kind, invalid reason)`. `member` and unreadable text
/// give `None`.
pub fn parse_partition(text: &str) -> Option<(String, Option<String>)> {
    let text = text.trim();
    let (kind, rest) = text.split_once(' ').unwrap_or((text, ""));
    if !matches!(kind, "root" | "isolated") {
        return None;
    }
    let rest = rest.trim();
    if let Some(reason) = rest.strip_prefix("invalid") {
        let reason = reason.trim().trim_start_matches('(').trim_end_matches(')');
        let reason = if reason.is_empty() {
            "no reason given".to_string()
        } else {
            reason.to_string()
        };
        return Some((kind.to_string(), Some(reason)));
    }
    Some((kind.to_string(), None))
}

/// The kernel path of the cgroup v2 hierarchy, if one is mounted. When mountinfo cannot be
/// read or parsed (a captured tree without it), `/sys/fs/cgroup` counts if it holds
/// `cgroup.controllers`: the audit judges partitions from what is there, and mountinfo only
/// says where to look.
pub fn unified_mount(root: &Root) -> Option<PathBuf> {
    if let Ok(mounts) = crate::cgroup::mounts(root)
        && let Some(m) = mounts.into_iter().find(|m| m.unified)
    {
        return Some(PathBuf::from(m.mount_point));
    }
    let fallback = Path::new("/sys/fs/cgroup");
    root.exists(fallback.join("cgroup.controllers"))
        .then(|| fallback.to_path_buf())
}

/// Every `root` or `isolated` partition under the unified hierarchy, in walk order. Empty
/// when there is no v2 hierarchy or no partition.
pub fn cpuset_partitions(root: &Root) -> Vec<Partition> {
    let Some(mount) = unified_mount(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack = vec![(mount, 0usize)];
    let mut visited = 0;
    while let Some((dir, depth)) = stack.pop() {
        visited += 1;
        if visited > MAX_CGROUPS {
            break;
        }
        if depth > 0
            && let Ok(text) = root.read(dir.join("cpuset.cpus.partition"))
            && let Some((kind, invalid)) = parse_partition(&text)
        {
            let cpus = ["cpuset.cpus.effective", "cpuset.cpus"]
                .iter()
                .find_map(|f| {
                    root.read_trimmed(dir.join(f))
                        .filter(|t| !t.is_empty())
                        .and_then(|t| CpuSet::parse_list(&t).ok())
                })
                .unwrap_or_default();
            out.push(Partition {
                path: dir.clone(),
                kind,
                invalid,
                cpus,
                raw: text.trim().to_string(),
            });
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        // Child cgroups are the subdirectories (sorted by list_dir).
        let Ok(names) = root.list_dir(&dir) else {
            continue;
        };
        let children: Vec<PathBuf> = names
            .into_iter()
            .map(|n| dir.join(n))
            .filter(|p| root.path(p).is_dir())
            .collect();
        for child in children.into_iter().rev() {
            stack.push((child, depth + 1));
        }
    }
    out
}

/// CPUs that cpusets keep for the tasks put there, apart from the scheduler's balancing of the
/// rest: valid cgroup v2 `root`/`isolated` partitions and [`v1_exclusive_cpusets`].
pub fn cpuset_isolated_cpus(root: &Root) -> CpuSet {
    let v2 = cpuset_partitions(root)
        .into_iter()
        .filter(|p| p.is_valid())
        .map(|p| p.cpus);
    let v1 = v1_exclusive_cpusets(root).into_iter().map(|(_, c)| c);
    v2.chain(v1).fold(CpuSet::default(), |acc, c| acc.union(&c))
}

/// With the v1 cpuset hierarchy, the top-level cpusets whose CPUs are exclusive once the root
/// cpuset stops balancing across all CPUs (`cpuset.sched_load_balance` 0), as `rtlab tune
/// apply` leaves them: the v1 counterpart of a partition. Kernel path and CPUs of each.
pub fn v1_exclusive_cpusets(root: &Root) -> Vec<(PathBuf, CpuSet)> {
    let v1 = Path::new("/sys/fs/cgroup/cpuset");
    if root
        .read_trimmed(v1.join("cpuset.sched_load_balance"))
        .as_deref()
        != Some("0")
    {
        return Vec::new();
    }
    let Ok(names) = root.list_dir(v1) else {
        return Vec::new();
    };
    names
        .into_iter()
        .map(|n| v1.join(n))
        .filter(|dir| {
            root.read_trimmed(dir.join("cpuset.cpu_exclusive"))
                .as_deref()
                == Some("1")
        })
        .filter_map(|dir| {
            let cpus = root
                .read_trimmed(dir.join("cpuset.cpus"))
                .and_then(|t| CpuSet::parse_list(&t).ok())?;
            Some((dir, cpus))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_text_is_parsed() {
        assert_eq!(parse_partition("member\n"), None);
        assert_eq!(parse_partition("root\n"), Some(("root".into(), None)));
        assert_eq!(
            parse_partition("isolated invalid (Cpu list in cpuset.cpus not exclusive)\n"),
            Some((
                "isolated".into(),
                Some("Cpu list in cpuset.cpus not exclusive".into())
            ))
        );
        assert_eq!(
            parse_partition("root invalid"),
            Some(("root".into(), Some("no reason given".into())))
        );
        assert_eq!(parse_partition(""), None);
        assert_eq!(parse_partition("\u{0}garbage"), None);
    }

    #[test]
    fn partitions_are_found_below_the_unified_mount() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        root.write(
            "/proc/self/mountinfo",
            "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
        )
        .unwrap();
        let mk = |rel: &str, file: &str, text: &str| {
            let p = dir.path().join("sys/fs/cgroup").join(rel);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join(file), text).unwrap();
        };
        mk("", "cpuset.cpus.partition", "root\n");
        mk("rt", "cpuset.cpus.partition", "root\n");
        mk("rt", "cpuset.cpus.effective", "2-7\n");
        mk("bulk", "cpuset.cpus.partition", "member\n");
        mk(
            "bad",
            "cpuset.cpus.partition",
            "isolated invalid (Parent is not a partition root)\n",
        );
        mk("bad", "cpuset.cpus", "1\n");
        let parts = cpuset_partitions(&root);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert_eq!(parts[0].path, PathBuf::from("/sys/fs/cgroup/bad"));
        assert!(!parts[0].is_valid());
        assert_eq!(parts[0].cpus, CpuSet::from_cpus([1]));
        assert_eq!(parts[1].path, PathBuf::from("/sys/fs/cgroup/rt"));
        assert_eq!(parts[1].cpus, CpuSet::parse_list("2-7").unwrap());
        // Only the valid partition sets CPUs apart.
        assert_eq!(
            cpuset_isolated_cpus(&root),
            CpuSet::parse_list("2-7").unwrap()
        );
    }

    #[test]
    fn v1_exclusive_cpusets_count_once_the_root_stops_balancing() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let mk = |rel: &str, file: &str, text: &str| {
            let p = dir.path().join("sys/fs/cgroup/cpuset").join(rel);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join(file), text).unwrap();
        };
        mk(
            "",
            "cpuset.sched_load_balance",
            "1
",
        );
        mk(
            "rtlab-rt",
            "cpuset.cpu_exclusive",
            "1
",
        );
        mk(
            "rtlab-rt",
            "cpuset.cpus",
            "3
",
        );
        mk(
            "rtlab-housekeeping",
            "cpuset.cpu_exclusive",
            "0
",
        );
        mk(
            "rtlab-housekeeping",
            "cpuset.cpus",
            "0-2
",
        );
        assert!(cpuset_isolated_cpus(&root).is_empty(), "still balanced");
        mk(
            "",
            "cpuset.sched_load_balance",
            "0
",
        );
        assert_eq!(cpuset_isolated_cpus(&root), CpuSet::from_cpus([3]));
    }

    #[test]
    fn no_hierarchy_no_partitions() {
        let dir = tempfile::tempdir().unwrap();
        assert!(cpuset_partitions(&Root::at(dir.path())).is_empty());
    }
}
