//! The latency histogram: one bucket scheme for the whole tool, and the sparse histogram that
//! results are stored and exchanged in.
//!
//! The scheme is log-linear, as in HdrHistogram (Gil Tene, "How NOT to measure latency"): values
//! below 2048 ns each get a 1 ns bucket; above that every power-of-two octave `[2^e, 2^(e+1))`
//! is split into 1024 equal buckets of width `2^(e-10)`. So
//!
//! * below 1 ms (2^20 ns) no bucket is wider than 512 ns,
//! * above it a bucket's width is at most 1/1024 (0.098 %) of its lower bound,
//! * the range ends at 2^34 ns (about 17.2 s) with 25 600 buckets; samples at or above it are
//!   counted in `above_range` — never dropped, never clamped — and the exact minimum and maximum
//!   are kept beside the histogram by [`crate::stats::Accumulator`].
//!
//! A histogram stores counts only. Percentiles and other statistics are derived when read
//! ([`crate::stats`]), so a better estimator never needs the data to be re-recorded.

use serde::{Deserialize, Serialize};

/// log2 of the number of buckets per octave.
pub const SUB_BUCKET_BITS: u32 = 10;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;
/// Values below this are recorded exactly (1 ns buckets).
pub const EXACT_LIMIT_NS: u64 = 2 * SUB_BUCKETS;
/// log2 of [`RANGE_END_NS`].
pub const RANGE_END_BITS: u32 = 34;
/// First value not covered by a bucket (2^34 ns ≈ 17.18 s).
pub const RANGE_END_NS: u64 = 1 << RANGE_END_BITS;
/// Number of buckets covering `[0, RANGE_END_NS)`.
pub const BUCKET_COUNT: usize = bucket_index(RANGE_END_NS - 1) + 1;

/// The bucket a value falls in. `value` must be below [`RANGE_END_NS`].
#[inline(always)]
pub const fn bucket_index(value: u64) -> usize {
    if value < EXACT_LIMIT_NS {
        value as usize
    } else {
        let exponent = 63 - value.leading_zeros();
        let shift = exponent - SUB_BUCKET_BITS;
        (shift as u64 * SUB_BUCKETS + (value >> shift)) as usize
    }
}

/// The lowest value in bucket `index` and the bucket's width (both in ns).
pub const fn bucket_bounds(index: usize) -> (u64, u64) {
    let i = index as u64;
    if i < EXACT_LIMIT_NS {
        (i, 1)
    } else {
        let shift = i / SUB_BUCKETS - 1;
        let sub = i % SUB_BUCKETS + SUB_BUCKETS;
        (sub << shift, 1 << shift)
    }
}

/// The regions of the scheme, for the result's account of where samples fell.
pub const REGIONS: [(&str, u64, Option<u64>); 4] = [
    ("exact", 0, Some(EXACT_LIMIT_NS)),
    ("fine", EXACT_LIMIT_NS, Some(1 << 20)),
    ("relative", 1 << 20, Some(RANGE_END_NS)),
    ("above-range", RANGE_END_NS, None),
];

/// How many samples one region of the scheme holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionCount {
    /// `exact` (1 ns buckets), `fine` (≤ 512 ns buckets, below ~1 ms), `relative` (buckets
    /// ≤ 0.098 % of their value) or `above-range` (counted only).
    pub name: String,
    /// Lowest value of the region.
    pub from_ns: u64,
    /// First value past the region; `None` for the open top region.
    pub to_ns: Option<u64>,
    /// Samples in the region.
    pub count: u64,
}

/// Where a quantile falls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantile {
    /// In a bucket: the true value lies in `[lo, hi]` (inclusive).
    InRange {
        /// Lowest value of the bucket.
        lo: u64,
        /// Highest value of the bucket.
        hi: u64,
    },
    /// At or above [`RANGE_END_NS`]: only the exact maximum bounds it.
    AboveRange,
}

