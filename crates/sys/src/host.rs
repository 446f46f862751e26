//! [`host_info`]: the description of the machine that goes into every result (kernel,
//! preemption model, boot command line, clock source, CPU sets and per-CPU topology), and
//! [`kernel_config`]: the running kernel's configuration text; [`boot`]: which boot this is.
//!
//! Everything is read through a [`Root`] and nothing fails: a file the kernel does not
//! provide, or that cannot be read without privileges, leaves its field `None` or empty.
//! Judging the values (is this host tuned for real time?) belongs to the audit room.

use std::io::Read;

use model::host::HostInfo;

use crate::parse::{cmdline, cpuinfo, preempt};
use crate::{Root, cpu};

/// The debugfs file that names the current preemption model on PREEMPT_DYNAMIC kernels.
pub const DEBUGFS_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";

const CLOCKSOURCE_DIR: &str = "/sys/devices/system/clocksource/clocksource0";

/// This boot's identity (`/proc/sys/kernel/random/boot_id`, a UUID the kernel draws at every
/// boot) and the kernel release: how a long campaign tells that the machine rebooted. `None`
/// when the kernel does not provide the boot id.
pub fn boot(root: &Root) -> Option<(String, String)> {
    let id = root
        .read_trimmed("/proc/sys/kernel/random/boot_id")
        .filter(|id| {
            !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic())
        })?;
    let kernel = root
        .read_trimmed("/proc/sys/kernel/osrelease")
        .unwrap_or_default();
    Some((id, kernel))
}

/// Describes the machine under `root`. Never fails; see the module documentation.
pub fn host_info(root: &Root) -> HostInfo {
    let text = |path: &str| root.read_trimmed(path).unwrap_or_default();
    let kernel_release = text("/proc/sys/kernel/osrelease");
    let kernel_version = text("/proc/sys/kernel/version");
    let cmdline = text("/proc/cmdline");
    let arch = root
        .read_trimmed("/proc/sys/kernel/arch")
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| {
            if root.is_host() {
                std::env::consts::ARCH.to_string()
            } else {
                "unknown".to_string()
            }
        });

    let config = kernel_config_for(root, &kernel_release);
    let preemption = preemption(
        root,
        &kernel_release,
        &kernel_version,
        &cmdline,
        config.as_deref(),
    );

    let cpuinfo_text = root.read("/proc/cpuinfo").unwrap_or_default();
    let cpuinfo = cpuinfo::parse(&cpuinfo_text);
    let online_cpus = cpu::online(root).unwrap_or_default();
    let cpus = online_cpus
        .iter()
        .map(|n| cpu::cpu_info(root, n, Some(&cpuinfo)))
        .collect();

    HostInfo {
        hostname: text("/proc/sys/kernel/hostname"),
        kernel_release,
        kernel_version,
        arch,
        preempt_rt: preemption.rt,
        preempt_model: preemption.model,
        preempt_dynamic: preemption.dynamic,
        preempt_model_source: preemption.source,
        cmdline,
        cpu_model: cpuinfo.machine_model(),
        clocksource: root
            .read_trimmed(format!("{CLOCKSOURCE_DIR}/current_clocksource"))
            .filter(|s| !s.is_empty()),
        available_clocksources: root
            .read_trimmed(format!("{CLOCKSOURCE_DIR}/available_clocksource"))
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        possible_cpus: cpu::possible(root).unwrap_or_default(),
        online_cpus,
        isolated_cpus: cpu::isolated(root).unwrap_or_default(),
        nohz_full_cpus: cpu::nohz_full(root).unwrap_or_default(),
        cpuset_isolated_cpus: crate::partition::cpuset_isolated_cpus(root),
        sched_rt_runtime_us: root.read_value("/proc/sys/kernel/sched_rt_runtime_us"),
        sched_rt_period_us: root.read_value("/proc/sys/kernel/sched_rt_period_us"),
        cpus,
    }
}

