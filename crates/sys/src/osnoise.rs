//! The kernel's osnoise tracer, driven as `rtla osnoise` drives it: this module owns which of
//! the tracer's global options a run changes (`osnoise/{cpus,runtime_us,period_us,
//! stop_tracing_us,stop_tracing_total_us}` and `tracing_thresh`) and in which order (runtime
//! never above the period), and reading its trace back; the buffer (a private instance, or
//! the free top-level one), the events and restoring every saved value, also from `Drop`, are
//! [`crate::kernel_tracer`]'s.

use model::CpuSet;

use crate::kernel_tracer::{KernelTracer, read, write};
use crate::tracefs::Tracefs;
use crate::{Result, Root};

/// Whether this kernel has the osnoise tracer: tracefs mounted and `osnoise` among
/// `available_tracers`.
pub fn available(root: &Root) -> Option<Tracefs> {
    let fs = Tracefs::find(root)?;
    let tracers = std::fs::read_to_string(fs.dir().join("available_tracers")).ok()?;
    tracers
        .split_whitespace()
        .any(|t| t == "osnoise")
        .then_some(fs)
}

/// The tracer's global options that a run changes.
const OPTIONS: [&str; 6] = [
    "osnoise/period_us",
    "osnoise/runtime_us",
    "osnoise/cpus",
    "osnoise/stop_tracing_us",
    "osnoise/stop_tracing_total_us",
    "tracing_thresh",
];

/// What a run asks of the tracer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsnoiseSettings {
    /// The CPUs its threads run on.
    pub cpus: CpuSet,
    /// Runtime per period, us.
    pub runtime_us: u64,
    /// The period, us.
    pub period_us: u64,
    /// Noise at or above this is a sample, us (at least 1).
    pub threshold_us: u64,
}

/// The tracer running; stopped and its options restored when [`restore`](Self::restore)d or
/// dropped.
#[derive(Debug)]
pub struct OsnoiseTracer {
    inner: KernelTracer,
}

impl OsnoiseTracer {
    /// Saves the options, sets them and starts the tracer with its events on. Refuses to
    /// take the top-level buffer from another tracer.
    pub fn start(fs: &Tracefs, s: &OsnoiseSettings) -> Result<OsnoiseTracer> {
        let mut tracer = OsnoiseTracer {
            inner: KernelTracer::save(fs, &OPTIONS)?,
        };
        tracer.set_options(s)?;
        tracer.inner.start("osnoise", &["osnoise"])?;
        Ok(tracer)
    }

    fn set_options(&self, s: &OsnoiseSettings) -> Result<()> {
        let top = self.inner.top();
        // runtime ≤ period at every step.
        let current: u64 = read(&top.join("osnoise/period_us"))?.parse().unwrap_or(0);
        let (runtime, period) = (s.runtime_us.to_string(), s.period_us.to_string());
        if s.period_us >= current {
            write(&top.join("osnoise/period_us"), &period)?;
            write(&top.join("osnoise/runtime_us"), &runtime)?;
        } else {
            write(&top.join("osnoise/runtime_us"), &runtime)?;
            write(&top.join("osnoise/period_us"), &period)?;
        }
        write(&top.join("osnoise/cpus"), &s.cpus.to_string())?;
        for stop in ["osnoise/stop_tracing_us", "osnoise/stop_tracing_total_us"] {
            if top.join(stop).exists() {
                write(&top.join(stop), "0")?;
            }
        }
        write(
            &top.join("tracing_thresh"),
            &s.threshold_us.max(1).to_string(),
        )
    }

    /// Stops the tracer (its buffer stays readable).
    pub fn stop(&self) -> Result<()> {
        self.inner.stop()
    }

    /// The trace, opened for reading (drop it before restoring).
    pub fn open_trace(&self) -> std::io::Result<std::io::BufReader<std::fs::File>> {
        std::fs::File::open(self.inner.dir().join("trace")).map(std::io::BufReader::new)
    }

    /// Whether it runs in a private instance (else in the top-level buffer).
    pub fn in_instance(&self) -> bool {
        self.inner.in_instance()
    }

