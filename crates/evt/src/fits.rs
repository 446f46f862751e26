//! The two methods run on one CPU's per-second maxima, each giving a [`TailFit`]: the
//! estimate, return levels for an hour, a day and a year of operation, the budget's risk per
//! hour, and every check with its verdict.

use model::worst::{BudgetRisk, Check, CurvePoint, Estimate, Method, ReturnLevel, Tail, TailFit};

use crate::dist::{Gev, Gpd};
use crate::gev::GevModel;
use crate::gof::{self, Family};
use crate::gpd::GpdModel;
use crate::profile::Interval;
use crate::tests_stat::{self, MIN_DISTINCT, Outcome, distinct};
use crate::{Settings, pot};

/// The significance level of each check.
pub const ALPHA: f64 = 0.01;

/// The fewest block maxima a GEV is fitted to.
pub const MIN_BLOCKS: usize = 30;

/// Return periods: (words, hours).
pub const PERIODS: [(&str, f64); 3] = [("hour", 1.0), ("day", 24.0), ("year", 8766.0)];

/// One CPU's per-second maxima, in time order, only seconds that have samples.
pub struct Series<'a> {
    /// The maxima (ns).
    pub maxima: &'a [f64],
    /// Length of a slot (ns).
    pub slot_ns: u64,
}

pub(crate) fn estimate(value: f64, se: Option<f64>, i: Interval) -> Estimate {
    Estimate {
        value,
        se,
        lower: i.lower,
        upper: i.upper,
    }
}

pub(crate) fn tail(shape: &Estimate, upper_end: Option<f64>) -> Tail {
    match (shape.lower, shape.upper, upper_end) {
        (_, Some(hi), Some(end)) if hi < 0.0 => Tail::Bounded { upper_end_ns: end },
        (Some(lo), _, _) if lo > 0.0 => Tail::Unbounded,
        _ => Tail::Undecided,
    }
}

fn check(name: &str, o: Option<Outcome>, says: &str) -> Option<Check> {
    o.map(|o| Check {
        name: name.into(),
        statistic: o.statistic,
        p_value: o.p_value,
        passed: o.p_value > ALPHA,
        says: says.into(),
    })
}

