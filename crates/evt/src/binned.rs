//! Peaks over threshold on a histogram: what a run without a per-second series (an imported
//! `cyclictest -h`, `rtla timerlat hist`) still allows. The bins above a threshold are fitted by
//! an interval-censored GPD likelihood, the threshold chosen by the same stability rule as on
//! the series, and the fit checked with Pearson's chi-squared test.
//!
//! A histogram has no time order: exceedances cannot be declustered, and independence and
//! stationarity cannot be tested. The estimate is shown, and never trusted.

use model::histogram::Histogram;
use model::worst::{Candidate, Check, Method, TailFit};

use crate::Settings;
use crate::dist::Gpd;
use crate::fits::{ALPHA, budget_risk, estimate, tail};
use crate::gpd::{Bin, GpdModel};
use crate::tests_stat;

/// The fewest exceedances a histogram's tail is fitted to.
pub(crate) const MIN_EXCEEDANCES: u64 = 50;

/// The rule in words.
pub(crate) const RULE: &str = "lowest bucket boundary at the 90th, 99th, 99.9th, 99.99th or 99.999th percentile of the samples (at least 50 above it) whose shape every higher candidate's shape stays within the 95% interval of";

/// The bins at and above bucket boundary `u`, as excesses over it. A bucket is `resolution`
/// wide at least: an imported tool's histogram counts whole microseconds, which rtlab records
/// at the microsecond's start. Samples above the histogram's range (an imported tool's
/// overflows, whose values are unknown) are censored at the end of the highest bin: all that
/// is known is that they lie above it.
fn bins_above(h: &Histogram, u: u64, resolution: u64) -> Vec<Bin> {
    let mut bins: Vec<Bin> = h
        .buckets()
        .filter(|(lo, _, _)| *lo >= u)
        .map(|(lo, w, c)| Bin {
            lo: (lo - u) as f64,
            hi: (lo - u).saturating_add(w.max(resolution)) as f64,
            count: c as f64,
        })
        .collect();
    if h.above_range() > 0 {
        let end = bins.iter().map(|b| b.hi).fold(0.0, f64::max);
        bins.push(Bin {
            lo: end,
            hi: f64::INFINITY,
            count: h.above_range() as f64,
        });
    }
    bins
}

/// Candidate thresholds: bucket lower bounds at upper percentiles, each with its fit.
fn candidates(h: &Histogram, resolution: u64) -> Vec<(u64, Candidate)> {
    let total = h.count();
    let buckets: Vec<(u64, u64, u64)> = h.buckets().collect();
    let mut out: Vec<(u64, Candidate)> = Vec::new();
    for p in [0.9, 0.99, 0.999, 0.9999, 0.99999] {
        // The lowest bucket whose values and those above it are at most (1 - p) of all.
        let want = ((1.0 - p) * total as f64).ceil() as u64;
        let mut above = h.above_range();
        let mut u = None;
        for &(lo, _, c) in buckets.iter().rev() {
            if above + c > want {
                break;
            }
            above += c;
            u = Some(lo);
        }
        let Some(u) = u.filter(|_| above >= MIN_EXCEEDANCES) else {
            break;
        };
        if out.last().is_some_and(|(v, _)| *v >= u) {
            continue;
        }
        let bins = bins_above(h, u, resolution);
        let Some(fit) = crate::gpd::fit_binned(&bins) else {
            continue;
        };
        let n: f64 = bins.iter().map(|b| b.count).sum();
        let mid = |b: &Bin| {
            if b.hi.is_finite() {
                0.5 * (b.lo + b.hi)
            } else {
                b.lo
            }
        };
        let mean = bins.iter().map(|b| b.count * mid(b)).sum::<f64>() / n;
        out.push((
            u,
            Candidate {
                threshold_ns: u as f64,
                clusters: n as u64,
                mean_excess_ns: mean,
                shape: fit.dist.xi,
                shape_se: fit.se.map(|s| s[1]),
            },
        ));
    }
    out
}