    /// Stops the tracer, removes the instance or gives the top-level buffer back, and
    /// restores every option.
    pub fn restore(mut self) -> Result<()> {
        self.restore_all()
    }

    /// runtime ≤ period at every step: runtime first when the period shrinks back.
    fn restore_all(&mut self) -> Result<()> {
        let period_now: u64 = read(&self.inner.top().join("osnoise/period_us"))
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let period_then: u64 = self
            .inner
            .saved("osnoise/period_us")
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let order: [&'static str; 2] = if period_then >= period_now {
            ["osnoise/period_us", "osnoise/runtime_us"]
        } else {
            ["osnoise/runtime_us", "osnoise/period_us"]
        };
        self.inner.restore(&order)
    }
}

impl Drop for OsnoiseTracer {
    fn drop(&mut self) {
        let _ = self.restore_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn top(dir: &Path, tracer: &str) -> Tracefs {
        std::fs::create_dir_all(dir.join("osnoise")).unwrap();
        std::fs::create_dir_all(dir.join("instances")).unwrap();
        for (name, value) in [
            ("current_tracer", tracer),
            ("available_tracers", "osnoise timerlat nop"),
            ("tracing_on", "1"),
            ("tracing_thresh", "0"),
            ("trace_marker", ""),
            ("trace", "# tracer: osnoise\n"),
            ("osnoise/period_us", "1000000"),
            ("osnoise/runtime_us", "1000000"),
            ("osnoise/cpus", "0-3"),
            ("osnoise/stop_tracing_us", "0"),
            ("osnoise/stop_tracing_total_us", "0"),
        ] {
            std::fs::write(dir.join(name), format!("{value}\n")).unwrap();
        }
        Tracefs::at(dir)
    }

    fn snapshot(dir: &Path) -> Vec<String> {
        ["current_tracer", "tracing_on", "tracing_thresh"]
            .iter()
            .chain(OPTIONS.iter())
            .map(|n| read(&dir.join(n)).unwrap())
            .collect()
    }

    fn settings() -> OsnoiseSettings {
        OsnoiseSettings {
            cpus: CpuSet::from_cpus([1, 2]),
            runtime_us: 900_000,
            period_us: 1_000_000,
            threshold_us: 1,
        }
    }

    #[test]
    fn without_instance_support_it_takes_a_free_top_level_and_restores_it() {
        // A plain directory for an instance has no current_tracer: the top level is used.
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "nop");
        let before = snapshot(dir.path());
        let t = OsnoiseTracer::start(&fs, &settings()).unwrap();
        assert!(!t.in_instance());
        assert_eq!(read(&dir.path().join("current_tracer")).unwrap(), "osnoise");
        assert_eq!(read(&dir.path().join("osnoise/cpus")).unwrap(), "1-2");
        assert_eq!(
            read(&dir.path().join("osnoise/runtime_us")).unwrap(),
            "900000"
        );
        assert_eq!(read(&dir.path().join("tracing_thresh")).unwrap(), "1");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut t.open_trace().unwrap(), &mut text).unwrap();
        assert!(text.contains("tracer: osnoise"));
        t.stop().unwrap();
        t.restore().unwrap();
        assert_eq!(snapshot(dir.path()), before);
    }

    // Some kernels parse osnoise/cpus from an unterminated buffer: the list goes with its NUL,
    // also when restored.
    #[test]
    fn the_cpu_list_is_written_with_its_terminating_nul() {
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "nop");
        let t = OsnoiseTracer::start(&fs, &settings()).unwrap();
        let raw = |n: &str| std::fs::read(dir.path().join(n)).unwrap();
        assert_eq!(raw("osnoise/cpus"), b"1-2\0");
        assert_eq!(raw("osnoise/runtime_us"), b"900000");
        t.stop().unwrap();
        t.restore().unwrap();
        assert_eq!(raw("osnoise/cpus"), b"0-3\0");
    }

    #[test]
    fn a_busy_top_level_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "function");
        let before = snapshot(dir.path());
        let e = OsnoiseTracer::start(&fs, &settings())
            .unwrap_err()
            .to_string();
        assert!(e.contains("'function' tracer is in use"), "{e}");
        assert_eq!(snapshot(dir.path()), before, "options restored by Drop");
    }
}
