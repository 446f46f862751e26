//! cgroups, the one place rtlab touches cgroupfs outside `tune`'s journaled changes: which
//! hierarchies are mounted and where this process sits in them ([`mounts`], [`own_cgroup`]),
//! moving a process ([`move_process`]), listing one's processes ([`processes`]), removing an
//! emptied cgroup while its last tasks exit ([`remove`]), and [`CpusetCgroup`], a cpuset
//! cgroup made for a while and removed afterwards (under cgroup v2 where its cpuset controller
//! is available, else in the v1 cpuset hierarchy).
//!
//! Paths are kernel paths, read and written through a [`Root`]. Which processes belong where,
//! and when a cgroup goes, are the callers' decisions.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use model::CpuSet;

use crate::parse::cgroup::{CgroupMount, cgroup_mounts, process_cgroup};
use crate::{Error, Result, Root};

const MOUNTINFO: &str = "/proc/self/mountinfo";
const SELF_CGROUP: &str = "/proc/self/cgroup";

/// How long [`CpusetCgroup::remove`] waits for exiting tasks to leave its cgroup.
const REMOVE_PATIENCE: Duration = Duration::from_secs(2);

/// The cgroup hierarchies mounted (`/proc/self/mountinfo`), in file order.
pub fn mounts(root: &Root) -> Result<Vec<CgroupMount>> {
    cgroup_mounts(&root.read(MOUNTINFO)?).map_err(|e| e.in_file(MOUNTINFO))
}

/// This process's cgroup relative to the root of the hierarchy holding `controller` (v1), or
/// of the unified one (`None`): `/`, `/user.slice/...`; `None` when it is in no such hierarchy.
fn own_relative(root: &Root, controller: Option<&str>) -> Result<Option<String>> {
    let text = root.read(SELF_CGROUP)?;
    let rel = process_cgroup(&text, controller).map_err(|e| e.in_file(SELF_CGROUP))?;
    Ok(rel.map(str::to_string))
}

/// The kernel path of the cgroup this process is in, in the mounted hierarchy that holds the
/// cgroup directory `dir`; `None` when `dir` is in no mounted cgroup hierarchy (or this
/// process is in none of that hierarchy's cgroups).
pub fn own_cgroup(root: &Root, dir: &Path) -> Result<Option<PathBuf>> {
    let mounts = mounts(root)?;
    let Some(mount) = mounts
        .iter()
        .filter(|m| dir.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.len())
    else {
        return Ok(None);
    };
    let controller = match (mount.unified, mount.controllers.first()) {
        (true, _) => None,
        (false, Some(c)) => Some(c.as_str()),
        (false, None) => return Ok(None),
    };
    Ok(own_relative(root, controller)?.map(|rel| {
        let base = Path::new(&mount.mount_point);
        match rel.trim_matches('/') {
            "" => base.to_path_buf(),
            rel => base.join(rel),
        }
    }))
}

/// Moves process `pid` (all its threads) into the cgroup directory `dir`.
pub fn move_process(root: &Root, dir: &Path, pid: u32) -> Result<()> {
    root.write(dir.join("cgroup.procs"), &pid.to_string())
}

/// The processes in the cgroup directory `dir` now (`cgroup.procs`); a line that is not a
/// process id is an [`Error::Parse`] naming it.
pub fn processes(root: &Root, dir: &Path) -> Result<Vec<u32>> {
    let path = dir.join("cgroup.procs");
    let text = root.read(&path)?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            l.trim().parse().map_err(|_| Error::Parse {
                path: path.clone(),
                line: i + 1,
                what: "a process id".to_string(),
            })
        })
        .collect()
}

