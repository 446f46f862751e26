//! The cpuset groups other software keeps beside rtlab's own: container engines (`docker`,
//! podman's `libpod_parent`), libvirt's `machine.slice`, the kubelet's `kubepods`. Each group
//! at the top of a cpuset hierarchy with the CPUs it was given, whether they are exclusive, and
//! the groups below it (on the v1 hierarchy a parent cannot shrink below its children, so the
//! whole subtree matters). Read through [`Root`], bounded in depth and size; `tune`'s plan
//! confines the groups that overlap the RT CPUs.

use std::path::{Path, PathBuf};

use model::CpuSet;

use crate::{Error, Result, Root};

/// How deep below a top-level group the walk goes (the kubelet nests pods and containers
/// three levels down; systemd slices a few more).
pub const MAX_DEPTH: usize = 8;
/// How many groups one walk reads at most; more is refused rather than half-planned.
pub const MAX_GROUPS: usize = 10_000;

/// One cpuset group and the groups below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpusetGroup {
    /// Kernel path of the group's directory.
    pub path: PathBuf,
    /// `cpuset.cpus` as written; empty when none is set (on cgroup v2 the group then takes
    /// its parent's CPUs).
    pub cpus: CpuSet,
    /// `cpuset.cpu_exclusive` is 1 (cgroup v1).
    pub exclusive: bool,
    /// The kind of cgroup v2 partition it is (`root`, `isolated`), valid or not; `None` for a
    /// member or on v1.
    pub partition: Option<String>,
    /// The groups below, in name order.
    pub children: Vec<CpusetGroup>,
}

impl CpusetGroup {
    /// The directory's name.
    pub fn name(&self) -> &str {
        self.path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }

    /// This group and every group below it, parents before children.
    pub fn walk(&self) -> Vec<&CpusetGroup> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }
}

/// The groups directly below `base` (a cpuset hierarchy's top: `/sys/fs/cgroup` on v2,
/// `/sys/fs/cgroup/cpuset` on v1) that have a `cpuset.cpus` file, except those named in
/// `skip`, each with its subtree. Directories without a `cpuset.cpus` file (v2 groups whose
/// parent does not enable the controller) are left out with their subtrees.
///
/// Errors: `base` unreadable, a `cpuset.cpus` that is not a CPU list (named with its path),
/// or more than [`MAX_GROUPS`] groups.
pub fn top_level(root: &Root, base: &Path, skip: &[&str]) -> Result<Vec<CpusetGroup>> {
    let mut budget = MAX_GROUPS;
    let mut out = Vec::new();
    for name in root.subdirs(base)? {
        if skip.contains(&name.as_str()) {
            continue;
        }
        if let Some(group) = read_group(root, &base.join(&name), 0, &mut budget)? {
            out.push(group);
        }
    }
    Ok(out)
}

/// One group and its subtree; `None` when the directory has no `cpuset.cpus`.
fn read_group(
    root: &Root,
    dir: &Path,
    depth: usize,
    budget: &mut usize,
) -> Result<Option<CpusetGroup>> {
    let Some(text) = root.read_opt(dir.join("cpuset.cpus"))? else {
        return Ok(None);
    };
    *budget = budget.checked_sub(1).ok_or_else(|| Error::Unsupported {
        what: format!("reading the cpuset groups beside {}", dir.display()),
        why: format!("more than {MAX_GROUPS} groups"),
    })?;
    let cpus = parse_cpus(dir, &text)?;
    let exclusive = root
        .read_trimmed(dir.join("cpuset.cpu_exclusive"))
        .as_deref()
        == Some("1");
    let partition = root
        .read_trimmed(dir.join("cpuset.cpus.partition"))
        .and_then(|t| crate::partition::parse_partition(&t))
        .map(|(kind, _)| kind);
    let mut children = Vec::new();
    if depth < MAX_DEPTH {
        for name in root.subdirs(dir)? {
            if let Some(child) = read_group(root, &dir.join(name), depth + 1, budget)? {
                children.push(child);
            }
        }
    }
    Ok(Some(CpusetGroup {
        path: dir.to_path_buf(),
        cpus,
        exclusive,
        partition,
        children,
    }))
}

/// A `cpuset.cpus` text: a CPU list, or empty.
fn parse_cpus(dir: &Path, text: &str) -> Result<CpuSet> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(CpuSet::default());
    }
    CpuSet::parse_list(text).map_err(|_| Error::Parse {
        path: dir.join("cpuset.cpus"),
        line: 1,
        what: "a CPU list".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(dir: &Path, rel: &str, cpus: &str, exclusive: Option<&str>) {
        let p = dir.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("cpuset.cpus"), cpus).unwrap();
        if let Some(e) = exclusive {
            std::fs::write(p.join("cpuset.cpu_exclusive"), e).unwrap();
        }
    }

    #[test]
    fn siblings_and_their_subtrees_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let v1 = dir.path().join("sys/fs/cgroup/cpuset");
        group(&v1, "", "0-3\n", Some("1\n"));
        group(&v1, "docker", "0-3\n", Some("0\n"));
        group(&v1, "docker/abc", "2-3\n", Some("0\n"));
        group(&v1, "machine.slice", "\n", Some("1\n"));
        group(&v1, "rtlab-rt", "3\n", Some("1\n"));
        std::fs::create_dir_all(v1.join("not-a-group")).unwrap();
        let groups = top_level(&root, Path::new("/sys/fs/cgroup/cpuset"), &["rtlab-rt"]).unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].name(), "docker");
        assert_eq!(groups[0].cpus.to_string(), "0-3");
        assert!(!groups[0].exclusive);
        assert_eq!(groups[0].children[0].cpus.to_string(), "2-3");
        assert_eq!(groups[0].walk().len(), 2);
        assert_eq!(groups[1].name(), "machine.slice");
        assert!(groups[1].cpus.is_empty());
        assert!(groups[1].exclusive);
        assert_eq!(groups[1].partition, None);
    }

    #[test]
    fn v2_partitions_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let v2 = dir.path().join("sys/fs/cgroup");
        group(&v2, "rt", "4-7\n", None);
        std::fs::write(
            v2.join("rt/cpuset.cpus.partition"),
            "root invalid (Cpu list in cpuset.cpus not exclusive)\n",
        )
        .unwrap();
        let groups = top_level(&root, Path::new("/sys/fs/cgroup"), &[]).unwrap();
        assert_eq!(groups[0].partition.as_deref(), Some("root"));
    }

    #[test]
    fn a_bad_cpu_list_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let v1 = dir.path().join("sys/fs/cgroup/cpuset");
        group(&v1, "", "0-3\n", None);
        group(&v1, "docker", "0-\u{7f}\n", None);
        let e = top_level(&root, Path::new("/sys/fs/cgroup/cpuset"), &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("docker/cpuset.cpus:1: cannot parse a CPU list"),
            "{e}"
        );
    }

    #[test]
    fn depth_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let v1 = dir.path().join("sys/fs/cgroup/cpuset");
        let mut rel = String::from("a");
        for _ in 0..(MAX_DEPTH + 4) {
            group(&v1, &rel, "0\n", None);
            rel.push_str("/a");
        }
        let groups = top_level(&root, Path::new("/sys/fs/cgroup/cpuset"), &[]).unwrap();
        assert_eq!(groups[0].walk().len(), MAX_DEPTH + 1);
    }
}
