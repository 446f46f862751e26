//! `rtlab noise --engine kernel`: the kernel's osnoise tracer measures, with rtla osnoise's
//! semantics (its kernel threads poll for `--runtime` of every `--period`; noise at or above
//! `--threshold` is a sample; the HW/NMI/IRQ/softirq/thread counters are the tracer's), and
//! rtlab reads the tracer's per-period summaries and noise events back into the same
//! `rtlab.noise/1` document, marked `engine: kernel`. The tracer gives no distribution of
//! gaps, so the per-CPU histograms are empty and the run is judged on its noise figures.

use std::time::{Duration, Instant, SystemTime};

use model::Nanos;
use model::histogram::Histogram;
use model::measure::{MeasureRun, RunStatus, Series, Warning};
use model::noise::{Engine as NoiseEngine, NOISE_SCHEMA, NoiseCpu, NoiseInfo};
use model::stats::Accumulator;
use sys::osnoise::{OsnoiseSettings, OsnoiseTracer};
use sys::parse::stat::CpuTimes;
use sys::tracefs::Tracefs;
use trace::osnoise::OsnoiseReport;

use super::NoiseConfig;
use crate::cell::CellSnapshot;
use crate::env::{Environment, RunError};
use crate::result::{self, RunFacts};
use crate::session::{Engine, MainThread, TICK};

/// The osnoise tracer as an engine of the measuring session: armed at the common start, left
/// to run for `--duration` (no live view, no checkpoints: its figures are read at the end),
/// then stopped, read back and restored.
pub(super) struct KernelNoise<'a> {
    config: &'a NoiseConfig,
    env: &'a Environment,
    fs: Tracefs,
    settings: OsnoiseSettings,
    facts: RunFacts,
    steal_before: Option<Vec<(u32, CpuTimes)>>,
    /// The tracer, running (restored when dropped, on every path).
    tracer: Option<OsnoiseTracer>,
    t0: Instant,
    end: Instant,
}

impl<'a> KernelNoise<'a> {
    /// The tracer's settings from `config`, for the tracer on `fs`; nothing changed yet.
    pub(super) fn new(config: &'a NoiseConfig, env: &'a Environment, fs: Tracefs) -> Self {
        let root = &env.root;
        let us = |n: Nanos| n.get().div_ceil(1_000);
        let settings = OsnoiseSettings {
            cpus: config.cpus.clone(),
            runtime_us: us(config.runtime),
            period_us: us(config.period),
            threshold_us: us(config.threshold).max(1),
        };
        let mut warnings: Vec<Warning> = crate::preflight::placement_warnings(root)
            .into_iter()
            .collect();
        if !config.threshold.get().is_multiple_of(1_000) {
            warnings.push(Warning::new(
                "noise-threshold-rounded",
                format!(
                    "the osnoise tracer takes whole microseconds: --threshold {} is {} us",
                    config.threshold, settings.threshold_us
                ),
            ));
        }
        let now = Instant::now();
        KernelNoise {
            config,
            env,
            fs,
            settings,
            facts: RunFacts {
                host: sys::host::host_info(root),
                params: super::figures::params(config, "osnoise-tracer"),
                warnings,
                started_at: SystemTime::now(),
                workload: None,
            },
            steal_before: None,
            tracer: None,
            t0: now,
            end: now,
        }
    }
}