/// The running kernel's configuration: `/proc/config.gz` (CONFIG_IKCONFIG_PROC) unpacked,
/// else `/boot/config-<release>`. `None` when neither can be read.
pub fn kernel_config(root: &Root) -> Option<String> {
    kernel_config_with_source(root).map(|(text, _)| text)
}

/// Like [`kernel_config`], also naming the file the text came from.
pub fn kernel_config_with_source(root: &Root) -> Option<(String, String)> {
    let release = root
        .read_trimmed("/proc/sys/kernel/osrelease")
        .unwrap_or_default();
    kernel_config_source_for(root, &release)
}

fn kernel_config_for(root: &Root, release: &str) -> Option<String> {
    kernel_config_source_for(root, release).map(|(text, _)| text)
}

fn kernel_config_source_for(root: &Root, release: &str) -> Option<(String, String)> {
    const PROC: &str = "/proc/config.gz";
    if let Some(text) = read_gzip(root, PROC) {
        return Some((text, PROC.to_string()));
    }
    if release.is_empty() || release.contains('/') {
        return None;
    }
    let boot = format!("/boot/config-{release}");
    root.read(&boot).ok().map(|text| (text, boot))
}

/// Reads a kernel config file given by a person (not a kernel path): plain text, or gzip
/// (a copy of `/proc/config.gz`) recognised by its magic bytes, bounded before and after
/// unpacking by [`model::limits::MAX_KCONFIG_BYTES`]. Refused, with one line saying why: a
/// directory, a file too large, text that is not UTF-8, and text with no `CONFIG_` option in
/// it (an empty file, a binary, the wrong file) — a config that cannot be read must not
/// make every check that reads it look like a pass.
pub fn read_config_file(path: &std::path::Path) -> Result<String, String> {
    let limit = model::limits::MAX_KCONFIG_BYTES;
    let bytes = files::read_input(path, limit)?;
    if bytes.trim_ascii().is_empty() {
        return Err(
            "it is empty; give a .config, /boot/config-RELEASE or a copy of /proc/config.gz"
                .to_string(),
        );
    }
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        gunzip_bounded(&bytes, limit).map_err(|e| format!("a damaged gzip file ({e})"))?
    } else {
        String::from_utf8(bytes)
            .map_err(|_| "not a kernel config: neither text nor gzip".to_string())?
    };
    if !crate::parse::kconfig::looks_like_config(&text) {
        return Err(
            "not a kernel config: it has no CONFIG_ option line; give a .config, /boot/config-RELEASE or a copy of /proc/config.gz"
                .to_string(),
        );
    }
    Ok(text)
}

/// Unpacks gzip `bytes` into text of at most `limit` bytes.
fn gunzip_bounded(bytes: &[u8], limit: u64) -> std::io::Result<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .take(limit.saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it unpacks to more than {} MiB", limit >> 20),
        ));
    }
    Ok(text)
}

/// Reads and unpacks a gzip file under `root`; `None` when absent, unreadable or corrupt.
fn read_gzip(root: &Root, path: &str) -> Option<String> {
    root.note(path);
    let bytes = std::fs::read(root.path(path)).ok()?;
    gunzip_bounded(&bytes, model::limits::MAX_KCONFIG_BYTES).ok()
}

/// What [`host_info`] concludes about preemption.
#[derive(Debug, Default, PartialEq, Eq)]
struct Preemption {
    rt: bool,
    model: Option<String>,
    dynamic: bool,
    source: Option<String>,
}

