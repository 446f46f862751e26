//! [`FakeRoot`]: a kernel tree written file by file into a temporary directory, for tests of
//! edge cases no captured fixture shows (`FakeRoot::new().cpus(8).isolated("2-7")`).
//!
//! Each builder call writes its files at once, in the format the kernel prints them (one value
//! and a newline). Anything not written is absent, which is itself a case worth testing. The
//! temporary directory lives as long as the `FakeRoot`; keep it alive while using its
//! [`Root`].

use std::path::Path;

use model::CpuSet;
use sys::Root;
use tempfile::TempDir;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// A fake `/` in a temporary directory. Builder methods panic on I/O errors: they are meant
/// for tests only.
#[derive(Debug)]
pub struct FakeRoot {
    dir: TempDir,
}

impl Default for FakeRoot {
    fn default() -> Self {
        FakeRoot::new()
    }
}

impl FakeRoot {
    /// An empty tree: every kernel file is absent.
    pub fn new() -> FakeRoot {
        FakeRoot {
            dir: tempfile::tempdir().expect("create a temporary directory for FakeRoot"),
        }
    }

    /// The [`Root`] over this tree. It is valid while `self` lives.
    pub fn root(&self) -> Root {
        Root::at(self.dir.path())
    }

    /// The directory standing for `/`.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `contents` as-is to kernel path `path` (`/proc/interrupts`), creating parent
    /// directories.
    pub fn file(self, path: &str, contents: &str) -> FakeRoot {
        let full = self.root().path(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
        }
        std::fs::write(&full, contents).unwrap_or_else(|e| panic!("write {}: {e}", full.display()));
        self
    }

    /// Creates the directory `path` (and its parents).
    pub fn dir(self, path: &str) -> FakeRoot {
        let full = self.root().path(path);
        std::fs::create_dir_all(&full).unwrap_or_else(|e| panic!("create {}: {e}", full.display()));
        self
    }