impl Engine for KernelNoise<'_> {
    type Output = MeasureRun;
    type Document = MeasureRun;

    fn prepare(&mut self) -> Result<MainThread, RunError> {
        self.steal_before = sys::cpu::times(&self.env.root).ok();
        Ok(MainThread::default())
    }

    fn start(&mut self) -> Result<(), RunError> {
        Ok(())
    }

    /// Arms the tracer: its kernel threads start measuring.
    fn go(&mut self) -> Result<MeasureRun, RunError> {
        self.facts.started_at = SystemTime::now();
        let tracer =
            OsnoiseTracer::start(&self.fs, &self.settings).map_err(|source| RunError::Kernel {
                what: "starting the osnoise tracer".to_string(),
                source,
            })?;
        self.tracer = Some(tracer);
        self.t0 = Instant::now();
        self.end = self.t0 + self.config.duration.to_duration();
        Ok(document(
            &self.facts,
            self.config,
            RunStatus::Running,
            None,
            Nanos::ZERO,
            None,
        ))
    }

    /// A tick, or what is left of the run if less.
    fn tick(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now()).min(TICK)
    }

    fn ended(&mut self) -> bool {
        Instant::now() >= self.end
    }

    fn checkpoint(&self) -> MeasureRun {
        document(
            &self.facts,
            self.config,
            RunStatus::Running,
            None,
            Nanos::ZERO,
            None,
        )
    }

    /// The tracer is stopped in `finish`, once the observer has heard the end.
    fn stop(&mut self) {}

    /// Stops the tracer, reads its trace back, restores its options and builds the document.
    fn finish(mut self, status: RunStatus) -> Result<MeasureRun, RunError> {
        let elapsed = Nanos(u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
        let tracer = self.tracer.take().expect("armed");
        let _ = tracer.stop();
        let report = tracer
            .open_trace()
            .map_err(|e| e.to_string())
            .and_then(|f| {
                OsnoiseReport::read(f).map_err(|e| format!("line {}: {}", e.line, e.what))
            });
        let in_instance = tracer.in_instance();
        tracer.restore().map_err(|source| RunError::Kernel {
            what: "restoring the osnoise tracer's options".to_string(),
            source,
        })?;
        let report = report
            .map_err(|e| RunError::Setup(format!("reading the osnoise tracer's trace: {e}")))?;
        let root = &self.env.root;
        let steal = self.steal_before.take().and_then(|before| {
            let after = sys::cpu::times(root).ok()?;
            Some(super::figures::steal_ns(&before, &after))
        });
        let mut doc = document(
            &self.facts,
            self.config,
            status,
            Some(&report),
            elapsed,
            steal.as_ref(),
        );
        if let Some(noise) = doc.noise.as_mut() {
            noise.hypervisor = sys::cpu::hypervisor(root);
            noise.attribution_note = note(&report, in_instance);
        }
        Ok(doc)
    }
}

/// What limited the tracer's attribution, if anything did.
fn note(report: &OsnoiseReport, in_instance: bool) -> Option<String> {
    let mut notes = Vec::new();
    if !in_instance {
        notes.push(
            "the tracer ran in the top-level buffer (this kernel runs osnoise in no instance)"
                .to_string(),
        );
    }
    if report.lost_markers > 0 {
        notes.push(format!(
            "the trace lost {} events: counts and culprits may be short",
            report
                .lost_events
                .map_or("an unknown number of".to_string(), |n| n.to_string())
        ));
    }
    if report.noise_events == 0 {
        notes.push("the kernel recorded no osnoise events: the counts say which class interrupted, not which handler or thread".to_string());
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// The document: empty per-CPU distributions, the tracer's figures in `noise`.
fn document(
    facts: &RunFacts,
    config: &NoiseConfig,
    status: RunStatus,
    report: Option<&OsnoiseReport>,
    elapsed: Nanos,
    steal: Option<&Vec<(u32, u64)>>,
) -> MeasureRun {
    let snaps = config
        .cpus
        .iter()
        .map(|cpu| CellSnapshot {
            cpu,
            tid: None,
            acc: Accumulator::new(),
            histogram: Histogram::new(),
            spikes: Vec::new(),
            series: Series {
                slot_ns: Nanos::SECOND,
                ..Series::default()
            },
            periods_done: 0,
            work: Default::default(),
        })
        .collect();
    let mut doc = result::document(facts, status, snaps, elapsed, SystemTime::now(), None);
    doc.schema = NOISE_SCHEMA.to_string();
    let cpus = config
        .cpus
        .iter()
        .map(|cpu| {
            let mut figures = report
                .and_then(|r| r.cpus.get(&cpu))
                .and_then(|c| c.noise_cpu(cpu).ok())
                .unwrap_or(NoiseCpu {
                    cpu,
                    ..NoiseCpu::default()
                });
            figures.steal_ns = steal.and_then(|s| s.iter().find(|(c, _)| *c == cpu).map(|x| x.1));
            figures
        })
        .collect();
    doc.noise = Some(NoiseInfo {
        engine: NoiseEngine::Kernel,
        counter: "osnoise-tracer".to_string(),
        counter_hz: None,
        threshold_ns: Nanos(config.threshold.get().div_ceil(1_000).max(1) * 1_000),
        runtime_ns: config.runtime,
        period_ns: config.period,
        attribution: "tracer".to_string(),
        attribution_note: None,
        hypervisor: None,
        cpus,
    });
    doc
}