fn chi_check(bins: &[Bin], g: Gpd) -> Option<Check> {
    let n: f64 = bins.iter().map(|b| b.count).sum();
    let observed: Vec<f64> = bins.iter().map(|b| b.count).collect();
    let expected: Vec<f64> = bins
        .iter()
        .map(|b| n * (g.sf(b.lo) - if b.hi.is_finite() { g.sf(b.hi) } else { 0.0 }))
        .collect();
    tests_stat::chi_square(&observed, &expected, 2).map(|o| Check {
        name: "chi-squared".into(),
        statistic: o.statistic,
        p_value: o.p_value,
        passed: o.p_value > ALPHA,
        says: "the distribution does not describe the histogram's tail".into(),
    })
}

/// Whether the run's largest latency (known even where the histogram's range ended) is one
/// the fit could produce in as many exceedances: `1 - G(max - u)^n`, failed below the 1 %
/// level (a maximum beyond a bounded fit's end gives 0).
fn observed_max_check(max_ns: u64, u: u64, n: f64, g: Gpd) -> Option<Check> {
    if max_ns <= u {
        return None;
    }
    let p = -(n * (-g.sf((max_ns - u) as f64)).ln_1p()).exp_m1();
    let p = if p.is_finite() {
        p.clamp(0.0, 1.0)
    } else {
        0.0
    };
    Some(Check {
        name: "observed-max".into(),
        statistic: max_ns as f64,
        p_value: p,
        passed: p > ALPHA,
        says: "the run's largest latency is beyond what the fit allows".into(),
    })
}

/// Peaks over threshold on a histogram covering `hours` of measuring.
pub(crate) fn peaks_over_threshold(
    h: &Histogram,
    resolution: u64,
    observed_max_ns: u64,
    hours: f64,
    set: &Settings,
) -> Result<TailFit, String> {
    let cands = candidates(h, resolution);
    let only: Vec<Candidate> = cands.iter().map(|c| c.1).collect();
    let k = crate::pot::choose(&only).ok_or_else(|| {
        format!(
            "peaks over threshold (histogram): fewer than {MIN_EXCEEDANCES} samples above the 90th percentile of {}",
            h.count()
        )
    })?;
    if !(hours > 0.0) {
        return Err(
            "peaks over threshold (histogram): the run's duration is unknown, so no rate per hour"
                .into(),
        );
    }
    let u = cands[k].0;
    let bins = bins_above(h, u, resolution);
    let mut m =
        GpdModel::binned(&bins).ok_or("peaks over threshold (histogram): no tail to fit")?;
    let fit = m
        .fit()
        .ok_or("peaks over threshold (histogram): the GPD fit did not converge")?;
    let g = fit.dist;
    let se = fit.se;
    let n = fit.n as f64;
    let rate = n / hours;
    let shape = estimate(
        g.xi,
        se.map(|s| s[1]),
        m.shape_interval(set.confidence, se.map(|s| s[1])),
    );
    let uf = u as f64;
    let (return_levels, curve) = crate::fits::pot_levels(&m, uf, rate, set);
    let budget = set.budget_ns.filter(|b| *b > u).map(|bud| {
        let (q, i) = m.exceedance_interval((bud - u) as f64, set.confidence);
        let per_hour = |q: f64| -(-rate * q).exp_m1();
        budget_risk(bud, per_hour, q, i)
    });
    let mut checks: Vec<Check> = chi_check(&bins, g).into_iter().collect();
    checks.extend(observed_max_check(observed_max_ns, u, n, g));
    Ok(TailFit {
        method: Method::PeaksOverThreshold,
        data: format!(
            "{} samples of a histogram above {} ns (no time order: not declustered, independence and stationarity not checkable)",
            fit.n, u
        ),
        block_ns: None,
        threshold_ns: Some(uf),
        rule: RULE.into(),
        n: fit.n as u64,
        clusters_per_hour: Some(rate),
        location_ns: None,
        scale_ns: estimate(g.sigma, se.map(|s| s[0]), Default::default()),
        tail: tail(&shape, g.upper_end().map(|e| uf + e)),
        shape,
        return_levels,
        curve,
        budget,
        checks,
        // Never trusted: the assumptions the series checks test cannot be tested here.
        trusted: false,
        values_ns: Vec::new(),
        candidates: only,
    })
}
