//! The statistical tests behind "may this fit be trusted": independence (Ljung-Box on ranks,
//! the Wald-Wolfowitz runs test), stationarity (a split-half two-sample Kolmogorov-Smirnov test,
//! KPSS on ranks) and goodness of fit (the Anderson-Darling and Cramér-von Mises statistics,
//! whose p-values [`crate::gof`] finds by parametric bootstrap).
//!
//! Ranks instead of values where the test is about order: one huge spike must not decide an
//! autocorrelation.

use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// A test's statistic and p-value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// The statistic.
    pub statistic: f64,
    /// The p-value.
    pub p_value: f64,
}

/// The fewest distinct values a continuous tail is fitted to: a handful of repeated values
/// (a quantised clock, a stuck timer) is no sample of a GEV or GPD.
pub const MIN_DISTINCT: usize = 10;

/// How many distinct values.
pub(crate) fn distinct(values: &[f64]) -> usize {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v.len()
}

fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        // Ties share their mean rank.
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = mean;
        }
        i = j + 1;
    }
    r
}

fn normal_two_sided(z: f64) -> f64 {
    let n = Normal::standard();
    (2.0 * (1.0 - n.cdf(z.abs()))).clamp(0.0, 1.0)
}

/// Whether two estimates of one parameter agree: `z` is their difference over the square root
/// of the summed variances (conservative when the estimates share data, as they overstate the
/// difference's variance). `None` without both standard errors.
pub fn agreement(a: f64, se_a: Option<f64>, b: f64, se_b: Option<f64>) -> Option<Outcome> {
    let var = se_a?.powi(2) + se_b?.powi(2);
    if !(var > 0.0) || !a.is_finite() || !b.is_finite() {
        return None;
    }
    let z = (a - b) / var.sqrt();
    Some(Outcome {
        statistic: z,
        p_value: normal_two_sided(z),
    })
}

/// Ljung-Box portmanteau test on the ranks with `lags` lags: small p, serial dependence.
pub fn ljung_box(x: &[f64], lags: usize) -> Option<Outcome> {
    let n = x.len();
    if lags == 0 || n <= lags + 2 {
        return None;
    }
    let r = ranks(x);
    let mean = r.iter().sum::<f64>() / n as f64;
    let d: Vec<f64> = r.iter().map(|v| v - mean).collect();
    let c0: f64 = d.iter().map(|v| v * v).sum();
    if !(c0 > 0.0) {
        return None;
    }
    let nf = n as f64;
    let mut q = 0.0;
    for k in 1..=lags {
        let ck: f64 = d[k..].iter().zip(&d[..n - k]).map(|(a, b)| a * b).sum();
        let rho = ck / c0;
        q += rho * rho / (nf - k as f64);
    }
    q *= nf * (nf + 2.0);
    let chi = ChiSquared::new(lags as f64).ok()?;
    Some(Outcome {
        statistic: q,
        p_value: 1.0 - chi.cdf(q),
    })
}

/// Wald-Wolfowitz runs test above and below the median (values equal to it left out).
pub fn runs(x: &[f64]) -> Option<Outcome> {
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n < 10 {
        return None;
    }
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    };
    let signs: Vec<bool> = x
        .iter()
        .filter(|v| **v != median)
        .map(|v| *v > median)
        .collect();
    let n1 = signs.iter().filter(|s| **s).count() as f64;
    let n2 = signs.len() as f64 - n1;
    if n1 < 2.0 || n2 < 2.0 {
        return None;
    }
    let runs = 1 + signs.windows(2).filter(|w| w[0] != w[1]).count();
    let m = n1 + n2;
    let mu = 2.0 * n1 * n2 / m + 1.0;
    let var = 2.0 * n1 * n2 * (2.0 * n1 * n2 - m) / (m * m * (m - 1.0));
    if !(var > 0.0) {
        return None;
    }
    let z = (runs as f64 - mu) / var.sqrt();
    Some(Outcome {
        statistic: z,
        p_value: normal_two_sided(z),
    })
}

