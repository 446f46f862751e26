//! Every fix the audit prints and every step `tune plan` makes, checked against the tree it is
//! for (issue #45): a kernel file written exists there (or in a cgroup the same plan creates),
//! a cgroup is made under a hierarchy that has the controller, a `systemctl` command or a
//! service restart only where systemd is PID 1, `nohz_full=` only on a kernel built with
//! NO_HZ_FULL, the cgroup v2 root files only on cgroup v2, a sysctl only where its file is.
//!
//! The trees are the captured machines in `fixtures/roots/` and variants of them made here
//! (this VM with its v1 cpuset root, which the capture lacks),
//! so each axis is covered both ways: cgroup v1 and v2, with and without NO_HZ_FULL, with and
//! without systemd. The checker reads the tree itself, not what rtlab concluded about it.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use audit::{Options, Selection};
use model::audit::Fix;
use model::tune::{Action, TunePlan, TuneProfile};
use testkit::{copy_tree, fixtures_dir};
use tune::{Request, plan};

/// What the checker knows of a tree, read from its files.
struct Tree {
    name: String,
    dir: PathBuf,
}

impl Tree {
    fn path(&self, kernel_path: &str) -> PathBuf {
        self.dir.join(kernel_path.trim_start_matches('/'))
    }

    fn exists(&self, kernel_path: &str) -> bool {
        self.path(kernel_path).exists()
    }

    /// Whether PID 1 is systemd: `/proc/1/comm`, else the name in `/proc/1/task/1/stat`.
    fn systemd(&self) -> bool {
        let comm = std::fs::read_to_string(self.path("/proc/1/comm")).or_else(|_| {
            std::fs::read_to_string(self.path("/proc/1/task/1/stat")).map(|s| {
                s.split_once('(')
                    .and_then(|(_, r)| r.rsplit_once(')'))
                    .map_or(String::new(), |(c, _)| c.to_string())
            })
        });
        comm.is_ok_and(|c| c.trim() == "systemd")
    }

    /// Whether `/sys/fs/cgroup` is the cgroup v2 root.
    fn cgroup_v2(&self) -> bool {
        self.exists("/sys/fs/cgroup/cgroup.controllers")
    }

    fn nohz_full_built(&self) -> bool {
        self.exists("/sys/devices/system/cpu/nohz_full")
    }
}

/// The reasons `command` (one printed fix or step) cannot work on `tree`; `made`: the
/// directories earlier steps create.
fn command_faults(tree: &Tree, command: &str, made: &mut BTreeSet<String>) -> Vec<String> {
    if let Some(bodies) = for_loop(tree, command) {
        return bodies
            .iter()
            .flat_map(|body| command_faults(tree, body, made))
            .collect();
    }
    let mut faults = Vec::new();
    for simple in command.split("&&").flat_map(|c| c.split(';')) {
        let words: Vec<&str> = simple.split_whitespace().collect();
        let Some(&program) = words.first() else {
            continue;
        };
        if program == "systemctl" && !tree.systemd() {
            faults.push(format!("`{simple}` without systemd as PID 1"));
        }
        if program == "mkdir" {
            for dir in words.iter().skip(1).filter(|w| w.starts_with('/')) {
                faults.extend(dir_fault(tree, dir, made));
            }
        }
        if program == "mount" && words.contains(&"debugfs") {
            // Mounting debugfs makes its files appear, where the kernel made its mount point.
            match words.last().filter(|p| tree.exists(p)) {
                Some(at) => {
                    made.insert(format!("mount:{at}"));
                }
                None => faults.push(format!("`{simple}`: no debugfs mount point here")),
            }
        }
        if program == "sysctl" {
            for setting in words.iter().skip(1).filter(|w| w.contains('=')) {
                let key = setting.split('=').next().unwrap_or_default();
                let file = format!("/proc/sys/{}", key.replace('.', "/"));
                if !tree.exists(&file) {
                    faults.push(format!("`{simple}`: no {file}"));
                }
            }
        }
        for target in redirect_targets(&words) {
            faults.extend(write_fault(tree, target, made));
        }
    }
    faults
}

/// `for V in A B C; do BODY; done` as its bodies with `$V` replaced by each value; `None` for
/// any other command.
fn for_loop(tree: &Tree, command: &str) -> Option<Vec<String>> {
    let rest = command.trim().strip_prefix("for ")?;
    let (var, rest) = rest.split_once(" in ")?;
    let (values, rest) = rest.split_once("; do ")?;
    let body = rest
        .trim_end()
        .strip_suffix("done")?
        .trim_end()
        .trim_end_matches(';');
    // What runs when the write fails (`|| echo ...`) is not a step.
    let body = body.split("||").next().unwrap_or(body);
    let body = body.replace(" 2>/dev/null", "");
    Some(
        values
            .split_whitespace()
            .flat_map(|v| glob(tree, v))
            .map(|v| body.replace(&format!("${var}"), &v))
            .collect(),
    )
}

