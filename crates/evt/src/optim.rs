//! Minimising a negative log-likelihood: argmin's Nelder-Mead, restarted from its own answer
//! until a restart no longer improves it (a simplex can collapse before the minimum), and a
//! finite-difference Hessian for standard errors.
//!
//! Likelihoods here are of two or three parameters on standardised data, so a derivative-free
//! simplex is robust where the support boundary makes gradients jump.

use argmin::core::{CostFunction, Error, Executor, State};
use argmin::solver::neldermead::NelderMead;

/// What a cost returns outside the parameter space: finite, so the simplex can order it.
pub(crate) const OUTSIDE: f64 = 1e300;

struct Problem<'a> {
    f: &'a dyn Fn(&[f64]) -> f64,
}

impl CostFunction for Problem<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, p: &Vec<f64>) -> Result<f64, Error> {
        let v = (self.f)(p);
        Ok(if v.is_finite() {
            v.min(OUTSIDE)
        } else {
            OUTSIDE
        })
    }
}

fn one_simplex(
    f: &dyn Fn(&[f64]) -> f64,
    x0: &[f64],
    step: &[f64],
    iters: u64,
) -> Option<(Vec<f64>, f64)> {
    let mut vertices = vec![x0.to_vec()];
    for (i, s) in step.iter().enumerate() {
        let mut v = x0.to_vec();
        v[i] += s;
        vertices.push(v);
    }
    // Converged when the vertices' costs agree to about 1e-11 of the cost: an absolute
    // tolerance below the cost's rounding would never be met, and the simplex would run to
    // its iteration limit.
    let f0 = f(x0);
    let tol = 1e-11 * (1.0 + if f0 < OUTSIDE { f0.abs() } else { 0.0 });
    let solver = NelderMead::new(vertices).with_sd_tolerance(tol).ok()?;
    let result = Executor::new(Problem { f }, solver)
        .configure(|s| s.max_iters(iters))
        .timer(false)
        .run()
        .ok()?;
    let state = result.state();
    let best = state.get_best_param()?.clone();
    Some((best, state.get_best_cost()))
}

/// The minimum of `f` from `x0`, with initial simplex edges `step`; `None` when no point
/// inside the parameter space was found.
pub(crate) fn minimise(
    f: &dyn Fn(&[f64]) -> f64,
    x0: &[f64],
    step: &[f64],
) -> Option<(Vec<f64>, f64)> {
    minimise_with(f, x0, step, 4, 4000)
}

/// [`minimise`] for the inner problems of a profile likelihood: started from the neighbouring
/// solution, one restart is enough, and the search runs hundreds of them. Holding the profiled
/// quantity further out can put the neighbour outside the support (a data point beyond the
/// distribution's end, where every vertex costs the same and the simplex cannot move); the
/// start is then moved along coordinate `widen` (the log-scale, or the shape for a GPD level),
/// which widens the support, until it is admissible.
pub(crate) fn minimise_near(
    f: &dyn Fn(&[f64]) -> f64,
    x0: &[f64],
    step: &[f64],
    widen: usize,
) -> Option<(Vec<f64>, f64)> {
    let mut start = x0.to_vec();
    for _ in 0..40 {
        if f(&start) < OUTSIDE {
            break;
        }
        start[widen] += 0.5;
    }
    minimise_with(f, &start, step, 1, 600)
}

fn minimise_with(
    f: &dyn Fn(&[f64]) -> f64,
    x0: &[f64],
    step: &[f64],
    restarts: usize,
    iters: u64,
) -> Option<(Vec<f64>, f64)> {
    let (mut x, mut fx) = one_simplex(f, x0, step, iters)?;
    // Restart with a fresh simplex around the answer: Nelder-Mead may stall on a ridge.
    for _ in 0..restarts {
        let small: Vec<f64> = step.iter().map(|s| s * 0.1).collect();
        let Some((x2, f2)) = one_simplex(f, &x, &small, iters) else {
            break;
        };
        let improved = fx - f2 > 1e-10 * (1.0 + fx.abs());
        if f2 < fx {
            x = x2;
            fx = f2;
        }
        if !improved {
            break;
        }
    }
    (fx < OUTSIDE).then_some((x, fx))
}

