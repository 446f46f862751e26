//! From the fits of one CPU to what a person reads: which fit to believe, the verdict in
//! sentences, whether the budget is met, and how much longer to run.

use model::worst::{Method, RunLonger, Tail, TailFit, WorstVerdict};

use crate::Settings;

/// Latency in words: microseconds below a millisecond, else milliseconds.
pub fn fmt_ns(v: f64) -> String {
    let a = v.abs();
    if a < 1e6 {
        format!("{:.1} us", v / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", v / 1e6)
    } else if a < 1e12 {
        format!("{:.2} s", v / 1e9)
    } else {
        format!("{:.2e} s", v / 1e9)
    }
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "unbounded".into(), fmt_ns)
}

fn method_words(m: Method) -> &'static str {
    match m {
        Method::BlockMaxima => "block maxima (GEV)",
        Method::PeaksOverThreshold => "peaks over threshold (GPD)",
    }
}

/// The trusted fit the headline comes from: block maxima first, else peaks over threshold.
///
/// Both fit the per-second maxima. A block's maximum is the maximum of thousands of samples,
/// the case the GEV is the limit of; the excesses of per-second maxima over a threshold near
/// their median are only roughly a GPD, and read a light tail as bounded: on cyclictest logs of
/// a known exponential tail (20 minutes each, `worst_truth`) peaks over threshold put the
/// shape at -0.07 to -0.16 and the once-per-day level 4 to 17 % low, one interval of four
/// below the truth, where block maxima held the truth in all four.
pub fn primary<'a>(pot: Option<&'a TailFit>, gev: Option<&'a TailFit>) -> Option<&'a TailFit> {
    gev.filter(|f| f.trusted).or(pot.filter(|f| f.trusted))
}

fn failed(f: &TailFit) -> String {
    let list: Vec<String> = f
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{} ({}, p = {:.3})", c.says, c.name, c.p_value))
        .collect();
    if list.is_empty() {
        // Nothing failed, yet not trusted: the checks that matter could not run.
        return format!(
            "{}: its assumptions could not be checked: {}",
            method_words(f.method),
            f.data
        );
    }
    format!("{}: {}", method_words(f.method), list.join("; "))
}

fn tail_sentence(f: &TailFit) -> String {
    let s = &f.shape;
    let xi = format!(
        "shape {:.3} [{}, {}]",
        s.value,
        opt3(s.lower),
        opt3(s.upper)
    );
    match f.tail {
        Tail::Bounded { upper_end_ns } => format!(
            "the latency has an upper bound ({xi}); the fit puts it at {}",
            fmt_ns(upper_end_ns)
        ),
        Tail::Unbounded => format!(
            "the tail has no upper bound ({xi}): the worst case keeps growing the longer the machine runs"
        ),
        Tail::Undecided => {
            format!("these data cannot tell a bounded tail from an unbounded one ({xi})")
        }
    }
}

