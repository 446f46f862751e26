//! Whether this process runs in a container ([`detect`]: which engine, and the file that says
//! so), and the real-time budget of its cgroup ([`rt_group`]: `cpu.rt_runtime_us` of its
//! cgroup v1 cpu cgroup, which with CONFIG_RT_GROUP_SCHED is 0 in most containers).
//!
//! Everything is read through a [`Root`] and nothing fails: a marker that cannot be read is
//! taken as absent. What a container or a zero budget means for a run is the caller's call.

use std::path::{Path, PathBuf};

use crate::Root;

/// The longest engine name taken from `container=` in PID 1's environment.
const MAX_ENGINE_LEN: usize = 32;
/// The most of `/proc/1/environ` that is looked at.
const MAX_ENVIRON: usize = 64 * 1024;

/// A container this process runs in, as far as the files inside it tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    /// `kubernetes`, `docker`, `podman`, `lxc`, or the value of `container=` in PID 1's
    /// environment (`systemd-nspawn`, `oci`, ...).
    pub engine: String,
    /// What said so (`/.dockerenv exists`, `kubepods in /proc/self/cgroup`).
    pub evidence: String,
}

impl Container {
    fn new(engine: &str, evidence: impl Into<String>) -> Container {
        Container {
            engine: engine.to_string(),
            evidence: evidence.into(),
        }
    }

    /// Whether the engine is Kubernetes (its fixes are spelled in a pod's securityContext).
    pub fn is_kubernetes(&self) -> bool {
        self.engine == "kubernetes"
    }
}

/// The container this process runs in, or `None` when no marker says it runs in one: a
/// Kubernetes pod (a `kubepods` cgroup, or `KUBERNETES_SERVICE_HOST` in its own or PID 1's
/// environment) first, then podman's `/run/.containerenv`, Docker's `/.dockerenv`,
/// `container=` in the environment (systemd's convention, set by podman, LXC and
/// systemd-nspawn), and last a `docker`, `libpod` or `lxc` cgroup.
///
/// The two marker files count only in a PID namespace of its own: where the kernel's
/// threads are visible (`kthreadd` is PID 2 of the initial namespace alone), a marker is a
/// leftover of the container image the root file system was made from, as in virtual
/// machines built from images. A container sharing the host's PID namespace is still found
/// by its cgroup (on cgroup v2 with a private cgroup namespace it is not).
pub fn detect(root: &Root) -> Option<Container> {
    let cgroup = root.read("/proc/self/cgroup").unwrap_or_default();
    // Its own environment first: with the host's PID namespace (hostPID), PID 1 is the
    // host's init, while Kubernetes still gives every container KUBERNETES_SERVICE_HOST.
    let environs: Vec<Vec<u8>> = ["/proc/self/environ", "/proc/1/environ"]
        .iter()
        .filter_map(|p| root.read_bytes(p).ok())
        .map(|mut b| {
            b.truncate(MAX_ENVIRON);
            b
        })
        .collect();
    let env_var = |name: &str| -> Option<String> {
        environs
            .iter()
            .flat_map(|e| e.split(|&b| b == 0))
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=').map(str::to_string))
    };
    if cgroup_names(&cgroup, "kubepods") {
        return Some(Container::new(
            "kubernetes",
            "kubepods in /proc/self/cgroup",
        ));
    }
    if env_var("KUBERNETES_SERVICE_HOST").is_some() {
        return Some(Container::new(
            "kubernetes",
            "KUBERNETES_SERVICE_HOST in its environment",
        ));
    }
    let own_pid_namespace = root.read_trimmed("/proc/2/comm").as_deref() != Some("kthreadd");
    if own_pid_namespace && root.exists("/run/.containerenv") {
        return Some(Container::new("podman", "/run/.containerenv exists"));
    }
    if own_pid_namespace && root.exists("/.dockerenv") {
        return Some(Container::new("docker", "/.dockerenv exists"));
    }
    if let Some(engine) = env_var("container").and_then(|v| engine_name(&v)) {
        return Some(Container::new(&engine, "container= in its environment"));
    }
    [("docker", "docker"), ("libpod", "podman"), ("lxc", "lxc")]
        .into_iter()
        .find(|(word, _)| cgroup_names(&cgroup, word))
        .map(|(word, engine)| Container::new(engine, format!("{word} in /proc/self/cgroup")))
}

/// Whether a cgroup path in `/proc/self/cgroup` text has a component that starts with
/// `word` (`kubepods`, `kubepods.slice`, `docker-1234.scope`, `libpod_parent`).
fn cgroup_names(text: &str, word: &str) -> bool {
    text.lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .flat_map(|path| path.split('/'))
        .any(|part| part.starts_with(word))
}

/// A `container=` value as an engine name: short, letters, digits, `-`, `_` and `.` only.
fn engine_name(value: &str) -> Option<String> {
    let v = value.trim();
    let ok = !v.is_empty()
        && v.len() <= MAX_ENGINE_LEN
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| v.to_string())
}

/// The real-time budget of this process's cpu cgroup (cgroup v1 with CONFIG_RT_GROUP_SCHED).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtGroup {
    /// The cgroup directory (`/sys/fs/cgroup/cpu/docker/1234...`).
    pub dir: PathBuf,
    /// Its `cpu.rt_runtime_us`: microseconds per period its real-time tasks may run; 0 refuses
    /// SCHED_FIFO/SCHED_RR to its tasks (EPERM) while RT bandwidth control is on.
    pub rt_runtime_us: i64,
}

