//! `rtlab hwlat`: latency the hardware or firmware adds (SMIs, bus stalls, a hypervisor), as
//! hwlatdetect measures it, on any kernel. This module owns the run's parameters
//! ([`HwlatConfig`]) and both engines:
//!
//! * **kernel** — the hwlat tracer, an engine of the measuring session ([`crate::session`]) as
//!   the osnoise and timerlat tracers are: its threshold, window, width and CPUs set, the
//!   samples read back after `--duration`, every setting restored ([`sys::hwlat::HwlatTracer`]);
//! * **user** — where the tracer is missing: the noise detector at SCHED_FIFO 99, polling
//!   `--width` of every `--window`, keeping per window the longest gap no kernel event
//!   explains. A user-space thread cannot turn interrupts off, so what it reports is a screen:
//!   the run says so in its warnings.
//!
//! SMI counts (MSR 0x34, Intel) are read before and after either engine.

use std::time::{Duration, Instant, SystemTime};

use model::hwlat::{
    HWLAT_SCHEMA, HwlatEngine, HwlatParams, HwlatRun, HwlatSample, SmiCounts, SmiCpu,
};
use model::measure::{Policy, RunStatus, Warning};
use model::{CpuSet, Nanos};
use sys::tracefs::Tracefs;

use crate::env::{Environment, RunError};
use crate::noise::{NoiseConfig, run_noise_windows};
use crate::run::NoObserver;
use crate::session::{self, Engine, MainThread, TICK};

/// Which engine to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwlatChoice {
    /// The kernel's tracer where it exists, else the user-space screen.
    Auto,
    /// The kernel's hwlat tracer; an error without it.
    Kernel,
    /// The user-space screen.
    User,
}

/// A hwlat run's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct HwlatConfig {
    /// CPUs to sample.
    pub cpus: CpuSet,
    /// How long.
    pub duration: Nanos,
    /// Gaps at or above this are samples.
    pub threshold: Nanos,
    /// The sampling window.
    pub window: Nanos,
    /// Time sampled in each window.
    pub width: Nanos,
    /// A sample at or above this fails the run.
    pub hardlimit: Option<Nanos>,
    /// The engine.
    pub engine: HwlatChoice,
}

/// Largest trace read back from the tracer (it writes one line per window over threshold).
const MAX_TRACE_BYTES: u64 = 256 << 20;

impl HwlatConfig {
    /// hwlatdetect's defaults (threshold 10 us, window 1 s, width 500 ms) for `cpus`, 60 s.
    pub fn new(cpus: CpuSet) -> HwlatConfig {
        HwlatConfig {
            cpus,
            duration: Nanos::from_secs(60),
            threshold: Nanos::from_us(10),
            window: Nanos::SECOND,
            width: Nanos::from_ms(500),
            hardlimit: None,
            engine: HwlatChoice::Auto,
        }
    }

    /// Refuses what neither engine can do; the message names the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.cpus.is_empty() {
            return Err("--cpus names no CPU".into());
        }
        if self.duration.get() == 0 || self.duration > model::limits::MAX_RUN {
            return Err(format!(
                "--duration {} is out of range: give more than 0s, up to {}",
                self.duration,
                model::limits::MAX_RUN
            ));
        }
        if self.threshold < Nanos::from_us(1) || self.threshold > Nanos::SECOND {
            return Err(format!(
                "--threshold {} is out of range: give 1us to 1s (the tracer counts whole microseconds)",
                self.threshold
            ));
        }
        if self.width < Nanos::from_ms(1) || self.width > self.window {
            return Err(format!(
                "--width {} must be at least 1ms and at most --window ({})",
                self.width, self.window
            ));
        }
        if self.window > Nanos::from_secs(60) {
            return Err(format!("--window {} is longer than 60s", self.window));
        }
        Ok(())
    }
}

