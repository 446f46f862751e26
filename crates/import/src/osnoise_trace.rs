//! The osnoise tracer's own trace (`echo osnoise > current_tracer; cat trace`, or rtla's
//! `-t` trace file), read with [`trace::osnoise`] into a noise run: per CPU the periods'
//! summary lines added up (runtime, noise and counts summed, the largest period noise and
//! single noise kept) and, when the `osnoise:*` events were on, the named culprits and the
//! time per class.

use std::time::{Duration, SystemTime};

use model::Nanos;
use model::measure::MeasureRun;
use model::noise::{Engine, NoiseCpu, NoiseInfo};
use trace::osnoise::{CpuSummary, OsnoiseReport};

use crate::noise_run::{NoiseImport, noise_run};
use crate::{Format, ImportError};

/// The tracer's threshold when `tracing_thresh` is 0, ns.
const DEFAULT_THRESHOLD_NS: u64 = 5_000;

/// Reads the trace.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let report = OsnoiseReport::parse(text).map_err(|e| ImportError::at(file, e.line, e.what))?;
    if report.summary_lines == 0 {
        return Err(ImportError::whole(
            file,
            "the trace has no per-period summary lines (`TASK-PID [CPU] FLAGS TIME: RUNTIME NOISE \
             %AVAIL MAX HW NMI IRQ SIRQ THREAD`): the osnoise tracer was not the current tracer, \
             so there is no runtime to measure noise against; record with `echo osnoise > \
             current_tracer`",
        ));
    }
    let mut notes = Vec::new();
    let summarised: Vec<(u32, &CpuSummary)> = report
        .cpus
        .iter()
        .filter(|(_, c)| c.periods > 0)
        .map(|(cpu, c)| (*cpu, c))
        .collect();
    let events_only = report.cpus.len() - summarised.len();
    if events_only > 0 {
        notes.push(format!(
            "{events_only} CPUs have noise events but no summary line: they are left out"
        ));
    }
    let cpus = summarised
        .iter()
        .map(|(cpu, c)| noise_cpu(file, *cpu, c))
        .collect::<Result<Vec<_>, _>>()?;
    let runtime_us = summarised
        .iter()
        .map(|(_, c)| c.max_period_runtime_us)
        .max()
        .unwrap_or(0);
    let span = report
        .last_summary_ns
        .zip(report.first_summary_ns)
        .map_or(0, |(l, f)| l - f);
    let elapsed = Duration::from_nanos(span.saturating_add(runtime_us.saturating_mul(1000)));
    notes.extend(trace_notes(&report, runtime_us));
    let noise = NoiseInfo {
        engine: Engine::Imported,
        counter: "osnoise-tracer".to_string(),
        counter_hz: None,
        threshold_ns: Nanos(DEFAULT_THRESHOLD_NS),
        runtime_ns: Nanos(runtime_us.saturating_mul(1000)),
        period_ns: Nanos(runtime_us.saturating_mul(1000)),
        attribution: "tracer".to_string(),
        attribution_note: attribution_note(&report),
        hypervisor: None,
        cpus,
    };
    noise_run(
        NoiseImport {
            file,
            format: Format::OsnoiseTrace,
            tool: "osnoise tracer".to_string(),
            command: None,
            modified,
            elapsed,
            resolution_ns: 1000,
            notes,
        },
        noise,
    )
}

fn noise_cpu(file: &str, cpu: u32, c: &CpuSummary) -> Result<NoiseCpu, ImportError> {
    c.noise_cpu(cpu).map_err(|e| ImportError::whole(file, e))
}

fn attribution_note(r: &OsnoiseReport) -> Option<String> {
    if r.lost_markers > 0 {
        let lost = r
            .lost_events
            .map_or("an unknown number of".to_string(), |n| n.to_string());
        return Some(format!(
            "the trace lost {lost} events ({} markers): counts and culprits may be short",
            r.lost_markers
        ));
    }
    (r.noise_events == 0).then(|| {
        "the osnoise events were off: the tracer's counts say which class interrupted, not \
         which handler or thread"
            .to_string()
    })
}

fn trace_notes(r: &OsnoiseReport, runtime_us: u64) -> Vec<String> {
    let mut notes = vec![
        format!(
            "the trace records neither the period nor the threshold: the period is taken as the \
             runtime of one period ({runtime_us} us, the tracer's default duty cycle of 100 %) \
             and the threshold as the tracer's default 5 us"
        ),
        "the run's length is the time from the first summary line to the last plus one period; \
         its start is dated back from the file's modification time (the trace clock counts from \
         boot)"
            .to_string(),
        "the tracer prints times in whole microseconds in its summary lines: they are stored in \
         ns, exact to 1 us"
            .to_string(),
    ];
    if r.noise_events > 0 {
        notes.push(
            "interruptions are the `sample_threshold` events (each noise above the threshold); \
             culprits are every noise event seen, with their net durations, whether or not it \
             was within such a noise"
                .to_string(),
        );
    } else {
        notes.push(
            "interruptions are the sum of the HW, NMI, IRQ, softirq and thread counts: the tracer \
             counts every such interference however short, so it is an upper bound"
                .to_string(),
        );
    }
    if r.unknown_lines > 0 {
        let (n, text) = r.first_unknown.clone().unwrap_or_default();
        notes.push(format!(
            "{}s: {} lines are not part of the osnoise trace as rtlab knows it, the first \
             line {n}: `{}`",
            crate::SKIPPED_NOTE,
            r.unknown_lines,
            text.chars().take(60).collect::<String>()
        ));
    }
    notes
}
