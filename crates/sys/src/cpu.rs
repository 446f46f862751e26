//! CPU sets and per-CPU topology from sysfs (`/sys/devices/system/cpu`), read through a
//! [`Root`].
//!
//! Owns: the `possible`, `online`, `isolated` and `nohz_full` lists, the CPU times of
//! `/proc/stat` ([`times`]), and one [`CpuInfo`] per
//! CPU (package, die, cluster, core, SMT siblings, capacity, hybrid core type, maximum
//! frequency, NUMA node, model). A file the kernel does not provide leaves its field `None`;
//! only the `possible` list is required. Nothing here changes CPU state (hotplug, frequency
//! and isolation knobs belong to the rooms that tune).

use model::CpuSet;
use model::host::CpuInfo;

use crate::parse::cpuinfo::Cpuinfo;
use crate::parse::stat::{CpuTimes, per_cpu_times};
use crate::{Error, Result, Root};

/// The sysfs directory of CPUs.
pub const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Intel hybrid PMU directories whose `cpus` file lists the performance and efficiency cores.
const HYBRID_TYPES: [(&str, &str); 2] = [
    ("/sys/devices/cpu_core/cpus", "performance"),
    ("/sys/devices/cpu_atom/cpus", "efficiency"),
];

/// Reads a CPU list file (`0-3,6`). `(null)`, which older kernels print for an unallocated
/// mask (nohz_full), is the empty set.
fn read_list(root: &Root, path: &str) -> Result<CpuSet> {
    let text = root.read(path)?;
    let text = text.trim();
    if text == "(null)" {
        return Ok(CpuSet::new());
    }
    CpuSet::parse_list(text).map_err(|e| Error::Parse {
        path: root.path(path),
        line: 1,
        what: format!("CPU list: {e}"),
    })
}

/// Like [`read_list`], but an absent file is the empty set.
fn read_list_or_empty(root: &Root, path: &str) -> Result<CpuSet> {
    match read_list(root, path) {
        Err(e) if e.is_not_found() => Ok(CpuSet::new()),
        other => other,
    }
}

/// CPUs the kernel could ever bring up (`/sys/devices/system/cpu/possible`).
pub fn possible(root: &Root) -> Result<CpuSet> {
    read_list(root, "/sys/devices/system/cpu/possible")
}

/// CPUs online now (`/sys/devices/system/cpu/online`). When that file is absent: the
/// `possible` list, else the `cpuN` directories.
pub fn online(root: &Root) -> Result<CpuSet> {
    match read_list(root, "/sys/devices/system/cpu/online") {
        Err(e) if e.is_not_found() => {}
        other => return other,
    }
    match possible(root) {
        Err(e) if e.is_not_found() => {}
        other => return other,
    }
    let names = root.list_dir(CPU_DIR)?;
    Ok(names
        .iter()
        .filter_map(|n| n.strip_prefix("cpu")?.parse::<u32>().ok())
        .collect())
}

/// CPUs isolated from the scheduler by `isolcpus=` (`/sys/devices/system/cpu/isolated`);
/// empty when the file is absent.
pub fn isolated(root: &Root) -> Result<CpuSet> {
    read_list_or_empty(root, "/sys/devices/system/cpu/isolated")
}

/// CPUs running without the periodic tick (`/sys/devices/system/cpu/nohz_full`); empty when
/// the file is absent (kernels without CONFIG_NO_HZ_FULL).
pub fn nohz_full(root: &Root) -> Result<CpuSet> {
    read_list_or_empty(root, "/sys/devices/system/cpu/nohz_full")
}

/// Ticks each CPU spent in each state since boot (`/proc/stat`'s `cpuN` lines, in file
/// order); a malformed line is an [`Error::Parse`] naming it.
pub fn times(root: &Root) -> Result<Vec<(u32, CpuTimes)>> {
    const STAT: &str = "/proc/stat";
    per_cpu_times(&root.read(STAT)?).map_err(|e| e.in_file(STAT))
}

/// A topology id; -1 (and other negatives) mean the kernel does not know.
fn topology_id(root: &Root, cpu: u32, name: &str) -> Option<u32> {
    let value: i64 = root.read_value(format!("{CPU_DIR}/cpu{cpu}/topology/{name}"))?;
    u32::try_from(value).ok()
}

