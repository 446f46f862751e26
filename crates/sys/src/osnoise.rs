//! The kernel's osnoise tracer, driven as `rtla osnoise` drives it: this module owns saving the
//! tracer's global options it changes (`osnoise/{cpus,runtime_us,period_us,stop_tracing_us,
//! stop_tracing_total_us}` and `tracing_thresh`), running the tracer — in a private instance
//! where the kernel allows it (5.17 and later), else in the top-level buffer when no other
//! tracer is set there — with its noise events on, reading its trace back, and restoring every
//! saved value, also from `Drop`.

use std::path::{Path, PathBuf};

use model::CpuSet;

use crate::trace_instance::Instance;
use crate::tracefs::Tracefs;
use crate::{Error, Result, Root};

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
    top: PathBuf,
    /// Where it runs: a private instance, or `None` for the top-level buffer.
    instance: Option<Instance>,
    /// The options as found (path relative to the top, value).
    saved: Vec<(&'static str, String)>,
    /// For the top-level buffer: `current_tracer` and `tracing_on` as found.
    saved_top: Option<(String, String)>,
    restored: bool,
}

fn read(path: &Path) -> Result<String> {
    std::fs::File::open(path)
        .and_then(|mut f| crate::root::read_text(&mut f))
        .map(|t| {
            t.trim_matches(|c: char| c.is_whitespace() || c == '\0')
                .to_string()
        })
        .map_err(|e| Error::from_io(path, e))
}

/// Writes a tracefs file, which must exist (tracefs makes every control file; one that is
/// missing means the kernel lacks the feature, never a file to create).
///
/// `osnoise/cpus` gets a NUL after the list: some kernels copy the bytes written into a
/// buffer they do not terminate and parse the list up to a NUL (a newline does not end it), so
/// the NUL inside the count keeps whatever follows on the kernel's stack out of the list.
/// (Reading that file back needs a buffer larger than its text: `root::read_text`.)
fn write(path: &Path, value: &str) -> Result<()> {
    use std::io::Write;
    let mut bytes = value.as_bytes().to_vec();
    if path.ends_with("osnoise/cpus") {
        bytes.push(0);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .and_then(|mut f| f.write_all(&bytes))
        .map_err(|e| Error::from_io(path, e))
}

impl OsnoiseTracer {
    /// Saves the options, sets them and starts the tracer with its events on. Refuses to
    /// take the top-level buffer from another tracer.
    pub fn start(fs: &Tracefs, s: &OsnoiseSettings) -> Result<OsnoiseTracer> {
        let top = fs.dir().to_path_buf();
        let mut saved = Vec::new();
        for name in OPTIONS {
            let path = top.join(name);
            if path.exists() {
                saved.push((name, read(&path)?));
            }
        }
        let mut tracer = OsnoiseTracer {
            top,
            instance: None,
            saved,
            saved_top: None,
            restored: false,
        };
        tracer.set_options(s)?;
        tracer.start_tracer()?;
        Ok(tracer)
    }

    fn set_options(&self, s: &OsnoiseSettings) -> Result<()> {
        let top = &self.top;
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

    /// In a private instance where the kernel lets osnoise run there; else the top-level
    /// buffer, when its tracer is `nop`.
    fn start_tracer(&mut self) -> Result<()> {
        let fs = Tracefs::at(&self.top);
        if let Ok(instance) = Instance::create(&fs) {
            let tracer = instance.dir().join("current_tracer");
            if write(&tracer, "osnoise").is_ok() {
                enable_events(instance.dir());
                instance.set_on(true)?;
                self.instance = Some(instance);
                return Ok(());
            }
            let _ = instance.remove();
        }
        let tracer = self.top.join("current_tracer");
        let current = read(&tracer)?;
        if current != "nop" {
            return Err(Error::Parse {
                path: tracer,
                line: 1,
                what: format!(
                    "nop (this kernel runs osnoise only in the top-level buffer, and the '{current}' tracer is in use there; rtlab does not take it from someone else)"
                ),
            });
        }
        let on = read(&self.top.join("tracing_on"))?;
        self.saved_top = Some((current, on));
        write(&self.top.join("tracing_on"), "0")?;
        write(&tracer, "osnoise")?;
        enable_events(&self.top);
        write(&self.top.join("tracing_on"), "1")
    }

    /// Where the trace is read from.
    fn dir(&self) -> &Path {
        self.instance.as_ref().map_or(&self.top, |i| i.dir())
    }

    /// Stops the tracer (its buffer stays readable).
    pub fn stop(&self) -> Result<()> {
        write(&self.dir().join("tracing_on"), "0")
    }

    /// The trace, opened for reading (drop it before restoring).
    pub fn open_trace(&self) -> std::io::Result<std::io::BufReader<std::fs::File>> {
        std::fs::File::open(self.dir().join("trace")).map(std::io::BufReader::new)
    }

    /// Whether it runs in a private instance (else in the top-level buffer).
    pub fn in_instance(&self) -> bool {
        self.instance.is_some()
    }

    /// Stops the tracer, removes the instance or gives the top-level buffer back, and
    /// restores every option.
    pub fn restore(mut self) -> Result<()> {
        self.restore_all()
    }

    fn restore_all(&mut self) -> Result<()> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        let mut result = Ok(());
        let mut keep = |r: Result<()>| {
            if result.is_ok() {
                result = r;
            }
        };
        if let Some(instance) = self.instance.take() {
            keep(write(&instance.dir().join("current_tracer"), "nop"));
            keep(instance.remove());
        }
        if let Some((tracer, on)) = self.saved_top.take() {
            keep(write(&self.top.join("tracing_on"), "0"));
            keep(write(&self.top.join("current_tracer"), &tracer));
            keep(write(&self.top.join("tracing_on"), &on));
        }
        // runtime ≤ period at every step: runtime first when the period shrinks back.
        let saved = std::mem::take(&mut self.saved);
        let value = |name: &str| saved.iter().find(|(n, _)| *n == name).map(|(_, v)| v);
        let period_now: u64 = read(&self.top.join("osnoise/period_us"))
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let period_then: u64 = value("osnoise/period_us")
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let order: [&str; 2] = if period_then >= period_now {
            ["osnoise/period_us", "osnoise/runtime_us"]
        } else {
            ["osnoise/runtime_us", "osnoise/period_us"]
        };
        for name in order.iter().chain(OPTIONS[2..].iter()) {
            if let Some(v) = value(name) {
                keep(write(&self.top.join(name), v));
            }
        }
        result
    }
}

impl Drop for OsnoiseTracer {
    fn drop(&mut self) {
        let _ = self.restore_all();
    }
}

/// The osnoise events name each interference; without them the tracer still counts.
fn enable_events(dir: &Path) {
    let events = dir.join("events/osnoise/enable");
    if events.exists() {
        let _ = write(&events, "1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
