//! A fixture set that reproduces the comparison tables of a public evaluation (Linaro 2023, "Building,
//! configuring and evaluating a PREEMPT_RT kernel on an 8-core ARM64 robotics board"): a
//! Qualcomm RB5 with 4x Cortex-A55 (CPUs 0-3, 1.80 GHz, capacity 284), 3x Cortex-A77 (CPUs 4-6,
//! 2.42 GHz, capacity 871) and a prime Cortex-A77 (CPU 7, 2.84 GHz, capacity 1024), and four
//! runs with the talk's per-CPU minimum, average and maximum in whole microseconds:
//!
//! * `Van-#1` and `RT-#1`: "try 1 - busy 60%" (the vanilla and the PREEMPT_RT kernel, untuned),
//! * `RT-#2`: "try 2 - idle - basic tuning",
//! * `RT-#3`: "try 3 - busy 60% - full tuning", measured on CPUs 2-7 only (0-1 housekeeping).
//!
//! Each CPU is fed 1000 samples so that its statistics come out of the model exactly as a run's
//! would (`LatencyStats::derive` over an accumulator and histogram that agree): one at the
//! minimum, one at the maximum, one at the p99.9 figure (rank 999 of 1000; the talk has no
//! percentiles, so the fixture takes the midpoint of average and maximum), and 997 around the
//! average so that the mean is the talk's average (or as near as a minimum equal to the
//! average allows).

use model::Histogram;
use model::host::{CpuInfo, HostInfo};
use model::measure::{CpuResult, MeasureRun, Series, aggregate, cpu_result};
use model::stats::Accumulator;

use crate::testdata;

/// Samples per CPU.
const N: u64 = 1000;

/// One CPU with the talk's whole-microsecond minimum, average and maximum.
pub(crate) fn cpu(cpu: u32, min_us: u64, avg_us: u64, max_us: u64) -> CpuResult {
    let (min, avg, max) = (min_us * 1000, avg_us * 1000, max_us * 1000);
    let tail = (avg + max) / 2;
    // 997 body samples: `body` each, `extra` of them one nanosecond more, summing to the rest.
    let rest = (avg * N).saturating_sub(min + tail + max);
    let (mut body, mut extra) = (rest / (N - 3), rest % (N - 3));
    if body < min {
        (body, extra) = (min, 0);
    }
    let mut samples = vec![min, tail, max];
    samples.extend((0..N - 3).map(|i| if i < extra { body + 1 } else { body }));
    let mut raw = Accumulator::new();
    let mut histogram = Histogram::new();
    for &ns in &samples {
        raw.record(ns);
        histogram.record(ns);
    }
    cpu_result(cpu, None, raw, histogram, Vec::new(), Series::default())
}

/// The RB5's eight CPUs as rtlab's host reader describes them.
pub(crate) fn rb5_host(kernel: &str) -> HostInfo {
    let cpus = (0..8)
        .map(|cpu| {
            let (model, capacity, khz) = match cpu {
                0..=3 => ("0x41:0xd05", 284, 1_804_800),
                4..=6 => ("0x41:0xd0d", 871, 2_419_200),
                _ => ("0x41:0xd0d", 1024, 2_841_600),
            };
            CpuInfo {
                cpu,
                package: Some(0),
                cluster: Some(u32::from(cpu > 3)),
                core: Some(cpu),
                capacity: Some(capacity),
                max_freq_khz: Some(khz),
                model: Some(model.to_string()),
                node: Some(0),
                ..CpuInfo::default()
            }
        })
        .collect();
    HostInfo {
        hostname: "rb5".to_string(),
        kernel_release: kernel.to_string(),
        arch: "aarch64".to_string(),
        preempt_rt: kernel.contains("-rt"),
        cpus,
        ..HostInfo::default()
    }
}

/// A run over `cpus` given as (CPU, min, avg, max) in us.
fn run(kernel: &str, started_at: &str, figures: &[(u32, u64, u64, u64)]) -> MeasureRun {
    let cpus: Vec<CpuResult> = figures
        .iter()
        .map(|&(c, min, avg, max)| cpu(c, min, avg, max))
        .collect();
    let mut run = testdata::run_of(cpus);
    run.host = rb5_host(kernel);
    run.started_at = started_at.to_string();
    run.all = aggregate(&run.cpus);
    run
}

/// the Linaro 2023 talk's rows as (CPU, min, avg, max) for CPUs `cpus`.
fn rows(cpus: &[u32], min: &[u64], avg: &[u64], max: &[u64]) -> Vec<(u32, u64, u64, u64)> {
    (0..cpus.len())
        .map(|i| (cpus[i], min[i], avg[i], max[i]))
        .collect()
}

/// `Van-#1`, `RT-#1`, `RT-#2`, `RT-#3`, labelled, in the talk's order.
pub(crate) fn runs() -> Vec<(String, MeasureRun)> {
    let all: Vec<u32> = (0..8).collect();
    let van1 = run(
        "6.1.7",
        "2023-01-23T09:00:00Z",
        &rows(
            &all,
            &[5, 5, 5, 5, 2, 2, 2, 2],
            &[16, 16, 16, 18, 14, 4, 6, 4],
            &[307, 343, 558, 210, 21, 98, 60, 28],
        ),
    );
    let rt1 = run(
        "6.1.7-rt5",
        "2023-01-23T10:00:00Z",
        &rows(
            &all,
            &[5, 5, 5, 5, 2, 2, 2, 2],
            &[21, 20, 17, 19, 8, 6, 6, 7],
            &[212, 547, 921, 653, 61, 69, 72, 43],
        ),
    );
    let rt2 = run(
        "6.1.7-rt5",
        "2023-01-24T10:00:00Z",
        &rows(
            &all,
            &[5, 5, 4, 5, 1, 1, 2, 1],
            &[6, 6, 5, 5, 2, 2, 2, 2],
            &[99, 80, 21, 44, 86, 33, 15, 84],
        ),
    );
    let rt3 = run(
        "6.1.7-rt5",
        "2023-01-25T10:00:00Z",
        &rows(
            &[2, 3, 4, 5, 6, 7],
            &[5, 5, 2, 2, 2, 1],
            &[6, 6, 2, 2, 2, 2],
            &[14, 10, 8, 4, 4, 4],
        ),
    );
    vec![
        ("Van-#1".to_string(), van1),
        ("RT-#1".to_string(), rt1),
        ("RT-#2".to_string(), rt2),
        ("RT-#3".to_string(), rt3),
    ]
}