/// Everything sysfs (and `/proc/cpuinfo`, when given) says about CPU `cpu`. Never fails: what
/// cannot be read is `None`.
pub fn cpu_info(root: &Root, cpu: u32, cpuinfo: Option<&Cpuinfo<'_>>) -> CpuInfo {
    let dir = format!("{CPU_DIR}/cpu{cpu}");
    let siblings = root
        .read_trimmed(format!("{dir}/topology/thread_siblings_list"))
        .and_then(|text| CpuSet::parse_list(&text).ok());
    // x86 prints its unknown L2 id (BAD_APICID, 0xffff) as 65535 in a VM: not a cluster.
    let cluster = topology_id(root, cpu, "cluster_id").filter(|&id| id != 0xffff);
    let node = root.list_dir(&dir).ok().and_then(|names| {
        names
            .iter()
            .find_map(|n| n.strip_prefix("node")?.parse::<u32>().ok())
    });
    let core_type = HYBRID_TYPES.iter().find_map(|(path, kind)| {
        let cpus = CpuSet::parse_list(&root.read_trimmed(path)?).ok()?;
        cpus.contains(cpu).then(|| kind.to_string())
    });
    CpuInfo {
        cpu,
        package: topology_id(root, cpu, "physical_package_id"),
        die: topology_id(root, cpu, "die_id"),
        cluster,
        core: topology_id(root, cpu, "core_id"),
        siblings,
        capacity: root.read_value(format!("{dir}/cpu_capacity")),
        core_type,
        max_freq_khz: root.read_value(format!("{dir}/cpufreq/cpuinfo_max_freq")),
        model: cpuinfo.and_then(|c| c.processor(cpu)?.model()),
        node,
    }
}

/// The size in bytes of the largest (last-level) cache CPU `cpu` uses, from
/// `/sys/devices/system/cpu/cpuN/cache/index*/size` (`32768K`); `None` when sysfs does not
/// describe the caches (some ARM boards, some VMs).
pub fn last_level_cache_bytes(root: &Root, cpu: u32) -> Option<u64> {
    let dir = format!("{CPU_DIR}/cpu{cpu}/cache");
    root.list_dir(&dir)
        .ok()?
        .iter()
        .filter(|name| name.starts_with("index"))
        .filter_map(|name| parse_cache_size(&root.read_trimmed(format!("{dir}/{name}/size"))?))
        .max()
}