fn opt3(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// The verdict on one CPU.
pub fn verdict(pot: Option<&TailFit>, gev: Option<&TailFit>, set: &Settings) -> WorstVerdict {
    let Some(p) = primary(pot, gev) else {
        let mut says: Vec<String> = Vec::new();
        if pot.is_some() || gev.is_some() {
            says.push("no fit may be trusted, so none gives an estimate; what failed:".into());
        }
        says.extend(pot.into_iter().chain(gev).map(failed));
        return WorstVerdict {
            headline: String::new(),
            trusted: false,
            method: None,
            says,
            budget_met: set.budget_ns.map(|_| false),
        };
    };
    let mut says = Vec::new();
    let levels: Vec<String> = p
        .return_levels
        .iter()
        .filter_map(|r| {
            let e = r.level_ns?;
            Some(match &r.withheld {
                Some(why) => format!("once per {}: no estimate ({why})", r.per),
                None => format!(
                    "once per {} {} [{}, {}]",
                    r.per,
                    fmt_ns(e.value),
                    fmt_opt(e.lower),
                    fmt_opt(e.upper)
                ),
            })
        })
        .collect();
    says.push(format!("{}: {}", method_words(p.method), levels.join(", ")));
    says.push(tail_sentence(p));
    let budget_met = set.budget_ns.map(|b| match p.budget {
        Some(r) => {
            let met = r.upper <= set.per_hour;
            says.push(format!(
                "probability per hour of exceeding {}: {:.2e} [{:.2e}, {:.2e}], {} the target {:.0e}",
                fmt_ns(b as f64),
                r.per_hour,
                r.lower,
                r.upper,
                if met { "within" } else { "not bounded below" },
                set.per_hour
            ));
            met
        }
        None => {
            says.push(format!(
                "the budget {} lies below the threshold: the tail fit says nothing there, and the run exceeded it",
                fmt_ns(b as f64)
            ));
            false
        }
    });
    for other in pot.into_iter().chain(gev).filter(|f| !f.trusted) {
        says.push(format!("not used: {}", failed(other)));
    }
    WorstVerdict {
        headline: String::new(),
        trusted: true,
        method: Some(p.method),
        says,
        budget_met,
    }
}

/// How long the run would have to be for the day's return level interval to be narrower
/// than the width asked (default: a tenth of the level), and for the budget's risk to be
/// bounded below the target. Intervals narrow as 1/sqrt(n); the answer is an estimate.
pub fn run_longer(p: &TailFit, measured_ns: u64, set: &Settings) -> Vec<RunLonger> {
    let mut out = Vec::new();
    let day = p
        .return_levels
        .iter()
        .find(|r| r.per == "day")
        .and_then(|r| r.supported().copied());
    if let Some(e) = day {
        let width = set.width_ns.map_or(0.1 * e.value, |w| w as f64);
        let goal = format!(
            "the once-per-day level's interval narrower than {}",
            fmt_ns(width)
        );
        out.push(match (e.lower, e.upper) {
            (Some(lo), Some(hi)) if hi - lo <= width => RunLonger {
                goal,
                needed_ns: None,
                says: format!("reached: the interval is {} wide", fmt_ns(hi - lo)),
            },
            (Some(lo), Some(hi)) => {
                let needed = measured_ns as f64 * ((hi - lo) / width).powi(2);
                RunLonger {
                    goal,
                    needed_ns: Some(needed.min(u64::MAX as f64) as u64),
                    says: format!(
                        "about {} of measuring in all (the interval is {} wide now)",
                        fmt_duration(needed),
                        fmt_ns(hi - lo)
                    ),
                }
            }
            _ => RunLonger {
                goal,
                needed_ns: None,
                says: "the interval has no upper end with these data: run several times longer and ask again".into(),
            },
        });
    }
    if let Some(r) = p.budget {
        let goal = format!(
            "the budget's risk per hour bounded below {:.0e}",
            set.per_hour
        );
        let t = set.per_hour;
        out.push(if r.upper <= t {
            RunLonger { goal, needed_ns: None, says: "reached".into() }
        } else if r.per_hour >= t || r.per_hour <= 0.0 {
            RunLonger {
                goal,
                needed_ns: None,
                says: "the estimate itself is not below the target: running longer will not bound it; the machine needs tuning".into(),
            }
        } else {
            let (lp, lu, lt) = (r.per_hour.ln(), r.upper.ln(), t.ln());
            let needed = measured_ns as f64 * ((lu - lp) / (lt - lp)).powi(2);
            RunLonger {
                goal,
                needed_ns: Some(needed.min(u64::MAX as f64) as u64),
                says: format!("about {} of measuring in all", fmt_duration(needed)),
            }
        });
    }
    out
}

/// Nanoseconds as a duration in words (`2.5 h`, `3.1 d`).
pub fn fmt_duration(ns: f64) -> String {
    let s = ns / 1e9;
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86400.0)
    }
}
