//! Maximum-likelihood fit of a GPD to exceedances of a threshold, its standard errors and the
//! profile likelihoods of the shape, of a return level and of a budget's exceedance.
//!
//! A return level here is "the exceedance reached once in `n` exceedances"; the caller turns
//! hours of operation into `n` with the exceedance rate. The exceedances are scaled by their
//! mean before fitting; the shape is kept above -1.

use crate::dist::Gpd;
use crate::optim::{self, OUTSIDE};
use crate::profile::{self, Interval};

/// A fitted GPD.
#[derive(Clone, Debug)]
pub struct GpdFit {
    /// The estimate, in the data's units.
    pub dist: Gpd,
    /// Negative log-likelihood at the estimate, in the data's units.
    pub nll: f64,
    /// Standard errors of (sigma, xi); `None` where the information is not positive definite.
    pub se: Option<[f64; 2]>,
    /// How many exceedances.
    pub n: usize,
}

/// Exceedances binned as a histogram has them: `count` values in `[lo, hi)` (`hi` may be
/// infinite), above the threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bin {
    /// Lower end of the bin, minus the threshold.
    pub lo: f64,
    /// Upper end, minus the threshold.
    pub hi: f64,
    /// Values in it.
    pub count: f64,
}

/// What is fitted: exact values, or binned values (interval-censored likelihood).
enum Data {
    Exact(Vec<f64>),
    Binned(Vec<Bin>),
}

impl Data {
    fn len(&self) -> f64 {
        match self {
            Data::Exact(y) => y.len() as f64,
            Data::Binned(b) => b.iter().map(|b| b.count).sum(),
        }
    }
}

/// Scaled exceedances and the likelihood on them.
pub struct GpdModel {
    y: Data,
    scale: f64,
    hat: Option<(Gpd, f64)>,
}

fn nll(y: &Data, g: &Gpd) -> f64 {
    if !(g.sigma > 0.0) || g.xi <= -1.0 || !(g.xi < crate::MAX_SHAPE) {
        return OUTSIDE;
    }
    let mut sum = 0.0;
    match y {
        Data::Exact(y) => {
            for &x in y {
                let l = g.ln_pdf(x);
                if l == f64::NEG_INFINITY {
                    return OUTSIDE;
                }
                sum -= l;
            }
        }
        Data::Binned(bins) => {
            for b in bins {
                // P(lo <= X < hi), from the survival function: exact far out in the tail.
                let p = g.sf(b.lo) - if b.hi.is_finite() { g.sf(b.hi) } else { 0.0 };
                if !(p > 0.0) {
                    return OUTSIDE;
                }
                sum -= b.count * p.ln();
            }
        }
    }
    sum
}