/// Independence and stationarity checks of a sequence in time order.
fn order_checks(x: &[f64]) -> Vec<Check> {
    let lags = (x.len() / 5).clamp(1, 10);
    [
        check(
            "ljung-box",
            tests_stat::ljung_box(x, lags),
            "successive maxima are correlated: they are not independent",
        ),
        check(
            "runs",
            tests_stat::runs(x),
            "high and low maxima come in runs: not independent",
        ),
        check(
            "split-half",
            tests_stat::split_half(x),
            "the first and second halves differ: the conditions changed during the run",
        ),
        check(
            "kpss",
            tests_stat::kpss(x),
            "the level drifts: the series is not stationary",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn fit_checks(values: &[f64], family: Family, set: &Settings) -> Vec<Check> {
    let (ad, cvm) = gof::test(values, family, set.bootstrap, 0x5eed);
    let says = "the distribution does not describe the values fitted";
    [
        check("anderson-darling", Some(ad), says),
        check("cramer-von-mises", Some(cvm), says),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Where the second half's maximum falls in what the first half predicts for it
/// (`F1(max)^n2`), as a check passed inside the central 99 %.
fn back_test(p: f64) -> Check {
    let two_sided = (2.0 * p.min(1.0 - p)).clamp(0.0, 1.0);
    Check {
        name: "back-test".into(),
        statistic: p,
        p_value: two_sided,
        passed: two_sided > ALPHA,
        says: "a fit to the first half did not predict the second half's maximum".into(),
    }
}

/// Both methods estimate one shape: the tail's. Where the two estimates differ by more than
/// their errors allow (at 1 %), peaks over threshold is taken to read something else than the
/// tail and is not trusted: its threshold sits near the median of the per-second maxima, where
/// their excesses are only roughly a GPD (an exponential tail's per-second maxima read as
/// bounded, shape -0.4, in 300 s of data; issue #47), while a block's maximum of a thousand
/// samples is what the GEV is the limit of. Block maxima keep the trust their own checks give
/// them.
///
/// Graded on five-minute cyclictest logs of known light and heavy tails: with the check taking
/// the trust of both, 4 of 9 were untrusted by it alone; taking only the threshold fit's, the
/// block-maxima intervals still held the truth (`crates/cli/tests/worst_truth.rs`).
pub fn cross_check(pot: &mut TailFit, gev: &TailFit) {
    let Some(o) =
        tests_stat::agreement(pot.shape.value, pot.shape.se, gev.shape.value, gev.shape.se)
    else {
        return;
    };
    let says = "peaks over threshold and block maxima disagree on the tail's shape: the threshold is too low for the tail's own shape to show";
    add_check([pot], "methods-agree", o, says);
}

/// A check both fits share (they read the same per-second maxima), each fit's trust renewed.
fn add_check<'a>(
    fits: impl IntoIterator<Item = &'a mut TailFit>,
    name: &str,
    o: Outcome,
    says: &str,
) {
    for fit in fits {
        fit.checks.extend(check(name, Some(o), says));
        fit.trusted = fit.checks.iter().all(|c| c.passed);
    }
}

/// The largest block maxima must follow from the rest ([`crate::top::top_follows`]): where they
/// do not, a rare second cause sits above the tail, and neither fit (both read the same
/// per-second maxima) is trusted: the second cause is found with `rtlab explain`, and its own
/// rate needs a longer run.
pub fn top_check(pot: Option<&mut TailFit>, gev: Option<&mut TailFit>) {
    let Some(o) = gev
        .as_ref()
        .and_then(|g| crate::top::top_follows(&g.values_ns))
    else {
        return;
    };
    add_check(
        pot.into_iter().chain(gev),
        "top-follows",
        o,
        "the largest maxima lie beyond what the rest's tail predicts: a rarer second cause (rtlab explain finds it)",
    );
}

pub(crate) fn budget_risk(
    budget_ns: u64,
    per_hour: impl Fn(f64) -> f64,
    q: f64,
    i: Interval,
) -> BudgetRisk {
    BudgetRisk {
        budget_ns,
        per_hour: per_hour(q),
        lower: per_hour(i.lower.unwrap_or(0.0)),
        upper: per_hour(i.upper.unwrap_or(1.0)),
    }
}

/// Return periods of the curve: 13 log-spaced points from `shortest` hours to ten years.
pub(crate) fn curve_hours(shortest: f64) -> Vec<f64> {
    let (a, b) = (shortest.max(1e-6).log10(), (10.0f64 * 8766.0).log10());
    if !(b > a) {
        return Vec::new();
    }
    (0..=12)
        .map(|i| 10f64.powf(a + (b - a) * f64::from(i) / 12.0))
        .collect()
}

/// A curve point from an estimate.
pub(crate) fn point(hours: f64, e: &Estimate) -> CurvePoint {
    CurvePoint {
        hours,
        level_ns: e.value,
        lower_ns: e.lower,
        upper_ns: e.upper,
    }
}

/// Return levels and the curve of a GEV fit to blocks of `block_h` hours.
fn gev_levels(m: &GevModel, block_h: f64, set: &Settings) -> (Vec<ReturnLevel>, Vec<CurvePoint>) {
    let level = |hours: f64| {
        let q = block_h / hours;
        (q < 1.0).then(|| {
            let (v, i) = m.level_interval(q, set.confidence);
            estimate(v, None, i)
        })
    };
    let levels = PERIODS
        .iter()
        .map(|&(per, hours)| ReturnLevel {
            withheld: None,
            per: per.into(),
            hours,
            level_ns: level(hours),
        })
        .collect();
    let curve = curve_hours(2.0 * block_h)
        .into_iter()
        .filter_map(|h| level(h).map(|e| point(h, &e)))
        .collect();
    (levels, curve)
}

/// The block length in slots: the longest of 60, 30, 10, 5, 2 and 1 slots that leaves at least
/// 100 blocks, else 1 slot.
fn block_slots(n: usize) -> usize {
    [60, 30, 10, 5, 2]
        .into_iter()
        .find(|b| n / b >= 100)
        .unwrap_or(1)
}

/// Block maxima: a GEV fitted to the maxima of blocks of whole slots.
pub fn block_maxima(s: &Series, set: &Settings) -> Result<TailFit, String> {
    let b = block_slots(s.maxima.len());
    let maxima: Vec<f64> = s
        .maxima
        .chunks_exact(b)
        .map(|c| c.iter().copied().fold(f64::MIN, f64::max))
        .collect();
    if maxima.len() < MIN_BLOCKS {
        return Err(format!(
            "block maxima: {} blocks of {} s; a GEV needs at least {MIN_BLOCKS}",
            maxima.len(),
            b as u64 * s.slot_ns / 1_000_000_000
        ));
    }
    let kinds = distinct(&maxima);
    if kinds < MIN_DISTINCT {
        return Err(format!(
            "block maxima: the {} maxima take only {kinds} distinct values; a continuous tail needs at least {MIN_DISTINCT}",
            maxima.len()
        ));
    }
    let block_ns = b as u64 * s.slot_ns;
    let mut m = GevModel::new(&maxima).ok_or("block maxima: all blocks have the same maximum")?;
    let fit = m
        .fit()
        .ok_or("block maxima: the GEV fit did not converge")?;
    let g = fit.dist;
    let se = fit.se;
    let shape = estimate(
        g.xi,
        se.map(|s| s[2]),
        m.shape_interval(set.confidence, se.map(|s| s[2])),
    );
    let block_h = block_ns as f64 / 3.6e12;
    let (return_levels, curve) = gev_levels(&m, block_h, set);
    let budget = set.budget_ns.map(|bud| {
        let (q, i) = m.exceedance_interval(bud as f64, set.confidence);
        // Blocks are independent maxima: 1 - (1 - q)^(blocks per hour).
        let per_hour = |q: f64| -((1.0 / block_h) * (-q).ln_1p()).exp_m1();
        budget_risk(bud, per_hour, q, i)
    });
    let mut checks = order_checks(&maxima);
    checks.extend(fit_checks(&maxima, Family::Gev(g), set));
    let half = maxima.len() / 2;
    if let Some(first) = crate::gev::fit(&maxima[..half]) {
        let m2 = maxima[half..].iter().copied().fold(f64::MIN, f64::max);
        checks.push(back_test(
            first.dist.cdf(m2).powf((maxima.len() - half) as f64),
        ));
    }
    Ok(TailFit {
        method: Method::BlockMaxima,
        data: format!(
            "{} maxima of {} s blocks",
            maxima.len(),
            block_ns / 1_000_000_000
        ),
        block_ns: Some(block_ns),
        threshold_ns: None,
        rule: "the longest of 60, 30, 10, 5, 2 and 1 s blocks that leaves at least 100 blocks"
            .into(),
        n: maxima.len() as u64,
        clusters_per_hour: None,
        location_ns: Some(estimate(g.mu, se.map(|s| s[0]), Interval::default())),
        scale_ns: estimate(g.sigma, se.map(|s| s[1]), Interval::default()),
        tail: tail(&shape, g.upper_end()),
        shape,
        return_levels,
        curve,
        budget,
        trusted: checks.iter().all(|c| c.passed),
        checks,
        values_ns: maxima,
        candidates: Vec::new(),
    })
}

/// Peaks over threshold: a GPD fitted to the declustered excesses over the chosen threshold.
pub fn peaks_over_threshold(s: &Series, set: &Settings) -> Result<TailFit, String> {
    let candidates = pot::candidates(s.maxima);
    let k = pot::choose(&candidates).ok_or_else(|| {
        format!(
            "peaks over threshold: fewer than {} clusters above the median of {} per-second maxima",
            pot::MIN_CLUSTERS,
            s.maxima.len()
        )
    })?;
    let u = candidates[k].threshold_ns;
    let clusters = pot::decluster(s.maxima, u);
    let excess: Vec<f64> = clusters.iter().map(|c| c.1).collect();
    let hours = s.maxima.len() as f64 * s.slot_ns as f64 / 3.6e12;
    let rate = excess.len() as f64 / hours;
    let mut m = GpdModel::new(&excess).ok_or("peaks over threshold: no excess to fit")?;
    let fit = m
        .fit()
        .ok_or("peaks over threshold: the GPD fit did not converge")?;
    let g: Gpd = fit.dist;
    let se = fit.se;
    let shape = estimate(
        g.xi,
        se.map(|s| s[1]),
        m.shape_interval(set.confidence, se.map(|s| s[1])),
    );
    let (return_levels, curve) = pot_levels(&m, u, rate, set);
    let budget = set.budget_ns.filter(|b| *b as f64 > u).map(|bud| {
        let (q, i) = m.exceedance_interval(bud as f64 - u, set.confidence);
        // Clusters arrive at `rate` per hour: 1 - exp(-rate q).
        let per_hour = |q: f64| -(-rate * q).exp_m1();
        budget_risk(bud, per_hour, q, i)
    });
    let checks = pot_checks(s, &clusters, &excess, g, set);
    Ok(TailFit {
        method: Method::PeaksOverThreshold,
        data: format!("{} cluster maxima above {:.0} ns", excess.len(), u),
        block_ns: None,
        threshold_ns: Some(u),
        rule: pot::RULE.into(),
        n: excess.len() as u64,
        clusters_per_hour: Some(rate),
        location_ns: None,
        scale_ns: estimate(g.sigma, se.map(|s| s[0]), Interval::default()),
        tail: tail(&shape, g.upper_end().map(|e| u + e)),
        shape,
        return_levels,
        curve,
        budget,
        trusted: checks.iter().all(|c| c.passed),
        checks,
        values_ns: clusters.iter().map(|c| u + c.1).collect(),
        candidates,
    })
}

/// The return levels and curve of a GPD fit over threshold `u` with `rate` clusters per hour.
pub(crate) fn pot_levels(
    m: &GpdModel,
    u: f64,
    rate: f64,
    set: &Settings,
) -> (Vec<ReturnLevel>, Vec<CurvePoint>) {
    let level = |hours: f64| {
        let n = rate * hours;
        (n > 1.0).then(|| {
            let (v, i) = m.level_interval(n, set.confidence);
            Estimate {
                value: u + v,
                se: None,
                lower: i.lower.map(|x| u + x),
                upper: i.upper.map(|x| u + x),
            }
        })
    };
    let levels = PERIODS
        .iter()
        .map(|&(per, hours)| ReturnLevel {
            withheld: None,
            per: per.into(),
            hours,
            level_ns: level(hours),
        })
        .collect();
    let curve = curve_hours(2.0 / rate)
        .into_iter()
        .filter_map(|h| level(h).map(|e| point(h, &e)))
        .collect();
    (levels, curve)
}

/// The checks of a GPD fit: order checks on the cluster excesses, KPSS on the whole series,
/// goodness of fit, and the back-test split at the series' middle.
fn pot_checks(
    s: &Series,
    clusters: &[(usize, f64)],
    excess: &[f64],
    g: Gpd,
    set: &Settings,
) -> Vec<Check> {
    let mut checks = order_checks(excess);
    if let Some(c) = check(
        "kpss",
        tests_stat::kpss(s.maxima),
        "the level drifts: not stationary",
    ) {
        checks.retain(|x| x.name != "kpss");
        checks.push(c);
    }
    checks.extend(fit_checks(excess, Family::Gpd(g), set));
    let half_at = s.maxima.len() / 2;
    let split = clusters
        .iter()
        .position(|c| c.0 >= half_at)
        .unwrap_or(clusters.len());
    if split >= 10
        && clusters.len() > split
        && let Some(first) = crate::gpd::fit(&excess[..split])
    {
        let m2 = excess[split..].iter().copied().fold(f64::MIN, f64::max);
        checks.push(back_test(
            first.dist.cdf(m2).powf((clusters.len() - split) as f64),
        ));
    }
    checks
}

/// The GEV a [`TailFit`] of block maxima describes (for plots and tests).
pub fn gev_of(f: &TailFit) -> Option<Gev> {
    Some(Gev {
        mu: f.location_ns?.value,
        sigma: f.scale_ns.value,
        xi: f.shape.value,
    })
}
