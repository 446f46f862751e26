//! Canned measurement results built only through the model's own constructors
//! (`cpu_result`, `aggregate`, `Accumulator::record`, `Histogram::record`), so a test sees
//! exactly what a real run would hand over: the renderers' tests and the command line's judge
//! them.

use model::host::HostInfo;
use model::measure::{
    CpuResult, MeasureParams, MeasureRun, Policy, RunStatus, SCHEMA, Series, Spike, aggregate,
    cpu_result,
};
use model::stats::Accumulator;
use model::{CpuSet, Histogram, Nanos};

/// One CPU fed with `samples` (ns) in order, sample `i` taken at cycle `i`, plus `overruns`.
/// Every sample is kept as a spike (worst first), as a run with a large `--spikes` would.
pub fn cpu(cpu: u32, tid: Option<u32>, samples: &[u64], overruns: u64) -> CpuResult {
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
pub fn run_of(cpus: Vec<CpuResult>) -> MeasureRun {
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
