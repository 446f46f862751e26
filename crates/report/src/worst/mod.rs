//! `rtlab worst` as a person reads it: the text form (per group and CPU, the verdict first,
//! then each fit with its checks) and the HTML page with the return-level, QQ and threshold
//! plots ([`html`]).

use evt::verdict::{fmt_duration, fmt_ns};
use model::worst::{Check, Estimate, TailFit, WorstCpu, WorstDoc, WorstGroup};

pub mod export;
pub mod html;
mod plots;

/// The text form: the answer and next step first (each group's, all CPUs together), then per
/// group and CPU the verdict, then each fit with its checks, plain words before test names.
pub fn worst_text(doc: &WorstDoc) -> String {
    let mut out = String::new();
    for g in &doc.groups {
        if let Some(c) = g.cpus.iter().find(|c| c.cpu.is_none()).or(g.cpus.first()) {
            let runs = match doc.groups.len() {
                1 => String::new(),
                _ => format!("{}: ", g.runs.join(", ")),
            };
            out.push_str(&format!("{runs}{}\n", c.verdict.headline));
        }
    }
    out.push('\n');
    if doc.groups.len() > 1 {
        out.push_str(&summary_text(doc));
        out.push('\n');
    }
    for g in &doc.groups {
        group_text(&mut out, g);
    }
    out
}