/// The kernel paths of `tree` a shell pattern with `*` components matches (the pattern
/// itself when it has none, or when nothing matches, as the shell leaves it).
fn glob(tree: &Tree, pattern: &str) -> Vec<String> {
    if !pattern.contains('*') {
        return vec![pattern.to_string()];
    }
    let mut found = vec![String::new()];
    for part in pattern.split('/').skip(1) {
        found = found
            .into_iter()
            .flat_map(|at| {
                if part != "*" {
                    return vec![format!("{at}/{part}")];
                }
                let Ok(entries) = std::fs::read_dir(tree.path(&format!("{at}/"))) else {
                    return Vec::new();
                };
                entries
                    .flatten()
                    .map(|e| format!("{at}/{}", e.file_name().to_string_lossy()))
                    .collect()
            })
            .collect();
    }
    found.retain(|p| tree.exists(p));
    if found.is_empty() {
        found.push(pattern.to_string());
    }
    found
}

/// The files `> F`, `>> F` and `tee [-a] F` write in one simple command.
fn redirect_targets<'a>(words: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied();
        match *w {
            ">" | ">>" => out.extend(next),
            "tee" => out.extend(words[i + 1..].iter().find(|w| !w.starts_with('-'))),
            _ => {
                if let Some(path) = w.strip_prefix(">>").or_else(|| w.strip_prefix('>'))
                    && path.starts_with('/')
                {
                    out.push(path);
                }
            }
        }
    }
    out
}

/// Why writing the kernel file `path` cannot work on `tree`: it is not there, and no earlier
/// step makes the cgroup it is in. Files outside /proc and /sys (configuration) are made by
/// writing them.
fn write_fault(tree: &Tree, path: &str, made: &BTreeSet<String>) -> Option<String> {
    if !(path.starts_with("/proc/") || path.starts_with("/sys/")) {
        return None;
    }
    if path == "/sys/fs/cgroup/cgroup.subtree_control" && !tree.cgroup_v2() {
        return Some(format!(
            "writes {path} on a machine without cgroup v2 there"
        ));
    }
    if tree.exists(path) {
        return None;
    }
    if made
        .iter()
        .filter_map(|m| m.strip_prefix("mount:"))
        .any(|at| path.starts_with(&format!("{at}/")))
    {
        return None;
    }
    let parent = Path::new(path).parent()?.to_string_lossy().into_owned();
    if made.contains(&parent) && is_cgroup_file(tree, &parent, path) {
        return None;
    }
    Some(format!("writes {path}, which this machine does not have"))
}

/// Whether `path` is a file the kernel gives a new cgroup at `dir` (its hierarchy's root
/// has the same file name, or it is a cpuset file of a hierarchy with the cpuset
/// controller).
fn is_cgroup_file(tree: &Tree, dir: &str, path: &str) -> bool {
    let name = Path::new(path).file_name().unwrap().to_string_lossy();
    let root = hierarchy_root(tree, dir);
    tree.exists(&format!("{root}/{name}"))
        || (name.starts_with("cpuset.") && cpuset_available(tree, &root))
}

/// The mount point of the cgroup hierarchy `dir` is in: the closest ancestor that exists and
/// holds `cgroup.procs` while its parent does not.
fn hierarchy_root(tree: &Tree, dir: &str) -> String {
    let mut at = Path::new(dir);
    let mut root = dir.to_string();
    while let Some(parent) = at.parent() {
        let p = parent.to_string_lossy();
        if tree.exists(&format!("{p}/cgroup.procs")) {
            root = p.into_owned();
        }
        at = parent;
    }
    root
}

/// Whether the hierarchy at `root` can have cpusets: a v1 cpuset mount, or v2 whose root lists
/// `cpuset` among its controllers.
fn cpuset_available(tree: &Tree, root: &str) -> bool {
    tree.exists(&format!("{root}/cpuset.cpus"))
        || std::fs::read_to_string(tree.path(&format!("{root}/cgroup.controllers")))
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "cpuset"))
}

/// Why creating the cgroup `dir` cannot work: its parent is not there, or not a cgroup.
fn dir_fault(tree: &Tree, dir: &str, made: &mut BTreeSet<String>) -> Option<String> {
    let parent = Path::new(dir).parent()?.to_string_lossy().into_owned();
    let ok = tree.exists(&format!("{parent}/cgroup.procs")) || made.contains(&parent);
    made.insert(dir.to_string());
    (!ok).then(|| format!("makes {dir} under {parent}, which is not a cgroup here"))
}

