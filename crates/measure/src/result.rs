//! Turning cell snapshots into the result document ([`MeasureRun`]) and the light live view
//! ([`Progress`]).

use std::time::SystemTime;

use model::host::HostInfo;
use model::measure::{
    self, BreakEvent, CpuProgress, MeasureParams, MeasureRun, Progress, RunStatus, Warning,
};
use model::stats::{Accumulator, LatencyStats};
use model::{Histogram, Nanos};

use crate::cell::{CellSnapshot, CpuCell};
use crate::config::{Config, RunLength};

/// Everything about a run that is not per-CPU data.
#[derive(Clone, Debug)]
pub(crate) struct RunFacts {
    pub host: HostInfo,
    pub params: MeasureParams,
    pub warnings: Vec<Warning>,
    pub started_at: SystemTime,
    pub workload: Option<crate::config::Workload>,
}

/// The parameters as applied.
pub(crate) fn params(config: &Config, dma_latency_us: Option<u32>, fake: bool) -> MeasureParams {
    MeasureParams {
        engine: model::measure::Engine::User,
        cpus: config.cpus.clone(),
        interval_ns: config.interval,
        periods: config.periods(),
        duration_ns: match config.length {
            RunLength::Duration(d) => Some(d),
            RunLength::Cycles(_) => None,
        },
        cycles: match config.length {
            RunLength::Cycles(n) => Some(n),
            RunLength::Duration(_) => None,
        },
        aligned: config.aligned,
        offsets_ns: config.offsets(),
        policy: config.policy,
        priority: config.priority,
        dl_runtime_ns: config.dl_runtime,
        dl_period_ns: config.dl_period,
        main_cpus: config.main_cpus.clone(),
        mlock: config.mlock && !fake,
        thread_stack_bytes: config.stack_bytes as u64,
        dma_latency_us,
        break_ns: config.break_threshold,
        // The budget is the command's (`rtlab measure --budget`), which records it.
        budget_ns: None,
        spikes: config.spikes,
        checkpoint_ns: config.checkpoint,
        clock: if fake { "fake" } else { "monotonic" }.to_string(),
    }
}

/// RFC 3339 in UTC with microseconds.
pub(crate) fn timestamp(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// The result document from snapshots of every cell.
pub(crate) fn document(
    facts: &RunFacts,
    status: RunStatus,
    snapshots: Vec<CellSnapshot>,
    elapsed: Nanos,
    ended_at: SystemTime,
    break_event: Option<BreakEvent>,
) -> MeasureRun {
    let workload = facts.workload.map(|w| model::workload::WorkloadInfo {
        runtime_ns: w.runtime,
        deadline_ns: w.deadline,
        cpus: snapshots.iter().map(|s| s.work.clone()).collect(),
    });
    let cpus: Vec<_> = snapshots
        .into_iter()
        .map(|s| measure::cpu_result(s.cpu, s.tid, s.acc, s.histogram, s.spikes, s.series))
        .collect();
    let all = measure::aggregate(&cpus);
    MeasureRun {
        schema: measure::SCHEMA.to_string(),
        rtlab_version: env!("CARGO_PKG_VERSION").to_string(),
        build: model::build::current().cloned(),
        status,
        started_at: timestamp(facts.started_at),
        ended_at: timestamp(ended_at),
        elapsed_ns: elapsed,
        host: facts.host.clone(),
        params: facts.params.clone(),
        cpus,
        all,
        break_event,
        warnings: facts.warnings.clone(),
        load: None,
        audit: None,
        import: None,
        trace: None,
        noise: None,
        workload,
        timerlat: None,
    }
}

/// The live view: accumulators and histograms only.
pub(crate) fn progress<'a>(
    cells: impl IntoIterator<Item = &'a CpuCell>,
    elapsed: Nanos,
    planned: Nanos,
) -> Progress {
    let figures = cells
        .into_iter()
        .map(|cell| (cell.cpu, cell.accumulator(), cell.histogram()));
    progress_from(figures, elapsed, planned)
}

/// The live view from snapshots (an engine that keeps its figures in the main thread).
pub(crate) fn progress_of<'a>(
    snapshots: impl IntoIterator<Item = &'a CellSnapshot>,
    elapsed: Nanos,
    planned: Nanos,
) -> Progress {
    let figures = snapshots
        .into_iter()
        .map(|s| (s.cpu, s.acc, s.histogram.clone()));
    progress_from(figures, elapsed, planned)
}

fn progress_from(
    figures: impl Iterator<Item = (u32, Accumulator, Histogram)>,
    elapsed: Nanos,
    planned: Nanos,
) -> Progress {
    let mut all_acc = Accumulator::new();
    let mut all_hist = Histogram::new();
    let mut rows = Vec::new();
    for (cpu, acc, hist) in figures {
        rows.push(CpuProgress {
            cpu: Some(cpu),
            stats: LatencyStats::derive(&acc, &hist),
            last_ns: acc.last_ns,
        });
        all_acc.merge(&acc);
        all_hist.merge(&hist);
    }
    Progress {
        elapsed_ns: elapsed,
        planned_ns: planned,
        cpus: rows,
        all: CpuProgress {
            cpu: None,
            stats: LatencyStats::derive(&all_acc, &all_hist),
            last_ns: all_acc.last_ns,
        },
    }
}
