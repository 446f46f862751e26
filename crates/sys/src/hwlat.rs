//! The kernel's hwlat tracer, driven as hwlatdetect drives it: this module owns saving the
//! top-level tracing settings it changes (`current_tracer`, `tracing_thresh`,
//! `hwlat_detector/window` and `width`, `tracing_cpumask`, `tracing_on`), setting them for a
//! run, reading the samples back, and restoring every saved value — also from `Drop`, so an
//! error or a panic leaves the machine's tracing as it was. The hwlat tracer runs only in the
//! top-level buffer, so a tracer someone else has set is refused, never replaced.
//!
//! And SMI counts: MSR_SMI_COUNT (0x34) through `/dev/cpu/N/msr` on Intel CPUs, as hwlatdetect
//! reads it with rdmsr.

use std::path::Path;

use model::CpuSet;

use crate::tracefs::Tracefs;
use crate::{Error, Result, Root};

/// The tracer's settings, as found (and restored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwlatSettings {
    /// `current_tracer`.
    pub tracer: String,
    /// `tracing_thresh`, us.
    pub thresh_us: String,
    /// `hwlat_detector/window`, us.
    pub window_us: String,
    /// `hwlat_detector/width`, us.
    pub width_us: String,
    /// `tracing_cpumask`.
    pub cpumask: String,
    /// `tracing_on`.
    pub tracing_on: String,
}

/// The hwlat tracer, set up for a run; its settings are restored when it is dropped.
#[derive(Debug)]
pub struct HwlatTracer {
    fs: Tracefs,
    saved: Option<HwlatSettings>,
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

fn read(dir: &Path, name: &str) -> Result<String> {
    let path = dir.join(name);
    std::fs::read_to_string(&path)
        .map(|t| t.trim().to_string())
        .map_err(|e| Error::from_io(&path, e))
}

fn write(dir: &Path, name: &str, value: &str) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, value).map_err(|e| Error::from_io(&path, e))
}

/// `current_tracer` lists the active one plainly; older kernels bracket it in
/// `available_tracers` style — either way the name.
fn tracer_name(text: &str) -> String {
    text.trim().trim_matches(['[', ']']).to_string()
}

impl HwlatSettings {
    fn read(dir: &Path) -> Result<HwlatSettings> {
        Ok(HwlatSettings {
            tracer: tracer_name(&read(dir, "current_tracer")?),
            thresh_us: read(dir, "tracing_thresh")?,
            window_us: read(dir, "hwlat_detector/window")?,
            width_us: read(dir, "hwlat_detector/width")?,
            cpumask: read(dir, "tracing_cpumask")?,
            tracing_on: read(dir, "tracing_on")?,
        })
    }

    /// Writes window and width in the order the kernel accepts (width ≤ window at every step).
    fn write_window(dir: &Path, window: &str, width: &str) -> Result<()> {
        let current: u64 = read(dir, "hwlat_detector/window")?.parse().unwrap_or(0);
        let new_window: u64 = window.parse().unwrap_or(0);
        if new_window >= current {
            write(dir, "hwlat_detector/window", window)?;
            write(dir, "hwlat_detector/width", width)
        } else {
            write(dir, "hwlat_detector/width", width)?;
            write(dir, "hwlat_detector/window", window)
        }
    }
}

impl HwlatTracer {
    /// Saves the settings, sets the threshold, window, width and CPUs, and starts the tracer
    /// with an empty buffer. Refuses when another tracer than `nop` is set.
    pub fn start(
        fs: Tracefs,
        threshold_us: u64,
        window_us: u64,
        width_us: u64,
        cpus: &CpuSet,
    ) -> Result<HwlatTracer> {
        let dir = fs.dir().to_path_buf();
        let saved = HwlatSettings::read(&dir)?;
        if saved.tracer != "nop" {
            return Err(Error::Parse {
                path: dir.join("current_tracer"),
                line: 1,
                what: format!(
                    "nop (the '{}' tracer is in use; the hwlat tracer needs the top-level buffer, and rtlab does not take it from someone else)",
                    saved.tracer
                ),
            });
        }
        let mut tracer = HwlatTracer {
            fs,
            saved: Some(saved),
        };
        tracer.configure(threshold_us, window_us, width_us, cpus)?;
        Ok(tracer)
    }

    fn configure(
        &mut self,
        threshold_us: u64,
        window_us: u64,
        width_us: u64,
        cpus: &CpuSet,
    ) -> Result<()> {
        let dir = self.fs.dir().to_path_buf();
        write(&dir, "tracing_on", "0")?;
        write(&dir, "tracing_thresh", &threshold_us.to_string())?;
        HwlatSettings::write_window(&dir, &window_us.to_string(), &width_us.to_string())?;
        write(
            &dir,
            "tracing_cpumask",
            &crate::trace_instance::cpumask_hex(cpus.iter()),
        )?;
        write(&dir, "current_tracer", "hwlat")?;
        // Selecting a tracer clears the buffer; switching on starts the sampling thread.
        write(&dir, "tracing_on", "1")
    }

    /// The samples so far: the top-level `trace` text, read up to `limit` bytes.
    pub fn read_trace(&self, limit: u64) -> std::result::Result<String, String> {
        files::read_input_text(&self.fs.dir().join("trace"), limit)
    }

    /// Stops the tracer and restores every saved setting.
    pub fn restore(mut self) -> Result<()> {
        self.restore_saved()
    }

    fn restore_saved(&mut self) -> Result<()> {
        let Some(saved) = self.saved.take() else {
            return Ok(());
        };
        let dir = self.fs.dir().to_path_buf();
        let steps = [
            write(&dir, "tracing_on", "0"),
            write(&dir, "current_tracer", &saved.tracer),
            write(&dir, "tracing_thresh", &saved.thresh_us),
            HwlatSettings::write_window(&dir, &saved.window_us, &saved.width_us),
            write(&dir, "tracing_cpumask", &saved.cpumask),
            write(&dir, "tracing_on", &saved.tracing_on),
        ];
        steps.into_iter().collect::<Result<Vec<()>>>().map(|_| ())
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
        assert_eq!(read(dir.path(), "current_tracer").unwrap(), "function");
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