/// Central finite-difference Hessian of `f` at `x`, with steps `h`.
#[allow(clippy::needless_range_loop)] // matrix code reads best with indices
pub(crate) fn hessian(f: &dyn Fn(&[f64]) -> f64, x: &[f64], h: &[f64]) -> Vec<Vec<f64>> {
    let n = x.len();
    let at = |d: &[(usize, f64)]| {
        let mut p = x.to_vec();
        for &(i, s) in d {
            p[i] += s;
        }
        f(&p)
    };
    let f0 = f(x);
    let mut out = vec![vec![0.0; n]; n];
    for i in 0..n {
        let hi = h[i];
        out[i][i] = (at(&[(i, hi)]) - 2.0 * f0 + at(&[(i, -hi)])) / (hi * hi);
        for j in 0..i {
            let hj = h[j];
            let v = (at(&[(i, hi), (j, hj)]) - at(&[(i, hi), (j, -hj)]) - at(&[(i, -hi), (j, hj)])
                + at(&[(i, -hi), (j, -hj)]))
                / (4.0 * hi * hj);
            out[i][j] = v;
            out[j][i] = v;
        }
    }
    out
}

/// The inverse of a small symmetric positive-definite matrix (Cholesky); `None` when it is not
/// positive definite (the fit is at a boundary, or flat in some direction).
#[allow(clippy::needless_range_loop)] // matrix code reads best with indices
pub(crate) fn inverse_spd(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = a[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    // Invert L, then A^-1 = L^-T L^-1.
    let mut li = vec![vec![0.0; n]; n];
    for i in 0..n {
        li[i][i] = 1.0 / l[i][i];
        for j in 0..i {
            let s: f64 = (j..i).map(|k| l[i][k] * li[k][j]).sum();
            li[i][j] = -s / l[i][i];
        }
    }
    let mut inv = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..n {
            inv[i][j] = (i.max(j)..n).map(|k| li[k][i] * li[k][j]).sum();
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimises_a_rosenbrock_valley() {
        let f = |p: &[f64]| (1.0 - p[0]).powi(2) + 100.0 * (p[1] - p[0] * p[0]).powi(2);
        let (x, fx) = minimise(&f, &[-1.2, 1.0], &[0.5, 0.5]).unwrap();
        assert!(fx < 1e-10, "{fx}");
        assert!(
            (x[0] - 1.0).abs() < 1e-4 && (x[1] - 1.0).abs() < 1e-4,
            "{x:?}"
        );
    }

    #[test]
    fn nothing_inside_the_space_is_none() {
        let f = |_: &[f64]| f64::INFINITY;
        assert!(minimise(&f, &[0.0], &[1.0]).is_none());
    }

    #[test]
    fn hessian_and_inverse_of_a_quadratic() {
        // f = x^2 + x y + 2 y^2: H = [[2, 1], [1, 4]], H^-1 = [[4, -1], [-1, 2]] / 7.
        let f = |p: &[f64]| p[0] * p[0] + p[0] * p[1] + 2.0 * p[1] * p[1];
        let h = hessian(&f, &[0.3, -0.2], &[1e-3, 1e-3]);
        let inv = inverse_spd(&h).unwrap();
        let want = [[4.0 / 7.0, -1.0 / 7.0], [-1.0 / 7.0, 2.0 / 7.0]];
        for i in 0..2 {
            for j in 0..2 {
                assert!((inv[i][j] - want[i][j]).abs() < 1e-6);
            }
        }
        assert!(inverse_spd(&[vec![1.0, 2.0], vec![2.0, 1.0]]).is_none());
    }
}
