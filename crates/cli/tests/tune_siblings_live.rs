//! `rtlab tune apply` and `revert` live with a cpuset group of another program's beside
//! rtlab's (podman's, docker's) overlapping the RT CPUs: confined to the housekeeping CPUs
//! while tuned, given its CPUs back at revert, its task alive throughout.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::rtlab;

/// A cpuset group another program keeps (podman's libpod_parent, docker's), spanning every
/// CPU, with a task in a group below it: removed with its task however the test ends.
struct Sibling {
    dir: PathBuf,
    sleeper: std::process::Child,
}

impl Sibling {
    /// Makes `rtlab-test-sibling` under `base` (`v2`: the unified hierarchy) and a group
    /// `inner` below it, both on the `online` CPUs, with a sleeping task in `inner`.
    fn make(base: &Path, v2: bool, online: &str) -> Sibling {
        let mems = if v2 {
            read_trimmed(base.join("cpuset.mems.effective"))
        } else {
            read_trimmed(base.join("cpuset.mems"))
        };
        let dir = base.join("rtlab-test-sibling");
        let _ = std::fs::remove_dir(dir.join("inner"));
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).unwrap();
        let sibling = Sibling {
            dir: dir.clone(),
            sleeper: std::process::Command::new("sleep")
                .arg("120")
                .spawn()
                .unwrap(),
        };
        if v2 {
            std::fs::write(dir.join("cgroup.subtree_control"), "+cpuset").unwrap();
        }
        for d in [dir.clone(), dir.join("inner")] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpuset.cpus"), online).unwrap();
            std::fs::write(d.join("cpuset.mems"), &mems).unwrap();
        }
        let procs = if v2 { "cgroup.procs" } else { "tasks" };
        std::fs::write(
            dir.join("inner").join(procs),
            sibling.sleeper.id().to_string(),
        )
        .unwrap();
        sibling
    }
}

impl Drop for Sibling {
    fn drop(&mut self) {
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
        for _ in 0..50 {
            let _ = std::fs::remove_dir(self.dir.join("inner"));
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// A file's text, trimmed.
fn read_trimmed(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref())
        .unwrap()
        .trim()
        .to_string()
}

/// The cpuset hierarchy to test on and whether it is v2: the v1 one where cgroup v2 does
/// not offer the controller (this VM); `None` when neither is there.
fn cpuset_base() -> Option<(PathBuf, bool)> {
    let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "cpuset"));
    let base = PathBuf::from(if v2 {
        "/sys/fs/cgroup"
    } else {
        "/sys/fs/cgroup/cpuset"
    });
    (base.join("cpuset.cpus").exists() || v2).then_some((base, v2))
}

/// What `tune apply` and `tune revert` did to a sibling group.
struct SiblingSeen {
    /// `tune apply`'s output.
    apply: Output,
    /// After apply: the sibling's CPUs, those of the group below it, and the RT group's
    /// `cpuset.cpu_exclusive` (v1) and `cpuset.cpus.partition` (v2).
    applied: (String, String, Option<String>, Option<String>),
    /// `tune revert`'s output.
    revert: Output,
    /// After revert: the sibling's CPUs and those of the group below it.
    reverted: (String, String),
    /// Whether the sibling's task still ran after both.
    still_there: bool,
}

