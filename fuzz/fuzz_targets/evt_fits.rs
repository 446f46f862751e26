//! Fuzz target `evt_fits`: arbitrary bytes as a per-second series of maxima (8 bytes each, the
//! first a budget) and as a histogram's tail: `evt::fits::{peaks_over_threshold,block_maxima}`
//! with their profile intervals, checks and bootstraps, the two compared, their levels judged
//! for support and the first line written (`evt::support`), and `evt::gpd::fit_binned`. Nothing may
//! panic or loop; every figure must come out finite or absent.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let words: Vec<u64> = data
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let Some((&budget, rest)) = words.split_first() else {
        return;
    };
    // Latencies as a run keeps them: below 2^34 ns (the histogram's range, about 17 s).
    let maxima: Vec<f64> = rest.iter().map(|w| (w % (1 << 34)) as f64).collect();
    let set = evt::Settings {
        confidence: 0.95,
        budget_ns: Some(budget % (1 << 34)),
        per_hour: 1e-6,
        width_ns: None,
        pool: false,
        per_cpu: false,
        // A handful of refits: the target looks for panics, not p-values, and must stay fast.
        bootstrap: 4,
    };
    let series = evt::fits::Series { maxima: &maxima, slot_ns: 1_000_000_000 };
    let mut pot = evt::fits::peaks_over_threshold(&series, &set).ok();
    let mut gev = evt::fits::block_maxima(&series, &set).ok();
    // What `rtlab worst` does next: the two shapes compared, the unsupported levels withheld,
    // the first line written.
    if let (Some(p), Some(g)) = (pot.as_mut(), gev.as_mut()) {
        evt::fits::cross_check(p, g);
    }
    evt::fits::top_check(pot.as_mut(), gev.as_mut());
    let observed_max = maxima.iter().copied().fold(0.0, f64::max) as u64;
    for fit in pot.iter_mut().chain(gev.iter_mut()) {
        assert!(fit.shape.value.is_finite());
        evt::support::withhold(fit, observed_max);
        let _ = serde_json::to_string(&fit);
    }
    let known = evt::support::Known {
        trusted: evt::verdict::primary(pot.as_ref(), gev.as_ref()),
        observed_max_ns: observed_max,
        measured_ns: (maxima.len() as u64).saturating_mul(1_000_000_000),
        run_longer: &[],
        second_cause: false,
        changed: false,
    };
    assert!(!evt::support::headline(&known, &set).is_empty());
    let bins: Vec<evt::gpd::Bin> = maxima
        .chunks_exact(2)
        .map(|c| evt::gpd::Bin { lo: c[0], hi: c[0] + 1.0 + c[1] % 1000.0, count: c[1] % 1000.0 })
        .collect();
    let _ = evt::gpd::fit_binned(&bins);
});
