//! Canned measurement results for the renderers' tests, built only through the model's own
//! constructors (`cpu_result`, `aggregate`, `Accumulator::record`, `Histogram::record`), so a
//! test sees exactly what a real run would hand over.

use model::histogram::RANGE_END_NS;
use model::host::HostInfo;
use model::measure::{
    BreakEvent, CpuResult, MeasureParams, MeasureRun, Policy, RunStatus, SCHEMA, Series, Spike,
    Warning, aggregate, cpu_result,
};
use model::stats::Accumulator;
use model::{CpuSet, Histogram, Nanos};

/// One CPU fed with `samples` (ns) in order, sample `i` taken at cycle `i`, plus `overruns`.
/// Every sample is kept as a spike (worst first), as a run with a large `--spikes` would.
pub(crate) fn cpu(cpu: u32, tid: Option<u32>, samples: &[u64], overruns: u64) -> CpuResult {
    let mut raw = Accumulator::new();
    let mut histogram = Histogram::new();
    let mut spikes = Vec::new();
    for (cycle, &ns) in samples.iter().enumerate() {
        raw.record(ns);
        histogram.record(ns);
        spikes.push(Spike {
            latency_ns: ns,
            cycle: cycle as u64,
            at_ns: cycle as u64 * 1_000_000,
            monotonic_ns: 5_000_000_000 + cycle as u64 * 1_000_000,
        });
    }
    raw.overruns = overruns;
    spikes.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    cpu_result(cpu, tid, raw, histogram, spikes, Series::default())
}

/// A complete run over `cpus` with the parameters of `rtlab measure --cpus 0,1 --priority 95
/// --interval 1ms --duration 60s` on a PREEMPT_RT host.
pub(crate) fn run_of(cpus: Vec<CpuResult>) -> MeasureRun {
    let host = HostInfo {
        hostname: "rt-box".to_string(),
        kernel_release: "6.1.0-50-rt-amd64".to_string(),
        kernel_version: "#1 SMP PREEMPT_RT Debian 6.1.137-1".to_string(),
        arch: "x86_64".to_string(),
        preempt_rt: true,
        preempt_model: Some("rt".to_string()),
        ..HostInfo::default()
    };
    let params = MeasureParams {
        engine: model::measure::Engine::User,
        cpus: CpuSet::from_cpus(cpus.iter().map(|c| c.cpu)),
        interval_ns: Nanos::MILLISECOND,
        periods: 60_000,
        duration_ns: Some(Nanos::from_secs(60)),
        cycles: None,
        aligned: false,
        offsets_ns: vec![Nanos::ZERO; cpus.len()],
        policy: Policy::Fifo,
        priority: 95,
        dl_runtime_ns: None,
        dl_period_ns: None,
        main_cpus: None,
        mlock: true,
        thread_stack_bytes: 8 << 20,
        dma_latency_us: Some(0),
        break_ns: None,
        budget_ns: None,
        spikes: 20,
        checkpoint_ns: None,
        clock: "monotonic".to_string(),
    };
    MeasureRun {
        schema: SCHEMA.to_string(),
        rtlab_version: "0.1.0".to_string(),
        build: None,
        status: RunStatus::Complete,
        started_at: "2026-01-12T11:52:32Z".to_string(),
        ended_at: "2026-01-12T11:53:32Z".to_string(),
        elapsed_ns: Nanos::from_secs(60),
        host,
        params,
        all: aggregate(&cpus),
        cpus,
        break_event: None,
        warnings: Vec::new(),
        load: None,
        audit: None,
        import: None,
        trace: None,
        noise: None,
        workload: None,
        timerlat: None,
    }
}

/// The small two-CPU case every renderer is checked against:
/// CPU 0 (tid 4242): 12.345, 15.0, 14.1, 66.0 us; CPU 1 (tid 4243): 13.0, 13.999, 250.0 us
/// and one overrun.
pub(crate) fn two_cpus() -> MeasureRun {
    run_of(vec![
        cpu(0, Some(4242), &[12_345, 15_000, 14_100, 66_000], 0),
        cpu(1, Some(4243), &[13_000, 13_999, 250_000], 1),
    ])
}

/// [`two_cpus`] stopped by `--break 200us`, with a frozen trace and two warnings.
pub(crate) fn two_cpus_broken() -> MeasureRun {
    let mut run = two_cpus();
    run.status = RunStatus::BrokeThreshold;
    run.params.break_ns = Some(Nanos::from_us(200));
    run.break_event = Some(BreakEvent {
        cpu: 1,
        latency_ns: 250_000,
        cycle: 2,
        trace_frozen: true,
        tracefs: Some("/sys/kernel/tracing".to_string()),
    });
    run.warnings = vec![
        Warning::new(
            "rt-throttling",
            "RT throttling is on; set kernel.sched_rt_runtime_us=-1",
        ),
        Warning::new("cpu-not-isolated", "CPU 1 is not isolated"),
    ];
    run
}

/// A run whose CPU 1 measured nothing at all.
pub(crate) fn one_empty_cpu() -> MeasureRun {
    run_of(vec![
        cpu(0, Some(10), &[2_000, 3_000], 0),
        cpu(1, None, &[], 0),
    ])
}

/// A run with one sample beyond the histogram's range (above about 17.2 s).
pub(crate) fn above_range() -> MeasureRun {
    run_of(vec![
        cpu(0, Some(7), &[5_000, RANGE_END_NS + 3_000_000_000], 0),
        cpu(1, Some(8), &[4_000, 6_000], 0),
    ])
}

/// A one-CPU run started at `started_at` whose per-second series is `max_ns` with `count`
/// samples per slot (its histogram holds one sample per slot maximum).
pub(crate) fn run_with_series(started_at: &str, max_ns: &[u64], count: &[u64]) -> MeasureRun {
    let samples: Vec<u64> = max_ns.iter().copied().filter(|&m| m > 0).collect();
    let mut c = cpu(0, None, &samples, 0);
    c.series = Series {
        slot_ns: Nanos::from_secs(1),
        max_ns: max_ns.to_vec(),
        count: count.to_vec(),
    };
    let mut run = run_of(vec![c]);
    run.started_at = started_at.to_string();
    run
}

/// A `--workload` of 800us jobs against a 500us deadline on `cpu`: `jobs` run, every one
/// missed (it ran long).
pub(crate) fn missed_deadlines(cpu: u32, jobs: u64) -> model::workload::WorkloadInfo {
    model::workload::WorkloadInfo {
        runtime_ns: Nanos::from_us(800),
        deadline_ns: Nanos::from_us(500),
        cpus: vec![model::workload::WorkloadCpu {
            cpu,
            jobs,
            misses: jobs,
            long_execution: jobs,
            ..Default::default()
        }],
    }
}
