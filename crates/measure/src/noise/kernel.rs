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
use model::noise::{Engine, NOISE_SCHEMA, NoiseCpu, NoiseInfo};
use model::stats::Accumulator;
use sys::osnoise::{OsnoiseSettings, OsnoiseTracer};
use sys::signals::TerminationSignals;
use sys::tracefs::Tracefs;
use trace::osnoise::OsnoiseReport;

use super::NoiseConfig;
use crate::cell::CellSnapshot;
use crate::env::{Environment, RunError};
use crate::result::{self, RunFacts};
use crate::run::Observer;

const TICK: Duration = Duration::from_millis(100);

/// Runs the osnoise tracer on `fs` for the configured CPUs and time.
pub(super) fn run_kernel(
    config: &NoiseConfig,
    env: &Environment,
    fs: &Tracefs,
    observer: &mut dyn Observer,
) -> Result<MeasureRun, RunError> {
    let root = &env.root;
    let signals = TerminationSignals::block().map_err(|source| RunError::Kernel {
        what: "blocking SIGINT/SIGTERM for an orderly stop".to_string(),
        source,
    })?;
    let us = |n: Nanos| n.get().div_ceil(1_000);
    let settings = OsnoiseSettings {
        cpus: config.cpus.clone(),
        runtime_us: us(config.runtime),
        period_us: us(config.period),
        threshold_us: us(config.threshold).max(1),
    };
    let mut warnings: Vec<Warning> = crate::preflight::container_warning(root)
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
    let steal_before = sys::cpu::times(root).ok();
    let facts = RunFacts {
        host: sys::host::host_info(root),
        params: super::figures::params(config, "osnoise-tracer"),
        warnings,
        started_at: SystemTime::now(),
        workload: None,
    };
    let tracer = OsnoiseTracer::start(fs, &settings).map_err(|source| RunError::Kernel {
        what: "starting the osnoise tracer".to_string(),
        source,
    })?;
    let t0 = Instant::now();
    observer.started(&document(
        &facts,
        config,
        RunStatus::Running,
        None,
        Nanos::ZERO,
        None,
    ));
    let end = t0 + config.duration.to_duration();
    let mut status = RunStatus::Complete;
    while Instant::now() < end {
        if signals
            .wait(end.saturating_duration_since(Instant::now()).min(TICK))
            .is_some()
        {
            status = RunStatus::Interrupted;
            break;
        }
    }
    observer.finished();
    let elapsed = Nanos(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
    let _ = tracer.stop();
    let report = tracer
        .open_trace()
        .map_err(|e| e.to_string())
        .and_then(|f| OsnoiseReport::read(f).map_err(|e| format!("line {}: {}", e.line, e.what)));
    let in_instance = tracer.in_instance();
    tracer.restore().map_err(|source| RunError::Kernel {
        what: "restoring the osnoise tracer's options".to_string(),
        source,
    })?;
    let report =
        report.map_err(|e| RunError::Setup(format!("reading the osnoise tracer's trace: {e}")))?;
    let steal = steal_before.and_then(|before| {
        let after = sys::cpu::times(root).ok()?;
        Some(super::figures::steal_ns(&before, &after))
    });
    let mut doc = document(
        &facts,
        config,
        status,
        Some(&report),
        elapsed,
        steal.as_ref(),
    );
    if let Some(noise) = doc.noise.as_mut() {
        noise.hypervisor = sys::cpu::hypervisor(root);
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
        noise.attribution_note = (!notes.is_empty()).then(|| notes.join("; "));
    }
    Ok(doc)
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
        engine: Engine::Kernel,
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