/// Decides the preemption model, trusting the most direct evidence first: the debugfs file
/// (the model in effect now); PREEMPT_RT; on PREEMPT_DYNAMIC kernels the `preempt=` boot
/// parameter; the config's model (the boot default when dynamic); the version string where
/// it is unambiguous.
fn preemption(
    root: &Root,
    release: &str,
    version: &str,
    cmdline_text: &str,
    config: Option<&str>,
) -> Preemption {
    let flags = preempt::classify_version(version);
    let conf = config.map(preempt::from_config);
    let realtime = root.read_trimmed("/sys/kernel/realtime").as_deref() == Some("1");
    let rt_source = if realtime {
        Some("/sys/kernel/realtime")
    } else if flags.rt {
        Some("kernel version string")
    } else if conf.is_some_and(|c| c.rt) {
        Some("kernel config")
    } else {
        None
    };
    let debugfs = root
        .read_opt(DEBUGFS_PREEMPT)
        .ok()
        .flatten()
        .and_then(|t| preempt::parse_debugfs(&t).current.map(str::to_string));
    // The debugfs file exists only on PREEMPT_DYNAMIC kernels, even when it cannot be read.
    let dynamic = debugfs.is_some()
        || root.exists(DEBUGFS_PREEMPT)
        || flags.dynamic
        || conf.is_some_and(|c| c.dynamic);
    let boot_param = || {
        let line = cmdline::parse(cmdline_text);
        preempt::boot_param_model(line.value("preempt")?)
    };

    let (model, source): (Option<String>, Option<&str>) = if let Some(current) = debugfs {
        (Some(current), Some(DEBUGFS_PREEMPT))
    } else if let Some(src) = rt_source {
        (Some("rt".to_string()), Some(src))
    } else if let Some(m) = boot_param().filter(|_| dynamic) {
        (Some(m.to_string()), Some("boot parameter preempt="))
    } else if let Some(m) = conf.and_then(|c| c.model) {
        (Some(m.to_string()), Some("kernel config"))
    } else if let Some(m) = flags.model(release) {
        (Some(m.to_string()), Some("kernel version string"))
    } else {
        (None, None)
    };
    Preemption {
        rt: rt_source.is_some(),
        model,
        dynamic,
        source: source.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::CpuSet;

    fn fixture(name: &str) -> Root {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/roots")
            .join(name);
        assert!(dir.is_dir(), "fixture {} is missing", dir.display());
        Root::at(dir)
    }

    fn put(root: &Root, path: &str, text: &str) {
        let full = root.path(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    #[test]
    fn firecracker_vm_fixture() {
        let root = fixture("vm-x86_64-2cpu");
        let h = host_info(&root);
        assert_eq!(h.hostname, "rtlab-host", "scrubbed by audit capture");
        assert_eq!(h.kernel_release, "6.18.44-fc-v595");
        assert_eq!(h.kernel_version, "#1 SMP PREEMPT_DYNAMIC @0");
        assert_eq!(h.arch, "x86_64");
        assert!(!h.preempt_rt);
        assert!(h.preempt_dynamic);
        // No debugfs in the capture, no preempt= on the command line: the config's default.
        assert_eq!(h.preempt_model.as_deref(), Some("none"));
        assert_eq!(h.preempt_model_source.as_deref(), Some("kernel config"));
        assert!(h.cmdline.starts_with("mitigations=auto"), "{}", h.cmdline);
        assert_eq!(h.cpu_model.as_deref(), Some("AMD EPYC"));
        assert_eq!(h.clocksource.as_deref(), Some("tsc"));
        assert_eq!(h.available_clocksources, ["tsc", "kvm-clock"]);
        assert_eq!(h.possible_cpus.to_string(), "0-1");
        assert_eq!(h.online_cpus.to_string(), "0-1");
        assert!(h.isolated_cpus.is_empty() && h.nohz_full_cpus.is_empty());
        assert_eq!(h.sched_rt_runtime_us, Some(950_000));
        assert_eq!(h.sched_rt_period_us, Some(1_000_000));
        assert_eq!(h.cpus.len(), 2);
        let c1 = &h.cpus[1];
        assert_eq!((c1.cpu, c1.package, c1.core), (1, Some(0), Some(1)));
        assert_eq!(c1.cluster, None, "65535 in a VM");
        assert_eq!(c1.capacity, Some(1024));
        assert_eq!(c1.node, Some(0));
        assert_eq!(c1.model.as_deref(), Some("AMD EPYC"));
        assert_eq!(c1.max_freq_khz, None);
        let config = kernel_config(&root).expect("proc/config.gz");
        assert!(config.contains("CONFIG_PREEMPT_DYNAMIC=y"));
    }

    #[test]
    fn live_host() {
        let root = Root::host();
        let h = host_info(&root);
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        assert_eq!(h.online_cpus, CpuSet::parse_list(&online).unwrap());
        assert_eq!(h.cpus.len(), h.online_cpus.len());
        assert!(!h.kernel_release.is_empty());
        assert!(!h.arch.is_empty() && h.arch != "unknown");
        if h.preempt_model.is_none() {
            eprintln!("live host: the preemption model could not be determined here");
        }
    }

    #[test]
    fn empty_tree_is_all_absent() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let h = host_info(&root);
        assert_eq!(
            h,
            HostInfo {
                arch: "unknown".to_string(),
                ..HostInfo::default()
            }
        );
        assert_eq!(kernel_config(&root), None);
    }

    #[test]
    fn preemption_sources_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        put(&root, "/proc/sys/kernel/osrelease", "6.1.0-56-amd64\n");
        let config = "CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
        put(&root, "/boot/config-6.1.0-56-amd64", config);
        assert_eq!(kernel_config(&root).as_deref(), Some(config));
        let run = |version: &str, cmdline: &str| {
            let config = kernel_config(&root);
            let p = preemption(&root, "6.1.0-56-amd64", version, cmdline, config.as_deref());
            (p.model, p.source, p.dynamic, p.rt)
        };
        let s = |x: &str| Some(x.to_string());
        let dyn_version = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2";
        assert_eq!(
            run(dyn_version, "quiet"),
            (s("voluntary"), s("kernel config"), true, false)
        );
        assert_eq!(
            run(dyn_version, "preempt=none quiet preempt=full"),
            (s("full"), s("boot parameter preempt="), true, false)
        );
        assert_eq!(
            run(dyn_version, "preempt=bogus"),
            (s("voluntary"), s("kernel config"), true, false)
        );
        put(&root, DEBUGFS_PREEMPT, "none voluntary (full) lazy\n");
        assert_eq!(
            run(dyn_version, "preempt=none"),
            (s("full"), s(DEBUGFS_PREEMPT), true, false)
        );
        std::fs::remove_file(root.path(DEBUGFS_PREEMPT)).unwrap();
        put(&root, "/sys/kernel/realtime", "1\n");
        assert_eq!(
            run("#1 SMP PREEMPT_RT", ""),
            (s("rt"), s("/sys/kernel/realtime"), true, true)
        );
        std::fs::remove_file(root.path("/sys/kernel/realtime")).unwrap();
        std::fs::remove_file(root.path("/boot/config-6.1.0-56-amd64")).unwrap();
        assert_eq!(
            run("#1 SMP PREEMPT_RT", ""),
            (s("rt"), s("kernel version string"), false, true)
        );
        assert_eq!(
            run("#1 SMP PREEMPT Mon", ""),
            (s("full"), s("kernel version string"), false, false)
        );
        // Without a config, a dynamic kernel's model comes only from preempt=; without that
        // it is unknown. On a kernel that is not dynamic, preempt= is ignored.
        assert_eq!(
            run(dyn_version, "preempt=lazy"),
            (s("lazy"), s("boot parameter preempt="), true, false)
        );
        assert_eq!(run(dyn_version, ""), (None, None, true, false));
        assert_eq!(run("#1 SMP", "preempt=full"), (None, None, false, false));
    }

    #[test]
    fn corrupt_config_gz_falls_back_to_boot() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        put(&root, "/proc/config.gz", "not gzip");
        assert_eq!(kernel_config(&root), None);
        put(&root, "/proc/sys/kernel/osrelease", "6.1.0\n");
        put(&root, "/boot/config-6.1.0", "CONFIG_PREEMPT=y\n");
        assert_eq!(kernel_config(&root).as_deref(), Some("CONFIG_PREEMPT=y\n"));
    }
}
