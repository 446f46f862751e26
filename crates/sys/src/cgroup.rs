//! cpuset cgroups made for a while and removed afterwards: under cgroup v2 where its cpuset
//! controller is available, else in the v1 cpuset hierarchy.
//!
//! This module creates, fills and removes one cgroup and undoes what it enabled on the way;
//! which processes belong there is the caller's decision.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rtlab_model::CpuSet;

use crate::parse::cgroup::{cgroup_mounts, process_cgroup};
use crate::{Error, Result, Root};

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
        let self_cgroups = root.read("/proc/self/cgroup")?;
        let home_rel = process_cgroup(&self_cgroups, controller).unwrap_or("/");
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
        let full = root.path(&dir);
        if let Err(e) = std::fs::create_dir(&full) {
            undo_enable(root, enabled_in.as_deref());
            return Err(Error::from_io(full, e));
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
        self.root
            .write(self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// The processes in the cgroup now.
    pub fn processes(&self) -> Result<Vec<u32>> {
        Ok(self
            .root
            .read(self.dir.join("cgroup.procs"))?
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect())
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
            self.root
                .write(self.home.join("cgroup.procs"), &me.to_string())?;
        }
        let full = self.root.path(&self.dir);
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match std::fs::remove_dir(&full) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) if Instant::now() >= deadline => return Err(Error::from_io(full, e)),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
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

/// The hierarchy to use: v2 when its root offers cpuset, else the v1 cpuset mount.
fn find_hierarchy(root: &Root) -> Result<(CgroupVersion, PathBuf, Option<&'static str>)> {
    let mounts = cgroup_mounts(&root.read("/proc/self/mountinfo")?);
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
            return crate::live_skip("not root: creating a cpuset cgroup needs root");
        }
        let name = format!("rtlab-load-test-{}", crate::process::current_pid());
        let cg = match CpusetCgroup::create(&root, &name, &CpuSet::from_cpus([0])) {
            Ok(cg) => cg,
            Err(e @ Error::Unsupported { .. }) => {
                return crate::live_skip(&format!("no cpuset cgroup here: {e}"));
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
