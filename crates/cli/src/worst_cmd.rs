//! `rtlab worst RUN...`: loads the runs, asks `evt` for the extreme-value analysis, prints it
//! verdict first (or as JSON) and turns the verdicts into the exit status.

use anyhow::Result;
use evt::verdict::{fmt_duration, fmt_ns};
use model::worst::{Check, Estimate, TailFit, WorstCpu, WorstDoc, WorstGroup};

use crate::console;
use crate::exit::Exit;
use crate::flags::{WorstArgs, WorstFormat};

/// `rtlab worst`.
pub fn run(args: &WorstArgs) -> Result<Exit> {
    let db = args.db.db.as_deref();
    let named = args
        .runs
        .iter()
        .map(|spec| crate::runs::named(spec, db))
        .collect::<Result<Vec<_>>>()?;
    let pairs: Vec<(String, &model::measure::MeasureRun)> =
        named.iter().map(|n| (n.name.clone(), &n.run)).collect();
    let settings = evt::Settings {
        confidence: 0.95,
        budget_ns: args.budget.map(|b| b.0),
        per_hour: args.per_hour,
        width_ns: args.width.map(|w| w.0),
        pool: args.pool,
        per_cpu: true,
    };
    let doc = evt::analyse(&pairs, &settings);
    let text = match args.format {
        WorstFormat::Text => text(&doc),
        WorstFormat::Json => doc.to_json(),
    };
    console::print_stdout(&text)?;
    let passed = doc
        .groups
        .iter()
        .flat_map(|g| &g.cpus)
        .all(|c| c.verdict.trusted && c.verdict.budget_met.unwrap_or(true));
    Ok(if passed {
        Exit::Ok
    } else {
        Exit::VerdictFailed
    })
}

/// The text form: per group and CPU, the verdict first.
pub fn text(doc: &WorstDoc) -> String {
    let mut out = String::new();
    for g in &doc.groups {
        group_text(&mut out, g);
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
    let mark = if c.verdict.trusted && c.verdict.budget_met.unwrap_or(true) {
        "ok"
    } else {
        "FAIL"
    };
    out.push_str(&format!(
        "\n{who} [{mark}]: {} samples over {}, observed max {}\n",
        c.samples,
        fmt_duration(c.measured_ns as f64),
        fmt_ns(c.observed_max_ns as f64)
    ));
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

fn fit_text(out: &mut String, f: &TailFit) {
    let name = match f.method {
        model::worst::Method::BlockMaxima => "block maxima (GEV)",
        model::worst::Method::PeaksOverThreshold => "peaks over threshold (GPD)",
    };
    let trusted = if f.trusted { "trusted" } else { "NOT TRUSTED" };
    out.push_str(&format!(
        "  {name}, {trusted}: {}\n    chosen: {}\n",
        f.data, f.rule
    ));
    out.push_str(&format!("    shape {}", est(&f.shape, false)));
    if let Some(rate) = f.clusters_per_hour {
        out.push_str(&format!(", {rate:.1} clusters per hour"));
    }
    out.push('\n');
    for r in &f.return_levels {
        match &r.level_ns {
            Some(e) => out.push_str(&format!("    once per {}: {}\n", r.per, est(e, true))),
            None => out.push_str(&format!(
                "    once per {}: shorter than what the method resolves\n",
                r.per
            )),
        }
    }
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
    out.push_str(&format!("    checks: {}\n", checks.join(", ")));
}

fn check_text(c: &Check) -> String {
    format!(
        "{} p={:.3} {}",
        c.name,
        c.p_value,
        if c.passed { "ok" } else { "FAILED" }
    )
}