/// Runs the detector and returns an `rtlab.hwlat/1` document.
pub fn run_hwlat(config: &HwlatConfig, env: &Environment) -> Result<HwlatRun, RunError> {
    let root = &env.root;
    let tracer = sys::hwlat::available(root);
    let host = sys::host::host_info(root);
    let smi_before = sys::hwlat::smi_counts(root, &config.cpus);
    let started = SystemTime::now();
    let t0 = Instant::now();
    let (engine, status, samples, mut warnings) = match (config.engine, tracer) {
        (HwlatChoice::Kernel, None) => {
            return Err(RunError::Setup(
                "--engine kernel: this kernel has no hwlat tracer (CONFIG_HWLAT_TRACER) or tracefs is not mounted; --engine user screens for it from user space".to_string(),
            ));
        }
        (HwlatChoice::Kernel | HwlatChoice::Auto, Some(fs)) => {
            let (status, samples) = session::run(
                KernelHwlat::new(config, fs, document(config, &host, started)),
                &mut NoObserver,
            )?;
            (HwlatEngine::Kernel, status, samples, Vec::new())
        }
        (HwlatChoice::User | HwlatChoice::Auto, _) => user(config, env)?,
    };
    let elapsed = Nanos(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
    let smi = smi(smi_before, sys::hwlat::smi_counts(root, &config.cpus));
    if let Some(n) = smi.during().filter(|n| *n > 0) {
        warnings.push(Warning::new(
            "smi",
            format!("{n} system management interrupts (SMIs) came during the run: firmware took the CPUs for as long as each lasted"),
        ));
    }
    let mut run = document(config, &host, started);
    run.cpus = HwlatRun::summarize(&config.cpus, &samples);
    run.status = status;
    run.ended_at = crate::result::timestamp(SystemTime::now());
    run.elapsed_ns = elapsed;
    run.engine = engine;
    run.samples = samples;
    run.smi = smi;
    run.warnings = warnings;
    Ok(run)
}

/// The document of a run of `config` on `host` started at `started`, as it stands before any
/// sample: status `running`, nothing measured yet.
fn document(config: &HwlatConfig, host: &model::host::HostInfo, started: SystemTime) -> HwlatRun {
    let at = crate::result::timestamp(started);
    HwlatRun {
        schema: HWLAT_SCHEMA.to_string(),
        rtlab_version: env!("CARGO_PKG_VERSION").to_string(),
        build: model::build::current().cloned(),
        status: RunStatus::Running,
        started_at: at.clone(),
        ended_at: at,
        elapsed_ns: Nanos::ZERO,
        host: host.clone(),
        engine: HwlatEngine::Kernel,
        params: HwlatParams {
            cpus: config.cpus.clone(),
            duration_ns: Some(config.duration),
            threshold_ns: config.threshold,
            window_ns: Some(config.window),
            width_ns: Some(config.width),
            hardlimit_ns: config.hardlimit,
        },
        samples: Vec::new(),
        cpus: HwlatRun::summarize(&config.cpus, &[]),
        smi: SmiCounts::default(),
        warnings: Vec::new(),
        import: None,
    }
}

/// The kernel's hwlat tracer as an engine of the measuring session, as the osnoise tracer is
/// one: armed at the common start, left to sample for `--duration` (a signal ends it early;
/// no live view, no checkpoints: its samples are read at the end), then read back and
/// restored.
struct KernelHwlat<'a> {
    config: &'a HwlatConfig,
    fs: Tracefs,
    /// The document before any sample, the observer's at the start.
    empty: HwlatRun,
    /// The tracer, running (restored when dropped, on every path).
    tracer: Option<sys::hwlat::HwlatTracer>,
    end: Instant,
}

impl<'a> KernelHwlat<'a> {
    fn new(config: &'a HwlatConfig, fs: Tracefs, empty: HwlatRun) -> Self {
        KernelHwlat {
            config,
            fs,
            empty,
            tracer: None,
            end: Instant::now(),
        }
    }
}

impl Engine for KernelHwlat<'_> {
    type Output = (RunStatus, Vec<HwlatSample>);
    type Document = HwlatRun;

    fn prepare(&mut self) -> Result<MainThread, RunError> {
        Ok(MainThread::default())
    }

    fn start(&mut self) -> Result<(), RunError> {
        Ok(())
    }

    /// Sets the tracer's threshold, window, width and CPUs and starts it.
    fn go(&mut self) -> Result<HwlatRun, RunError> {
        let us = |n: Nanos| n.get() / 1_000;
        let c = self.config;
        let tracer = sys::hwlat::HwlatTracer::start(
            self.fs.clone(),
            us(c.threshold),
            us(c.window),
            us(c.width),
            &c.cpus,
        )
        .map_err(|source| RunError::Kernel {
            what: "starting the hwlat tracer".to_string(),
            source,
        })?;
        self.tracer = Some(tracer);
        self.end = Instant::now() + c.duration.to_duration();
        Ok(self.empty.clone())
    }

    /// A tick, or what is left of the run if less.
    fn tick(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now()).min(TICK)
    }

    fn ended(&mut self) -> bool {
        Instant::now() >= self.end
    }

    fn checkpoint(&self) -> HwlatRun {
        self.empty.clone()
    }

    /// The tracer is read and stopped in `finish`.
    fn stop(&mut self) {}

    /// Reads the samples back, restores the tracer's settings, and parses the samples.
    fn finish(mut self, status: RunStatus) -> Result<Self::Output, RunError> {
        let tracer = self.tracer.take().expect("armed");
        let text = tracer.read_trace(MAX_TRACE_BYTES);
        tracer.restore().map_err(|source| RunError::Kernel {
            what: "restoring the tracing settings after the hwlat tracer".to_string(),
            source,
        })?;
        let text = text.map_err(|e| RunError::Setup(format!("reading the hwlat trace: {e}")))?;
        let report = trace::hwlat::parse(&text)
            .map_err(|e| RunError::Setup(format!("the hwlat tracer's trace: {e}")))?;
        let samples = report
            .samples
            .iter()
            .map(|s| HwlatSample {
                seq: s.seq,
                cpu: s.cpu,
                ts_ns: Some(s.trace_ts_ns),
                wall: Some(s.wall_ts.clone()),
                inner_ns: s.inner_us.saturating_mul(1_000),
                outer_ns: s.outer_us.saturating_mul(1_000),
                count: s.count,
                nmi_total_ns: s.nmi_total_us.map(|n| n.saturating_mul(1_000)),
                nmi_count: s.nmi_count,
            })
            .collect();
        Ok((status, samples))
    }
}

