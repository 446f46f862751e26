//! Intervals graded against the samples they were built from: every figure computed here
//! straight from the list of wake-ups, and the interval's figures held to it.

use super::*;
use crate::measure::MeasureRun;
use crate::nanos::Nanos;
use crate::per_cpu::{Series, Spike, cpu_result};

const BEFORE_27: &str = include_str!("../gate/run-before-27.json");

/// A run whose CPUs measured `samples` (per CPU), keeping the `spikes` worst of each, over
/// `elapsed` seconds.
fn run(samples: &[(u32, Vec<u64>)], spikes: usize, elapsed: u64) -> MeasureRun {
    let mut r = MeasureRun::from_json(BEFORE_27).unwrap();
    r.elapsed_ns = Nanos::from_secs(elapsed);
    r.cpus = samples
        .iter()
        .map(|(cpu, values)| {
            let mut raw = Accumulator::default();
            let mut h = Histogram::new();
            for &v in values {
                raw.record(v);
                h.record(v);
            }
            let mut worst = values.clone();
            worst.sort_unstable_by(|a, b| b.cmp(a));
            let kept = worst
                .iter()
                .take(spikes)
                .map(|&v| Spike {
                    latency_ns: v,
                    cycle: 0,
                    at_ns: 0,
                    monotonic_ns: 0,
                })
                .collect();
            cpu_result(*cpu, None, raw, h, kept, Series::default())
        })
        .collect();
    r
}

/// A deterministic spread of latencies: mostly 2 to 30 us, a tail to several ms.
fn latencies(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            // An exponential tail over a 2 us floor: rare values reach milliseconds.
            2_000 + (-(1.0 - u).ln() * 4_000.0) as u64
        })
        .collect()
}

#[test]
fn an_interval_of_two_segments_is_the_interval_of_all_their_samples() {
    let a0 = latencies(1, 5_000);
    let a1 = latencies(2, 5_000);
    let b0 = latencies(3, 4_000);
    let budget = 20_000;
    let mut built = IntervalBuilder::new();
    // The monitor keeps 1024 spikes per CPU, more than these segments' breaches.
    built.add(
        &run(&[(0, a0.clone()), (1, a1.clone())], 1024, 100),
        Some(budget),
    );
    built.add(&run(&[(0, b0.clone())], 1024, 150), Some(budget));
    built.incident();
    let got = built.finish("h", 300_000_000_000, 300_000_000_000, Some(budget));
    got.check().unwrap();

    let mut all: Vec<u64> = a0.iter().chain(&a1).chain(&b0).copied().collect();
    all.sort_unstable();
    let n = all.len() as u64;
    assert_eq!(got.samples, n);
    assert_eq!(got.max_ns, all.last().copied());
    assert_eq!(got.min_ns, all.first().copied());
    assert_eq!(got.sum_ns, all.iter().sum::<u64>());
    assert_eq!(got.measured_ns, 250_000_000_000);
    assert!((got.coverage() - 250.0 / 300.0).abs() < 1e-12);
    assert_eq!(got.incidents, 1);
    // Percentiles: the sample of rank ceil(q n), to the histogram's resolution (at most
    // 0.1 % of the value, or 512 ns below 1 ms).
    for (q, p) in [(0.5, got.p50_ns), (0.99, got.p99_ns), (0.999, got.p99_9_ns)] {
        let rank = ((q * n as f64).ceil() as usize).clamp(1, all.len());
        let truth = all[rank - 1];
        let p = p.unwrap();
        let tol = (truth / 1000).max(1) + 1;
        assert!(p.abs_diff(truth) <= tol, "q {q}: {p} against {truth}");
    }
    // Breaches: every CPU's wake-ups over the budget, counted one by one.
    let over = |v: &[u64]| v.iter().filter(|&&x| x > budget).count() as u64;
    assert_eq!(got.breaches, over(&a0) + over(&a1) + over(&b0));
    assert_eq!(got.per_cpu.len(), 2);
    assert_eq!(got.per_cpu[0].samples, (a0.len() + b0.len()) as u64);
    assert_eq!(got.per_cpu[0].breaches, over(&a0) + over(&b0));
    assert_eq!(got.per_cpu[1].max_ns, a1.iter().max().copied());
    // Coarse buckets: each wake-up once, in the first bucket whose bound holds it.
    assert_eq!(got.buckets.iter().sum::<u64>(), n);
    let mut truth = vec![0u64; BUCKET_BOUNDS_NS.len() + 1];
    for &v in &all {
        truth[BUCKET_BOUNDS_NS.partition_point(|&b| b < v)] += 1;
    }
    // Cumulatively (as OpenMetrics gives them), never more at or under a bound than there
    // were, and short only by the wake-ups within one fine bucket (0.1 %) under it.
    let (mut g, mut t) = (0u64, 0u64);
    for (i, &b) in BUCKET_BOUNDS_NS.iter().enumerate() {
        g += got.buckets[i];
        t += truth[i];
        let near = all.iter().filter(|&&v| v <= b && v + b / 1000 >= b).count() as u64;
        assert!(g <= t && g + near >= t, "le {b}: {g} against {t}");
        if b < 2_048 {
            assert_eq!(g, t, "le {b} is exact");
        }
    }
}