/// Removes the cgroup directory `dir` once its tasks are gone: the kernel refuses while an
/// exiting task still counts, so it retries for up to `patience`. A cgroup already gone is
/// removed.
pub fn remove(root: &Root, dir: &Path, patience: Duration) -> Result<()> {
    let deadline = Instant::now() + patience;
    loop {
        match root.remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Which cgroup interface a cgroup was made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// The v1 cpuset hierarchy.
    V1,
    /// The unified v2 hierarchy.
    V2,
}

/// A cpuset cgroup this process created. [`remove`](CpusetCgroup::remove) moves this process
/// back where it was and deletes the cgroup; dropping it does the same.
#[derive(Debug)]
pub struct CpusetCgroup {
    root: Root,
    version: CgroupVersion,
    /// Kernel path of the new cgroup.
    dir: PathBuf,
    /// Kernel path of the cgroup this process was in before.
    home: PathBuf,
    /// The v2 `cgroup.subtree_control` that had `+cpuset` written by us.
    enabled_in: Option<PathBuf>,
    removed: bool,
}

impl CpusetCgroup {
    /// Creates cgroup `name` under the root of the hierarchy holding the cpuset controller,
    /// limited to `cpus` (and, on v1, to the memory nodes of its parent).
    pub fn create(root: &Root, name: &str, cpus: &CpuSet) -> Result<CpusetCgroup> {
        let (version, base, controller) = find_hierarchy(root)?;
        let home_rel = own_relative(root, controller)?.unwrap_or_else(|| "/".to_string());
        let home = base.join(home_rel.trim_start_matches('/'));

        let mut enabled_in = None;
        if version == CgroupVersion::V2 {
            let control = base.join("cgroup.subtree_control");
            let enabled = root.read(&control)?;
            if !enabled.split_whitespace().any(|c| c == "cpuset") {
                root.write(&control, "+cpuset")?;
                enabled_in = Some(control);
            }
        }
        let dir = base.join(name);
        if let Err(e) = root.create_dir(&dir) {
            undo_enable(root, enabled_in.as_deref());
            return Err(e);
        }
        let cgroup = CpusetCgroup {
            root: root.clone(),
            version,
            dir,
            home,
            enabled_in,
            removed: false,
        };
        cgroup.configure(&base, cpus)?;
        Ok(cgroup)
    }

    fn configure(&self, base: &Path, cpus: &CpuSet) -> Result<()> {
        if self.version == CgroupVersion::V1 {
            let mems = self.root.read(base.join("cpuset.mems"))?;
            self.root.write(self.dir.join("cpuset.mems"), mems.trim())?;
        }
        self.root
            .write(self.dir.join("cpuset.cpus"), &cpus.to_string())
    }

    /// The cgroup's kernel path (`/sys/fs/cgroup/cpuset/rtlab-load-42`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// v1 or v2.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Moves process `pid` (all its threads) into the cgroup.
    pub fn add_process(&self, pid: u32) -> Result<()> {
        move_process(&self.root, &self.dir, pid)
    }

    /// The processes in the cgroup now.
    pub fn processes(&self) -> Result<Vec<u32>> {
        processes(&self.root, &self.dir)
    }

    /// Moves this process back to the cgroup it came from, removes the cgroup (waiting up to
    /// 2 s for exiting tasks to leave it), and disables the cpuset controller again if
    /// [`create`](CpusetCgroup::create) enabled it.
    pub fn remove(mut self) -> Result<()> {
        self.remove_inner()
    }

    fn remove_inner(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        let me = crate::process::current_pid();
        if self.processes().is_ok_and(|p| p.contains(&me)) {
            move_process(&self.root, &self.home, me)?;
        }
        remove(&self.root, &self.dir, REMOVE_PATIENCE)?;
        self.removed = true;
        undo_enable(&self.root, self.enabled_in.as_deref());
        Ok(())
    }
}

impl Drop for CpusetCgroup {
    fn drop(&mut self) {
        let _ = self.remove_inner();
    }
}

fn undo_enable(root: &Root, control: Option<&Path>) {
    if let Some(control) = control {
        // Fails only if someone else started using it meanwhile; then it must stay.
        let _ = root.write(control, "-cpuset");
    }
}

/// The CPUs this process's cpuset cgroup lets it use (`cpuset.cpus.effective` on v2,
/// `cpuset.effective_cpus` on v1): in a container, the CPUs the engine gave it. `None` when
/// there is no cpuset hierarchy, the process is in none of its cgroups, or the file does not
/// hold a CPU list.
pub fn own_cpuset_cpus(root: &Root) -> Option<CpuSet> {
    let (version, base, controller) = find_hierarchy(root).ok()?;
    let rel = own_relative(root, controller).ok()??;
    let dir = match rel.trim_matches('/') {
        "" => base,
        rel => base.join(rel),
    };
    let files: &[&str] = match version {
        CgroupVersion::V2 => &["cpuset.cpus.effective"],
        CgroupVersion::V1 => &["cpuset.effective_cpus", "cpuset.cpus"],
    };
    files.iter().find_map(|f| {
        root.read_trimmed(dir.join(f))
            .filter(|t| !t.is_empty())
            .and_then(|t| CpuSet::parse_list(&t).ok())
    })
}

/// The hierarchy to use: v2 when its root offers cpuset, else the v1 cpuset mount.
fn find_hierarchy(root: &Root) -> Result<(CgroupVersion, PathBuf, Option<&'static str>)> {
    let mounts = mounts(root)?;
    for m in mounts.iter().filter(|m| m.unified) {
        let base = PathBuf::from(&m.mount_point);
        let controllers = root
            .read(base.join("cgroup.controllers"))
            .unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "cpuset") {
            return Ok((CgroupVersion::V2, base, None));
        }
    }
    if let Some(m) = mounts
        .iter()
        .find(|m| !m.unified && m.controllers.iter().any(|c| c == "cpuset"))
    {
        return Ok((
            CgroupVersion::V1,
            PathBuf::from(&m.mount_point),
            Some("cpuset"),
        ));
    }
    Err(Error::Unsupported {
        what: "a cpuset cgroup".into(),
        why: "no cgroup v2 hierarchy offers the cpuset controller and no v1 cpuset hierarchy \
              is mounted; mount one (`mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset`) \
              or run without --load-cgroup"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(mountinfo: &str, self_cgroup: &str) -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::create_dir_all(root.path("/proc/self")).unwrap();
        std::fs::write(root.path("/proc/self/mountinfo"), mountinfo).unwrap();
        std::fs::write(root.path("/proc/self/cgroup"), self_cgroup).unwrap();
        (dir, root)
    }

    #[test]
    fn own_cpuset_cpus_are_the_cgroups_effective_ones() {
        let (_d, root) = fake(
            "34 30 0:30 / /cg/cpuset rw - cgroup cgroup rw,cpuset\n",
            "3:cpuset:/docker/abc\n0::/\n",
        );
        std::fs::create_dir_all(root.path("/cg/cpuset/docker/abc")).unwrap();
        std::fs::write(
            root.path("/cg/cpuset/docker/abc/cpuset.effective_cpus"),
            "2-3\n",
        )
        .unwrap();
        assert_eq!(own_cpuset_cpus(&root), Some(CpuSet::from_cpus([2, 3])));
        let (_d, root) = fake("35 24 0:30 / /cg rw - cgroup2 cgroup2 rw\n", "0::/\n");
        std::fs::create_dir_all(root.path("/cg")).unwrap();
        std::fs::write(root.path("/cg/cgroup.controllers"), "cpuset cpu\n").unwrap();
        std::fs::write(root.path("/cg/cpuset.cpus.effective"), "0,5\n").unwrap();
        assert_eq!(own_cpuset_cpus(&root), Some(CpuSet::from_cpus([0, 5])));
        std::fs::write(root.path("/cg/cpuset.cpus.effective"), "junk\n").unwrap();
        assert_eq!(own_cpuset_cpus(&root), None);
    }

    #[test]
    fn v1_cgroup_copies_mems_and_is_removed() {
        let (_d, root) = fake(
            "34 30 0:30 / /cg/cpuset rw - cgroup cgroup rw,cpuset\n\
             31 30 0:27 / /cg/unified rw - cgroup2 cgroup2 rw\n",
            "3:cpuset:/\n0::/\n",
        );
        std::fs::create_dir_all(root.path("/cg/cpuset")).unwrap();
        std::fs::create_dir_all(root.path("/cg/unified")).unwrap();
        std::fs::write(
            root.path("/cg/unified/cgroup.controllers"),
            "cpu io memory\n",
        )
        .unwrap();
        std::fs::write(root.path("/cg/cpuset/cpuset.mems"), "0\n").unwrap();
        let cg = CpusetCgroup::create(&root, "rtlab-load-1", &CpuSet::from_cpus([1])).unwrap();
        assert_eq!(cg.version(), CgroupVersion::V1);
        assert_eq!(cg.dir(), Path::new("/cg/cpuset/rtlab-load-1"));
        assert_eq!(
            root.read_trimmed("/cg/cpuset/rtlab-load-1/cpuset.cpus")
                .unwrap(),
            "1"
        );
        assert_eq!(
            root.read_trimmed("/cg/cpuset/rtlab-load-1/cpuset.mems")
                .unwrap(),
            "0"
        );
        // A fixture directory keeps its files; the real cgroupfs has none to delete.
        for f in ["cpuset.cpus", "cpuset.mems"] {
            std::fs::remove_file(root.path("/cg/cpuset/rtlab-load-1").join(f)).unwrap();
        }
        cg.remove().unwrap();
        assert!(!root.exists("/cg/cpuset/rtlab-load-1"));
    }

    #[test]
    fn v2_enables_cpuset_and_disables_it_again() {
        let (_d, root) = fake("31 30 0:27 / /cg rw - cgroup2 cgroup2 rw\n", "0::/\n");
        std::fs::create_dir_all(root.path("/cg")).unwrap();
        std::fs::write(root.path("/cg/cgroup.controllers"), "cpuset cpu io\n").unwrap();
        std::fs::write(root.path("/cg/cgroup.subtree_control"), "cpu\n").unwrap();
        let cg = CpusetCgroup::create(&root, "rtlab-load-2", &CpuSet::from_cpus([0, 1])).unwrap();
        assert_eq!(cg.version(), CgroupVersion::V2);
        assert_eq!(
            root.read_trimmed("/cg/cgroup.subtree_control").unwrap(),
            "+cpuset"
        );
        assert_eq!(
            root.read_trimmed("/cg/rtlab-load-2/cpuset.cpus").unwrap(),
            "0-1"
        );
        std::fs::remove_file(root.path("/cg/rtlab-load-2/cpuset.cpus")).unwrap();
        drop(cg);
        assert!(!root.exists("/cg/rtlab-load-2"));
        assert_eq!(
            root.read_trimmed("/cg/cgroup.subtree_control").unwrap(),
            "-cpuset"
        );
    }

    #[test]
    fn own_cgroup_is_found_in_the_hierarchy_holding_the_directory() {
        let (_d, root) = fake(
            "34 30 0:30 / /cg/cpuset rw - cgroup cgroup rw,cpuset\n\
             31 30 0:27 / /cg rw - cgroup2 cgroup2 rw\n\
             20 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
            "3:cpuset:/rt\n0::/user.slice/s-1.scope\n",
        );
        let own = |dir: &str| own_cgroup(&root, Path::new(dir)).unwrap();
        assert_eq!(own("/cg/cpuset/hk"), Some(PathBuf::from("/cg/cpuset/rt")));
        assert_eq!(
            own("/cg/hk"),
            Some(PathBuf::from("/cg/user.slice/s-1.scope"))
        );
        assert_eq!(own("/cg"), Some(PathBuf::from("/cg/user.slice/s-1.scope")));
        assert_eq!(own("/cgx/hk"), None);
        assert_eq!(own("/home"), None);
        std::fs::write(root.path("/proc/self/cgroup"), "0::/\n").unwrap();
        assert_eq!(own("/cg/hk"), Some(PathBuf::from("/cg")));
        assert_eq!(own("/cg/cpuset/hk"), None);
    }

    #[test]
    fn malformed_kernel_files_are_named_with_their_line() {
        let (_d, root) = fake(
            "31 30 0:27 / /cg rw - cgroup2 cgroup2 rw\nnot mountinfo\n",
            "0::/\n",
        );
        let err = mounts(&root).unwrap_err().to_string();
        assert!(
            err.starts_with("/proc/self/mountinfo:2: cannot parse a mountinfo line"),
            "{err}"
        );
        std::fs::write(
            root.path("/proc/self/mountinfo"),
            "31 30 0:27 / /cg rw - cgroup2 cgroup2 rw\n",
        )
        .unwrap();
        std::fs::write(root.path("/proc/self/cgroup"), "0:/\n").unwrap();
        let err = own_cgroup(&root, Path::new("/cg/x"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/proc/self/cgroup:1: cannot parse a cgroup line"),
            "{err}"
        );
        root.create_dir("/cg").unwrap();
        root.write("/cg/cgroup.procs", "12\n\n13\nx\n").unwrap();
        let err = processes(&root, Path::new("/cg")).unwrap_err().to_string();
        assert_eq!(err, "/cg/cgroup.procs:4: cannot parse a process id");
    }

    #[test]
    fn processes_move_and_an_emptied_cgroup_goes() {
        let (_d, root) = fake("", "");
        root.create_dir("/cg").unwrap();
        root.create_dir("/cg/rtlab-load-9").unwrap();
        let dir = Path::new("/cg/rtlab-load-9");
        move_process(&root, dir, 4242).unwrap();
        assert_eq!(processes(&root, dir).unwrap(), [4242]);
        assert!(
            remove(&root, dir, Duration::ZERO).is_err(),
            "a fixture keeps its files"
        );
        std::fs::remove_file(root.path("/cg/rtlab-load-9/cgroup.procs")).unwrap();
        remove(&root, dir, Duration::ZERO).unwrap();
        assert!(!root.exists(dir));
        remove(&root, dir, Duration::ZERO).unwrap();
    }

    #[test]
    fn no_cpuset_anywhere_says_how_to_get_one() {
        let (_d, root) = fake("31 30 0:27 / /cg rw - cgroup2 cgroup2 rw\n", "0::/\n");
        let err = CpusetCgroup::create(&root, "rtlab-load-3", &CpuSet::from_cpus([0]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--load-cgroup"), "{err}");
    }

    #[test]
    fn live_cgroup_holds_a_child_and_is_removed() {
        let root = Root::host();
        if crate::privilege::Privileges::current().euid != 0 {
            return testkit::live::skip("not root: creating a cpuset cgroup needs root");
        }
        let name = format!("rtlab-load-test-{}", crate::process::current_pid());
        let cg = match CpusetCgroup::create(&root, &name, &CpuSet::from_cpus([0])) {
            Ok(cg) => cg,
            Err(e @ Error::Unsupported { .. }) => {
                return testkit::live::skip(&format!("no cpuset cgroup here: {e}"));
            }
            Err(e) => panic!("{e}"),
        };
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        cg.add_process(child.id()).unwrap();
        assert_eq!(cg.processes().unwrap(), [child.id()]);
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        assert!(status.contains("Cpus_allowed_list:\t0\n"), "{status}");
        child.kill().unwrap();
        child.wait().unwrap();
        let dir = root.path(cg.dir());
        cg.remove().unwrap();
        assert!(!dir.exists());
    }
}