/// What an engine measured: which engine, how the run ended, its samples, its warnings.
type Engined = (HwlatEngine, RunStatus, Vec<HwlatSample>, Vec<Warning>);

/// The user-space screen: the noise detector at SCHED_FIFO 99, `width` of every `window`;
/// per CPU and window, the longest gap no kernel event explains.
fn user(config: &HwlatConfig, env: &Environment) -> Result<Engined, RunError> {
    let mut noise = NoiseConfig::new(config.cpus.clone());
    noise.duration = config.duration;
    noise.threshold = config.threshold;
    noise.runtime = config.width;
    noise.period = config.window;
    noise.policy = Policy::Fifo;
    // As hwlatdetect's own thread: at 99 for `width` of every `window`, and asleep for the
    // rest, so the kernel's threads at 99 get the CPU between windows.
    noise.priority = 99;
    noise.allow_prio_99 = true;
    noise.attribute = true;
    noise.engine = crate::noise::NoiseEngine::User;
    noise.checkpoint = None;
    noise.spikes = 0;
    noise
        .validate()
        .map_err(|e| RunError::Setup(e.to_string()))?;
    let (run, hw) = run_noise_windows(&noise, env, &mut NoObserver)?;
    let mut warnings = vec![Warning::new(
        "hwlat-user-screen",
        "no hwlat tracer here: this is rtlab's user-space screen, a SCHED_FIFO 99 thread polling the counter with interrupts on. It reports only gaps no kernel event (IRQ, softirq, NMI, other thread) explains, but it cannot turn interrupts off, so its figures are a screen for hardware and firmware latency, not hwlatdetect's",
    )];
    let samples = match hw {
        Some(per_cpu) => per_window(&per_cpu, config.window.get()),
        None => {
            warnings.push(Warning::new(
                "hwlat-unattributed",
                "without a kernel trace no gap can be ruled out as the kernel's own: every gap over the threshold is listed",
            ));
            Vec::new()
        }
    };
    warnings.extend(
        run.warnings
            .into_iter()
            .filter(|w| w.code != "noise-starves"),
    );
    Ok((HwlatEngine::User, run.status, samples, warnings))
}

/// Per CPU and window (by start time), the longest gap: one sample, with the count of gaps.
fn per_window(per_cpu: &[(u32, Vec<trace::noise::Window>)], window_ns: u64) -> Vec<HwlatSample> {
    let mut samples = Vec::new();
    for (cpu, windows) in per_cpu {
        let mut current: Option<(u64, HwlatSample)> = None;
        for w in windows {
            let slot = w.start_ns / window_ns.max(1);
            let gap = w.end_ns.saturating_sub(w.start_ns);
            match &mut current {
                Some((s, sample)) if *s == slot => {
                    sample.count = Some(sample.count.unwrap_or(1) + 1);
                    if gap > sample.inner_ns {
                        sample.inner_ns = gap;
                        sample.ts_ns = Some(w.start_ns);
                    }
                }
                _ => {
                    if let Some((_, done)) = current.take() {
                        samples.push(done);
                    }
                    current = Some((
                        slot,
                        HwlatSample {
                            cpu: *cpu,
                            ts_ns: Some(w.start_ns),
                            inner_ns: gap,
                            count: Some(1),
                            ..HwlatSample::default()
                        },
                    ));
                }
            }
        }
        if let Some((_, done)) = current {
            samples.push(done);
        }
    }
    samples.sort_by_key(|s| s.ts_ns);
    for (i, s) in samples.iter_mut().enumerate() {
        s.seq = i as u64 + 1;
    }
    samples
}