/// Kolmogorov's limiting distribution: `P(sqrt(n) D > lambda)`.
fn kolmogorov_sf(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = f64::from(k);
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u32 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// Two-sample Kolmogorov-Smirnov test of the first half against the second.
pub fn split_half(x: &[f64]) -> Option<Outcome> {
    let half = x.len() / 2;
    if half < 10 {
        return None;
    }
    let (mut a, mut b) = (x[..half].to_vec(), x[half..].to_vec());
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let v = a[i].min(b[j]);
        while i < a.len() && a[i] <= v {
            i += 1;
        }
        while j < b.len() && b[j] <= v {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    let ne = na * nb / (na + nb);
    let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
    Some(Outcome {
        statistic: d,
        p_value: kolmogorov_sf(lambda),
    })
}

/// KPSS test of level stationarity on the ranks (Kwiatkowski et al. 1992), with a Bartlett
/// long-run variance of `4 (n/100)^(1/4)` lags. The p-value interpolates the published table
/// (0.10 / 0.05 / 0.025 / 0.01 at 0.347 / 0.463 / 0.574 / 0.739) and is clamped to [0.01, 0.10].
pub fn kpss(x: &[f64]) -> Option<Outcome> {
    let n = x.len();
    if n < 20 {
        return None;
    }
    let r = ranks(x);
    let mean = r.iter().sum::<f64>() / n as f64;
    let e: Vec<f64> = r.iter().map(|v| v - mean).collect();
    let nf = n as f64;
    let lags = (4.0 * (nf / 100.0).powf(0.25)).floor() as usize;
    let mut s2 = e.iter().map(|v| v * v).sum::<f64>() / nf;
    for s in 1..=lags.min(n - 1) {
        let w = 1.0 - s as f64 / (lags as f64 + 1.0);
        let c: f64 = e[s..].iter().zip(&e[..n - s]).map(|(a, b)| a * b).sum();
        s2 += 2.0 * w * c / nf;
    }
    if !(s2 > 0.0) {
        return None;
    }
    let mut partial = 0.0;
    let mut sum_sq = 0.0;
    for v in &e {
        partial += v;
        sum_sq += partial * partial;
    }
    let eta = sum_sq / (nf * nf * s2);
    const TABLE: [(f64, f64); 4] = [(0.347, 0.10), (0.463, 0.05), (0.574, 0.025), (0.739, 0.01)];
    let p = if eta <= TABLE[0].0 {
        0.10
    } else if eta >= TABLE[3].0 {
        0.01
    } else {
        let k = TABLE.windows(2).position(|w| eta < w[1].0).unwrap_or(2);
        let ((x0, p0), (x1, p1)) = (TABLE[k], TABLE[k + 1]);
        p0 + (p1 - p0) * (eta - x0) / (x1 - x0)
    };
    Some(Outcome {
        statistic: eta,
        p_value: p,
    })
}

/// Pearson's chi-squared goodness of fit of binned counts to their expectations under a fit
/// with `fitted` estimated parameters; adjacent bins are merged until each expects at least 5.
pub fn chi_square(observed: &[f64], expected: &[f64], fitted: usize) -> Option<Outcome> {
    let mut cells: Vec<(f64, f64)> = Vec::new();
    let (mut o, mut e) = (0.0, 0.0);
    for (a, b) in observed.iter().zip(expected) {
        o += a;
        e += b;
        if e >= 5.0 {
            cells.push((o, e));
            (o, e) = (0.0, 0.0);
        }
    }
    if let Some(last) = cells.last_mut() {
        last.0 += o;
        last.1 += e;
    }
    let df = cells.len().checked_sub(1 + fitted).filter(|d| *d > 0)?;
    let x2: f64 = cells.iter().map(|(o, e)| (o - e).powi(2) / e).sum();
    let chi = ChiSquared::new(df as f64).ok()?;
    Some(Outcome {
        statistic: x2,
        p_value: 1.0 - chi.cdf(x2),
    })
}

/// The Anderson-Darling statistic of probability-integral transforms `u` (any order).
pub fn anderson_darling(u: &[f64]) -> f64 {
    let mut s = u.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let nf = n as f64;
    let clamp = |v: f64| v.clamp(1e-300, 1.0 - 1e-16);
    let sum: f64 = (0..n)
        .map(|i| {
            let w = (2 * i + 1) as f64;
            w * (clamp(s[i]).ln() + (1.0 - clamp(s[n - 1 - i])).ln())
        })
        .sum();
    -nf - sum / nf
}

/// The Cramér-von Mises statistic of probability-integral transforms `u` (any order).
pub fn cramer_von_mises(u: &[f64]) -> f64 {
    let mut s = u.to_vec();
    s.sort_by(f64::total_cmp);
    let nf = s.len() as f64;
    let sum: f64 = s
        .iter()
        .enumerate()
        .map(|(i, v)| (v - (2 * i + 1) as f64 / (2.0 * nf)).powi(2))
        .sum();
    1.0 / (12.0 * nf) + sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Uniform;

    fn iid(n: usize, seed: u64) -> Vec<f64> {
        let mut u = Uniform::new(seed);
        (0..n).map(|_| u.open01()).collect()
    }

    #[test]
    fn independent_data_passes_and_dependent_fails() {
        let x = iid(500, 1);
        assert!(ljung_box(&x, 10).unwrap().p_value > 0.01);
        assert!(runs(&x).unwrap().p_value > 0.01);
        // A moving sum of 5 is strongly autocorrelated.
        let y: Vec<f64> = x.windows(5).map(|w| w.iter().sum()).collect();
        assert!(ljung_box(&y, 10).unwrap().p_value < 1e-6);
        assert!(runs(&y).unwrap().p_value < 1e-6);
    }

    #[test]
    fn a_shift_halfway_and_a_trend_fail_stationarity() {
        let x = iid(400, 2);
        assert!(split_half(&x).unwrap().p_value > 0.01);
        assert!(kpss(&x).unwrap().p_value > 0.01);
        let shifted: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| if i >= 200 { v + 0.5 } else { *v })
            .collect();
        assert!(split_half(&shifted).unwrap().p_value < 1e-6);
        assert!(kpss(&shifted).unwrap().p_value <= 0.01);
        let trend: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| v + i as f64 / 200.0)
            .collect();
        assert!(kpss(&trend).unwrap().p_value <= 0.01);
    }

    #[test]
    fn goodness_of_fit_statistics_of_uniforms_are_small() {
        let u = iid(1000, 3);
        assert!(anderson_darling(&u) < 2.5);
        assert!(cramer_von_mises(&u) < 0.46);
        let skewed: Vec<f64> = u.iter().map(|v| v * v).collect();
        assert!(anderson_darling(&skewed) > 10.0);
        assert!(cramer_von_mises(&skewed) > 1.0);
    }

    #[test]
    fn chi_square_of_matching_and_wrong_expectations() {
        let observed = [98.0, 102.0, 97.0, 103.0, 100.0, 100.0];
        let expected = [100.0; 6];
        assert!(chi_square(&observed, &expected, 2).unwrap().p_value > 0.5);
        let wrong = [150.0, 50.0, 150.0, 50.0, 100.0, 100.0];
        assert!(chi_square(&observed, &wrong, 2).unwrap().p_value < 1e-6);
        // Too few cells for the parameters fitted.
        assert!(chi_square(&[10.0, 10.0], &[10.0, 10.0], 2).is_none());
    }

    #[test]
    fn kolmogorov_tail_matches_known_values() {
        // P(K > 1.36) = 0.049, P(K > 1.63) = 0.0098.
        assert!((kolmogorov_sf(1.358) - 0.05).abs() < 1e-3);
        assert!((kolmogorov_sf(1.628) - 0.01).abs() < 1e-3);
    }

    #[test]
    fn too_little_data_gives_no_outcome() {
        assert!(ljung_box(&[1.0, 2.0, 3.0], 5).is_none());
        assert!(runs(&[1.0; 30]).is_none());
        assert!(split_half(&[1.0; 10]).is_none());
        assert!(kpss(&[1.0; 10]).is_none());
    }
}