/// A sparse latency histogram in the scheme above.
///
/// Serialized as `{"buckets": [[lo_ns, width_ns, count], ...], "above_range": n}` with buckets
/// in ascending order and empty buckets left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Non-empty buckets as (index, count), ascending by index.
    buckets: Vec<(u32, u64)>,
    above_range: u64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram::default()
    }

    /// Builds a histogram from dense per-bucket counts (index = bucket) and the above-range
    /// count. Extra entries beyond [`BUCKET_COUNT`] are refused by a debug assertion.
    pub fn from_dense(counts: impl IntoIterator<Item = u64>, above_range: u64) -> Histogram {
        let buckets = counts
            .into_iter()
            .enumerate()
            .filter(|&(_, c)| c != 0)
            .map(|(i, c)| {
                debug_assert!(i < BUCKET_COUNT);
                (i as u32, c)
            })
            .collect();
        Histogram {
            buckets,
            above_range,
        }
    }

    /// Records one value (for tests, imports and aggregation; the sampler uses its own
    /// lock-free dense form and converts with [`Histogram::from_dense`]).
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Records `n` occurrences of `value`.
    pub fn record_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        // Counts saturate rather than wrap (a count past 2^64 is refused where files are
        // read: `checked_count`).
        if value >= RANGE_END_NS {
            self.above_range = self.above_range.saturating_add(n);
            return;
        }
        let index = bucket_index(value) as u32;
        match self.buckets.binary_search_by_key(&index, |&(i, _)| i) {
            Ok(pos) => self.buckets[pos].1 = self.buckets[pos].1.saturating_add(n),
            Err(pos) => self.buckets.insert(pos, (index, n)),
        }
    }

    /// Adds every count of `other` into `self`.
    pub fn merge(&mut self, other: &Histogram) {
        let mut merged = Vec::with_capacity(self.buckets.len().max(other.buckets.len()));
        let (mut a, mut b) = (
            self.buckets.iter().peekable(),
            other.buckets.iter().peekable(),
        );
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&(ia, ca)), Some(&&(ib, cb))) => {
                    if ia == ib {
                        merged.push((ia, ca.saturating_add(cb)));
                        a.next();
                        b.next();
                    } else if ia < ib {
                        merged.push((ia, ca));
                        a.next();
                    } else {
                        merged.push((ib, cb));
                        b.next();
                    }
                }
                (Some(&&x), None) => {
                    merged.push(x);
                    a.next();
                }
                (None, Some(&&x)) => {
                    merged.push(x);
                    b.next();
                }
                (None, None) => break,
            }
        }
        self.buckets = merged;
        self.above_range = self.above_range.saturating_add(other.above_range);
    }

    /// Total number of samples, including those above the range (saturating; see
    /// [`Histogram::checked_count`]).
    pub fn count(&self) -> u64 {
        self.checked_count().unwrap_or(u64::MAX)
    }

    /// Total number of samples, or `None` when it does not fit in 64 bits (only a histogram
    /// read from a damaged or forged file can hold that many).
    pub fn checked_count(&self) -> Option<u64> {
        self.buckets
            .iter()
            .try_fold(self.above_range, |sum, &(_, c)| sum.checked_add(c))
    }

    /// Samples at or above [`RANGE_END_NS`].
    pub fn above_range(&self) -> u64 {
        self.above_range
    }

    /// Non-empty buckets as `(lowest value, width, count)`, ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.buckets.iter().map(|&(i, c)| {
            let (lo, width) = bucket_bounds(i as usize);
            (lo, width, c)
        })
    }

    /// Samples with a value below `limit_ns` (exact when `limit_ns` is a bucket boundary, which
    /// every whole microsecond below 16 us is; above that a bucket straddling `limit_ns` is
    /// counted by its lower bound).
    pub fn count_below(&self, limit_ns: u64) -> u64 {
        self.buckets()
            .take_while(|&(lo, _, _)| lo < limit_ns)
            .map(|(_, _, c)| c)
            .fold(0, u64::saturating_add)
    }

    /// The nearest-rank quantile `q` (0 < q ≤ 1): the bucket holding the sample of rank
    /// `ceil(q · n)`. `None` for an empty histogram.
    pub fn quantile(&self, q: f64) -> Option<Quantile> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0u64;
        for (lo, width, count) in self.buckets() {
            seen = seen.saturating_add(count);
            if seen >= rank {
                return Some(Quantile::InRange {
                    lo,
                    hi: lo + width - 1,
                });
            }
        }
        Some(Quantile::AboveRange)
    }

    /// How many samples fell in each region of the scheme ([`REGIONS`]).
    pub fn regions(&self) -> Vec<RegionCount> {
        REGIONS
            .iter()
            .map(|&(name, from, to)| {
                let count = match to {
                    None => self.above_range,
                    Some(to) => self
                        .buckets()
                        .filter(|&(lo, _, _)| lo >= from && lo < to)
                        .map(|(_, _, c)| c)
                        .fold(0, u64::saturating_add),
                };
                RegionCount {
                    name: name.to_string(),
                    from_ns: from,
                    to_ns: to,
                    count,
                }
            })
            .collect()
    }
}

/// Counts by bucket in a dense array, for a histogram fed millions of values one at a time
/// (a trace's handler durations): one add a value, where the sparse form searches its
/// buckets. 100 KiB, so kept for the few histograms that get many values; its counts go into
/// the sparse form with [`Dense::drain_into`].
#[derive(Clone, Debug)]
pub struct Dense {
    counts: Box<[u32]>,
}

