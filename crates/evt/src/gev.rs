//! Maximum-likelihood fit of a GEV to block maxima, its standard errors (observed information)
//! and the profile likelihoods of the shape, of a return level and of the probability of
//! exceeding a budget.
//!
//! The data are standardised (mean 0, standard deviation 1) before fitting so that one set of
//! optimiser tolerances serves microseconds and milliseconds alike; results are mapped back.
//! The shape is kept above -1, where the likelihood stops being bounded (Smith 1985).

use crate::dist::Gev;
use crate::optim::{self, OUTSIDE};
use crate::profile::{self, Interval};

/// A fitted GEV with what the fit knows about its own uncertainty.
#[derive(Clone, Debug)]
pub struct GevFit {
    /// The estimate, in the data's units.
    pub dist: Gev,
    /// Negative log-likelihood at the estimate, in the data's units.
    pub nll: f64,
    /// Standard errors of (mu, sigma, xi) from the observed information; `None` where the
    /// information matrix is not positive definite.
    pub se: Option<[f64; 3]>,
    /// How many maxima.
    pub n: usize,
}

/// Standardised data and the likelihood on it.
pub struct GevModel {
    z: Vec<f64>,
    center: f64,
    scale: f64,
    hat: Option<(Gev, f64)>,
}

fn nll(z: &[f64], g: &Gev) -> f64 {
    if !(g.sigma > 0.0) || g.xi <= -1.0 || !(g.xi < crate::MAX_SHAPE) {
        return OUTSIDE;
    }
    let mut sum = 0.0;
    for &x in z {
        let l = g.ln_pdf(x);
        if l == f64::NEG_INFINITY {
            return OUTSIDE;
        }
        sum -= l;
    }
    sum
}

/// The minimum of a GEV likelihood `f` over (mu, ln sigma, xi) of standardised data (mean 0,
/// standard deviation 1): started from the Gumbel's moments with two shapes, the better kept.
pub(crate) fn minimise_standardised(f: &dyn Fn(&[f64]) -> f64) -> Option<(Vec<f64>, f64)> {
    let sigma0 = 6f64.sqrt() / std::f64::consts::PI;
    let mu0 = -0.5772 * sigma0;
    let mut best: Option<(Vec<f64>, f64)> = None;
    for xi0 in [-0.2, 0.1] {
        if let Some((x, fx)) = optim::minimise(f, &[mu0, sigma0.ln(), xi0], &[0.2, 0.2, 0.1])
            && best.as_ref().is_none_or(|b| fx < b.1)
        {
            best = Some((x, fx));
        }
    }
    best
}

impl GevModel {
    /// The model for these maxima; `None` for fewer than 3 or when they are all equal.
    pub fn new(data: &[f64]) -> Option<GevModel> {
        let n = data.len();
        if n < 3 || data.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mean = data.iter().sum::<f64>() / n as f64;
        let var = data.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        if !(sd > 0.0) {
            return None;
        }
        Some(GevModel {
            z: data.iter().map(|x| (x - mean) / sd).collect(),
            center: mean,
            scale: sd,
            hat: None,
        })
    }

    fn to_std(&self, x: f64) -> f64 {
        (x - self.center) / self.scale
    }

    fn unstandardise(&self, g: &Gev) -> Gev {
        Gev {
            mu: self.center + self.scale * g.mu,
            sigma: self.scale * g.sigma,
            xi: g.xi,
        }
    }

    fn nll_shift(&self) -> f64 {
        self.z.len() as f64 * self.scale.ln()
    }