    /// Removes the file `path` if it exists.
    pub fn remove(self, path: &str) -> FakeRoot {
        let full = self.root().path(path);
        match std::fs::remove_file(&full) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                panic!("remove {}: {e}", full.display())
            }
            _ => self,
        }
    }

    /// Writes a one-value file: `value` and a newline, as sysfs and procfs print them.
    fn value(self, path: &str, value: impl std::fmt::Display) -> FakeRoot {
        self.file(path, &format!("{value}\n"))
    }

    /// `n` CPUs, all possible, present and online (`0-(n-1)`), each with a `cpuN` directory
    /// holding basic topology: package 0, die 0, core N, no SMT sibling.
    pub fn cpus(mut self, n: u32) -> FakeRoot {
        let all = CpuSet::from_cpus(0..n).to_string();
        for name in ["possible", "present", "online"] {
            self = self.value(&format!("{CPU_DIR}/{name}"), &all);
        }
        for cpu in 0..n {
            let topo = format!("{CPU_DIR}/cpu{cpu}/topology");
            self = self
                .value(&format!("{topo}/physical_package_id"), 0)
                .value(&format!("{topo}/die_id"), 0)
                .value(&format!("{topo}/core_id"), cpu)
                .value(&format!("{topo}/thread_siblings_list"), cpu);
        }
        self
    }

    /// `/sys/devices/system/cpu/online` (a CPU list such as `0-2`).
    pub fn online(self, list: &str) -> FakeRoot {
        self.value(&format!("{CPU_DIR}/online"), list)
    }

    /// `/sys/devices/system/cpu/isolated`.
    pub fn isolated(self, list: &str) -> FakeRoot {
        self.value(&format!("{CPU_DIR}/isolated"), list)
    }

    /// `/sys/devices/system/cpu/nohz_full`.
    pub fn nohz_full(self, list: &str) -> FakeRoot {
        self.value(&format!("{CPU_DIR}/nohz_full"), list)
    }

    /// `/proc/cmdline`.
    pub fn cmdline(self, text: &str) -> FakeRoot {
        self.value("/proc/cmdline", text)
    }

    /// `/proc/sys/kernel/hostname`.
    pub fn hostname(self, name: &str) -> FakeRoot {
        self.value("/proc/sys/kernel/hostname", name)
    }

    /// `/proc/sys/kernel/osrelease` and `/proc/sys/kernel/version`
    /// (`"6.1.0-50-rt-arm64"`, `"#1 SMP PREEMPT_RT Debian 6.1.176-1"`).
    pub fn kernel(self, release: &str, version: &str) -> FakeRoot {
        self.value("/proc/sys/kernel/osrelease", release)
            .value("/proc/sys/kernel/version", version)
    }

    /// `/sys/kernel/realtime`: `1` when true; absent when false, as on kernels without
    /// PREEMPT_RT.
    pub fn realtime(self, rt: bool) -> FakeRoot {
        if rt {
            self.value("/sys/kernel/realtime", 1)
        } else {
            self.remove("/sys/kernel/realtime")
        }
    }

    /// `cpuN/cpu_capacity` (1024 for the biggest core).
    pub fn capacity(self, cpu: u32, capacity: u32) -> FakeRoot {
        self.value(&format!("{CPU_DIR}/cpu{cpu}/cpu_capacity"), capacity)
    }

    /// `cpuN/topology/cluster_id`.
    pub fn cluster(self, cpu: u32, id: u32) -> FakeRoot {
        self.value(&format!("{CPU_DIR}/cpu{cpu}/topology/cluster_id"), id)
    }

    /// `cpuN/cpufreq/cpuinfo_max_freq`.
    pub fn max_freq_khz(self, cpu: u32, khz: u64) -> FakeRoot {
        self.value(&format!("{CPU_DIR}/cpu{cpu}/cpufreq/cpuinfo_max_freq"), khz)
    }

    /// A `cpuN/nodeM` entry: CPU `cpu` is on NUMA node `node`.
    pub fn node(self, cpu: u32, node: u32) -> FakeRoot {
        self.dir(&format!("{CPU_DIR}/cpu{cpu}/node{node}"))
    }

    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1 turns RT throttling off).
    pub fn rt_runtime_us(self, us: i64) -> FakeRoot {
        self.value("/proc/sys/kernel/sched_rt_runtime_us", us)
    }

    /// The current and available clock sources, as clocksource0 prints them.
    pub fn clocksource(self, current: &str, available: &[&str]) -> FakeRoot {
        let dir = "/sys/devices/system/clocksource/clocksource0";
        let mut list: String = available.iter().map(|s| format!("{s} ")).collect();
        list.push('\n');
        self.value(&format!("{dir}/current_clocksource"), current)
            .file(&format!("{dir}/available_clocksource"), &list)
    }

    /// `/proc/cpuinfo`, as given.
    pub fn cpuinfo(self, text: &str) -> FakeRoot {
        self.file("/proc/cpuinfo", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_files_in_kernel_format() {
        let fake = FakeRoot::new()
            .cpus(4)
            .online("0-2")
            .isolated("2-3")
            .hostname("rb5")
            .realtime(true)
            .clocksource("arch_sys_counter", &["arch_sys_counter"])
            .file("/proc/interrupts", "           CPU0\n");
        let root = fake.root();
        assert_eq!(
            root.read("/sys/devices/system/cpu/possible").unwrap(),
            "0-3\n"
        );
        assert_eq!(
            root.read("/sys/devices/system/cpu/online").unwrap(),
            "0-2\n"
        );
        assert_eq!(
            root.read_value::<u32>("/sys/devices/system/cpu/cpu3/topology/core_id"),
            Some(3)
        );
        assert_eq!(
            root.read_trimmed("/proc/sys/kernel/hostname").as_deref(),
            Some("rb5")
        );
        assert_eq!(
            root.read("/sys/devices/system/clocksource/clocksource0/available_clocksource")
                .unwrap(),
            "arch_sys_counter \n"
        );
        assert!(root.exists("/proc/interrupts"));
        let fake = fake.realtime(false);
        assert!(!fake.root().exists("/sys/kernel/realtime"));
        assert!(fake.root().list_dir("/proc").is_ok());
    }

    #[test]
    fn one_cpu_and_no_cpus() {
        let fake = FakeRoot::new().cpus(1);
        assert_eq!(
            fake.root().read("/sys/devices/system/cpu/online").unwrap(),
            "0\n"
        );
        let fake = FakeRoot::default().cpus(0);
        assert_eq!(
            fake.root().read("/sys/devices/system/cpu/online").unwrap(),
            "\n"
        );
    }
}
