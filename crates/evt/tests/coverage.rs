//! Intervals cover the truth at about the stated rate: samples from known distributions, each
//! fitted, each 95 % profile interval of a return level checked against the true level.

use evt::dist::{Gev, Gpd};
use evt::gev::GevModel;
use evt::gpd::GpdModel;

/// A tiny deterministic generator (SplitMix64) so the test needs no RNG crate.
struct Mix(u64);

impl Mix {
    fn open01(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

const REPS: usize = 60;

#[test]
fn gev_return_level_intervals_cover_the_truth() {
    let truth = Gev {
        mu: 50.0,
        sigma: 4.0,
        xi: -0.1,
    };
    let q = 1e-3;
    let want = truth.level_exceeded(q);
    let mut rng = Mix(1);
    let mut covered = 0;
    for _ in 0..REPS {
        let data: Vec<f64> = (0..150).map(|_| truth.quantile(rng.open01())).collect();
        let mut m = GevModel::new(&data).unwrap();
        m.fit().unwrap();
        let (_, i) = m.level_interval(q, 0.95);
        if i.lower.unwrap_or(f64::MIN) <= want && want <= i.upper.unwrap_or(f64::MAX) {
            covered += 1;
        }
    }
    // 95 % of 60 is 57; a binomial standard deviation is 1.7.
    assert!((51..=60).contains(&covered), "covered {covered} of {REPS}");
}

#[test]
fn gpd_return_level_intervals_cover_the_truth() {
    let truth = Gpd {
        sigma: 6.0,
        xi: 0.1,
    };
    let n = 1000.0;
    let want = truth.level_in(n);
    let mut rng = Mix(2);
    let mut covered = 0;
    for _ in 0..REPS {
        let data: Vec<f64> = (0..150).map(|_| truth.quantile(rng.open01())).collect();
        let mut m = GpdModel::new(&data).unwrap();
        m.fit().unwrap();
        let (_, i) = m.level_interval(n, 0.95);
        if i.lower.unwrap_or(f64::MIN) <= want && want <= i.upper.unwrap_or(f64::MAX) {
            covered += 1;
        }
    }
    assert!((51..=60).contains(&covered), "covered {covered} of {REPS}");
}
