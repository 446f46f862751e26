//! What the data support, and what to do next: a return level is printed as an estimate only
//! where the fit behind it is sound ([`withhold`]), and every CPU's verdict opens with one
//! sentence a person acts on ([`headline`]): the level to expect, or how much longer to
//! measure, or that the run is over budget already.
//!
//! The rules, each from a failure seen on real runs (issue #47): a 120-s run printed `once per
//! year: 5.28e5 s [4.82e5 s, 5.28e5 s]` — the estimate on its interval's end, six days of
//! latency from a run whose worst was milliseconds; a 20-s run said the estimates "are not a
//! worst case" and gave no advice.

use model::worst::{Estimate, ReturnLevel, RunLonger, TailFit};

use crate::verdict::{fmt_duration, fmt_ns};
use crate::{MAX_SHAPE, Settings};

/// How far beyond the largest latency measured a level may lie and still be read as an
/// estimate: two orders of magnitude. Further out the number says more about the fit's
/// extrapolation than about the machine.
pub const MAX_BEYOND_DATA: f64 = 100.0;

/// The least a run must measure before a fit is worth asking for: 100 one-second blocks, the
/// count the block rule aims at ([`crate::fits::block_maxima`] uses 1-s blocks below it).
pub const FIRST_EVIDENCE_NS: u64 = 100 * 1_000_000_000;

/// How much more an untrusted fit asks for: four times the time measured, which halves every
/// interval (they narrow as 1/sqrt(n)) and gives the checks twice the power to tell.
pub const MORE_EVIDENCE_FACTOR: u64 = 4;

/// Marks the return levels of `fit` that are no estimate, with why: every level of a fit that
/// failed its checks (its model does not describe these data, so its extrapolation describes
/// nothing: a 2-min run on a VM printed `once per hour: 328.98 ms [82.34 ms, 1.81 s]`, 26 times
/// its worst, from a fit whose halves differed), and the unsupported levels of a trusted one.
///
/// Call it after every check that can take the trust away.
pub fn withhold(fit: &mut TailFit, observed_max_ns: u64) {
    let at_bound = (fit.shape.value.abs() - MAX_SHAPE).abs() < 1e-6
        || [fit.shape.lower, fit.shape.upper]
            .into_iter()
            .flatten()
            .any(|v| (v.abs() - MAX_SHAPE).abs() < 1e-6);
    for level in &mut fit.return_levels {
        let Some(e) = &level.level_ns else {
            continue;
        };
        level.withheld = if fit.trusted {
            why_not(e, at_bound, fit.shape.value, observed_max_ns)
        } else {
            Some("the fit failed its checks (named below)".into())
        };
    }
}

fn why_not(e: &Estimate, shape_at_bound: bool, shape: f64, observed_max_ns: u64) -> Option<String> {
    if !e.value.is_finite() || e.value <= 0.0 {
        return Some("the fit gives no finite level".into());
    }
    if shape_at_bound {
        return Some(format!(
            "the fit's shape ({shape:.2}) sits at the limit of its search: the data do not pin the tail down"
        ));
    }
    if let (Some(lo), Some(hi)) = (e.lower, e.upper) {
        let tol = 1e-9 * e.value.abs().max(1.0);
        if hi - lo <= tol {
            return Some("its interval has no width: the fit is degenerate".into());
        }
        if (e.value - hi).abs() <= tol || (e.value - lo).abs() <= tol {
            return Some("the estimate sits on its interval's end: the fit did not settle".into());
        }
    }
    let max = observed_max_ns.max(1) as f64;
    if e.value > MAX_BEYOND_DATA * max {
        return Some(format!(
            "{} is more than {MAX_BEYOND_DATA:.0} times the largest latency measured ({}): an extrapolation, not an estimate",
            fmt_ns(e.value),
            fmt_ns(max)
        ));
    }
    None
}

/// What one CPU's analysis knows, for its headline.
pub struct Known<'a> {
    /// The fit the verdict trusts, if any.
    pub trusted: Option<&'a TailFit>,
    /// The largest latency measured.
    pub observed_max_ns: u64,
    /// The time the fits saw (the series' length; the run's for a histogram).
    pub measured_ns: u64,
    /// How long to run for the fit's goals (from a trusted fit).
    pub run_longer: &'a [RunLonger],
    /// The largest maxima did not follow from the rest (`top-follows` failed).
    pub second_cause: bool,
    /// The conditions changed during the run (`split-half` or `kpss` failed).
    pub changed: bool,
}

/// The first line of a CPU's verdict: what to expect, or what to do.
pub fn headline(k: &Known, set: &Settings) -> String {
    if let Some(b) = set.budget_ns.filter(|b| k.observed_max_ns > *b) {
        return format!(
            "over budget already: this run measured {} against a budget of {}: tune first \
             (`rtlab audit` says what to change, `rtlab tune plan` how)",
            fmt_ns(k.observed_max_ns as f64),
            fmt_ns(b as f64)
        );
    }
    let day = k
        .trusted
        .and_then(|f| f.return_levels.iter().find(|r| r.per == "day"));
    match (k.trusted, day.and_then(ReturnLevel::supported)) {
        (Some(f), Some(e)) => expect(f, e, set),
        (Some(_), None) => {
            let why = day
                .and_then(|d| d.withheld.clone())
                .unwrap_or_else(|| "the fit gives no once-per-day level".into());
            format!(
                "not enough evidence for a once-per-day level ({why}): {}",
                measure_more(k)
            )
        }
        (None, _) if k.second_cause => format!(
            "not enough evidence: the largest values come from a rarer second cause (`rtlab \
             explain` on the worst spikes names it); {}",
            measure_more(k)
        ),
        (None, _) if k.changed => format!(
            "not enough evidence: the conditions changed during the run (its halves differ or \
             its level drifts), so no fit describes it; hold them steady and {}",
            measure_more(k)
        ),
        (None, _) => format!("not enough evidence: {}", measure_more(k)),
    }
}

