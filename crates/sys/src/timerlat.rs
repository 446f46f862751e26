//! The kernel's timerlat tracer, driven as `rtla timerlat` drives it: this module owns which
//! of the tracer's global options a run sets (`osnoise/{cpus,timerlat_period_us,
//! stop_tracing_us,stop_tracing_total_us,print_stack}`), the events turned on beside it (the
//! osnoise noise events its auto-analysis reads), and reading its trace as it is produced
//! (`trace_pipe`, without blocking); the buffer and restoring every saved value, also from
//! `Drop`, are [`crate::kernel_tracer`]'s.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use model::CpuSet;

use crate::kernel_tracer::{KernelTracer, read, write};
use crate::tracefs::Tracefs;
use crate::{Error, Result, Root};

/// Whether this kernel has the timerlat tracer: tracefs mounted and `timerlat` among
/// `available_tracers`.
pub fn available(root: &Root) -> Option<Tracefs> {
    let fs = Tracefs::find(root)?;
    let tracers = std::fs::read_to_string(fs.dir().join("available_tracers")).ok()?;
    tracers
        .split_whitespace()
        .any(|t| t == "timerlat")
        .then_some(fs)
}

/// The tracer's global options that a run changes.
const OPTIONS: [&str; 5] = [
    "osnoise/timerlat_period_us",
    "osnoise/cpus",
    "osnoise/stop_tracing_us",
    "osnoise/stop_tracing_total_us",
    "osnoise/print_stack",
];

/// The noise events the auto-analysis reads: what ran on the CPU between the timer's
/// expiry and the timerlat thread.
pub const EVENTS: [&str; 4] = [
    "osnoise/irq_noise",
    "osnoise/softirq_noise",
    "osnoise/thread_noise",
    "osnoise/nmi_noise",
];

/// What a run asks of the tracer. Thresholds are in whole microseconds, as the kernel
/// takes them (it compares `latency_ns / 1000 >= threshold`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerlatSettings {
    /// The CPUs its threads run on.
    pub cpus: CpuSet,
    /// The timer's period, us.
    pub period_us: u64,
    /// Stop tracing when an IRQ latency reaches this (`stop_tracing_us`).
    pub stop_irq_us: Option<u64>,
    /// Stop tracing when a thread latency reaches this (`stop_tracing_total_us`).
    pub stop_thread_us: Option<u64>,
    /// Record the IRQ's stack when a thread latency reaches this (`print_stack`).
    pub print_stack_us: Option<u64>,
    /// User-space threads measure (they read [`TimerlatFd`]): the kernel's own threads are
    /// not started (`osnoise/options` `NO_OSNOISE_WORKLOAD`).
    pub user_threads: bool,
}

/// The `osnoise/options` flag that starts the kernel's measuring threads.
const WORKLOAD: &str = "OSNOISE_WORKLOAD";

/// Whether the kernel lets user-space threads measure (6.6 and later: the `OSNOISE_WORKLOAD`
/// option and each CPU's `osnoise/per_cpu/cpuN/timerlat_fd`).
pub fn has_user_threads(fs: &Tracefs) -> bool {
    let options = std::fs::read_to_string(fs.dir().join("osnoise/options")).unwrap_or_default();
    options.split_whitespace().any(|o| o.ends_with(WORKLOAD))
        && fs.dir().join("osnoise/per_cpu/cpu0/timerlat_fd").exists()
}

/// A user-space measuring thread's end of the tracer: each read waits for the CPU's next
/// activation (the kernel records the thread's wake-up, and at the next read its return to
/// user space). Opened by a thread pinned to that one CPU, as the kernel requires.
#[derive(Debug)]
pub struct TimerlatFd {
    file: std::fs::File,
}

impl TimerlatFd {
    /// Opens `cpu`'s `timerlat_fd` under the tracefs at `top`.
    pub fn open(top: &std::path::Path, cpu: u32) -> Result<TimerlatFd> {
        let path = top.join(format!("osnoise/per_cpu/cpu{cpu}/timerlat_fd"));
        std::fs::File::open(&path)
            .map(|file| TimerlatFd { file })
            .map_err(|e| Error::from_io(&path, e))
    }