impl GpdModel {
    /// The model for these exceedances (values above the threshold, minus it); `None` for
    /// fewer than 3, a negative one, or all zero.
    pub fn new(exceedances: &[f64]) -> Option<GpdModel> {
        let n = exceedances.len();
        if n < 3 || exceedances.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return None;
        }
        let mean = exceedances.iter().sum::<f64>() / n as f64;
        if !(mean > 0.0) {
            return None;
        }
        Some(GpdModel {
            y: Data::Exact(exceedances.iter().map(|x| x / mean).collect()),
            scale: mean,
            hat: None,
        })
    }

    /// The model for binned exceedances (a histogram's tail); `None` for fewer than 3 values,
    /// a bad bin, or no spread.
    pub fn binned(bins: &[Bin]) -> Option<GpdModel> {
        let n: f64 = bins.iter().map(|b| b.count).sum();
        let bad = |b: &Bin| {
            !(b.lo >= 0.0
                && b.hi > b.lo
                && b.count >= 0.0
                && b.lo.is_finite()
                && b.count.is_finite())
        };
        if !(n >= 3.0) || bins.iter().any(bad) {
            return None;
        }
        let mid = |b: &Bin| {
            if b.hi.is_finite() {
                0.5 * (b.lo + b.hi)
            } else {
                b.lo
            }
        };
        let mean = bins.iter().map(|b| b.count * mid(b)).sum::<f64>() / n;
        if !(mean > 0.0) {
            return None;
        }
        let scaled = bins
            .iter()
            .filter(|b| b.count > 0.0)
            .map(|b| Bin {
                lo: b.lo / mean,
                hi: b.hi / mean,
                count: b.count,
            })
            .collect();
        Some(GpdModel {
            y: Data::Binned(scaled),
            scale: mean,
            hat: None,
        })
    }

    /// Mean 1 by construction; the variance of the scaled data (bin midpoints when binned).
    fn variance(&self) -> f64 {
        let n = self.y.len();
        let ss = match &self.y {
            Data::Exact(y) => y.iter().map(|v| (v - 1.0).powi(2)).sum::<f64>(),
            Data::Binned(b) => b
                .iter()
                .map(|b| {
                    let m = if b.hi.is_finite() {
                        0.5 * (b.lo + b.hi)
                    } else {
                        b.lo
                    };
                    b.count * (m - 1.0).powi(2)
                })
                .sum(),
        };
        ss / (n - 1.0).max(1.0)
    }

    /// The maximum-likelihood fit.
    pub fn fit(&mut self) -> Option<GpdFit> {
        let y = &self.y;
        let f = |p: &[f64]| {
            nll(
                y,
                &Gpd {
                    sigma: p[0].exp(),
                    xi: p[1],
                },
            )
        };
        // Method of moments on the scaled data (mean 1) as the start.
        let n = y.len();
        let var = self.variance();
        let xi0 = (0.5 * (1.0 - 1.0 / var.max(1e-9))).clamp(-0.5, 0.5);
        let sigma0 = (0.5 * (1.0 / var.max(1e-9) + 1.0)).max(0.05);
        let mut best: Option<(Vec<f64>, f64)> = None;
        for start in [[sigma0.ln(), xi0], [0.0, 0.0], [0.2, -0.3]] {
            if let Some((x, fx)) = optim::minimise(&f, &start, &[0.2, 0.1])
                && best.as_ref().is_none_or(|b| fx < b.1)
            {
                best = Some((x, fx));
            }
        }
        let (x, fx) = best?;
        let g = Gpd {
            sigma: x[0].exp(),
            xi: x[1],
        };
        self.hat = Some((g, fx));
        let natural = |p: &[f64]| {
            nll(
                y,
                &Gpd {
                    sigma: p[0],
                    xi: p[1],
                },
            )
        };
        let h = optim::hessian(&natural, &[g.sigma, g.xi], &[1e-4 * g.sigma, 1e-4]);
        let se = optim::inverse_spd(&h).and_then(|c| {
            let s = [c[0][0].sqrt() * self.scale, c[1][1].sqrt()];
            s.iter().all(|v| v.is_finite()).then_some(s)
        });
        Some(GpdFit {
            dist: Gpd {
                sigma: g.sigma * self.scale,
                xi: g.xi,
            },
            // A density scales with the data; a binned likelihood is of probabilities.
            nll: fx
                + if matches!(y, Data::Exact(_)) {
                    n * self.scale.ln()
                } else {
                    0.0
                },
            se,
            n: n as usize,
        })
    }

    fn hat(&self) -> (Gpd, f64) {
        self.hat.expect("fit() before a profile")
    }

    /// Profile-likelihood interval of the shape.
    pub fn shape_interval(&self, confidence: f64, se: Option<f64>) -> Interval {
        let (g, nll_hat) = self.hat();
        let y = &self.y;
        let nll_at = |p: &[f64], xi: f64| {
            nll(
                y,
                &Gpd {
                    sigma: p[0].exp(),
                    xi,
                },
            )
        };
        profile::shape(
            &nll_at,
            vec![g.sigma.ln()],
            (&[0.1], 0),
            (g.xi, nll_hat),
            se,
            confidence,
        )
    }

    /// The exceedance reached once in `n` exceedances (`n > 1`) with its profile interval, in
    /// the data's units (above the threshold).
    pub fn level_interval(&self, n: f64, confidence: f64) -> (f64, Interval) {
        let (g, nll_hat) = self.hat();
        let y = &self.y;
        let level = g.level_in(n);
        let mut warm = vec![g.xi];
        let mut prof = |z: f64| {
            let f = |p: &[f64]| match Gpd::scale_for(z, n, p[0]) {
                Some(sigma) => nll(y, &Gpd { sigma, xi: p[0] }),
                None => OUTSIDE,
            };
            let (x, fx) = optim::minimise_near(&f, &warm, &[0.05], 0)?;
            warm = x;
            Some(fx)
        };
        let step = (0.1 * level).max(1e-3);
        let i = profile::interval(&mut prof, level, nll_hat, step, (1e-9, 1e9), confidence);
        let back = |v: f64| v * self.scale;
        (
            back(level),
            Interval {
                lower: i.lower.map(back),
                upper: i.upper.map(back),
            },
        )
    }

    /// The probability that one exceedance goes past `excess` (budget minus threshold, > 0),
    /// with its profile interval.
    pub fn exceedance_interval(&self, excess: f64, confidence: f64) -> (f64, Interval) {
        let (g, nll_hat) = self.hat();
        let y = &self.y;
        let z = excess / self.scale;
        let q_hat = g.sf(z);
        // psi = ln n, n = 1/q: once in n exceedances.
        let ln_n_hat = (1.0 / q_hat.max(1e-300)).ln().max(1e-12);
        let mut warm = vec![g.xi];
        let mut prof = |ln_n: f64| {
            let n = ln_n.exp();
            let f = |p: &[f64]| match Gpd::scale_for(z, n, p[0]) {
                Some(sigma) => nll(y, &Gpd { sigma, xi: p[0] }),
                None => OUTSIDE,
            };
            let (x, fx) = optim::minimise_near(&f, &warm, &[0.05], 0)?;
            warm = x;
            Some(fx)
        };
        let bounds = (1e-12, 1e300f64.ln());
        let i = profile::interval(&mut prof, ln_n_hat, nll_hat, 1.0, bounds, confidence);
        // A larger n is a smaller probability: the ends swap.
        let lower = Some(i.upper.map_or(0.0, |v| (-v).exp()));
        let upper = Some(i.lower.map_or(1.0, |v| (-v).exp()));
        (q_hat, Interval { lower, upper })
    }
}

