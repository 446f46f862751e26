//! The kernel's hwlat tracer, driven as hwlatdetect drives it, on the tracer plumbing the
//! osnoise family uses ([`crate::kernel_tracer::KernelTracer`]): this module owns the options it
//! saves and sets for a run (`tracing_thresh`, `hwlat_detector/window` and `width`, the
//! buffer's `tracing_cpumask`), reading the samples back, and restoring every saved value —
//! also from `Drop`, so an error or a panic leaves the machine's tracing as it was. The tracer
//! runs in a private instance where the kernel allows it (its hwlat tracer allows instances),
//! else in the top-level buffer when no other tracer holds it: a tracer someone else has set is
//! refused, never replaced.
//!
//! And SMI counts: MSR_SMI_COUNT (0x34) through `/dev/cpu/N/msr` on Intel CPUs, as hwlatdetect
//! reads it with rdmsr.

use std::path::Path;

use model::CpuSet;

use crate::kernel_tracer::{KernelTracer, read, write};
use crate::tracefs::Tracefs;
use crate::{Error, Result, Root};

/// The options a run changes, saved first and restored at the end. `tracing_cpumask` is the
/// top-level buffer's, changed only when the tracer runs there. `hwlat_detector/mode` (5.16+:
/// `none [round-robin] per-cpu`) is the kernel's to change: 7.x leaves it at `none` after a
/// run on one CPU (found by the lab), so it is saved and written back too.
const OPTIONS: [&str; 5] = [
    "tracing_thresh",
    "hwlat_detector/window",
    "hwlat_detector/width",
    "tracing_cpumask",
    "hwlat_detector/mode",
];

/// The hwlat tracer, set up for a run; its settings are restored when it is dropped.
#[derive(Debug)]
pub struct HwlatTracer {
    inner: KernelTracer,
}

/// Whether this kernel has the hwlat tracer: tracefs mounted and `hwlat` among
/// `available_tracers`.
pub fn available(root: &Root) -> Option<Tracefs> {
    let fs = Tracefs::find(root)?;
    let tracers = std::fs::read_to_string(fs.dir().join("available_tracers")).ok()?;
    tracers
        .split_whitespace()
        .any(|t| t == "hwlat")
        .then_some(fs)
}

/// The order to write `window` and `width` in so that width ≤ window at every step (the
/// kernel refuses a width over the window): the window first when it grows.
fn window_first(dir: &Path, window_us: u64) -> Result<bool> {
    let current: u64 = read(&dir.join("hwlat_detector/window"))?
        .parse()
        .unwrap_or(0);
    Ok(window_us >= current)
}

impl HwlatTracer {
    /// Saves the options, sets the threshold, window and width, and starts the tracer on
    /// `cpus` with an empty buffer. Refuses to take the top-level buffer from another tracer.
    pub fn start(
        fs: Tracefs,
        threshold_us: u64,
        window_us: u64,
        width_us: u64,
        cpus: &CpuSet,
    ) -> Result<HwlatTracer> {
        let mut tracer = HwlatTracer {
            inner: KernelTracer::save(&fs, &OPTIONS)?,
        };
        for name in [
            "hwlat_detector/window",
            "hwlat_detector/width",
            "tracing_thresh",
        ] {
            if tracer.inner.saved(name).is_none() {
                let path = fs.dir().join(name);
                return Err(Error::from_io(
                    &path,
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                ));
            }
        }
        let top = tracer.inner.top().to_path_buf();
        write(&top.join("tracing_thresh"), &threshold_us.to_string())?;
        let (window, width) = (window_us.to_string(), width_us.to_string());
        if window_first(&top, window_us)? {
            write(&top.join("hwlat_detector/window"), &window)?;
            write(&top.join("hwlat_detector/width"), &width)?;
        } else {
            write(&top.join("hwlat_detector/width"), &width)?;
            write(&top.join("hwlat_detector/window"), &window)?;
        }
        let mask = crate::trace_instance::cpumask_hex(cpus.iter());
        // Selecting a tracer clears its buffer; the buffer switched on starts the sampling
        // thread.
        tracer
            .inner
            .start_with("hwlat", &[], &[("tracing_cpumask", &mask)])?;
        Ok(tracer)
    }

