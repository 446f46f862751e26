//! The plots of a worst-case fit: the return-level plot (the fitted curve with its 95 % band,
//! and the values fitted at their empirical return periods), the QQ plot (the values fitted
//! against the fit's quantiles, with the line they should follow), and for peaks over
//! threshold the threshold choice (the shape at each candidate with its interval, and the mean
//! excess: the parameter-stability and mean-residual-life plots).

use evt::dist::{Gev, Gpd};
use model::worst::{Method, TailFit};

use crate::html::chart::{Axis, Chart, Line, Rule, Scale, Ticks};

fn axis(label: &str, range: (f64, f64), scale: Scale, ticks: Ticks) -> Axis {
    Axis {
        label: label.into(),
        range,
        scale,
        ticks,
    }
}

fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        })
}

fn padded((a, b): (f64, f64)) -> (f64, f64) {
    if !(a.is_finite() && b.is_finite()) {
        return (0.0, 1.0);
    }
    let pad = ((b - a) * 0.05).max(1e-3);
    (a - pad, b + pad)
}

/// Hours between values: the return period of the i-th smallest of n fitted values.
fn empirical_hours(f: &TailFit, i: usize, n: usize) -> Option<f64> {
    let exceed = (n + 1 - i - 1) as f64 / (n + 1) as f64;
    let per_value_h = match f.method {
        Method::BlockMaxima => f.block_ns? as f64 / 3.6e12,
        Method::PeaksOverThreshold => 1.0 / f.clusters_per_hour?,
    };
    (exceed > 0.0).then(|| per_value_h / exceed)
}

/// The return-level plot: a fit that failed its checks draws no curve, only the values it
/// fitted (its curve would be figures the data do not support).
pub(crate) fn return_levels(f: &TailFit, budget_ns: Option<u64>) -> Option<String> {
    if f.curve.is_empty() {
        return None;
    }
    let us = |ns: f64| ns / 1e3;
    let mut sorted = f.values_ns.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let observed: Vec<Vec<(f64, f64)>> = sorted
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some(vec![(empirical_hours(f, i, n)?, us(*v))]))
        .collect();
    let line = |label: &str, pick: fn(&model::worst::CurvePoint) -> Option<f64>| Line {
        label: label.into(),
        segments: vec![
            f.curve
                .iter()
                .filter_map(|p| Some((p.hours, us(pick(p)?))))
                .collect(),
        ],
    };
    let mut lines = Vec::new();
    if f.trusted {
        lines.push(line("estimate", |p| Some(p.level_ns)));
        lines.push(line("95% interval, lower", |p| p.lower_ns));
        lines.push(line("95% interval, upper", |p| p.upper_ns));
    }
    lines.push(Line {
        label: "values fitted".into(),
        segments: observed,
    });
    let x = span(
        lines
            .iter()
            .flat_map(|l| l.segments.iter().flatten().map(|p| p.0)),
    );
    let y = span(
        lines
            .iter()
            .flat_map(|l| l.segments.iter().flatten().map(|p| p.1)),
    );
    let rules = budget_ns
        .map(|b| Rule {
            vertical: false,
            at: b as f64 / 1e3,
            label: format!("budget {} us", b / 1000),
        })
        .into_iter()
        .collect();
    Some(
        Chart {
            title: if f.trusted {
                "Return levels: the latency exceeded once per period".into()
            } else {
                "Return levels: the values fitted (the fit failed its checks: no curve)".into()
            },
            x: axis(
                "return period (hours of operation)",
                x,
                Scale::Log,
                Ticks::Plain,
            ),
            y: axis("latency", padded(y), Scale::Linear, Ticks::Latency),
            lines,
            rules,
        }
        .to_svg(),
    )
}

/// The fit's quantile at non-exceedance probability `p`, in ns.
fn model_quantile(f: &TailFit, p: f64) -> Option<f64> {
    match f.method {
        Method::BlockMaxima => {
            let g = Gev {
                mu: f.location_ns?.value,
                sigma: f.scale_ns.value,
                xi: f.shape.value,
            };
            Some(g.quantile(p))
        }
        Method::PeaksOverThreshold => {
            let g = Gpd {
                sigma: f.scale_ns.value,
                xi: f.shape.value,
            };
            Some(f.threshold_ns? + g.quantile(p))
        }
    }
}