/// One line per group (all CPUs together): the once-per-day level with its interval, the
/// shape and the verdict, side by side; what `rtlab compare --worst` prints under its table.
pub fn summary_text(doc: &WorstDoc) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "runs".into(),
        "conditions".into(),
        "once per day [95%]".into(),
        "shape [95%]".into(),
        "verdict".into(),
    ]];
    for g in &doc.groups {
        let Some(all) = g.cpus.iter().find(|c| c.cpu.is_none()) else {
            continue;
        };
        let fit = all.verdict.method.and_then(|m| match m {
            model::worst::Method::BlockMaxima => all.block_maxima.as_ref(),
            model::worst::Method::PeaksOverThreshold => all.peaks_over_threshold.as_ref(),
        });
        let fit = fit
            .or(all.peaks_over_threshold.as_ref())
            .or(all.block_maxima.as_ref());
        let day = fit
            .and_then(|f| f.return_levels.iter().find(|r| r.per == "day"))
            .and_then(|r| r.supported())
            .map_or_else(|| "-".to_string(), |e| est(e, true));
        let shape = fit.map_or_else(|| "-".to_string(), |f| est(&f.shape, false));
        let c = &g.conditions;
        rows.push([
            g.runs.join(", "),
            format!("{}, {}, {}", c.kernel, c.engine, c.load),
            day,
            shape,
            if all.verdict.trusted {
                "trusted".into()
            } else {
                "NOT TRUSTED".into()
            },
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn group_text(out: &mut String, g: &WorstGroup) {
    let c = &g.conditions;
    out.push_str(&format!(
        "worst case: host {}, kernel {}, engine {}, load {}, period {}\n  runs: {}\n",
        c.host,
        c.kernel,
        c.engine,
        c.load,
        fmt_ns(c.interval_ns as f64),
        g.runs.join(", ")
    ));
    for cpu in &g.cpus {
        cpu_text(out, cpu);
    }
}

fn cpu_text(out: &mut String, c: &WorstCpu) {
    let who = c
        .cpu
        .map_or_else(|| "all CPUs".to_string(), |n| format!("CPU {n}"));
    let mark = c.verdict.word();
    out.push_str(&format!(
        "\n{who} [{mark}]: {} samples over {}, observed max {}\n",
        c.samples,
        fmt_duration(c.measured_ns as f64),
        fmt_ns(c.observed_max_ns as f64)
    ));
    out.push_str(&format!("  {}\n", c.verdict.headline));
    for line in &c.verdict.says {
        out.push_str(&format!("  {line}\n"));
    }
    for r in &c.run_longer {
        out.push_str(&format!("  run longer ({}): {}\n", r.goal, r.says));
    }
    for f in c.peaks_over_threshold.iter().chain(&c.block_maxima) {
        fit_text(out, f);
    }
    for why in &c.not_fitted {
        out.push_str(&format!("  not fitted: {why}\n"));
    }
}

fn est(e: &Estimate, ns: bool) -> String {
    let f = |v: f64| if ns { fmt_ns(v) } else { format!("{v:.3}") };
    let end = |v: Option<f64>| v.map_or_else(|| "unbounded".to_string(), f);
    format!("{} [{}, {}]", f(e.value), end(e.lower), end(e.upper))
}

/// The method's name in words.
pub(crate) fn method_name(f: &TailFit) -> &'static str {
    match f.method {
        model::worst::Method::BlockMaxima => "block maxima (GEV)",
        model::worst::Method::PeaksOverThreshold => "peaks over threshold (GPD)",
    }
}

/// A fit's return levels, a line each; levels withheld for one reason share one line.
fn levels_text(out: &mut String, f: &TailFit) {
    let reasons: Vec<Option<&String>> = f
        .return_levels
        .iter()
        .map(|r| r.withheld.as_ref())
        .collect();
    if let [Some(first), rest @ ..] = reasons.as_slice()
        && !rest.is_empty()
        && rest.iter().all(|r| *r == Some(*first))
    {
        let pers: Vec<&str> = f.return_levels.iter().map(|r| r.per.as_str()).collect();
        out.push_str(&format!(
            "    once per {}: no estimate: {first}\n",
            pers.join(", ")
        ));
        return;
    }
    for r in &f.return_levels {
        match (&r.level_ns, &r.withheld) {
            (Some(_), Some(why)) => {
                out.push_str(&format!("    once per {}: no estimate: {why}\n", r.per))
            }
            (Some(e), None) => out.push_str(&format!("    once per {}: {}\n", r.per, est(e, true))),
            (None, _) => out.push_str(&format!(
                "    once per {}: shorter than what the method resolves\n",
                r.per
            )),
        }
    }
}

fn fit_text(out: &mut String, f: &TailFit) {
    let name = method_name(f);
    let trusted = if f.trusted { "trusted" } else { "NOT TRUSTED" };
    out.push_str(&format!(
        "  {name}, {trusted}: {}\n    chosen: {}\n",
        f.data, f.rule
    ));
    out.push_str(&format!("    shape {}", est(&f.shape, false)));
    if let Some(rate) = f.clusters_per_hour {
        out.push_str(&format!(", {rate:.1} per hour above the threshold"));
    }
    out.push('\n');
    levels_text(out, f);
    if let Some(b) = &f.budget {
        out.push_str(&format!(
            "    P(> {}) per hour: {:.2e} [{:.2e}, {:.2e}]\n",
            fmt_ns(b.budget_ns as f64),
            b.per_hour,
            b.lower,
            b.upper
        ));
    }
    let checks: Vec<String> = f.checks.iter().map(check_text).collect();
    if checks.is_empty() {
        out.push_str("    checks: none could run\n");
    } else {
        out.push_str(&format!("    checks: {}\n", checks.join(", ")));
    }
}

fn check_text(c: &Check) -> String {
    format!(
        "{} {} ({} p={:.3})",
        plain_check(&c.name),
        if c.passed { "ok" } else { "FAILED" },
        c.name,
        c.p_value
    )
}

/// What a check asks, in words an engineer without extreme-value theory reads.
pub(crate) fn plain_check(name: &str) -> &str {
    match name {
        "ljung-box" => "maxima independent of each other",
        "runs" => "no runs of high or low maxima",
        "split-half" => "both halves alike",
        "kpss" => "no drift over time",
        "anderson-darling" | "cramer-von-mises" | "chi-squared" => {
            "the fitted curve matches the data"
        }
        "back-test" => "the first half predicts the second",
        "observed-max" => "the fit allows the maximum seen",
        "methods-agree" => "both methods see one tail",
        "top-follows" => "the largest values follow from the rest",
        other => other,
    }
}