    /// Whether it runs in a private instance (else in the top-level buffer).
    pub fn in_instance(&self) -> bool {
        self.inner.in_instance()
    }

    /// The samples so far: the buffer's `trace` text, read up to `limit` bytes.
    pub fn read_trace(&self, limit: u64) -> std::result::Result<String, String> {
        files::read_input_text(&self.inner.dir().join("trace"), limit)
    }

    /// Stops the tracer and restores every saved setting.
    pub fn restore(mut self) -> Result<()> {
        self.restore_saved()
    }

    /// The buffer given back (the tracer stopped with it), then the options: window and
    /// width in the order that keeps the width within the window at every step. Once only.
    fn restore_saved(&mut self) -> Result<()> {
        let top = self.inner.top().to_path_buf();
        let saved_window: u64 = self
            .inner
            .saved("hwlat_detector/window")
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        let first: &[&'static str] = if window_first(&top, saved_window).unwrap_or(false) {
            &["hwlat_detector/window", "hwlat_detector/width"]
        } else {
            &["hwlat_detector/width", "hwlat_detector/window"]
        };
        self.inner.restore(first)
    }
}

impl Drop for HwlatTracer {
    fn drop(&mut self) {
        let _ = self.restore_saved();
    }
}

/// MSR_SMI_COUNT on Intel CPUs.
const MSR_SMI_COUNT: u64 = 0x34;