/// SMI counts from the readings before and after.
fn smi(
    before: Result<Vec<(u32, u64)>, String>,
    after: Result<Vec<(u32, u64)>, String>,
) -> SmiCounts {
    match (before, after) {
        (Ok(b), Ok(a)) => SmiCounts {
            cpus: b
                .iter()
                .filter_map(|(cpu, before)| {
                    let (_, after) = a.iter().find(|(c, _)| c == cpu)?;
                    Some(SmiCpu {
                        cpu: *cpu,
                        before: *before,
                        after: *after,
                    })
                })
                .collect(),
            not_available: None,
            total: None,
        },
        (Err(e), _) | (_, Err(e)) => SmiCounts {
            cpus: Vec::new(),
            not_available: Some(e),
            total: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::noise::Window;

    /// A tracefs tree with the hwlat tracer's files (no instances: the tracer runs in the
    /// top-level buffer), its `trace` holding the kernel documentation's 12 samples.
    fn tracefs(dir: &std::path::Path) -> Tracefs {
        std::fs::create_dir_all(dir.join("hwlat_detector")).unwrap();
        let trace = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/imports/kdoc_hwlat_tracer_trace.txt"
        ))
        .unwrap();
        for (name, value) in [
            ("current_tracer", "nop"),
            ("available_tracers", "hwlat nop"),
            ("tracing_thresh", "0"),
            ("hwlat_detector/window", "1000000"),
            ("hwlat_detector/width", "500000"),
            ("tracing_cpumask", "ff"),
            ("tracing_on", "1"),
            ("trace", trace.as_str()),
        ] {
            std::fs::write(dir.join(name), format!("{value}\n")).unwrap();
        }
        Tracefs::at(dir)
    }

    #[test]
    fn the_kernel_tracer_runs_in_the_session_and_leaves_its_settings_as_found() {
        let dir = tempfile::tempdir().unwrap();
        let fs = tracefs(dir.path());
        let files = [
            "current_tracer",
            "tracing_thresh",
            "hwlat_detector/window",
            "hwlat_detector/width",
            "tracing_cpumask",
            "tracing_on",
        ];
        let read = || -> Vec<String> {
            files
                .iter()
                .map(|f| {
                    let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
                    text.trim().to_string()
                })
                .collect()
        };
        let before = read();
        let mut config = HwlatConfig::new(CpuSet::from_cpus([1, 2]));
        config.duration = Nanos::from_ms(50);
        config.window = Nanos::from_secs(2);
        config.width = Nanos::from_secs(1);
        let host = model::host::HostInfo::default();
        let started = SystemTime::now();
        let empty = document(&config, &host, started);
        assert_eq!(empty.status, RunStatus::Running);
        let (status, samples) =
            session::run(KernelHwlat::new(&config, fs, empty), &mut NoObserver).unwrap();
        assert_eq!(status, RunStatus::Complete);
        assert_eq!(samples.len(), 12);
        assert_eq!(
            (samples[0].cpu, samples[0].inner_ns, samples[0].outer_ns),
            (1, 11_000, 12_000)
        );
        assert_eq!(read(), before, "every setting as found");
    }

    #[test]
    fn each_window_keeps_its_longest_unexplained_gap() {
        let w = |s: u64, len: u64| Window {
            start_ns: s,
            end_ns: s + len,
        };
        let per_cpu = vec![
            (
                1,
                vec![
                    w(100, 20_000),
                    w(500_000_000, 50_000),
                    w(1_200_000_000, 15_000),
                ],
            ),
            (2, vec![w(300, 11_000)]),
        ];
        let s = per_window(&per_cpu, 1_000_000_000);
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].cpu, s[0].ts_ns), (2, Some(300)));
        let first = s.iter().find(|x| x.cpu == 1 && x.count == Some(2)).unwrap();
        assert_eq!(first.inner_ns, 50_000);
        assert_eq!(first.ts_ns, Some(500_000_000));
        assert_eq!(s.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn the_defaults_are_hwlatdetect_s_and_bad_widths_are_refused() {
        let mut c = HwlatConfig::new(CpuSet::from_cpus([0]));
        c.validate().unwrap();
        c.width = Nanos::from_secs(2);
        assert!(c.validate().unwrap_err().starts_with("--width"));
        c.width = Nanos::from_ms(500);
        c.threshold = Nanos(500);
        assert!(c.validate().unwrap_err().starts_with("--threshold"));
    }

    #[test]
    fn smi_counts_pair_up_or_say_why_not() {
        let s = smi(Ok(vec![(0, 5)]), Ok(vec![(0, 9)]));
        assert_eq!(s.during(), Some(4));
        let s = smi(Err("not available: AMD".into()), Err("x".into()));
        assert_eq!(s.not_available.as_deref(), Some("not available: AMD"));
    }
}
