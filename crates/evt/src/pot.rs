//! Peaks over threshold on the per-second maxima: runs declustering (consecutive seconds above
//! the threshold are one cluster, its largest value kept) and the threshold rule.
//!
//! The rule, stated in every result: candidates are the 50th to 97.5th percentiles of the
//! per-second maxima with at least [`MIN_CLUSTERS`] clusters above them; the threshold is the
//! lowest candidate whose shape estimate is stable, i.e. every higher candidate's shape lies
//! within its 95 % Wald interval (the parameter-stability plot read by a rule). The mean excess
//! over each candidate is kept for the mean-residual-life plot.

use model::worst::Candidate;

use crate::gpd;

/// The fewest clusters a GPD is fitted to.
pub const MIN_CLUSTERS: usize = 30;

const LEVELS: [f64; 10] = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975];

/// The rule in words.
pub const RULE: &str = "lowest of the 50th-97.5th percentiles of the per-second maxima (at least 30 clusters) whose shape every higher candidate's shape stays within the 95% interval of";

/// Cluster maxima above `u`, as excesses, in time order, with the index of each cluster's
/// first value.
pub fn decluster(values: &[f64], u: f64) -> Vec<(usize, f64)> {
    let mut out: Vec<(usize, f64)> = Vec::new();
    let mut open = false;
    for (i, &v) in values.iter().enumerate() {
        if v > u {
            match out.last_mut() {
                Some(last) if open => last.1 = last.1.max(v - u),
                _ => out.push((i, v - u)),
            }
            open = true;
        } else {
            open = false;
        }
    }
    out
}

fn quantile(sorted: &[f64], p: f64) -> f64 {
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The candidates considered, ascending, each with its fit.
pub fn candidates(values: &[f64]) -> Vec<Candidate> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Candidate> = Vec::new();
    for p in LEVELS {
        let u = quantile(&sorted, p);
        if out.last().is_some_and(|c| c.threshold_ns >= u) {
            continue;
        }
        let clusters = decluster(values, u);
        if clusters.len() < MIN_CLUSTERS {
            break;
        }
        let excess: Vec<f64> = clusters.iter().map(|c| c.1).collect();
        if crate::tests_stat::distinct(&excess) < crate::tests_stat::MIN_DISTINCT {
            continue;
        }
        let Some(fit) = gpd::fit(&excess) else {
            continue;
        };
        out.push(Candidate {
            threshold_ns: u,
            clusters: excess.len() as u64,
            mean_excess_ns: excess.iter().sum::<f64>() / excess.len() as f64,
            shape: fit.dist.xi,
            shape_se: fit.se.map(|s| s[1]),
        });
    }
    out
}

/// The index of the chosen candidate (see the module's rule); the highest when none is stable.
pub fn choose(c: &[Candidate]) -> Option<usize> {
    let stable = |k: usize| {
        // A fit without a standard error (shape below -0.5, or a flat likelihood) is not regular
        // enough to anchor the rule.
        let Some(se) = c[k].shape_se else {
            return false;
        };
        c[k + 1..]
            .iter()
            .all(|h| (h.shape - c[k].shape).abs() <= 1.96 * se)
    };
    (0..c.len())
        .find(|&k| stable(k))
        .or_else(|| c.len().checked_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_exceedances_are_one_cluster() {
        let v = [1.0, 5.0, 7.0, 2.0, 6.0, 1.0, 9.0];
        let c = decluster(&v, 4.0);
        assert_eq!(c, vec![(1, 3.0), (4, 2.0), (6, 5.0)]);
        assert!(decluster(&v, 10.0).is_empty());
    }

    #[test]
    fn the_rule_picks_a_stable_threshold() {
        let mut u = crate::rng::Uniform::new(9);
        let g = crate::dist::Gpd {
            sigma: 4.0,
            xi: -0.1,
        };
        // Below 20 a different body; above it a GPD tail; values shuffled in time.
        let values: Vec<f64> = (0..3000)
            .map(|i| {
                if i % 3 == 0 {
                    20.0 + g.quantile(u.open01())
                } else {
                    10.0 * u.open01()
                }
            })
            .collect();
        let c = candidates(&values);
        let k = choose(&c).unwrap();
        assert!(c[k].threshold_ns >= 10.0, "{:?}", c[k]);
        assert!(c.iter().all(|x| x.clusters >= MIN_CLUSTERS as u64));
    }
}