    /// Waits for the next activation: returns when the timer has woken this thread.
    pub fn wait(&mut self) -> std::io::Result<()> {
        let mut byte = [0u8; 1];
        loop {
            match self.file.read(&mut byte) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The tracer running; stopped and its options restored when [`restore`](Self::restore)d or
/// dropped.
#[derive(Debug)]
pub struct TimerlatTracer {
    inner: KernelTracer,
    pipe: Option<std::fs::File>,
    pipe_path: PathBuf,
    /// `osnoise/options`' workload flag as found (`OSNOISE_WORKLOAD` or its `NO_` form),
    /// when this run changed it.
    workload_was: Option<String>,
}

impl TimerlatTracer {
    /// Saves the options, sets them and starts the tracer with the noise events on. Refuses
    /// to take the top-level buffer from another tracer.
    pub fn start(fs: &Tracefs, s: &TimerlatSettings) -> Result<TimerlatTracer> {
        let inner = KernelTracer::save(fs, &OPTIONS)?;
        let mut tracer = TimerlatTracer {
            pipe_path: inner.dir().join("trace_pipe"),
            inner,
            pipe: None,
            workload_was: None,
        };
        tracer.set_options(s)?;
        tracer.inner.start("timerlat", &EVENTS)?;
        tracer.pipe_path = tracer.inner.dir().join("trace_pipe");
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&tracer.pipe_path)
            .map_err(|e| Error::from_io(&tracer.pipe_path, e))?;
        tracer.pipe = Some(pipe);
        Ok(tracer)
    }

    fn set_options(&mut self, s: &TimerlatSettings) -> Result<()> {
        let top = self.inner.top();
        write(
            &top.join("osnoise/timerlat_period_us"),
            &s.period_us.to_string(),
        )?;
        write(&top.join("osnoise/cpus"), &s.cpus.to_string())?;
        let optional = [
            ("osnoise/stop_tracing_us", s.stop_irq_us),
            ("osnoise/stop_tracing_total_us", s.stop_thread_us),
            ("osnoise/print_stack", s.print_stack_us),
        ];
        for (name, value) in optional {
            let path = top.join(name);
            match value {
                Some(us) => write(&path, &us.to_string())?,
                // Off unless asked, also when someone left it set.
                None if path.exists() => write(&path, "0")?,
                None => {}
            }
        }
        self.set_workload(s.user_threads)
    }

    /// The kernel's own threads on (kernel threads measure) or off (user-space threads do),
    /// the flag as found remembered when it changes. `osnoise/options` takes one flag per
    /// write, so the whole line read cannot be written back.
    fn set_workload(&mut self, user_threads: bool) -> Result<()> {
        let path = self.inner.top().join("osnoise/options");
        if !path.exists() {
            return if user_threads {
                Err(Error::Parse {
                    path,
                    line: 1,
                    what:
                        "the OSNOISE_WORKLOAD option (user-space threads need Linux 6.6 or later)"
                            .to_string(),
                })
            } else {
                Ok(())
            };
        }
        let found = read(&path)?
            .split_whitespace()
            .find(|o| o.trim_start_matches("NO_") == WORKLOAD)
            .map(str::to_string);
        let wanted = if user_threads {
            format!("NO_{WORKLOAD}")
        } else {
            WORKLOAD.to_string()
        };
        if let Some(found) = found
            && found != wanted
        {
            write(&path, &wanted)?;
            self.workload_was = Some(found);
        }
        Ok(())
    }

    /// Whether the kernel can stop the tracer at a threshold and record the IRQ's stack
    /// (`stop_tracing_total_us` and `print_stack`).
    pub fn can_stop_with_stack(fs: &Tracefs) -> bool {
        ["osnoise/stop_tracing_total_us", "osnoise/print_stack"]
            .iter()
            .all(|f| fs.dir().join(f).exists())
    }

    /// Appends what the trace pipe holds now to `buf`, without waiting, up to about
    /// `at_most` bytes (a pipe fed faster than it is read has no end: a storm of noise
    /// events); returns the bytes read (0 when nothing is there). What is read is gone from
    /// the buffer.
    pub fn drain(&mut self, buf: &mut Vec<u8>, at_most: usize) -> Result<usize> {
        let Some(pipe) = self.pipe.as_mut() else {
            return Ok(0);
        };
        let mut total = 0;
        let mut chunk = [0u8; 64 * 1024];
        while total < at_most {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    total += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::from_io(&self.pipe_path, e)),
            }
        }
        Ok(total)
    }

    /// Switches the noise events off (the tracer measures on): what a run does when they
    /// come faster than they can be read. An instance's go with it; in the top-level buffer
    /// they were switched on by this run and are given back as found.
    pub fn noise_events_off(&self) -> Result<()> {
        let mut result = Ok(());
        for event in EVENTS {
            let enable = self.inner.dir().join("events").join(event).join("enable");
            if enable.exists()
                && let Err(e) = write(&enable, "0")
            {
                result = Err(e);
            }
        }
        result
    }

    /// Whether the buffer is still recording (false once the tracer stopped itself at a
    /// threshold, or was stopped).
    pub fn is_on(&self) -> Result<bool> {
        Ok(read(&self.inner.dir().join("tracing_on"))? == "1")
    }

    /// Stops the tracer (its buffer stays readable).
    pub fn stop(&self) -> Result<()> {
        self.inner.stop()
    }

    /// Whether it runs in a private instance (else in the top-level buffer).
    pub fn in_instance(&self) -> bool {
        self.inner.in_instance()
    }

    /// The directory its trace is read from.
    pub fn dir(&self) -> &std::path::Path {
        self.inner.dir()
    }

    /// Stops the tracer, closes the pipe, removes the instance or gives the top-level buffer
    /// back, and restores every option.
    pub fn restore(mut self) -> Result<()> {
        self.restore_all()
    }