#[test]
fn breaches_are_exact_from_the_spikes_and_bounded_from_the_histogram_past_them() {
    let values = latencies(7, 20_000);
    let budget = 25_000;
    let truth = values.iter().filter(|&&x| x > budget).count() as u64;
    // Enough spikes kept: exact.
    let r = run(&[(0, values.clone())], 1024, 1);
    assert!(
        truth < 1024,
        "the case needs fewer breaches than spikes kept: {truth}"
    );
    assert_eq!(breaches(&r.cpus[0], budget), truth);
    // Too few kept: the histogram's buckets wholly above the budget, never more than truth
    // and short of it by one bucket's samples at most.
    let r = run(&[(0, values.clone())], 8, 1);
    let got = breaches(&r.cpus[0], budget);
    let straddling = values
        .iter()
        .filter(|&&x| x > budget && x < budget + 16)
        .count() as u64;
    assert!(
        got <= truth && got + straddling >= truth,
        "{got} of {truth}"
    );
    // A run without samples has none.
    assert_eq!(breaches(&run(&[(0, vec![])], 8, 1).cpus[0], budget), 0);
}

#[test]
fn the_last_bucket_holds_what_lies_above_every_bound_and_the_range() {
    let mut h = Histogram::new();
    h.record(1_000);
    h.record(1_001);
    h.record(150_000_000);
    h.record(crate::histogram::RANGE_END_NS + 5);
    let c = coarse(&h);
    assert_eq!(c[0], 1, "1 us is at most 1 us");
    assert_eq!(c[1], 1);
    assert_eq!(c[BUCKET_BOUNDS_NS.len()], 2);
}

#[test]
fn an_incident_id_is_stable_and_twelve_hex_digits() {
    let a = incident_id("board-1", 1_700_000_000_000_000_000);
    assert_eq!(a, incident_id("board-1", 1_700_000_000_000_000_000));
    assert_ne!(a, incident_id("board-2", 1_700_000_000_000_000_000));
    assert_ne!(a, incident_id("board-1", 1_700_000_000_000_000_001));
    assert_eq!(a.len(), 12);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn an_interval_refuses_a_wrong_bucket_count_and_more_time_measured_than_it_lasted() {
    let mut i = IntervalBuilder::new().finish("h", 0, 10, None);
    i.check().unwrap();
    i.measured_ns = 11;
    assert!(i.check().is_err());
    i.measured_ns = 10;
    i.buckets.pop();
    assert!(i.check().unwrap_err().contains("coarse buckets"));
}

/// A restart within an interval: its two parts merged hold what the whole holds, exactly for
/// counts, sums, extremes, buckets and each CPU, and the merged percentiles never below the
/// whole's (the larger part's is kept: an upper bound).
#[test]
fn two_parts_merged_are_the_whole_where_it_can_be_exact() {
    let (a0, b0, b1) = (
        latencies(11, 3_000),
        latencies(12, 2_000),
        latencies(13, 2_500),
    );
    let budget = Some(15_000);
    let start = 600_000_000_000;
    let len = 300_000_000_000;
    let part = |runs: &[MeasureRun]| {
        let mut b = IntervalBuilder::new();
        for r in runs {
            b.add(r, budget);
        }
        b.finish("h", start, len, budget)
    };
    let first = run(&[(0, a0.clone())], 1024, 100);
    let second = run(&[(0, b0.clone()), (1, b1.clone())], 1024, 150);
    let merged = merge(
        part(std::slice::from_ref(&first)),
        &part(std::slice::from_ref(&second)),
    );
    let whole = part(&[first, second]);
    merged.check().unwrap();
    for (name, m, w) in [
        ("samples", merged.samples, whole.samples),
        ("sum", merged.sum_ns, whole.sum_ns),
        ("breaches", merged.breaches, whole.breaches),
        ("measured", merged.measured_ns, whole.measured_ns),
    ] {
        assert_eq!(m, w, "{name}");
    }
    assert_eq!((merged.min_ns, merged.max_ns), (whole.min_ns, whole.max_ns));
    assert_eq!(merged.buckets, whole.buckets);
    assert_eq!(merged.per_cpu, whole.per_cpu);
    for (m, w) in [
        (merged.p50_ns, whole.p50_ns),
        (merged.p99_ns, whole.p99_ns),
        (merged.p99_9_ns, whole.p99_9_ns),
    ] {
        assert!(m >= w, "{m:?} below the whole's {w:?}");
    }
    // Measured time is held to the interval's length.
    let over = merge(merged.clone(), &merged);
    assert_eq!(over.measured_ns, len.min(2 * merged.measured_ns));
    over.check().unwrap();
}
