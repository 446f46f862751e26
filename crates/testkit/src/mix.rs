//! A tiny deterministic source of uniform numbers (SplitMix64) for tests that draw from known
//! distributions: the same draws on every machine, from a seed the test names.

/// SplitMix64 from a seed.
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next number in (0, 1), never either end (inverse distribution functions take it).
    pub fn open01(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}