/// "expect up to X once per day (95 %: A–B)", with how often the budget is exceeded.
fn expect(f: &TailFit, e: &Estimate, set: &Settings) -> String {
    let end = |v: Option<f64>| v.map_or_else(|| "unbounded".to_string(), fmt_ns);
    let mut out = format!(
        "expect up to {} once per day ({:.0} %: {} to {})",
        fmt_ns(e.value),
        set.confidence * 100.0,
        end(e.lower),
        end(e.upper)
    );
    match (set.budget_ns, &f.budget) {
        (Some(b), Some(r)) if r.per_hour > 0.0 => out.push_str(&format!(
            "; the budget of {} is exceeded about once per {}",
            fmt_ns(b as f64),
            fmt_duration(3.6e12 / r.per_hour)
        )),
        (Some(b), Some(_)) => out.push_str(&format!(
            "; the fit puts the budget of {} out of reach",
            fmt_ns(b as f64)
        )),
        _ => {}
    }
    out
}

/// "measure about T more under the same load", T from the trusted fit's goals where it has
/// them, else from the evidence the methods need.
fn measure_more(k: &Known) -> String {
    let from_fit = k.run_longer.iter().filter_map(|r| r.needed_ns).max();
    let total = from_fit.unwrap_or_else(|| {
        FIRST_EVIDENCE_NS.max(k.measured_ns.saturating_mul(MORE_EVIDENCE_FACTOR))
    });
    let more = total.saturating_sub(k.measured_ns).max(1_000_000_000);
    format!(
        "measure about {} more under the same load ({} in all)",
        fmt_duration(more as f64),
        fmt_duration(total as f64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::worst::Estimate;

    fn est(value: f64, lower: Option<f64>, upper: Option<f64>) -> Estimate {
        Estimate {
            value,
            se: None,
            lower,
            upper,
        }
    }

    #[test]
    fn a_level_is_withheld_for_each_reason_and_kept_otherwise() {
        let max = 1_000_000; // 1 ms measured
        // The once-per-year: on its interval's end and six days long.
        let year = est(5.28e14, Some(4.82e14), Some(5.28e14));
        assert!(
            why_not(&year, false, 0.5, max)
                .unwrap()
                .contains("interval's end")
        );
        let flat = est(2e6, Some(2e6), Some(2e6));
        assert!(
            why_not(&flat, false, 0.1, max)
                .unwrap()
                .contains("no width")
        );
        let far = est(2e8, Some(1e8), Some(5e8));
        assert!(
            why_not(&far, false, 0.1, max)
                .unwrap()
                .contains("100 times")
        );
        assert!(
            why_not(&est(2e6, Some(1e6), Some(3e6)), true, 5.0, max)
                .unwrap()
                .contains("limit of its search")
        );
        assert!(why_not(&est(f64::NAN, None, None), false, 0.1, max).is_some());
        // A level with a proper interval, within reach of the data, and an open upper end.
        assert_eq!(
            why_not(&est(3e6, Some(2e6), Some(5e6)), false, 0.1, max),
            None
        );
        assert_eq!(why_not(&est(3e6, Some(2e6), None), false, 0.1, max), None);
    }

    #[test]
    fn an_untrusted_fit_gives_no_level_and_a_trusted_one_its_supported_levels() {
        let mut sound = testkit::worst::tail_fit(true);
        withhold(&mut sound, 1_000_000);
        assert!(sound.return_levels.iter().all(|r| r.supported().is_some()));
        let mut failed = testkit::worst::tail_fit(false);
        withhold(&mut failed, 1_000_000);
        for r in &failed.return_levels {
            assert!(r.supported().is_none(), "{r:?}");
            assert!(r.withheld.as_ref().unwrap().contains("failed its checks"));
        }
    }

    #[test]
    fn the_next_step_names_a_duration_even_without_a_fit() {
        let set = Settings::all_cpus();
        let k = |measured_s: u64| Known {
            trusted: None,
            observed_max_ns: 50_000,
            measured_ns: measured_s * 1_000_000_000,
            run_longer: &[],
            second_cause: false,
            changed: false,
        };
        // 20 s: up to the first 100 s.
        assert_eq!(
            headline(&k(20), &set),
            "not enough evidence: measure about 80 s more under the same load (100 s in all)"
        );
        // 2 min: four times as long.
        assert_eq!(
            headline(&k(120), &set),
            "not enough evidence: measure about 6 min more under the same load (8 min in all)"
        );
        let over = Settings {
            budget_ns: Some(40_000),
            ..Settings::all_cpus()
        };
        let changed = Known {
            changed: true,
            ..k(120)
        };
        assert!(
            headline(&changed, &set)
                .starts_with("not enough evidence: the conditions changed during the run")
        );
        assert!(headline(&k(120), &over).starts_with(
            "over budget already: this run measured 50.0 us against a budget of 40.0 us: tune first"
        ));
    }
}
