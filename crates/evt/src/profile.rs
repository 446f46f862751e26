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
pub(crate) fn interval(
    profile: &mut dyn FnMut(f64) -> Option<f64>,
    psi_hat: f64,
    nll_hat: f64,
    step: f64,
    bounds: (f64, f64),
    confidence: f64,
) -> Interval {
    let crit = critical(confidence);
    let outside = |psi: f64, profile: &mut dyn FnMut(f64) -> Option<f64>| {
        profile(psi).is_none_or(|v| 2.0 * (v - nll_hat) > crit)
    };
    let mut side = |dir: f64, bound: f64| -> Option<f64> {
        let mut inside = psi_hat;
        let mut s = step;
        let mut out = None;
        for _ in 0..64 {
            let mut next = psi_hat + dir * s;
            let at_bound = (next - bound) * dir >= 0.0;
            if at_bound {
                next = bound;
            }
            if outside(next, profile) {
                out = Some(next);
                break;
            }
            inside = next;
            if at_bound {
                return None;
            }
            s *= 2.0;
        }
        let mut out = out?;
        for _ in 0..60 {
            if (out - inside).abs() <= 1e-9 * (1.0 + psi_hat.abs()) {
                break;
            }
            let mid = 0.5 * (inside + out);
            if outside(mid, profile) {
                out = mid;
            } else {
                inside = mid;
            }
        }
        Some(0.5 * (inside + out))
    };
    let lower = side(-1.0, bounds.0);
    let upper = side(1.0, bounds.1);
    Interval { lower, upper }
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
