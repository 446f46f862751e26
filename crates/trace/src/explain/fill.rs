//! The scan's histograms filled fast: a handler's or task's histogram takes its values in the
//! sparse form until it has had [`DENSE_AFTER`], then in a dense array of counts
//! ([`model::histogram::Dense`]: one add a value, not a search), for the first [`MAX_DENSE`]
//! histograms that get there, so the scan's memory stays bounded (some 3 MiB).

use model::histogram::{Dense, Histogram};

/// Values a histogram takes in the sparse form before it gets a dense array.
pub(super) const DENSE_AFTER: u32 = 1024;

/// Histograms given a dense array at most (100 KiB each).
pub(super) const MAX_DENSE: usize = 32;

/// How one histogram is being filled.
#[derive(Debug, Default)]
pub(super) struct Fill {
    dense: Option<Dense>,
    values: u32,
}

impl Fill {
    /// Records `v` into `h` (or its dense array); `given` counts the dense arrays given out.
    #[inline]
    pub(super) fn record(&mut self, h: &mut Histogram, v: u64, given: &mut usize) {
        if let Some(d) = &mut self.dense {
            d.record(v, h);
            return;
        }
        h.record(v);
        self.values += 1;
        if self.values >= DENSE_AFTER && *given < MAX_DENSE {
            *given += 1;
            self.dense = Some(Dense::default());
        }
    }

    /// `h` with every value recorded.
    pub(super) fn finish(self, h: &mut Histogram) {
        if let Some(mut d) = self.dense {
            d.drain_into(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_filled_through_a_dense_array_is_the_one_recorded() {
        let mut given = MAX_DENSE - 1;
        let (mut fast, mut fast_h) = (Fill::default(), Histogram::new());
        let (mut late, mut late_h) = (Fill::default(), Histogram::new());
        let mut plain = Histogram::new();
        for i in 0..3 * u64::from(DENSE_AFTER) {
            let v = i * 7919 % 50_000;
            fast.record(&mut fast_h, v, &mut given);
            late.record(&mut late_h, v, &mut given);
            plain.record(v);
        }
        assert!(fast.dense.is_some(), "the first to get there gets one");
        assert!(late.dense.is_none(), "none left for the second");
        assert_eq!(given, MAX_DENSE);
        fast.finish(&mut fast_h);
        late.finish(&mut late_h);
        assert_eq!(fast_h, plain);
        assert_eq!(late_h, plain);
    }
}
