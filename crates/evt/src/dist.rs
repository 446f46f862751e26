//! The two extreme-value distributions: the generalised extreme value distribution (GEV) of
//! block maxima and the generalised Pareto distribution (GPD) of exceedances over a threshold.
//!
//! Shape convention: `xi > 0` is a heavy tail with no upper bound (Fréchet), `xi = 0` the
//! Gumbel/exponential limit, `xi < 0` a tail bounded above at `mu - sigma / xi` (Weibull).
//! This is the convention of Coles (2001), R's `evd`/`extRemes` and `scipy.stats.genpareto`;
//! `scipy.stats.genextreme` uses `c = -xi`.
//!
//! Every formula near `xi = 0` goes through `ln_1p`/`exp_m1`, so a shape of 1e-12 is as exact
//! as a shape of 0.3 and there is no branch to fall off.

/// `ln(1 + xi*s) / xi`, continuous through `xi = 0` (where it is `s`); `None` outside the
/// support (`1 + xi*s <= 0`).
fn log_t_over_xi(xi: f64, s: f64) -> Option<f64> {
    let a = xi * s;
    if a <= -1.0 {
        return None;
    }
    if a.abs() < 1e-300 {
        return Some(s);
    }
    Some(a.ln_1p() / xi)
}

/// `(exp(xi*l) - 1) / xi`, continuous through `xi = 0` (where it is `l`).
fn expm1_over_xi(xi: f64, l: f64) -> f64 {
    let a = xi * l;
    if a.abs() < 1e-300 {
        return l;
    }
    a.exp_m1() / xi
}

/// A generalised extreme value distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gev {
    /// Location.
    pub mu: f64,
    /// Scale (> 0).
    pub sigma: f64,
    /// Shape.
    pub xi: f64,
}

impl Gev {
    /// Distribution function.
    pub fn cdf(&self, x: f64) -> f64 {
        let s = (x - self.mu) / self.sigma;
        match log_t_over_xi(self.xi, s) {
            Some(l) => (-(-l).exp()).exp(),
            // Outside the support: below the lower end (heavy tail) or above the upper end.
            None if self.xi > 0.0 => 0.0,
            None => 1.0,
        }
    }

    /// Log density; `-inf` outside the support.
    pub fn ln_pdf(&self, x: f64) -> f64 {
        let s = (x - self.mu) / self.sigma;
        match log_t_over_xi(self.xi, s) {
            // ln t = xi * l; density: (1/sigma) t^(-1/xi - 1) exp(-t^(-1/xi)).
            Some(l) => -self.sigma.ln() - (1.0 + self.xi) * l - (-l).exp(),
            None => f64::NEG_INFINITY,
        }
    }

    /// The value not exceeded with probability `p` (0 < p < 1).
    pub fn quantile(&self, p: f64) -> f64 {
        // y = -ln p; x = mu + sigma (y^-xi - 1) / xi.
        let ln_y = (-p.ln()).ln();
        self.mu + self.sigma * expm1_over_xi(self.xi, -ln_y)
    }

    /// Exceedance probability `P(X > x)`, exact in the far tail where `1 - cdf` rounds to 0.
    pub fn sf(&self, x: f64) -> f64 {
        let s = (x - self.mu) / self.sigma;
        match log_t_over_xi(self.xi, s) {
            Some(l) => -(-(-l).exp()).exp_m1(),
            None if self.xi > 0.0 => 1.0,
            None => 0.0,
        }
    }

    /// The value exceeded with probability `q` (0 < q < 1), exact for a tiny `q`.
    pub fn level_exceeded(&self, q: f64) -> f64 {
        Self::location_for(0.0, q, self.sigma, self.xi).mul_add(-1.0, self.mu)
    }

    /// The upper end of the support, when the tail is bounded (`xi < 0`).
    pub fn upper_end(&self) -> Option<f64> {
        (self.xi < 0.0).then(|| self.mu - self.sigma / self.xi)
    }

    /// Location that puts the value `z` at exceedance probability `q`, for the given scale
    /// and shape: the reparametrisation the profile likelihood of a return level uses.
    pub fn location_for(z: f64, q: f64, sigma: f64, xi: f64) -> f64 {
        // y = -ln(1 - q), exact for a tiny q.
        let ln_y = (-(-q).ln_1p()).ln();
        z - sigma * expm1_over_xi(xi, -ln_y)
    }
}

/// A generalised Pareto distribution of exceedances `x >= 0` over a threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gpd {
    /// Scale (> 0).
    pub sigma: f64,
    /// Shape.
    pub xi: f64,
}

impl Gpd {
    /// Distribution function of the exceedance.
    pub fn cdf(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        match log_t_over_xi(self.xi, x / self.sigma) {
            Some(l) => -(-l).exp_m1(),
            None => 1.0,
        }
    }

