//! Goodness of fit with p-values that account for the parameters having been estimated from
//! the same data: a parametric bootstrap (samples drawn from the fit, each refitted, its
//! Anderson-Darling and Cramér-von Mises statistics against its own refit). Plain tables for a
//! known distribution would pass bad fits.

use crate::dist::{Gev, Gpd};
use crate::rng::Uniform;
use crate::tests_stat::{Outcome, anderson_darling, cramer_von_mises};

/// Bootstrap samples per p-value by default: 99 gives p-values in steps of 0.01.
pub const BOOTSTRAP: usize = 99;

/// The fitted family, for drawing from and refitting.
#[derive(Clone, Copy, Debug)]
pub enum Family {
    /// Block maxima.
    Gev(Gev),
    /// Exceedances.
    Gpd(Gpd),
}

impl Family {
    fn cdf(&self, x: f64) -> f64 {
        match self {
            Family::Gev(g) => g.cdf(x),
            Family::Gpd(g) => g.cdf(x),
        }
    }

    fn draw(&self, u: f64) -> f64 {
        match self {
            Family::Gev(g) => g.quantile(u),
            Family::Gpd(g) => g.quantile(u),
        }
    }

    fn refit(&self, data: &[f64]) -> Option<Family> {
        match self {
            Family::Gev(_) => crate::gev::fit(data).map(|f| Family::Gev(f.dist)),
            Family::Gpd(_) => crate::gpd::fit(data).map(|f| Family::Gpd(f.dist)),
        }
    }
}

/// Anderson-Darling and Cramér-von Mises outcomes of `fit` on `data`, with `samples` bootstrap
/// refits; `seed` makes the bootstrap reproducible.
pub fn test(data: &[f64], fit: Family, samples: usize, seed: u64) -> (Outcome, Outcome) {
    let stats = |f: &Family, d: &[f64]| {
        let u: Vec<f64> = d.iter().map(|x| f.cdf(*x)).collect();
        (anderson_darling(&u), cramer_von_mises(&u))
    };
    let (ad, cvm) = stats(&fit, data);
    let mut rng = Uniform::new(seed);
    let (mut ge_ad, mut ge_cvm, mut done) = (0usize, 0usize, 0usize);
    let mut sample = vec![0.0; data.len()];
    for _ in 0..samples {
        for v in &mut sample {
            *v = fit.draw(rng.open01());
        }
        let Some(refit) = fit.refit(&sample) else {
            continue;
        };
        let (a, c) = stats(&refit, &sample);
        done += 1;
        ge_ad += usize::from(a >= ad);
        ge_cvm += usize::from(c >= cvm);
    }
    let p = |ge: usize| (1 + ge) as f64 / (1 + done) as f64;
    (
        Outcome {
            statistic: ad,
            p_value: p(ge_ad),
        },
        Outcome {
            statistic: cvm,
            p_value: p(ge_cvm),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_true_model_passes_and_a_wrong_one_fails() {
        let truth = Gpd {
            sigma: 3.0,
            xi: 0.1,
        };
        let mut u = Uniform::new(5);
        let data: Vec<f64> = (0..200).map(|_| truth.quantile(u.open01())).collect();
        let fit = crate::gpd::fit(&data).unwrap();
        let (ad, cvm) = test(&data, Family::Gpd(fit.dist), BOOTSTRAP, 1);
        assert!(ad.p_value > 0.01 && cvm.p_value > 0.01, "{ad:?} {cvm:?}");
        // A mixture of two well-separated exponentials is no GPD.
        let mixed: Vec<f64> = (0..400)
            .map(|i| {
                if i % 2 == 0 {
                    u.open01()
                } else {
                    20.0 + u.open01()
                }
            })
            .collect();
        let fit = crate::gpd::fit(&mixed).unwrap();
        let (ad, _) = test(&mixed, Family::Gpd(fit.dist), BOOTSTRAP, 1);
        assert!(ad.p_value <= 0.01, "{ad:?}");
    }
}
