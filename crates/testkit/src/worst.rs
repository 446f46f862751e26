//! Worst-case fits to judge and render: a block-maxima fit with two return levels, trusted or
//! not, whose figures are round enough to read in an assertion.

use model::worst::{Estimate, Method, ReturnLevel, Tail, TailFit};

/// An estimate with its interval.
pub fn estimate(value: f64, lower: Option<f64>, upper: Option<f64>) -> Estimate {
    Estimate {
        value,
        se: None,
        lower,
        upper,
    }
}

/// A block-maxima fit of 120 one-second maxima (all near 1 ms), shape 0.1, with once-per-hour
/// (2 ms) and once-per-day (3 ms) levels, a two-point return-level curve, and `trusted` as
/// its checks would set it.
pub fn tail_fit(trusted: bool) -> TailFit {
    let level = |per: &str, hours: f64, v: f64| ReturnLevel {
        per: per.into(),
        hours,
        level_ns: Some(estimate(v, Some(0.8 * v), Some(1.5 * v))),
        withheld: None,
    };
    let point = |hours: f64, v: f64| model::worst::CurvePoint {
        hours,
        level_ns: v,
        lower_ns: Some(0.8 * v),
        upper_ns: Some(1.5 * v),
    };
    TailFit {
        method: Method::BlockMaxima,
        data: "120 maxima of 1 s blocks".into(),
        block_ns: Some(1_000_000_000),
        threshold_ns: None,
        rule: String::new(),
        n: 120,
        clusters_per_hour: None,
        location_ns: Some(estimate(1e6, None, None)),
        scale_ns: estimate(1e5, None, None),
        shape: estimate(0.1, Some(0.0), Some(0.2)),
        tail: Tail::Undecided,
        return_levels: vec![level("hour", 1.0, 2e6), level("day", 24.0, 3e6)],
        curve: vec![point(1.0, 2e6), point(24.0, 3e6)],
        budget: None,
        checks: Vec::new(),
        trusted,
        values_ns: (0..120).map(|i| 1e6 + f64::from(i) * 1e3).collect(),
        candidates: Vec::new(),
    }
}