impl Default for Dense {
    fn default() -> Dense {
        Dense {
            counts: vec![0; BUCKET_COUNT].into_boxed_slice(),
        }
    }
}

impl Dense {
    /// Records `value`. Values past the range, and a bucket's count before it would
    /// overflow, go to `spill`.
    #[inline]
    pub fn record(&mut self, value: u64, spill: &mut Histogram) {
        if value >= RANGE_END_NS {
            spill.record(value);
            return;
        }
        let count = &mut self.counts[bucket_index(value)];
        if *count == u32::MAX {
            spill.record_n(value, u64::from(*count));
            *count = 0;
        }
        *count += 1;
    }

    /// Adds the counts into `h` and clears them.
    pub fn drain_into(&mut self, h: &mut Histogram) {
        let counts = self.counts.iter().map(|&c| u64::from(c));
        h.merge(&Histogram::from_dense(counts, 0));
        self.counts.fill(0);
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HistogramRepr {
    scheme: String,
    buckets: Vec<(u64, u64, u64)>,
    above_range: u64,
}

/// The scheme's name in serialized histograms; a reader refuses any other.
pub const SCHEME: &str = "log-linear-1024/2^34ns";

impl Serialize for Histogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        HistogramRepr {
            scheme: SCHEME.to_string(),
            buckets: self.buckets().collect(),
            above_range: self.above_range,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Histogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Histogram, D::Error> {
        use serde::de::Error;
        let repr = HistogramRepr::deserialize(d)?;
        if repr.scheme != SCHEME {
            return Err(D::Error::custom(format!(
                "histogram scheme '{}' is not '{SCHEME}'",
                repr.scheme
            )));
        }
        let mut buckets = Vec::with_capacity(repr.buckets.len());
        let mut last: Option<u32> = None;
        for (lo, width, count) in repr.buckets {
            if lo >= RANGE_END_NS {
                return Err(D::Error::custom(format!(
                    "histogram bucket at {lo} ns is out of range"
                )));
            }
            let index = bucket_index(lo);
            if bucket_bounds(index) != (lo, width) {
                return Err(D::Error::custom(format!(
                    "histogram bucket [{lo} ns, width {width} ns] is not a bucket of the scheme"
                )));
            }
            let index = index as u32;
            if last.is_some_and(|l| l >= index) {
                return Err(D::Error::custom(
                    "histogram buckets are not in ascending order",
                ));
            }
            last = Some(index);
            if count != 0 {
                buckets.push((index, count));
            }
        }
        let histogram = Histogram {
            buckets,
            above_range: repr.above_range,
        };
        if histogram.checked_count().is_none() {
            return Err(D::Error::custom(
                "histogram counts add up to more than 2^64 samples",
            ));
        }
        Ok(histogram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_counts_drain_into_the_same_histogram() {
        let values = [
            0,
            1,
            2047,
            2048,
            5_000,
            1 << 20,
            RANGE_END_NS - 1,
            RANGE_END_NS,
            u64::MAX,
        ];
        let mut sparse = Histogram::new();
        let (mut dense, mut spill) = (Dense::default(), Histogram::new());
        spill.record(7); // what the histogram held before
        sparse.record(7);
        for (i, &v) in values.iter().cycle().take(1000).enumerate() {
            sparse.record(v.saturating_add(i as u64 % 3));
            dense.record(v.saturating_add(i as u64 % 3), &mut spill);
        }
        dense.drain_into(&mut spill);
        assert_eq!(spill, sparse);
        dense.drain_into(&mut spill);
        assert_eq!(spill, sparse, "drained once");
        // A full bucket spills before it overflows.
        let mut full = Dense::default();
        full.counts[bucket_index(40)] = u32::MAX;
        let mut h = Histogram::new();
        full.record(40, &mut h);
        full.drain_into(&mut h);
        assert_eq!(h.count(), u64::from(u32::MAX) + 1);
    }
    use proptest::prelude::*;

    #[test]
    fn scheme_constants() {
        assert_eq!(BUCKET_COUNT, 25_600);
        assert_eq!(
            bucket_bounds(BUCKET_COUNT - 1).0 + bucket_bounds(BUCKET_COUNT - 1).1,
            RANGE_END_NS
        );
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(2047), 2047);
        assert_eq!(bucket_index(2048), 2048);
        assert_eq!(bucket_index(2049), 2048);
        assert_eq!(bucket_bounds(2048), (2048, 2));
        const { assert!(RANGE_END_NS > 10_000_000_000, "covers at least 10 s") };
    }

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        let mut expected_lo = 0;
        for i in 0..BUCKET_COUNT {
            let (lo, width) = bucket_bounds(i);
            assert_eq!(lo, expected_lo, "bucket {i}");
            assert_eq!(bucket_index(lo), i);
            assert_eq!(bucket_index(lo + width - 1), i);
            // The issue's resolution promise.
            if lo < 1_000_000 {
                assert!(width <= 1_000, "bucket {i} at {lo} ns is {width} ns wide");
            } else {
                assert!(
                    width as f64 <= lo as f64 * 0.001,
                    "bucket {i} at {lo} ns is {width} ns wide"
                );
            }
            expected_lo = lo + width;
        }
        assert_eq!(expected_lo, RANGE_END_NS);
    }

    #[test]
    fn nothing_is_dropped_above_the_range() {
        let mut h = Histogram::new();
        h.record(5);
        h.record(RANGE_END_NS);
        h.record(u64::MAX);
        assert_eq!(h.count(), 3);
        assert_eq!(h.above_range(), 2);
        assert_eq!(h.quantile(1.0), Some(Quantile::AboveRange));
        let regions = h.regions();
        assert_eq!(regions.iter().map(|r| r.count).sum::<u64>(), 3);
        assert_eq!(regions[3].count, 2);
    }

    #[test]
    fn serde_round_trip_and_validation() {
        let mut h = Histogram::new();
        for v in [0, 1, 1, 2_500, 1_000_000, 5_000_000_000] {
            h.record(v);
        }
        let json = serde_json::to_string(&h).unwrap();
        assert!(json.contains("\"above_range\":0"), "{json}");
        let back: Histogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        let bad_bucket =
            r#"{"scheme":"log-linear-1024/2^34ns","buckets":[[2049,1,3]],"above_range":0}"#;
        assert!(serde_json::from_str::<Histogram>(bad_bucket).is_err());
        let unordered =
            r#"{"scheme":"log-linear-1024/2^34ns","buckets":[[5,1,1],[4,1,1]],"above_range":0}"#;
        assert!(serde_json::from_str::<Histogram>(unordered).is_err());
        let unknown = r#"{"scheme":"log-linear-1024/2^34ns","buckets":[],"above_range":0,"x":1}"#;
        assert!(serde_json::from_str::<Histogram>(unknown).is_err());
        let other = r#"{"scheme":"linear-1us","buckets":[],"above_range":0}"#;
        assert!(serde_json::from_str::<Histogram>(other).is_err());
    }

    fn exact_nearest_rank(sorted: &[u64], q: f64) -> u64 {
        let n = sorted.len() as u64;
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        sorted[(rank - 1) as usize]
    }

    proptest! {
        #[test]
        fn index_and_bounds_agree(v in 0u64..RANGE_END_NS) {
            let (lo, width) = bucket_bounds(bucket_index(v));
            prop_assert!(lo <= v && v < lo + width);
        }

        #[test]
        fn quantiles_bracket_the_exact_sample(
            mut values in proptest::collection::vec(
                prop_oneof![0u64..3_000, 0u64..2_000_000, 0u64..20_000_000_000], 1..400),
            q in prop_oneof![Just(0.5), Just(0.9), Just(0.99), Just(0.999), Just(1.0), 0.0001f64..1.0],
        ) {
            let mut h = Histogram::new();
            for &v in &values { h.record(v); }
            values.sort_unstable();
            let exact = exact_nearest_rank(&values, q);
            match h.quantile(q).unwrap() {
                Quantile::InRange { lo, hi } => prop_assert!(lo <= exact && exact <= hi,
                    "q={} exact={} bucket=[{},{}]", q, exact, lo, hi),
                Quantile::AboveRange => prop_assert!(exact >= RANGE_END_NS),
            }
        }

        #[test]
        fn merge_equals_recording_everything(
            a in proptest::collection::vec(0u64..100_000_000, 0..100),
            b in proptest::collection::vec(0u64..100_000_000, 0..100),
        ) {
            let (mut ha, mut hb, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
            for &v in &a { ha.record(v); all.record(v); }
            for &v in &b { hb.record(v); all.record(v); }
            ha.merge(&hb);
            prop_assert_eq!(ha, all);
        }

        #[test]
        fn dense_and_sparse_agree(values in proptest::collection::vec(0u64..RANGE_END_NS, 0..200)) {
            let mut dense = vec![0u64; BUCKET_COUNT];
            let mut sparse = Histogram::new();
            for &v in &values { dense[bucket_index(v)] += 1; sparse.record(v); }
            prop_assert_eq!(Histogram::from_dense(dense, 0), sparse);
        }
    }
}
