//! Profile-likelihood confidence intervals: the values of one quantity whose profile deviance
//! `2 (nll_profile(psi) - nll_hat)` stays below the chi-squared(1) quantile at the confidence
//! asked (3.84 at 95 %). Found by stepping out from the estimate, doubling the step, then
//! bisecting the crossing.
//!
//! Unlike the delta method, the interval follows the likelihood's shape: a return level's
//! interval is rightly longer above than below.

use statrs::distribution::{ChiSquared, ContinuousCDF};

/// A confidence interval; an end is `None` where the search reached the bound it was given
/// without leaving the confidence region (the data do not limit the quantity on that side).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub lower: Option<f64>,
    /// Upper end.
    pub upper: Option<f64>,
}

/// The chi-squared(1) quantile for a two-sided interval at `confidence`.
pub(crate) fn critical(confidence: f64) -> f64 {
    ChiSquared::new(1.0).map_or(3.841_458_820_694_124, |c| c.inverse_cdf(confidence))
}

/// The profile interval of `psi` around its estimate `psi_hat`.
///
/// `profile(psi)` is the negative log-likelihood minimised over the other parameters with
/// `psi` held (`None`: no admissible parameters there, taken as outside the region).
/// Each end is bracketed by doubling steps out from the estimate, then found by the Illinois
/// variant of regula falsi on the deviance (bisection where the outer point is inadmissible):
/// a few profile evaluations where bisection needs twenty.
pub(crate) fn interval(
    profile: &mut dyn FnMut(f64) -> Option<f64>,
    psi_hat: f64,
    nll_hat: f64,
    step: f64,
    bounds: (f64, f64),
    confidence: f64,
) -> Interval {
    let crit = critical(confidence);
    // Deviance minus the limit: <= 0 inside the region; None outside the admissible space.
    let mut g = |psi: f64| profile(psi).map(|v| 2.0 * (v - nll_hat) - crit);
    let mut side = |dir: f64, bound: f64| -> Option<f64> {
        let (mut a, mut ga) = (psi_hat, -crit);
        let mut s = step;
        let mut b = None;
        for _ in 0..64 {
            let at_bound = (psi_hat + dir * s - bound) * dir >= 0.0;
            let next = if at_bound { bound } else { psi_hat + dir * s };
            match g(next) {
                Some(v) if v <= 0.0 => (a, ga) = (next, v),
                other => {
                    b = Some((next, other));
                    break;
                }
            }
            if at_bound {
                return None;
            }
            s *= 2.0;
        }
        let (mut b, mut gb) = b?;
        let tol = 1e-6 * (1.0 + psi_hat.abs());
        let mut last = 0i8;
        for _ in 0..60 {
            if (b - a).abs() <= tol {
                break;
            }
            let mid = 0.5 * (a + b);
            let c = match gb {
                Some(vb) if vb.is_finite() && vb > ga => {
                    let c = b - vb * (b - a) / (vb - ga);
                    if (c - a) * (c - b) < 0.0 { c } else { mid }
                }
                _ => mid,
            };
            match g(c) {
                Some(v) if v.abs() < 1e-7 => return Some(c),
                Some(v) if v <= 0.0 => {
                    (a, ga) = (c, v);
                    // Illinois: the end that stays twice running has its value halved.
                    if last == -1 {
                        gb = gb.map(|x| x / 2.0);
                    }
                    last = -1;
                }
                other => {
                    (b, gb) = (c, other);
                    if last == 1 {
                        ga /= 2.0;
                    }
                    last = 1;
                }
            }
        }
        Some(0.5 * (a + b))
    };
    let lower = side(-1.0, bounds.0);
    let upper = side(1.0, bounds.1);
    Interval { lower, upper }
}

/// The profile interval of the shape: `nll(nuisance, xi)` minimised over the nuisance
/// parameters from `warm` (simplex edges `step`, the log-scale at index `widen`), around the
/// estimate `(xi_hat, nll_hat)`,
/// searched within the shapes a fit may take.
pub(crate) fn shape(
    nll: &dyn Fn(&[f64], f64) -> f64,
    mut warm: Vec<f64>,
    (step, widen): (&[f64], usize),
    (xi_hat, nll_hat): (f64, f64),
    se: Option<f64>,
    confidence: f64,
) -> Interval {
    let mut prof = |xi: f64| {
        let f = |p: &[f64]| nll(p, xi);
        let (x, fx) = crate::optim::minimise_near(&f, &warm, step, widen)?;
        warm = x;
        Some(fx)
    };
    let first = se.unwrap_or(0.1).clamp(0.01, 0.5);
    let bounds = (-0.999, crate::MAX_SHAPE - 1e-3);
    interval(&mut prof, xi_hat, nll_hat, first, bounds, confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quadratic_profile_gives_the_normal_interval() {
        // nll = (psi - 2)^2 / (2 * 0.5^2): the 95 % interval is 2 -/+ 1.96 * 0.5.
        let mut p = |psi: f64| Some((psi - 2.0).powi(2) / 0.5);
        let i = interval(&mut p, 2.0, 0.0, 0.1, (-100.0, 100.0), 0.95);
        assert!((i.lower.unwrap() - (2.0 - 0.979_982)).abs() < 1e-5, "{i:?}");
        assert!((i.upper.unwrap() - (2.0 + 0.979_982)).abs() < 1e-5, "{i:?}");
    }

    #[test]
    fn an_unbounded_side_is_none() {
        let mut p = |psi: f64| Some(if psi < 0.0 { psi * psi } else { 0.0 });
        let i = interval(&mut p, 0.0, 0.0, 0.1, (-50.0, 50.0), 0.95);
        assert!(i.lower.is_some());
        assert_eq!(i.upper, None);
    }
}