    /// Survival function `P(X > x)`, exact in the far tail where `1 - cdf` would round to 0.
    pub fn sf(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 1.0;
        }
        match log_t_over_xi(self.xi, x / self.sigma) {
            Some(l) => (-l).exp(),
            None => 0.0,
        }
    }

    /// Log density; `-inf` outside the support.
    pub fn ln_pdf(&self, x: f64) -> f64 {
        if x < 0.0 {
            return f64::NEG_INFINITY;
        }
        match log_t_over_xi(self.xi, x / self.sigma) {
            Some(l) => -self.sigma.ln() - (1.0 + self.xi) * l,
            None => f64::NEG_INFINITY,
        }
    }

    /// The exceedance not exceeded with probability `p` (0 <= p < 1).
    pub fn quantile(&self, p: f64) -> f64 {
        // sigma ((1-p)^-xi - 1) / xi
        self.sigma * expm1_over_xi(self.xi, -(-p).ln_1p())
    }

    /// The exceedance reached once in `n` exceedances (`n >= 1`): `quantile(1 - 1/n)`.
    pub fn level_in(&self, n: f64) -> f64 {
        self.sigma * expm1_over_xi(self.xi, n.ln())
    }

    /// The scale that puts the exceedance `z` at once in `n` exceedances, for the given shape;
    /// `None` where no positive scale does.
    pub fn scale_for(z: f64, n: f64, xi: f64) -> Option<f64> {
        let h = expm1_over_xi(xi, n.ln());
        (h > 0.0 && z > 0.0).then(|| z / h)
    }

    /// The upper end of the exceedance's support, when bounded (`xi < 0`).
    pub fn upper_end(&self) -> Option<f64> {
        (self.xi < 0.0).then(|| -self.sigma / self.xi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gev_quantile_inverts_cdf_across_shapes() {
        for xi in [-0.8, -0.3, -1e-9, 0.0, 1e-9, 0.2, 0.7] {
            let g = Gev {
                mu: 10.0,
                sigma: 2.0,
                xi,
            };
            for p in [1e-6, 0.01, 0.5, 0.99, 1.0 - 1e-9] {
                let x = g.quantile(p);
                assert!((g.cdf(x) - p).abs() < 1e-9 * p.max(1e-3), "xi {xi} p {p}");
            }
        }
    }

    #[test]
    fn gev_near_zero_shape_matches_gumbel() {
        let gumbel = Gev {
            mu: 1.0,
            sigma: 3.0,
            xi: 0.0,
        };
        let near = Gev {
            mu: 1.0,
            sigma: 3.0,
            xi: 1e-10,
        };
        for x in [-5.0, 0.0, 4.0, 30.0] {
            assert!((gumbel.ln_pdf(x) - near.ln_pdf(x)).abs() < 1e-8);
            assert!((gumbel.cdf(x) - near.cdf(x)).abs() < 1e-9);
        }
        // Gumbel density at its mode: 1/(e sigma).
        assert!((gumbel.ln_pdf(1.0) - (-(3.0f64.ln()) - 1.0)).abs() < 1e-12);
    }

    #[test]
    fn gev_support_ends() {
        let bounded = Gev {
            mu: 0.0,
            sigma: 1.0,
            xi: -0.5,
        };
        assert_eq!(bounded.upper_end(), Some(2.0));
        assert_eq!(bounded.cdf(2.5), 1.0);
        assert_eq!(bounded.ln_pdf(2.5), f64::NEG_INFINITY);
        let heavy = Gev {
            mu: 0.0,
            sigma: 1.0,
            xi: 0.5,
        };
        assert_eq!(heavy.cdf(-3.0), 0.0);
        assert_eq!(heavy.upper_end(), None);
    }

    #[test]
    fn gpd_quantile_level_and_scale_agree() {
        for xi in [-0.4, 0.0, 1e-12, 0.3] {
            let g = Gpd { sigma: 5.0, xi };
            for n in [1.5, 10.0, 1e6] {
                let z = g.level_in(n);
                assert!(
                    (g.sf(z) - 1.0 / n).abs() < 1e-9 / n.min(10.0),
                    "xi {xi} n {n}"
                );
                let s = Gpd::scale_for(z, n, xi).unwrap();
                assert!((s - 5.0).abs() < 1e-9);
            }
            assert!((g.quantile(0.9) - g.level_in(10.0)).abs() < 1e-9);
        }
        // Exponential: sf(x) = exp(-x/sigma).
        let e = Gpd {
            sigma: 2.0,
            xi: 0.0,
        };
        assert!((e.sf(4.0) - (-2.0f64).exp()).abs() < 1e-15);
        assert!((e.ln_pdf(4.0) - (-(2.0f64.ln()) - 2.0)).abs() < 1e-15);
    }

    #[test]
    fn gev_location_for_puts_z_at_p() {
        for xi in [-0.3, 0.0, 0.4] {
            let mu = Gev::location_for(50.0, 0.001, 4.0, xi);
            let g = Gev { mu, sigma: 4.0, xi };
            assert!((g.quantile(0.999) - 50.0).abs() < 1e-9);
            assert!((g.level_exceeded(0.001) - 50.0).abs() < 1e-9);
            let far = g.level_exceeded(1e-15);
            assert!((g.sf(far) / 1e-15 - 1.0).abs() < 1e-6, "xi {xi}");
        }
    }
}