    /// The maximum-likelihood fit.
    pub fn fit(&mut self) -> Option<GevFit> {
        let z = &self.z;
        let f = |p: &[f64]| {
            nll(
                z,
                &Gev {
                    mu: p[0],
                    sigma: p[1].exp(),
                    xi: p[2],
                },
            )
        };
        let (x, fx) = minimise_standardised(&f)?;
        let g = Gev {
            mu: x[0],
            sigma: x[1].exp(),
            xi: x[2],
        };
        self.hat = Some((g, fx));
        let natural = |p: &[f64]| {
            nll(
                z,
                &Gev {
                    mu: p[0],
                    sigma: p[1],
                    xi: p[2],
                },
            )
        };
        let h = optim::hessian(
            &natural,
            &[g.mu, g.sigma, g.xi],
            &[1e-4, 1e-4 * g.sigma, 1e-4],
        );
        let se = optim::inverse_spd(&h).and_then(|c| {
            let s = [
                c[0][0].sqrt() * self.scale,
                c[1][1].sqrt() * self.scale,
                c[2][2].sqrt(),
            ];
            s.iter().all(|v| v.is_finite()).then_some(s)
        });
        Some(GevFit {
            dist: self.unstandardise(&g),
            nll: fx + self.nll_shift(),
            se,
            n: self.z.len(),
        })
    }

    fn hat(&self) -> (Gev, f64) {
        self.hat.expect("fit() before a profile")
    }

    /// Profile-likelihood interval of the shape at `confidence`.
    pub fn shape_interval(&self, confidence: f64, se: Option<f64>) -> Interval {
        let (g, nll_hat) = self.hat();
        let z = &self.z;
        let nll_at = |p: &[f64], xi: f64| {
            nll(
                z,
                &Gev {
                    mu: p[0],
                    sigma: p[1].exp(),
                    xi,
                },
            )
        };
        let warm = vec![g.mu, g.sigma.ln()];
        profile::shape(
            &nll_at,
            warm,
            (&[0.1, 0.1], 1),
            (g.xi, nll_hat),
            se,
            confidence,
        )
    }

    /// Profile-likelihood interval of the level exceeded with probability `q` per block, in the
    /// data's units, with the estimate.
    pub fn level_interval(&self, q: f64, confidence: f64) -> (f64, Interval) {
        let (g, nll_hat) = self.hat();
        let z = &self.z;
        let level = g.level_exceeded(q);
        let mut warm = vec![g.sigma.ln(), g.xi];
        let mut prof = |zq: f64| {
            let f = |p: &[f64]| {
                let (sigma, xi) = (p[0].exp(), p[1]);
                nll(
                    z,
                    &Gev {
                        mu: Gev::location_for(zq, q, sigma, xi),
                        sigma,
                        xi,
                    },
                )
            };
            let (x, fx) = optim::minimise_near(&f, &warm, &[0.1, 0.05], 0)?;
            warm = x;
            Some(fx)
        };
        let step = (0.1 * g.sigma).max(1e-3);
        let i = profile::interval(&mut prof, level, nll_hat, step, (-1e6, 1e6), confidence);
        let back = |v: f64| self.center + self.scale * v;
        (
            back(level),
            Interval {
                lower: i.lower.map(back),
                upper: i.upper.map(back),
            },
        )
    }

    /// The probability that one block's maximum exceeds `budget`, with its profile-likelihood
    /// interval (searched on the log scale, down to 1e-300).
    pub fn exceedance_interval(&self, budget: f64, confidence: f64) -> (f64, Interval) {
        let (g, nll_hat) = self.hat();
        let z = &self.z;
        let b = self.to_std(budget);
        let q_hat = g.sf(b);
        let ln_q_hat = q_hat.max(1e-300).ln().min(-1e-12);
        let mut warm = vec![g.sigma.ln(), g.xi];
        let mut prof = |ln_q: f64| {
            let q = ln_q.exp();
            let f = |p: &[f64]| {
                let (sigma, xi) = (p[0].exp(), p[1]);
                nll(
                    z,
                    &Gev {
                        mu: Gev::location_for(b, q, sigma, xi),
                        sigma,
                        xi,
                    },
                )
            };
            let (x, fx) = optim::minimise_near(&f, &warm, &[0.1, 0.05], 0)?;
            warm = x;
            Some(fx)
        };
        let bounds = (1e-300f64.ln(), -1e-12);
        let i = profile::interval(&mut prof, ln_q_hat, nll_hat, 1.0, bounds, confidence);
        // A bound the search ran into is the bound: 0 below, 1 above.
        let lower = Some(i.lower.map_or(0.0, f64::exp));
        let upper = Some(i.upper.map_or(1.0, f64::exp));
        (q_hat, Interval { lower, upper })
    }