/// The SMI count of each CPU in `cpus` (the low 32 bits of MSR 0x34), or why it cannot be
/// read: not an Intel CPU, no msr driver, no permission.
pub fn smi_counts(root: &Root, cpus: &CpuSet) -> std::result::Result<Vec<(u32, u64)>, String> {
    let cpuinfo = root.read("proc/cpuinfo").unwrap_or_default();
    let vendor = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("vendor_id"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string());
    match vendor.as_deref() {
        Some("GenuineIntel") => {}
        Some(v) => {
            return Err(format!(
                "not available: MSR_SMI_COUNT is Intel's and this CPU is {v}"
            ));
        }
        None => return Err("not available: /proc/cpuinfo names no x86 CPU vendor".to_string()),
    }
    let mut out = Vec::new();
    for cpu in cpus.iter() {
        let path = root.path(format!("dev/cpu/{cpu}/msr"));
        let file = std::fs::File::open(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "not available: no {} (load the msr driver: modprobe msr)",
                    path.display()
                )
            } else {
                format!("not available: {}: {e}", path.display())
            }
        })?;
        let mut word = [0u8; 8];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut word, MSR_SMI_COUNT)
            .map_err(|e| format!("not available: reading MSR 0x34 of CPU {cpu}: {e}"))?;
        out.push((cpu, u64::from_le_bytes(word) & 0xffff_ffff));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings a run changes, as the files say.
    #[derive(Debug, PartialEq, Eq)]
    struct HwlatSettings {
        tracer: String,
        thresh_us: String,
        window_us: String,
        width_us: String,
        cpumask: String,
        tracing_on: String,
    }

    impl HwlatSettings {
        fn read(dir: &Path) -> Result<HwlatSettings> {
            let r = |name: &str| read(&dir.join(name));
            Ok(HwlatSettings {
                tracer: r("current_tracer")?,
                thresh_us: r("tracing_thresh")?,
                window_us: r("hwlat_detector/window")?,
                width_us: r("hwlat_detector/width")?,
                cpumask: r("tracing_cpumask")?,
                tracing_on: r("tracing_on")?,
            })
        }
    }

    fn tracefs(dir: &Path, tracer: &str) -> Tracefs {
        std::fs::create_dir_all(dir.join("hwlat_detector")).unwrap();
        for (name, value) in [
            ("current_tracer", tracer),
            ("available_tracers", "hwlat function nop"),
            ("tracing_thresh", "0"),
            ("hwlat_detector/window", "1000000"),
            ("hwlat_detector/width", "500000"),
            ("tracing_cpumask", "3"),
            ("tracing_on", "1"),
            ("trace_marker", ""),
            ("trace", "# tracer: hwlat\n"),
        ] {
            std::fs::write(dir.join(name), format!("{value}\n")).unwrap();
        }
        Tracefs::at(dir)
    }

    #[test]
    fn the_detectors_mode_is_written_back_as_its_choice() {
        // 7.x leaves `none` after a run on one CPU; the choice found is written back.
        let dir = tempfile::tempdir().unwrap();
        let fs = tracefs(dir.path(), "nop");
        let mode = dir.path().join("hwlat_detector/mode");
        std::fs::write(&mode, "none [round-robin] per-cpu\n").unwrap();
        let t = HwlatTracer::start(fs, 10, 1_000_000, 500_000, &CpuSet::from_cpus([1])).unwrap();
        std::fs::write(&mode, "[none] round-robin per-cpu\n").unwrap();
        t.restore().unwrap();
        assert_eq!(
            std::fs::read_to_string(&mode).unwrap().trim(),
            "round-robin"
        );
    }

    #[test]
    fn a_run_sets_the_tracer_and_restores_every_setting() {
        let dir = tempfile::tempdir().unwrap();
        let fs = tracefs(dir.path(), "nop");
        let before = HwlatSettings::read(dir.path()).unwrap();
        let t = HwlatTracer::start(fs, 10, 2_000_000, 1_500_000, &CpuSet::from_cpus([1])).unwrap();
        let now = HwlatSettings::read(dir.path()).unwrap();
        assert_eq!(now.tracer, "hwlat");
        assert_eq!(
            (
                now.thresh_us.as_str(),
                now.window_us.as_str(),
                now.width_us.as_str()
            ),
            ("10", "2000000", "1500000")
        );
        assert_eq!(now.cpumask, "2");
        assert!(t.read_trace(1 << 20).unwrap().contains("tracer: hwlat"));
        t.restore().unwrap();
        assert_eq!(HwlatSettings::read(dir.path()).unwrap(), before);
    }

    #[test]
    fn dropping_it_restores_too_and_another_tracer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fs = tracefs(dir.path(), "nop");
        let before = HwlatSettings::read(dir.path()).unwrap();
        drop(HwlatTracer::start(fs, 5, 1_000_000, 500_000, &CpuSet::from_cpus([0])).unwrap());
        assert_eq!(HwlatSettings::read(dir.path()).unwrap(), before);
        let busy = tracefs(dir.path(), "function");
        let e = HwlatTracer::start(busy, 5, 1_000_000, 500_000, &CpuSet::from_cpus([0]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'function' tracer is in use"), "{e}");
        assert_eq!(
            read(&dir.path().join("current_tracer")).unwrap(),
            "function"
        );
        // Refused before anything was changed: the options are as they were.
        let after = HwlatSettings::read(dir.path()).unwrap();
        assert_eq!(
            (after.window_us, after.width_us),
            (before.window_us, before.width_us)
        );
    }

    #[test]
    fn smi_counts_say_why_they_are_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/cpuinfo"),
            "processor\t: 0\nvendor_id\t: AuthenticAMD\n",
        )
        .unwrap();
        let root = Root::at(dir.path());
        let e = smi_counts(&root, &CpuSet::from_cpus([0])).unwrap_err();
        assert!(e.contains("this CPU is AuthenticAMD"), "{e}");
        std::fs::write(
            dir.path().join("proc/cpuinfo"),
            "processor\t: 0\nvendor_id\t: GenuineIntel\n",
        )
        .unwrap();
        let e = smi_counts(&root, &CpuSet::from_cpus([0])).unwrap_err();
        assert!(e.contains("modprobe msr"), "{e}");
        std::fs::create_dir_all(dir.path().join("dev/cpu/0")).unwrap();
        let mut msr = vec![0u8; 0x40];
        msr[0x34..0x3c].copy_from_slice(&0x1_0000_0007u64.to_le_bytes());
        std::fs::write(dir.path().join("dev/cpu/0/msr"), msr).unwrap();
        assert_eq!(
            smi_counts(&root, &CpuSet::from_cpus([0])).unwrap(),
            vec![(0, 7)]
        );
    }
}