/// The faults of one boot parameter (`name=value`).
fn boot_fault(tree: &Tree, param: &str) -> Option<String> {
    let name = param.split('=').next().unwrap_or_default();
    (name == "nohz_full" && !tree.nohz_full_built())
        .then(|| format!("boot parameter {param} on a kernel without NO_HZ_FULL"))
}

/// Every fault of the audit's fixes on `tree`.
fn audit_faults(tree: &Tree, rt: &str) -> Vec<String> {
    let root = sys::Root::at(&tree.dir);
    let options = Options {
        rt_cpus: Some(rt.parse().unwrap()),
        ..Options::default()
    };
    let report = audit::run(&root, &options, &Selection::default()).unwrap();
    let mut faults = Vec::new();
    for finding in &report.findings {
        let mut made = BTreeSet::new();
        for fix in &finding.fix {
            let found = match fix {
                Fix::Write { path, .. } => write_fault(tree, path, &made).into_iter().collect(),
                Fix::BootParam { param } => boot_fault(tree, param).into_iter().collect(),
                Fix::Command { command } => command_faults(tree, command, &mut made),
                Fix::Advice { text } => advice_faults(tree, text),
                Fix::KernelConfig { .. } => Vec::new(),
            };
            faults.extend(
                found
                    .into_iter()
                    .map(|f| format!("audit {}: {f}", finding.id)),
            );
        }
    }
    faults
}

/// Advice names commands in backquotes; each is checked like a command.
fn advice_faults(tree: &Tree, text: &str) -> Vec<String> {
    let mut faults: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|c| command_faults(tree, c, &mut BTreeSet::new()))
        .collect();
    if text.contains("is planned") {
        faults.push(format!("advice promises a command that exists: {text}"));
    }
    faults
}

/// Every fault of a plan's steps on `tree`.
fn plan_faults(tree: &Tree, p: &TunePlan) -> Vec<String> {
    let mut faults = Vec::new();
    let mut made = BTreeSet::new();
    for c in &p.changes {
        let fault = match c.action {
            Action::Write => write_fault(tree, &c.path, &made),
            Action::Mkdir => dir_fault(tree, &c.path, &mut made),
            Action::MoveTasks => {
                // `path` is the group's task file (`cgroup.procs`, v1 `tasks`).
                let dir = Path::new(&c.path).parent().unwrap().to_string_lossy();
                (!made.contains(dir.as_ref()) && !tree.exists(&c.path))
                    .then(|| format!("moves tasks into {}, which nothing makes", c.path))
            }
            Action::SetPolicy | Action::SetAffinity => (!tree.exists(&c.path))
                .then(|| format!("changes {}, which is not a thread here", c.path)),
            Action::Restart => (!tree.systemd())
                .then(|| format!("restarts the service {} without systemd", c.path)),
            Action::SetEnv => None,
        };
        faults.extend(fault);
    }
    for param in &p.boot.params {
        faults.extend(boot_fault(tree, &param.text()));
    }
    faults
}

/// A copy of the captured tree `from`, changed by `change`, under `scratch`.
fn variant(scratch: &Path, from: &str, name: &str, change: impl Fn(&Path)) -> Tree {
    let dir = scratch.join(name);
    copy_tree(&fixtures_dir().join(from), &dir);
    change(&dir);
    Tree {
        name: name.to_string(),
        dir,
    }
}

/// PID 1 renamed `comm` in every file that names it.
fn pid1_named(dir: &Path, comm: &str) {
    let proc1 = dir.join("proc/1");
    for file in [
        "comm",
        "stat",
        "status",
        "task/1/stat",
        "task/1/status",
        "task/1/comm",
    ] {
        let path = proc1.join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let old = if file.ends_with("stat") {
            text.split_once('(')
                .and_then(|(_, r)| r.rsplit_once(')'))
                .map(|(c, _)| c.to_string())
        } else if file.ends_with("status") {
            text.lines()
                .find_map(|l| l.strip_prefix("Name:"))
                .map(|n| n.trim().to_string())
        } else {
            Some(text.trim().to_string())
        };
        if let Some(old) = old.filter(|o| !o.is_empty()) {
            std::fs::write(&path, text.replacen(&old, comm, 1)).unwrap();
        }
    }
}