/// The `cpu.rt_runtime_us` of the cgroup v1 cpu cgroup this process is in; `None` when no v1
/// cpu hierarchy is mounted, the process's cgroup cannot be found in it, or the kernel has no
/// CONFIG_RT_GROUP_SCHED (the file is absent).
pub fn rt_group(root: &Root) -> Option<RtGroup> {
    let mounts = crate::cgroup::mounts(root).ok()?;
    let mount = mounts
        .iter()
        .find(|m| !m.unified && m.controllers.iter().any(|c| c == "cpu"))?;
    let dir = crate::cgroup::own_cgroup(root, Path::new(&mount.mount_point)).ok()??;
    let rt_runtime_us = root.read_value(dir.join("cpu.rt_runtime_us"))?;
    Some(RtGroup { dir, rt_runtime_us })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::tree_bytes as tree;

    fn engine(files: &[(&str, &[u8])]) -> Option<String> {
        let (_dir, root) = tree(files);
        detect(&root).map(|c| c.engine)
    }

    #[test]
    fn finds_each_engine_by_its_marker() {
        let host_cgroup: &[u8] = b"0::/user.slice/user-0.slice/session-1.scope\n";
        assert_eq!(engine(&[("/proc/self/cgroup", host_cgroup)]), None);
        let pod: &[u8] = b"0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-1.scope\n";
        assert_eq!(
            engine(&[("/proc/self/cgroup", pod), ("/.dockerenv", b"")]).as_deref(),
            Some("kubernetes")
        );
        assert_eq!(
            engine(&[(
                "/proc/1/environ",
                b"PATH=/bin\0KUBERNETES_SERVICE_HOST=10.0.0.1\0"
            )])
            .as_deref(),
            Some("kubernetes")
        );
        assert_eq!(
            engine(&[("/run/.containerenv", b"")]).as_deref(),
            Some("podman")
        );
        assert_eq!(engine(&[("/.dockerenv", b"")]).as_deref(), Some("docker"));
        assert_eq!(
            engine(&[("/proc/1/environ", b"container=systemd-nspawn\0")]).as_deref(),
            Some("systemd-nspawn")
        );
        // A hostile value is not taken as a name.
        assert_eq!(engine(&[("/proc/1/environ", b"container=a b;rm\0")]), None);
        let v1: &[u8] = b"4:cpu,cpuacct:/docker/0123abcd\n1:name=systemd:/docker/0123abcd\n";
        assert_eq!(
            engine(&[("/proc/self/cgroup", v1)]).as_deref(),
            Some("docker")
        );
        let libpod: &[u8] = b"0::/machine.slice/libpod-42.scope/container\n";
        assert_eq!(
            engine(&[("/proc/self/cgroup", libpod)]).as_deref(),
            Some("podman")
        );
    }

    #[test]
    fn a_marker_left_in_a_vm_made_from_an_image_is_not_a_container() {
        let kthreadd: &[u8] = b"kthreadd\n";
        let host_cgroup: &[u8] = b"9:name=systemd:/\n8:pids:/\n";
        for marker in ["/.dockerenv", "/run/.containerenv"] {
            assert_eq!(
                engine(&[
                    (marker, b""),
                    ("/proc/2/comm", kthreadd),
                    ("/proc/self/cgroup", host_cgroup)
                ]),
                None,
                "{marker} with the kernel's threads in view"
            );
        }
        // With the host's PID namespace a container is still told by its cgroup.
        let v1: &[u8] = b"4:cpu,cpuacct:/docker/0123abcd\n";
        assert_eq!(
            engine(&[
                ("/.dockerenv", b""),
                ("/proc/2/comm", kthreadd),
                ("/proc/self/cgroup", v1)
            ])
            .as_deref(),
            Some("docker")
        );
        // In a PID namespace of its own PID 2 is one of the container's processes.
        assert_eq!(
            engine(&[("/.dockerenv", b""), ("/proc/2/comm", b"sh\n")]).as_deref(),
            Some("docker")
        );
    }

    #[test]
    fn reads_the_rt_budget_of_the_own_cpu_cgroup() {
        let mountinfo: &[u8] =
            b"30 25 0:26 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu\n\
              31 25 0:27 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset\n";
        let (_dir, root) = tree(&[
            ("/proc/self/mountinfo", mountinfo),
            ("/proc/self/cgroup", b"3:cpuset:/\n2:cpu:/docker/ab12\n"),
            ("/sys/fs/cgroup/cpu/docker/ab12/cpu.rt_runtime_us", b"0\n"),
        ]);
        assert_eq!(
            rt_group(&root),
            Some(RtGroup {
                dir: PathBuf::from("/sys/fs/cgroup/cpu/docker/ab12"),
                rt_runtime_us: 0
            })
        );
        // Without CONFIG_RT_GROUP_SCHED the file is absent.
        let (_dir, root) = tree(&[
            ("/proc/self/mountinfo", mountinfo),
            ("/proc/self/cgroup", b"2:cpu:/docker/ab12\n"),
            ("/sys/fs/cgroup/cpu/docker/ab12/cpu.shares", b"1024\n"),
        ]);
        assert_eq!(rt_group(&root), None);
        // cgroup v2 only: no v1 cpu hierarchy.
        let (_dir, root) = tree(&[
            (
                "/proc/self/mountinfo",
                b"30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/proc/self/cgroup", b"0::/\n"),
        ]);
        assert_eq!(rt_group(&root), None);
    }

    #[test]
    fn reads_this_host() {
        // Whatever this machine is, detection and the budget read without panicking, and a
        // budget read agrees with the file.
        let root = Root::host();
        eprintln!("{:?}", detect(&root));
        if let Some(g) = rt_group(&root) {
            let text = std::fs::read_to_string(g.dir.join("cpu.rt_runtime_us")).unwrap();
            assert_eq!(text.trim().parse::<i64>().unwrap(), g.rt_runtime_us);
        }
    }
}
