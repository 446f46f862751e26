//! Canned measurement results for the renderers' tests, built on [`testkit::runs`] (only
//! through the model's own constructors), so a test sees exactly what a real run would hand
//! over.

use model::Nanos;
use model::histogram::RANGE_END_NS;
use model::measure::{BreakEvent, MeasureRun, RunStatus, Series, Warning};

pub(crate) use testkit::runs::{cpu, run_of};

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