/// The trees: (tree, its RT CPUs, what it stands for as (cgroup v2, systemd, NO_HZ_FULL)).
fn trees(scratch: &Path) -> Vec<(Tree, &'static str)> {
    let captured = |name: &str| Tree {
        name: name.to_string(),
        dir: fixtures_dir().join(name),
    };
    vec![
        (captured("x86-8cpu-rt-untuned"), "2-7"),
        (captured("arm64-8cpu-rt-tuned"), "2-7"),
        (captured("rpi4-4cpu-isolcpu3"), "3"),
        (captured("vm-x86_64-2cpu"), "1"),
        (
            variant(scratch, "x86-8cpu-rt-untuned", "x86-busybox-init", |d| {
                pid1_named(d, "init")
            }),
            "2-7",
        ),
        (
            variant(scratch, "x86-8cpu-rt-untuned", "x86-no-nohz-full", |d| {
                std::fs::remove_file(d.join("sys/devices/system/cpu/nohz_full")).unwrap()
            }),
            "2-7",
        ),
        (
            Tree {
                name: "vm-v1-cpusets".to_string(),
                dir: common::vm_with_v1_cpusets(scratch),
            },
            "1",
        ),
        (
            {
                let dir = common::vm_with_v1_cpusets(&scratch.join("systemd"));
                pid1_named(&dir, "systemd");
                Tree {
                    name: "vm-v1-cpusets-with-systemd".to_string(),
                    dir,
                }
            },
            "1",
        ),
    ]
}

#[test]
fn the_trees_cover_every_axis_both_ways() {
    let scratch = tempfile::tempdir().unwrap();
    let axes: BTreeSet<(bool, bool, bool)> = trees(scratch.path())
        .iter()
        .map(|(t, _)| (t.cgroup_v2(), t.systemd(), t.nohz_full_built()))
        .collect();
    for (i, axis) in ["cgroup v2", "systemd", "NO_HZ_FULL"].iter().enumerate() {
        let values: BTreeSet<bool> = axes.iter().map(|a| [a.0, a.1, a.2][i]).collect();
        assert_eq!(values.len(), 2, "{axis} only {values:?} in {axes:?}");
    }
}

#[test]
fn every_fix_and_step_works_on_the_machine_it_is_printed_for() {
    let scratch = tempfile::tempdir().unwrap();
    let mut faults = Vec::new();
    for (tree, rt) in trees(scratch.path()) {
        faults.extend(
            audit_faults(&tree, rt)
                .into_iter()
                .map(|f| format!("{}: {f}", tree.name)),
        );
        let root = sys::Root::at(&tree.dir);
        for profile in [TuneProfile::Balanced, TuneProfile::Strict] {
            let request = Request {
                rt_cpus: rt.parse().unwrap(),
                housekeeping: None,
                profile,
                rules: Vec::new(),
                siblings: tune::Siblings::Confine,
            };
            let p = plan(&root, &request).unwrap_or_else(|e| panic!("{}: {e}", tree.name));
            faults.extend(
                plan_faults(&tree, &p)
                    .into_iter()
                    .map(|f| format!("{} plan {}: {f}", tree.name, profile.as_str())),
            );
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn the_checker_finds_what_it_is_for() {
    let scratch = tempfile::tempdir().unwrap();
    let vm = variant(scratch.path(), "vm-x86_64-2cpu", "vm", |_| {});
    let mut made = BTreeSet::new();
    let faults = command_faults(
        &vm,
        "systemctl set-property --runtime system.slice AllowedCPUs=0 && echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control",
        &mut made,
    );
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(boot_fault(&vm, "nohz_full=1").is_some());
    assert!(boot_fault(&vm, "isolcpus=1").is_none());
    assert!(command_faults(&vm, "sysctl -w kernel.no_such_knob=1", &mut made).len() == 1);
    assert!(command_faults(&vm, "sysctl -w kernel.sched_rt_runtime_us=-1", &mut made).is_empty());
    // Loops are checked per value, globs against the tree; debugfs files after its mount.
    let looped = "for i in 24 99999; do echo 0 > /proc/irq/$i/smp_affinity_list 2>/dev/null || echo \"IRQ $i: not movable\"; done";
    assert_eq!(command_faults(&vm, looped, &mut made).len(), 1);
    let globbed = "for w in /sys/devices/virtual/workqueue/*/cpumask; do echo 1 > $w; done";
    assert!(command_faults(&vm, globbed, &mut made).is_empty());
    let unglobbed = "for w in /sys/no/such/*/file; do echo 1 > $w; done";
    assert_eq!(command_faults(&vm, unglobbed, &mut made).len(), 1);
    // A cpuset made under the v1 cpuset mount takes cpuset files; one under a missing
    // parent, or under the mount point of a capture without the hierarchy's files, does not.
    let mut made = BTreeSet::new();
    assert!(dir_fault(&vm, "/sys/fs/cgroup/cpuset/rt", &mut made).is_some());
    let v1 = Tree {
        name: "vm-v1-cpusets".to_string(),
        dir: common::vm_with_v1_cpusets(scratch.path()),
    };
    let mut made = BTreeSet::new();
    assert!(dir_fault(&v1, "/sys/fs/cgroup/cpuset/rt", &mut made).is_none());
    assert!(write_fault(&v1, "/sys/fs/cgroup/cpuset/rt/cpuset.cpus", &made).is_none());
    assert!(dir_fault(&v1, "/sys/fs/cgroup/rt", &mut made).is_some());
}