    fn restore_all(&mut self) -> Result<()> {
        // An open pipe keeps the instance busy.
        self.pipe = None;
        let restored = self.inner.restore(&[]);
        let workload = match self.workload_was.take() {
            Some(flag) => write(&self.inner.top().join("osnoise/options"), &flag),
            None => Ok(()),
        };
        restored.and(workload)
    }

    /// The top-level tracefs directory (where `osnoise/per_cpu` is).
    pub fn top(&self) -> &std::path::Path {
        self.inner.top()
    }
}

impl Drop for TimerlatTracer {
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
            ("osnoise/timerlat_period_us", "1000"),
            ("osnoise/cpus", "0-3"),
            ("osnoise/stop_tracing_us", "0"),
            ("osnoise/stop_tracing_total_us", "0"),
            ("osnoise/print_stack", "0"),
        ] {
            std::fs::write(dir.join(name), format!("{value}\n")).unwrap();
        }
        std::fs::write(dir.join("trace_pipe"), "").unwrap();
        Tracefs::at(dir)
    }

    fn snapshot(dir: &Path) -> Vec<String> {
        ["current_tracer", "tracing_on"]
            .iter()
            .chain(OPTIONS.iter())
            .map(|n| read(&dir.join(n)).unwrap())
            .collect()
    }

    fn settings() -> TimerlatSettings {
        TimerlatSettings {
            cpus: CpuSet::from_cpus([1, 2]),
            period_us: 250,
            stop_irq_us: Some(100),
            stop_thread_us: Some(100),
            print_stack_us: Some(100),
            user_threads: false,
        }
    }

    #[test]
    fn it_sets_the_options_reads_the_pipe_and_restores_everything() {
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "nop");
        let before = snapshot(dir.path());
        assert!(TimerlatTracer::can_stop_with_stack(&fs));
        let mut t = TimerlatTracer::start(&fs, &settings()).unwrap();
        // A plain directory for an instance has no current_tracer: the top level is used.
        assert!(!t.in_instance());
        let read_top = |n: &str| read(&dir.path().join(n)).unwrap();
        assert_eq!(read_top("current_tracer"), "timerlat");
        assert_eq!(read_top("osnoise/timerlat_period_us"), "250");
        assert_eq!(read_top("osnoise/cpus"), "1-2");
        assert_eq!(read_top("osnoise/stop_tracing_total_us"), "100");
        assert_eq!(read_top("osnoise/print_stack"), "100");
        assert!(t.is_on().unwrap());
        let mut buf = Vec::new();
        assert_eq!(t.drain(&mut buf, 1 << 20).unwrap(), 0);
        t.stop().unwrap();
        assert!(!t.is_on().unwrap());
        t.restore().unwrap();
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn a_busy_top_level_is_refused_and_the_options_restored() {
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "function");
        let before = snapshot(dir.path());
        let e = TimerlatTracer::start(&fs, &settings())
            .unwrap_err()
            .to_string();
        assert!(e.contains("'function' tracer is in use"), "{e}");
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn user_threads_switch_the_kernel_threads_off_and_back() {
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "nop");
        let options = dir.path().join("osnoise/options");
        std::fs::write(&options, "DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP\n").unwrap();
        assert!(!has_user_threads(&fs), "no timerlat_fd yet");
        std::fs::create_dir_all(dir.path().join("osnoise/per_cpu/cpu0")).unwrap();
        std::fs::write(dir.path().join("osnoise/per_cpu/cpu0/timerlat_fd"), "").unwrap();
        assert!(has_user_threads(&fs));
        let s = TimerlatSettings {
            user_threads: true,
            ..settings()
        };
        let t = TimerlatTracer::start(&fs, &s).unwrap();
        assert_eq!(read(&options).unwrap(), "NO_OSNOISE_WORKLOAD");
        t.restore().unwrap();
        // One flag per write, as the kernel takes them.
        assert_eq!(read(&options).unwrap(), "OSNOISE_WORKLOAD");
    }

    #[test]
    fn user_threads_on_a_kernel_without_the_option_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "nop");
        let s = TimerlatSettings {
            user_threads: true,
            ..settings()
        };
        let e = TimerlatTracer::start(&fs, &s).unwrap_err().to_string();
        assert!(e.contains("6.6"), "{e}");
    }

    #[test]
    fn unset_thresholds_are_switched_off() {
        let dir = tempfile::tempdir().unwrap();
        let fs = top(dir.path(), "nop");
        std::fs::write(dir.path().join("osnoise/print_stack"), "30\n").unwrap();
        let s = TimerlatSettings {
            stop_irq_us: None,
            stop_thread_us: None,
            print_stack_us: None,
            ..settings()
        };
        let t = TimerlatTracer::start(&fs, &s).unwrap();
        assert_eq!(read(&dir.path().join("osnoise/print_stack")).unwrap(), "0");
        drop(t);
        assert_eq!(read(&dir.path().join("osnoise/print_stack")).unwrap(), "30");
    }
}
