//! Cpuset groups beside rtlab's — container engines', libvirt's, the kubelet's — that overlap
//! the RT CPUs. The plan confines them in an order the kernel accepts (a model of the v1
//! cpuset rules checks every write, and every write of the way back), apply and revert on a
//! copied tree give every group its CPUs back, `share` leaves them alone and the RT cpuset
//! without exclusivity, and v2 partitions beside rtlab's become members before they shrink.

use std::collections::BTreeMap;
use std::path::Path;

use model::CpuSet;
use model::tune::{Action, Change, TuneProfile};
use sys::Root;
use testkit::{copy_tree, fixtures_dir, tree_contents};
use tune::{Request, Siblings, apply, plan, revert};

const V1: &str = "/sys/fs/cgroup/cpuset";

fn request(rt: &str, siblings: Siblings) -> Request {
    Request {
        rt_cpus: rt.parse().unwrap(),
        housekeeping: None,
        profile: TuneProfile::Balanced,
        rules: Vec::new(),
        siblings,
    }
}

/// This VM's tree (2 CPUs) with a v1 cpuset hierarchy and the given groups:
/// (path below the hierarchy, cpus, exclusive).
fn v1_tree(dir: &Path, groups: &[(&str, &str, bool)]) -> Root {
    copy_tree(&fixtures_dir().join("vm-x86_64-2cpu"), dir);
    let top = dir.join(V1.trim_start_matches('/'));
    let write = |rel: &str, file: &str, text: &str| {
        let d = top.join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(file), text).unwrap();
    };
    write("", "cpuset.cpus", "0-1\n");
    write("", "cpuset.mems", "0\n");
    write("", "cpuset.cpu_exclusive", "1\n");
    write("", "cpuset.sched_load_balance", "1\n");
    write("", "tasks", "1\n2\n");
    for (rel, cpus, exclusive) in groups {
        write(rel, "cpuset.cpus", &format!("{cpus}\n"));
        write(rel, "cpuset.mems", "0\n");
        write(
            rel,
            "cpuset.cpu_exclusive",
            if *exclusive { "1\n" } else { "0\n" },
        );
    }
    Root::at(dir)
}

/// The v1 cpuset groups as the kernel keeps them: CPUs and exclusivity by path.
#[derive(Clone, Debug)]
struct Kernel(BTreeMap<String, (CpuSet, bool)>);

impl Kernel {
    fn read(root: &Root, paths: &[&str]) -> Kernel {
        let mut map = BTreeMap::new();
        for p in paths {
            let dir = format!("{V1}{p}");
            let cpus = root
                .read_trimmed(format!("{dir}/cpuset.cpus"))
                .unwrap()
                .parse()
                .unwrap_or_default();
            let excl = root
                .read_trimmed(format!("{dir}/cpuset.cpu_exclusive"))
                .as_deref()
                == Some("1");
            map.insert(dir, (cpus, excl));
        }
        Kernel(map)
    }

    fn parent(path: &str) -> String {
        path.rsplit_once('/').unwrap().0.to_string()
    }

    /// The kernel's checks of a v1 cpuset change (`validate_change`): children within it,
    /// it within its parent (exclusivity included), no overlap with a sibling when either is
    /// exclusive.
    fn change(
        &mut self,
        dir: &str,
        cpus: Option<CpuSet>,
        excl: Option<bool>,
    ) -> Result<(), String> {
        let old = self
            .0
            .get(dir)
            .cloned()
            .ok_or(format!("{dir}: no such group"))?;
        let trial = (cpus.unwrap_or(old.0), excl.unwrap_or(old.1));
        for (p, g) in &self.0 {
            if p == dir {
                continue;
            }
            if Kernel::parent(p) == dir && (!g.0.is_subset(&trial.0) || g.1 && !trial.1) {
                return Err(format!(
                    "{dir} -> {trial:?}: child {p} {g:?} not within (EBUSY)"
                ));
            }
            if *p == Kernel::parent(dir)
                && p.as_str() != V1
                && (!trial.0.is_subset(&g.0) || trial.1 && !g.1)
            {
                return Err(format!(
                    "{dir} -> {trial:?}: not within parent {p} {g:?} (EACCES)"
                ));
            }
            if Kernel::parent(p) == Kernel::parent(dir)
                && (trial.1 || g.1)
                && !trial.0.intersection(&g.0).is_empty()
            {
                return Err(format!(
                    "{dir} -> {trial:?}: overlaps exclusive sibling {p} {g:?} (EINVAL)"
                ));
            }
        }
        self.0.insert(dir.to_string(), trial);
        Ok(())
    }