/// A sysfs cache size: `32K`, `1024K`, `32M`, or plain bytes.
fn parse_cache_size(text: &str) -> Option<u64> {
    let (digits, shift) = match text.as_bytes().last()? {
        b'K' => (&text[..text.len() - 1], 10),
        b'M' => (&text[..text.len() - 1], 20),
        b'G' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// The hypervisor this machine runs under, when the CPU says it runs under one (the
/// `hypervisor` flag in `/proc/cpuinfo`): `/sys/hypervisor/type` (Xen), else the DMI vendor and
/// product, else `an unnamed hypervisor`. `None` on bare metal, or when nothing says.
pub fn hypervisor(root: &Root) -> Option<String> {
    let cpuinfo = root.read("proc/cpuinfo").ok()?;
    let flagged = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags") || l.starts_with("Features"))
        .any(|l| l.split_whitespace().any(|f| f == "hypervisor"));
    if !flagged {
        return None;
    }
    if let Some(t) = root
        .read_trimmed("sys/hypervisor/type")
        .filter(|t| !t.is_empty())
    {
        return Some(t);
    }
    let vendor = root.read_trimmed("sys/class/dmi/id/sys_vendor");
    let product = root.read_trimmed("sys/class/dmi/id/product_name");
    let named: Vec<String> = [vendor, product]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
    Some(if named.is_empty() {
        "an unnamed hypervisor".to_string()
    } else {
        named.join(" ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::cpuinfo;

    fn tree() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        (dir, root)
    }

    fn put(root: &Root, path: &str, text: &str) {
        let full = root.path(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    #[test]
    fn lists_and_fallbacks() {
        let (_d, root) = tree();
        assert!(possible(&root).unwrap_err().is_not_found());
        assert!(online(&root).unwrap_err().is_not_found());
        assert_eq!(isolated(&root).unwrap(), CpuSet::new());
        assert_eq!(nohz_full(&root).unwrap(), CpuSet::new());

        std::fs::create_dir_all(root.path("/sys/devices/system/cpu/cpu0")).unwrap();
        std::fs::create_dir_all(root.path("/sys/devices/system/cpu/cpu3")).unwrap();
        std::fs::create_dir_all(root.path("/sys/devices/system/cpu/cpufreq")).unwrap();
        std::fs::create_dir_all(root.path("/sys/devices/system/cpu/cpuidle")).unwrap();
        assert_eq!(
            online(&root).unwrap().to_string(),
            "0,3",
            "from cpuN directories"
        );

        put(&root, "/sys/devices/system/cpu/possible", "0-7\n");
        assert_eq!(online(&root).unwrap().len(), 8, "from possible");
        put(&root, "/sys/devices/system/cpu/online", "0-2,4\n");
        assert_eq!(online(&root).unwrap().to_string(), "0-2,4");

        put(&root, "/sys/devices/system/cpu/isolated", "\n");
        assert!(isolated(&root).unwrap().is_empty());
        put(&root, "/sys/devices/system/cpu/nohz_full", "(null)\n");
        assert!(nohz_full(&root).unwrap().is_empty());
        put(&root, "/sys/devices/system/cpu/nohz_full", "2-3\n");
        assert_eq!(nohz_full(&root).unwrap().to_string(), "2-3");
    }

    #[test]
    fn malformed_lists_are_parse_errors_with_the_path() {
        let (_d, root) = tree();
        put(&root, "/sys/devices/system/cpu/online", "0-\n");
        let err = online(&root).unwrap_err();
        assert!(matches!(err, Error::Parse { .. }), "{err}");
        assert!(err.to_string().contains("system/cpu/online"), "{err}");
        put(&root, "/sys/devices/system/cpu/isolated", "zz");
        assert!(isolated(&root).is_err());
    }

    #[test]
    fn cpu_info_reads_topology_and_unknowns() {
        let (_d, root) = tree();
        let dir = "/sys/devices/system/cpu/cpu1";
        put(&root, &format!("{dir}/topology/physical_package_id"), "0\n");
        put(&root, &format!("{dir}/topology/die_id"), "-1\n");
        put(&root, &format!("{dir}/topology/cluster_id"), "65535\n");
        put(&root, &format!("{dir}/topology/core_id"), "1\n");
        put(
            &root,
            &format!("{dir}/topology/thread_siblings_list"),
            "1,9\n",
        );
        put(&root, &format!("{dir}/cpu_capacity"), "871\n");
        put(
            &root,
            &format!("{dir}/cpufreq/cpuinfo_max_freq"),
            "2419200\n",
        );
        std::fs::create_dir_all(root.path(format!("{dir}/node1"))).unwrap();
        put(&root, "/sys/devices/cpu_core/cpus", "0-3\n");
        put(&root, "/sys/devices/cpu_atom/cpus", "4-7\n");
        let text = "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd0d\n";
        let parsed = cpuinfo::parse(text);

        let info = cpu_info(&root, 1, Some(&parsed));
        assert_eq!(info.cpu, 1);
        assert_eq!(info.package, Some(0));
        assert_eq!(info.die, None, "-1 is unknown");
        assert_eq!(info.cluster, None, "x86's 65535 is unknown");
        assert_eq!(info.core, Some(1));
        assert_eq!(info.siblings.unwrap().to_string(), "1,9");
        assert_eq!(info.capacity, Some(871));
        assert_eq!(info.max_freq_khz, Some(2_419_200));
        assert_eq!(info.node, Some(1));
        assert_eq!(info.core_type.as_deref(), Some("performance"));
        assert_eq!(info.model.as_deref(), Some("0x41:0xd0d"));

        assert_eq!(
            cpu_info(&root, 5, None).core_type.as_deref(),
            Some("efficiency")
        );
        // A CPU with nothing in sysfs is all unknown.
        assert_eq!(
            cpu_info(&root, 9, Some(&parsed)),
            CpuInfo {
                cpu: 9,
                ..CpuInfo::default()
            }
        );
    }

    #[test]
    fn last_level_cache_is_the_largest_index() {
        let (_d, root) = tree();
        assert_eq!(last_level_cache_bytes(&root, 0), None);
        let dir = "/sys/devices/system/cpu/cpu0/cache";
        put(&root, &format!("{dir}/index0/size"), "32K\n");
        put(&root, &format!("{dir}/index2/size"), "1024K\n");
        put(&root, &format!("{dir}/index3/size"), "32768K\n");
        put(&root, &format!("{dir}/index4/size"), "garbage\n");
        put(&root, &format!("{dir}/uevent"), "");
        assert_eq!(last_level_cache_bytes(&root, 0), Some(32 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("K"), None);
    }
}