    /// The estimate in the data's units, after [`GevModel::fit`].
    pub fn estimate(&self) -> Option<Gev> {
        self.hat.map(|(g, _)| self.unstandardise(&g))
    }
}

/// Fits a GEV to `data`; `None` when it cannot be fitted (too few, all equal, no convergence).
pub fn fit(data: &[f64]) -> Option<GevFit> {
    GevModel::new(data)?.fit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(g: &Gev, n: usize, seed: u64) -> Vec<f64> {
        let mut u = crate::rng::Uniform::new(seed);
        (0..n).map(|_| g.quantile(u.open01())).collect()
    }

    #[test]
    fn recovers_known_parameters() {
        for (xi, seed) in [(-0.2, 1), (0.0, 2), (0.25, 3)] {
            let truth = Gev {
                mu: 40.0,
                sigma: 5.0,
                xi,
            };
            let data = sample(&truth, 4000, seed);
            let fit = fit(&data).unwrap();
            let se = fit.se.unwrap();
            assert!((fit.dist.mu - 40.0).abs() < 4.0 * se[0], "{fit:?}");
            assert!((fit.dist.sigma - 5.0).abs() < 4.0 * se[1], "{fit:?}");
            assert!((fit.dist.xi - xi).abs() < 4.0 * se[2], "{fit:?}");
        }
    }

    #[test]
    fn profile_intervals_contain_the_estimate() {
        let truth = Gev {
            mu: 40.0,
            sigma: 5.0,
            xi: -0.1,
        };
        let data = sample(&truth, 300, 7);
        let mut m = GevModel::new(&data).unwrap();
        let fit = m.fit().unwrap();
        let xi = m.shape_interval(0.95, fit.se.map(|s| s[2]));
        assert!(xi.lower.unwrap() < fit.dist.xi && fit.dist.xi < xi.upper.unwrap());
        let (level, i) = m.level_interval(1e-3, 0.95);
        assert!((level - fit.dist.level_exceeded(1e-3)).abs() < 1e-6 * level);
        assert!(
            i.lower.unwrap() < level && level < i.upper.unwrap(),
            "{i:?}"
        );
        let (q, i) = m.exceedance_interval(level, 0.95);
        assert!((q - 1e-3).abs() < 1e-6, "{q}");
        assert!(i.lower.unwrap() < q && q < i.upper.unwrap(), "{i:?}");
    }

    #[test]
    fn heavy_tails_get_intervals_on_both_sides() {
        // Holding a return level above the estimate moves the location up, past the smallest
        // maximum of a heavy tail: the inner fit must widen the scale to find its support.
        for seed in [31, 32, 33] {
            let data = sample(
                &Gev {
                    mu: 10.0,
                    sigma: 3.0,
                    xi: 0.5,
                },
                150,
                seed,
            );
            let mut m = GevModel::new(&data).unwrap();
            let fit = m.fit().unwrap();
            let xi = m.shape_interval(0.95, fit.se.map(|s| s[2]));
            assert!(xi.upper.unwrap() > fit.dist.xi + 0.01, "{xi:?} {fit:?}");
            for q in [1e-2, 1e-4] {
                let (level, i) = m.level_interval(q, 0.95);
                assert!(
                    i.upper.is_none_or(|u| u > level * 1.01),
                    "{q}: {level} {i:?}"
                );
                assert!(i.lower.unwrap() < level * 0.99, "{q}: {level} {i:?}");
            }
        }
    }

    #[test]
    fn degenerate_data_is_refused() {
        assert!(fit(&[5.0; 40]).is_none());
        assert!(fit(&[1.0, 2.0]).is_none());
        assert!(fit(&[1.0, f64::NAN, 3.0, 4.0]).is_none());
    }
}