    /// One planned change (`value`: the value written), checked.
    fn step(&mut self, c: &Change, value: Option<&str>) -> Result<(), String> {
        if !c.path.starts_with(V1) {
            return Ok(());
        }
        match c.action {
            Action::Mkdir => {
                self.0.insert(c.path.clone(), (CpuSet::default(), false));
                Ok(())
            }
            Action::Write => {
                let (dir, file) = c.path.rsplit_once('/').unwrap();
                let v = value.unwrap_or_default();
                match file {
                    "cpuset.cpus" => self.change(dir, Some(v.parse().unwrap()), None),
                    "cpuset.cpu_exclusive" => self.change(dir, None, Some(v == "1")),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// The plan's changes in order, then taken back in reverse (originals written, created
    /// groups removed), every step checked.
    fn apply_and_revert(&mut self, changes: &[Change]) -> Result<(), String> {
        for c in changes {
            self.step(c, c.new.as_deref())?;
        }
        for c in changes.iter().rev() {
            match c.action {
                Action::Mkdir => {
                    self.0.remove(&c.path);
                }
                Action::Write if c.current.is_some() => self.step(c, c.current.as_deref())?,
                _ => {}
            }
        }
        Ok(())
    }
}

fn sibling_writes(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter(|c| {
            c.action == Action::Write
                && c.path.starts_with("/sys/fs/cgroup")
                && !c.path.contains("/rtlab-")
        })
        .filter(|c| !c.path.ends_with("sched_load_balance") && !c.path.ends_with("subtree_control"))
        .map(|c| format!("{} {}", c.path, c.new.as_deref().unwrap_or_default()))
        .collect()
}

#[test]
fn container_engines_are_confined_in_an_order_the_kernel_takes_and_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let groups = [
        ("/libpod_parent", "0-1", false),
        ("/libpod_parent/libpod-conmon-1", "0-1", false),
        ("/docker", "1", false),
        ("/docker/c1", "1", false),
        ("/machine.slice", "0", false),
    ];
    let root = v1_tree(&dir.path().join("root"), &groups);
    let before = tree_contents(&dir.path().join("root"));
    let p = plan(&root, &request("1", Siblings::Confine)).unwrap();
    assert_eq!(
        sibling_writes(&p.changes),
        [
            "/sys/fs/cgroup/cpuset/docker/cpuset.cpus 0-1",
            "/sys/fs/cgroup/cpuset/docker/c1/cpuset.cpus 0",
            "/sys/fs/cgroup/cpuset/docker/cpuset.cpus 0",
            "/sys/fs/cgroup/cpuset/libpod_parent/libpod-conmon-1/cpuset.cpus 0",
            "/sys/fs/cgroup/cpuset/libpod_parent/cpuset.cpus 0",
        ]
    );
    assert!(
        p.changes
            .iter()
            .any(|c| c.path == format!("{V1}/rtlab-rt/cpuset.cpu_exclusive"))
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("docker (CPUs 1)") && n.contains("libpod_parent (CPUs 0-1)")),
        "{:?}",
        p.notes
    );
    let paths: Vec<&str> = groups.iter().map(|g| g.0).collect();
    let mut kernel = Kernel::read(&root, &paths);
    kernel.apply_and_revert(&p.changes).unwrap();

    // The same plan carried out on the copied tree, and taken back from its journal.
    let journal = dir.path().join("j.jsonl");
    let out = apply(&root, &p, &journal, None).unwrap();
    assert!(out.refused.is_empty(), "{:?}", out.refused);
    for g in [
        "docker",
        "docker/c1",
        "libpod_parent",
        "libpod_parent/libpod-conmon-1",
        "machine.slice",
    ] {
        assert_eq!(
            root.read_trimmed(format!("{V1}/{g}/cpuset.cpus"))
                .as_deref(),
            Some("0"),
            "{g}"
        );
    }
    revert(&root, &journal).unwrap();
    assert_eq!(tree_contents(&dir.path().join("root")), before);
}

#[test]
fn an_exclusive_sibling_gives_up_exclusivity_children_first() {
    let dir = tempfile::tempdir().unwrap();
    let groups = [("/rtapp", "0-1", true), ("/rtapp/inner", "1", true)];
    let root = v1_tree(&dir.path().join("root"), &groups);
    let p = plan(&root, &request("1", Siblings::Confine)).unwrap();
    assert_eq!(
        sibling_writes(&p.changes),
        [
            "/sys/fs/cgroup/cpuset/rtapp/inner/cpuset.cpu_exclusive 0",
            "/sys/fs/cgroup/cpuset/rtapp/cpuset.cpu_exclusive 0",
            "/sys/fs/cgroup/cpuset/rtapp/inner/cpuset.cpus 0",
            "/sys/fs/cgroup/cpuset/rtapp/cpuset.cpus 0",
        ]
    );
    let paths: Vec<&str> = groups.iter().map(|g| g.0).collect();
    Kernel::read(&root, &paths)
        .apply_and_revert(&p.changes)
        .unwrap();
}

#[test]
fn the_old_plan_is_what_the_kernel_refuses() {
    // Without confinement the exclusive RT cpuset overlaps podman's group: the model
    // refuses it as the kernel did on this VM (EINVAL at rtlab-rt/cpuset.cpu_exclusive).
    let dir = tempfile::tempdir().unwrap();
    let groups = [("/libpod_parent", "0-1", false)];
    let root = v1_tree(&dir.path().join("root"), &groups);
    let p = plan(&root, &request("1", Siblings::Confine)).unwrap();
    let unconfined: Vec<Change> = p
        .changes
        .iter()
        .filter(|c| !c.path.contains("libpod"))
        .cloned()
        .collect();
    let e = Kernel::read(&root, &["/libpod_parent"])
        .apply_and_revert(&unconfined)
        .unwrap_err();
    assert!(e.contains("rtlab-rt") && e.contains("EINVAL"), "{e}");
}

#[test]
fn share_leaves_them_and_the_rt_cpuset_without_exclusivity() {
    let dir = tempfile::tempdir().unwrap();
    let groups = [("/libpod_parent", "0-1", false)];
    let root = v1_tree(&dir.path().join("root"), &groups);
    let p = plan(&root, &request("1", Siblings::Share)).unwrap();
    assert!(sibling_writes(&p.changes).is_empty(), "{:?}", p.changes);
    assert!(
        !p.changes
            .iter()
            .any(|c| c.path.ends_with("cpuset.cpu_exclusive"))
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("--sibling-cpusets share") && n.contains("not exclusive")),
        "{:?}",
        p.notes
    );
    Kernel::read(&root, &["/libpod_parent"])
        .apply_and_revert(&p.changes)
        .unwrap();
}

#[test]
fn nothing_overlapping_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = v1_tree(&dir.path().join("root"), &[("/machine.slice", "0", false)]);
    let p = plan(&root, &request("1", Siblings::Confine)).unwrap();
    assert!(sibling_writes(&p.changes).is_empty());
    assert!(
        !p.notes.iter().any(|n| n.contains("beside rtlab's")),
        "{:?}",
        p.notes
    );
}

