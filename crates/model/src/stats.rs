//! Latency statistics: the exact raw accumulators a sampler keeps ([`Accumulator`]) and the
//! figures derived from them and a [`Histogram`] when a result is read ([`LatencyStats`]).
//!
//! Count, minimum, maximum, mean and standard deviation are exact (integer sums). Percentiles
//! come from the histogram: the value reported is the highest value of the bucket holding the
//! nearest-rank sample, clamped to the exact minimum and maximum, so it never understates a
//! latency and is off by at most one bucket width (1 ns below 2 us, ≤ 512 ns below 1 ms,
//! ≤ 0.098 % above).

use serde::{Deserialize, Serialize};

use crate::histogram::{Histogram, Quantile};

/// Exact running figures for one stream of latency samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accumulator {
    /// Samples recorded.
    pub count: u64,
    /// Smallest sample (ns); `u64::MAX` while empty, serialized as absent.
    #[serde(default = "max_u64", skip_serializing_if = "is_max")]
    pub min_ns: u64,
    /// Largest sample (ns).
    pub max_ns: u64,
    /// Sum of samples (ns).
    pub sum_ns: u64,
    /// Sum of squared samples (ns²).
    pub sum_sq_ns2: u128,
    /// Periods missed because the thread woke after its next deadline.
    pub overruns: u64,
    /// The most recent sample (ns).
    pub last_ns: u64,
}

fn max_u64() -> u64 {
    u64::MAX
}

fn is_max(v: &u64) -> bool {
    *v == u64::MAX
}

impl Default for Accumulator {
    fn default() -> Accumulator {
        Accumulator::new()
    }
}

impl Accumulator {
    /// An empty accumulator.
    pub const fn new() -> Accumulator {
        Accumulator {
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            sum_sq_ns2: 0,
            overruns: 0,
            last_ns: 0,
        }
    }

    /// Adds one sample. Integer arithmetic only, no allocation: safe for the sampler's loop.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        if ns < self.min_ns {
            self.min_ns = ns;
        }
        if ns > self.max_ns {
            self.max_ns = ns;
        }
        self.sum_ns = self.sum_ns.wrapping_add(ns);
        self.sum_sq_ns2 = self
            .sum_sq_ns2
            .wrapping_add(u128::from(ns) * u128::from(ns));
        self.last_ns = ns;
    }

    /// Combines two streams (for the all-CPU aggregate). `last_ns` is taken from `other`.
    /// Counts saturate rather than wrap: a result read from outside is checked
    /// ([`crate::measure::MeasureRun::from_json`]) so real ones never reach the bound.
    pub fn merge(&mut self, other: &Accumulator) {
        self.count = self.count.saturating_add(other.count);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns = self.sum_ns.wrapping_add(other.sum_ns);
        self.sum_sq_ns2 = self.sum_sq_ns2.wrapping_add(other.sum_sq_ns2);
        self.overruns = self.overruns.saturating_add(other.overruns);
        if other.count > 0 {
            self.last_ns = other.last_ns;
        }
    }

    /// The exact mean, if any sample was recorded.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// The exact population standard deviation, if any sample was recorded.
    pub fn stddev_ns(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        // n·Σx² − (Σx)² is exact in integers and never negative.
        let n = u128::from(self.count);
        let sum = u128::from(self.sum_ns);
        let spread = n
            .checked_mul(self.sum_sq_ns2)
            .and_then(|a| a.checked_sub(sum * sum));
        let var = match spread {
            Some(s) => s as f64 / (n as f64 * n as f64),
            // Beyond u128 (an absurdly long run of huge values): fall back to floats.
            None => {
                let mean = sum as f64 / n as f64;
                (self.sum_sq_ns2 as f64 / n as f64 - mean * mean).max(0.0)
            }
        };
        Some(var.sqrt())
    }
}

/// The figures reported per CPU and for all CPUs together. Derived, never stored as truth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyStats {
    /// Samples (wake-ups measured).
    pub count: u64,
    /// Exact minimum (ns).
    pub min_ns: Option<u64>,
    /// Exact mean (ns).
    pub mean_ns: Option<f64>,
    /// Exact population standard deviation (ns).
    pub stddev_ns: Option<f64>,
    /// Median (ns).
    pub p50_ns: Option<u64>,
    /// 90th percentile (ns).
    pub p90_ns: Option<u64>,
    /// 99th percentile (ns).
    pub p99_ns: Option<u64>,
    /// 99.9th percentile (ns).
    pub p99_9_ns: Option<u64>,
    /// 99.99th percentile (ns).
    pub p99_99_ns: Option<u64>,
    /// 99.999th percentile (ns).
    pub p99_999_ns: Option<u64>,
    /// Exact maximum (ns).
    pub max_ns: Option<u64>,
    /// Periods missed because the thread woke after its next deadline.
    pub overruns: u64,
}

/// The percentiles every result reports, with their field names.
pub const PERCENTILES: [(f64, &str); 6] = [
    (0.50, "p50"),
    (0.90, "p90"),
    (0.99, "p99"),
    (0.999, "p99.9"),
    (0.9999, "p99.99"),
    (0.99999, "p99.999"),
];

impl LatencyStats {
    /// Derives the statistics of one stream.
    pub fn derive(acc: &Accumulator, histogram: &Histogram) -> LatencyStats {
        let q = |p: f64| percentile(acc, histogram, p);
        let has = acc.count > 0;
        LatencyStats {
            count: acc.count,
            min_ns: has.then_some(acc.min_ns),
            mean_ns: acc.mean_ns(),
            stddev_ns: acc.stddev_ns(),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p99_9_ns: q(0.999),
            p99_99_ns: q(0.9999),
            p99_999_ns: q(0.99999),
            max_ns: has.then_some(acc.max_ns),
            overruns: acc.overruns,
        }
    }
}