/// Fits a GPD to binned exceedances; `None` when it cannot be fitted.
pub fn fit_binned(bins: &[Bin]) -> Option<GpdFit> {
    GpdModel::binned(bins)?.fit()
}

/// Fits a GPD to exceedances; `None` when it cannot be fitted.
pub fn fit(exceedances: &[f64]) -> Option<GpdFit> {
    GpdModel::new(exceedances)?.fit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(g: &Gpd, n: usize, seed: u64) -> Vec<f64> {
        let mut u = crate::rng::Uniform::new(seed);
        (0..n).map(|_| g.quantile(u.open01())).collect()
    }

    #[test]
    fn recovers_known_parameters() {
        for (xi, seed) in [(-0.3, 11), (0.0, 12), (0.3, 13)] {
            let data = sample(&Gpd { sigma: 8.0, xi }, 4000, seed);
            let fit = fit(&data).unwrap();
            let se = fit.se.unwrap();
            assert!((fit.dist.sigma - 8.0).abs() < 4.0 * se[0], "{fit:?}");
            assert!((fit.dist.xi - xi).abs() < 4.0 * se[1], "{fit:?}");
        }
    }

    #[test]
    fn binned_exceedances_fit_like_exact_ones() {
        let data = sample(
            &Gpd {
                sigma: 8.0,
                xi: 0.1,
            },
            20_000,
            21,
        );
        // 0.5-wide bins up to 100, everything above in one open bin.
        let mut bins: Vec<Bin> = (0..200)
            .map(|i| Bin {
                lo: i as f64 * 0.5,
                hi: (i + 1) as f64 * 0.5,
                count: 0.0,
            })
            .collect();
        bins.push(Bin {
            lo: 100.0,
            hi: f64::INFINITY,
            count: 0.0,
        });
        for x in &data {
            let i = ((x / 0.5) as usize).min(200);
            bins[i].count += 1.0;
        }
        let b = fit_binned(&bins).unwrap();
        let e = fit(&data).unwrap();
        assert!((b.dist.xi - e.dist.xi).abs() < 0.01, "{b:?} {e:?}");
        assert!(
            (b.dist.sigma / e.dist.sigma - 1.0).abs() < 0.01,
            "{b:?} {e:?}"
        );
        assert!(
            fit_binned(&[Bin {
                lo: 1.0,
                hi: 0.5,
                count: 9.0
            }])
            .is_none()
        );
    }

    #[test]
    fn profile_intervals_contain_the_estimate() {
        let data = sample(
            &Gpd {
                sigma: 8.0,
                xi: -0.1,
            },
            300,
            17,
        );
        let mut m = GpdModel::new(&data).unwrap();
        let fit = m.fit().unwrap();
        let xi = m.shape_interval(0.95, fit.se.map(|s| s[1]));
        assert!(xi.lower.unwrap() < fit.dist.xi && fit.dist.xi < xi.upper.unwrap());
        let (level, i) = m.level_interval(1000.0, 0.95);
        assert!((level - fit.dist.level_in(1000.0)).abs() < 1e-6 * level);
        assert!(
            i.lower.unwrap() < level && level < i.upper.unwrap(),
            "{i:?}"
        );
        let (q, i) = m.exceedance_interval(level, 0.95);
        assert!((q - 1e-3).abs() < 1e-6, "{q}");
        assert!(i.lower.unwrap() < q && q < i.upper.unwrap(), "{i:?}");
    }
}