#[test]
fn v2_partitions_beside_become_members_before_they_shrink() {
    // The untuned x86 box: `bulk` (0-5) and `rt` (4-7, a partition the kernel marked invalid
    // because bulk overlaps it). With RT CPUs 6-7, rt reaches beyond them: a member first,
    // then confined.
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("root");
    copy_tree(&fixtures_dir().join("x86-8cpu-rt-untuned"), &tree);
    let root = Root::at(&tree);
    let before = tree_contents(&tree);
    let p = plan(&root, &request("6-7", Siblings::Confine)).unwrap();
    assert_eq!(
        sibling_writes(&p.changes),
        [
            "/sys/fs/cgroup/rt/cpuset.cpus.partition member",
            "/sys/fs/cgroup/rt/cpuset.cpus 4-5",
        ]
    );
    let partition = p
        .changes
        .iter()
        .position(|c| c.path == "/sys/fs/cgroup/rtlab-rt/cpuset.cpus.partition")
        .expect("rtlab-rt is an isolated partition");
    assert!(partition > 1);
    let journal = dir.path().join("j.jsonl");
    apply(&root, &p, &journal, None).unwrap();
    assert_eq!(
        root.read_trimmed("/sys/fs/cgroup/rt/cpuset.cpus.partition")
            .as_deref(),
        Some("member")
    );
    assert!(journal_has(&journal, "\"restore\":\"root\""));
    revert(&root, &journal).unwrap();
    let after = tree_contents(&tree);
    let changed: Vec<_> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, _)| k.display().to_string())
        .collect();
    assert!(changed.is_empty(), "{changed:#?}");

    let shared = plan(&root, &request("6-7", Siblings::Share)).unwrap();
    assert!(sibling_writes(&shared.changes).is_empty());
    assert!(
        !shared
            .changes
            .iter()
            .any(|c| c.path.ends_with("rtlab-rt/cpuset.cpus.partition"))
    );
}

#[test]
fn a_partition_within_the_rt_cpus_is_left_and_shared() {
    // With RT CPUs 2-7, rt (4-7) is someone's real-time partition within them: kept; bulk
    // (0-5) is confined; rtlab-rt is no partition beside rt.
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures_dir().join("x86-8cpu-rt-untuned"), dir.path());
    let root = Root::at(dir.path());
    let p = plan(&root, &request("2-7", Siblings::Confine)).unwrap();
    assert_eq!(
        sibling_writes(&p.changes),
        ["/sys/fs/cgroup/bulk/cpuset.cpus 0-1"]
    );
    assert!(
        !p.changes
            .iter()
            .any(|c| c.path.ends_with("rtlab-rt/cpuset.cpus.partition"))
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.starts_with("rt (CPUs 4-7): a cpuset partition")),
        "{:?}",
        p.notes
    );
}

fn journal_has(journal: &Path, text: &str) -> bool {
    std::fs::read_to_string(journal).unwrap().contains(text)
}

#[test]
fn an_unreadable_sibling_is_a_note_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let root = v1_tree(&dir.path().join("root"), &[("/docker", "1", false)]);
    std::fs::write(
        dir.path()
            .join("root/sys/fs/cgroup/cpuset/docker/cpuset.cpus"),
        "1-\u{1}\n",
    )
    .unwrap();
    let p = plan(&root, &request("1", Siblings::Confine)).unwrap();
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("docker/cpuset.cpus:1: cannot parse a CPU list")),
        "{:?}",
        p.notes
    );
}