/// Applies a plan with the RT CPU `last` and reverts it, noting the sibling's CPUs after
/// each.
fn apply_and_revert(base: &Path, sibling: &Sibling, last: &str) -> SiblingSeen {
    let dir = &sibling.dir;
    let work = tempfile::tempdir().unwrap();
    let journal = work.path().join("journal.jsonl");
    let apply = rtlab()
        .args(["tune", "apply", "--rt-cpus", last, "--yes", "--journal"])
        .arg(&journal)
        .output()
        .unwrap();
    let applied = (
        read_trimmed(dir.join("cpuset.cpus")),
        read_trimmed(dir.join("inner/cpuset.cpus")),
        std::fs::read_to_string(base.join("rtlab-rt/cpuset.cpu_exclusive")).ok(),
        std::fs::read_to_string(base.join("rtlab-rt/cpuset.cpus.partition")).ok(),
    );
    let revert = rtlab()
        .args(["tune", "revert", "--journal"])
        .arg(&journal)
        .output()
        .unwrap();
    let reverted = (
        read_trimmed(dir.join("cpuset.cpus")),
        read_trimmed(dir.join("inner/cpuset.cpus")),
    );
    let still_there =
        std::fs::read_to_string(format!("/proc/{}/stat", sibling.sleeper.id())).is_ok();
    SiblingSeen {
        apply,
        applied,
        revert,
        reverted,
        still_there,
    }
}

#[test]
fn live_sibling_cpusets_are_confined_and_given_back() {
    if !common::is_root() {
        return common::live_skip("not root: the live tune test needs to write /sys");
    }
    let _one = common::serial();
    let Some(last) = common::last_cpu().filter(|c| c != "0") else {
        return common::live_skip("one CPU: nothing to isolate");
    };
    let Some((base, v2)) = cpuset_base() else {
        return common::live_skip("no cpuset hierarchy mounted");
    };
    let online = read_trimmed("/sys/devices/system/cpu/online");
    let mut sibling = Sibling::make(&base, v2, &online);
    let seen = apply_and_revert(&base, &sibling, &last);
    let _ = sibling.sleeper.kill();
    sibling_was_confined(&seen, &online, &last, v2);
    sibling_was_given_back(&seen, &online, &base);
}

/// After apply: the sibling and the group below it on the housekeeping CPUs, the RT group
/// exclusive (v1) or an isolated partition (v2).
fn sibling_was_confined(seen: &SiblingSeen, online: &str, last: &str, v2: bool) {
    let SiblingSeen { apply, applied, .. } = seen;
    let stdout = String::from_utf8_lossy(&apply.stdout);
    assert!(
        apply.status.success(),
        "apply: {stdout}{}",
        String::from_utf8_lossy(&apply.stderr)
    );
    assert!(stdout.contains(" 0 refused"), "{stdout}");
    let hk = {
        let o = sys_list(online);
        let l: u32 = last.parse().unwrap();
        o.into_iter().filter(|c| *c != l).collect::<Vec<_>>()
    };
    assert_eq!(
        sys_list(&applied.0),
        hk,
        "the sibling confined: {applied:?}"
    );
    assert_eq!(
        sys_list(&applied.1),
        hk,
        "the group below it too: {applied:?}"
    );
    if v2 {
        assert!(
            applied
                .3
                .as_deref()
                .unwrap_or_default()
                .starts_with("isolated"),
            "{applied:?}"
        );
    } else {
        assert_eq!(
            applied.2.as_deref().map(str::trim),
            Some("1"),
            "{applied:?}"
        );
    }
}

/// After revert: every CPU back in the sibling and the group below it, its task alive,
/// rtlab's groups gone.
fn sibling_was_given_back(seen: &SiblingSeen, online: &str, base: &Path) {
    let SiblingSeen {
        revert, reverted, ..
    } = seen;
    assert!(
        revert.status.success(),
        "revert: {}{}",
        String::from_utf8_lossy(&revert.stdout),
        String::from_utf8_lossy(&revert.stderr)
    );
    assert_eq!(
        sys_list(&reverted.0),
        sys_list(online),
        "given back: {reverted:?}"
    );
    assert_eq!(
        sys_list(&reverted.1),
        sys_list(online),
        "given back: {reverted:?}"
    );
    assert!(seen.still_there, "the sibling's task lived through it");
    assert!(!base.join("rtlab-rt").exists() && !base.join("rtlab-housekeeping").exists());
}

/// The CPUs of a kernel CPU list (`0-1,3`).
fn sys_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}