impl LatencyStats {
    /// Holds the percentiles to `resolution_ns` (samples recorded at whole multiples of it,
    /// as an import at its tool's resolution): each the multiple at or below the bucket's
    /// highest value, which is the value of a sample in that bucket, so no fraction finer than
    /// the data shows. Nothing changes at a resolution of 1 ns.
    pub fn at_resolution(&mut self, resolution_ns: u64) {
        for p in [
            &mut self.p50_ns,
            &mut self.p90_ns,
            &mut self.p99_ns,
            &mut self.p99_9_ns,
            &mut self.p99_99_ns,
            &mut self.p99_999_ns,
        ]
        .into_iter()
        .flatten()
        {
            *p = to_resolution(*p, resolution_ns);
        }
    }
}

/// `value` held to `resolution_ns`: the multiple of it at or below (itself at 0 or 1 ns).
pub fn to_resolution(value: u64, resolution_ns: u64) -> u64 {
    if resolution_ns <= 1 {
        value
    } else {
        value - value % resolution_ns
    }
}

/// One percentile: the highest value of the bucket holding the nearest-rank sample, clamped to
/// the exact extremes. `None` when nothing was recorded.
pub fn percentile(acc: &Accumulator, histogram: &Histogram, p: f64) -> Option<u64> {
    if acc.count == 0 {
        return None;
    }
    match histogram.quantile(p)? {
        Quantile::InRange { hi, .. } => Some(hi.clamp(acc.min_ns, acc.max_ns)),
        Quantile::AboveRange => Some(acc.max_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn both(values: &[u64]) -> (Accumulator, Histogram) {
        let mut acc = Accumulator::new();
        let mut h = Histogram::new();
        for &v in values {
            acc.record(v);
            h.record(v);
        }
        (acc, h)
    }

    #[test]
    fn empty_stream_has_no_figures() {
        let s = LatencyStats::derive(&Accumulator::new(), &Histogram::new());
        assert_eq!(s.count, 0);
        assert_eq!(s.min_ns, None);
        assert_eq!(s.p99_ns, None);
        assert_eq!(s.max_ns, None);
    }

    #[test]
    fn exact_small_example() {
        let (acc, h) = both(&[1_000, 2_000, 3_000, 4_000, 100_000]);
        let s = LatencyStats::derive(&acc, &h);
        assert_eq!(s.min_ns, Some(1_000));
        assert_eq!(s.max_ns, Some(100_000));
        assert_eq!(s.mean_ns, Some(22_000.0));
        assert_eq!(s.p50_ns, Some(3_001)); // rank 3 of 5: 3000 lies in the 2-ns bucket [3000, 3001]
        assert_eq!(s.p99_ns, Some(100_000));
        let sd = s.stddev_ns.unwrap();
        assert!((sd - 39_012.818).abs() < 0.01, "{sd}");
    }

    #[test]
    fn serde_round_trip_rejects_unknown_fields() {
        let (acc, _) = both(&[5, 7]);
        let json = serde_json::to_string(&acc).unwrap();
        assert_eq!(serde_json::from_str::<Accumulator>(&json).unwrap(), acc);
        let empty = serde_json::to_string(&Accumulator::new()).unwrap();
        assert!(!empty.contains("min_ns"), "{empty}");
        assert_eq!(
            serde_json::from_str::<Accumulator>(&empty).unwrap(),
            Accumulator::new()
        );
        let extra = json.replace('{', "{\"bogus\":1,");
        assert!(serde_json::from_str::<Accumulator>(&extra).is_err());
    }

    proptest! {
        #[test]
        fn statistics_match_exact_sorted_samples(
            values in proptest::collection::vec(
                prop_oneof![0u64..5_000, 0u64..3_000_000, 0u64..30_000_000_000], 1..500),
        ) {
            let (acc, h) = both(&values);
            let s = LatencyStats::derive(&acc, &h);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let n = sorted.len();
            prop_assert_eq!(s.count, n as u64);
            prop_assert_eq!(s.min_ns, Some(sorted[0]));
            prop_assert_eq!(s.max_ns, Some(sorted[n - 1]));
            let mean = sorted.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            prop_assert!((s.mean_ns.unwrap() - mean).abs() <= mean * 1e-9 + 1e-6);
            let var = sorted.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n as f64;
            let sd = s.stddev_ns.unwrap();
            prop_assert!((sd - var.sqrt()).abs() <= var.sqrt() * 1e-6 + 1e-3, "{} vs {}", sd, var.sqrt());
            for (p, got) in [(0.5, s.p50_ns), (0.9, s.p90_ns), (0.99, s.p99_ns), (0.999, s.p99_9_ns),
                             (0.9999, s.p99_99_ns), (0.99999, s.p99_999_ns)] {
                let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
                let exact = sorted[rank - 1];
                let got = got.unwrap();
                // Never understated; overstated by at most one bucket width.
                prop_assert!(got >= exact, "p{} got {} < exact {}", p, got, exact);
                let tolerance = if exact < 2_048 { 0 }
                    else if exact < 1_048_576 { 512 }
                    else if exact < crate::histogram::RANGE_END_NS { exact / 1024 }
                    else { u64::MAX };
                prop_assert!(got - exact <= tolerance, "p{} got {} exact {}", p, got, exact);
            }
        }
    }
}