/// The QQ plot.
pub(crate) fn qq(f: &TailFit) -> Option<String> {
    let mut sorted = f.values_ns.clone();
    if sorted.len() < 3 {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let points: Vec<Vec<(f64, f64)>> = sorted
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let q = model_quantile(f, (i as f64 + 0.5) / n)?;
            Some(vec![(q / 1e3, v / 1e3)])
        })
        .collect();
    let all = span(points.iter().flatten().flat_map(|p| [p.0, p.1]));
    let (a, b) = padded(all);
    let lines = vec![
        Line {
            label: "where the values should lie".into(),
            segments: vec![vec![(a, a), (b, b)]],
        },
        Line {
            label: "values fitted".into(),
            segments: points,
        },
    ];
    Some(
        Chart {
            title: "QQ plot: values fitted against the fit's quantiles".into(),
            x: axis("fitted quantile", (a, b), Scale::Linear, Ticks::Latency),
            y: axis("value", (a, b), Scale::Linear, Ticks::Latency),
            lines,
            rules: Vec::new(),
        }
        .to_svg(),
    )
}

/// The threshold choice: shape and mean excess at each candidate, the chosen one marked.
pub(crate) fn threshold(f: &TailFit) -> Option<String> {
    if f.candidates.len() < 2 {
        return None;
    }
    let at = |g: fn(&model::worst::Candidate) -> Option<f64>| Line {
        label: String::new(),
        segments: vec![
            f.candidates
                .iter()
                .filter_map(|c| Some((c.threshold_ns / 1e3, g(c)?)))
                .collect(),
        ],
    };
    let mut shape = at(|c| Some(c.shape));
    shape.label = "shape".into();
    let mut lo = at(|c| c.shape_se.map(|s| c.shape - 1.96 * s));
    lo.label = "shape - 1.96 se".into();
    let mut hi = at(|c| c.shape_se.map(|s| c.shape + 1.96 * s));
    hi.label = "shape + 1.96 se".into();
    let lines = vec![shape, lo, hi];
    let x = span(f.candidates.iter().map(|c| c.threshold_ns / 1e3));
    let y = span(
        lines
            .iter()
            .flat_map(|l| l.segments.iter().flatten().map(|p| p.1)),
    );
    let rules = f
        .threshold_ns
        .map(|u| Rule {
            vertical: true,
            at: u / 1e3,
            label: "chosen".into(),
        })
        .into_iter()
        .collect();
    Some(
        Chart {
            title: "Threshold choice: the shape above each candidate (parameter stability)".into(),
            x: axis("threshold", padded(x), Scale::Linear, Ticks::Latency),
            y: axis("shape", padded(y), Scale::Linear, Ticks::Plain),
            lines,
            rules,
        }
        .to_svg(),
    )
}

/// The mean excess over each candidate threshold (the mean-residual-life plot): roughly a
/// straight line above a threshold where the GPD holds.
pub(crate) fn mean_excess(f: &TailFit) -> Option<String> {
    if f.candidates.len() < 2 {
        return None;
    }
    let pts: Vec<(f64, f64)> = f
        .candidates
        .iter()
        .map(|c| (c.threshold_ns / 1e3, c.mean_excess_ns / 1e3))
        .collect();
    let x = span(pts.iter().map(|p| p.0));
    let y = span(pts.iter().map(|p| p.1));
    Some(
        Chart {
            title: "Mean excess over each candidate threshold".into(),
            x: axis("threshold", padded(x), Scale::Linear, Ticks::Latency),
            y: axis("mean excess", padded(y), Scale::Linear, Ticks::Latency),
            lines: vec![Line {
                label: "mean excess".into(),
                segments: vec![pts],
            }],
            rules: f
                .threshold_ns
                .map(|u| Rule {
                    vertical: true,
                    at: u / 1e3,
                    label: "chosen".into(),
                })
                .into_iter()
                .collect(),
        }
        .to_svg(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trusted_fit_draws_its_return_level_curve() {
        let sound = return_levels(&testkit::worst::tail_fit(true), None).unwrap();
        assert!(sound.contains("95% interval, upper") && sound.contains("estimate"));
        let failed = return_levels(&testkit::worst::tail_fit(false), None).unwrap();
        assert!(failed.contains("no curve") && failed.contains("values fitted"));
        assert!(!failed.contains("95% interval") && !failed.contains("estimate"));
    }
}
