//! `rtlab worst --format html`: one self-contained page (inline style and SVG, no script,
//! nothing fetched) with, per group of runs and per CPU, the verdict first, then each fit's
//! estimates, checks and plots. Every text that comes from a run is escaped.

use std::fmt::Write as _;

use evt::verdict::fmt_ns;
use model::worst::{Estimate, TailFit, WorstCpu, WorstDoc, WorstGroup};

use super::{method_name, plots};
use crate::compare::html::escape;

const STYLE: &str = "\
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1000px; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #ddd; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #186a2e; }
.fail { color: #a4161a; }
section.cpu { border-top: 2px solid #999; margin-top: 2em; }
svg { max-width: 100%; height: auto; }
";

/// The whole page.
pub fn worst_html_page(doc: &WorstDoc) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>rtlab worst</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <h1>How bad can it get?</h1>\n<p>Extreme-value estimates with {:.0} % profile-likelihood \
         intervals. A fit is trusted only when every check passes at the 1 % level; the method \
         and its limits are in docs/worst-case.md.</p>\n",
        doc.confidence * 100.0
    );
    for g in &doc.groups {
        group(&mut out, g, doc.budget_ns);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn group(out: &mut String, g: &WorstGroup, budget: Option<u64>) {
    let c = &g.conditions;
    let _ = writeln!(
        out,
        "<h2>{} — kernel {}, engine {}, load {}, period {}</h2>\n<p>Runs: {}</p>",
        escape(&c.host),
        escape(&c.kernel),
        escape(&c.engine),
        escape(&c.load),
        escape(&fmt_ns(c.interval_ns as f64)),
        escape(&g.runs.join(", "))
    );
    for cpu in &g.cpus {
        cpu_section(out, cpu, budget);
    }
}

fn cpu_section(out: &mut String, c: &WorstCpu, budget: Option<u64>) {
    let who = c
        .cpu
        .map_or_else(|| "All CPUs".to_string(), |n| format!("CPU {n}"));
    let ok = c.verdict.passed();
    let _ = writeln!(
        out,
        "<section class=\"cpu\">\n<h3>{who} <span class=\"{}\">{}</span></h3>\n\
         <p class=\"headline\"><strong>{}</strong></p>\n<p>{} samples, observed maximum {}.</p>\n<ul>",
        if ok { "pass" } else { "fail" },
        // The verdict its exit status stands for, in the words of every surface.
        c.verdict.word(),
        escape(&c.verdict.headline),
        c.samples,
        escape(&fmt_ns(c.observed_max_ns as f64))
    );
    for line in &c.verdict.says {
        let _ = writeln!(out, "<li>{}</li>", escape(line));
    }
    for r in &c.run_longer {
        let _ = writeln!(
            out,
            "<li>Run longer ({}): {}</li>",
            escape(&r.goal),
            escape(&r.says)
        );
    }
    for why in &c.not_fitted {
        let _ = writeln!(out, "<li>Not fitted: {}</li>", escape(why));
    }
    out.push_str("</ul>\n");
    for f in c.peaks_over_threshold.iter().chain(&c.block_maxima) {
        fit_section(out, f, budget);
    }
    out.push_str("</section>\n");
}

fn cell(e: &Estimate, ns: bool) -> String {
    let f = |v: f64| if ns { fmt_ns(v) } else { format!("{v:.3}") };
    let end = |v: Option<f64>| v.map_or_else(|| "unbounded".to_string(), f);
    format!(
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
        f(e.value),
        end(e.lower),
        end(e.upper)
    )
}

fn fit_section(out: &mut String, f: &TailFit, budget: Option<u64>) {
    let _ = writeln!(
        out,
        "<h4>{} — <span class=\"{}\">{}</span></h4>\n<p>{}. Chosen: {}.</p>",
        method_name(f),
        if f.trusted { "pass" } else { "fail" },
        if f.trusted { "trusted" } else { "not trusted" },
        escape(&f.data),
        escape(&f.rule)
    );
    out.push_str(
        "<table>\n<tr><th></th><th>estimate</th><th>95% lower</th><th>95% upper</th></tr>\n",
    );
    let _ = writeln!(out, "<tr><th>shape</th>{}</tr>", cell(&f.shape, false));
    for r in &f.return_levels {
        match (&r.level_ns, &r.withheld) {
            (Some(_), Some(why)) => {
                let _ = writeln!(
                    out,
                    "<tr><th>once per {}</th><td colspan=\"3\">no estimate: {}</td></tr>",
                    escape(&r.per),
                    escape(why)
                );
            }
            (Some(e), None) => {
                let _ = writeln!(
                    out,
                    "<tr><th>once per {}</th>{}</tr>",
                    escape(&r.per),
                    cell(e, true)
                );
            }
            (None, _) => {}
        }
    }
    if let Some(b) = &f.budget {
        let _ = writeln!(
            out,
            "<tr><th>P(&gt; {}) per hour</th><td class=\"n\">{:.2e}</td><td class=\"n\">{:.2e}</td><td class=\"n\">{:.2e}</td></tr>",
            escape(&fmt_ns(b.budget_ns as f64)),
            b.per_hour,
            b.lower,
            b.upper
        );
    }
    out.push_str("</table>\n<table>\n<tr><th>check</th><th>statistic</th><th>p-value</th><th></th><th>a failure means</th></tr>\n");
    for c in &f.checks {
        let _ = writeln!(
            out,
            "<tr><td>{} ({})</td><td class=\"n\">{:.4}</td><td class=\"n\">{:.3}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            escape(super::plain_check(&c.name)),
            escape(&c.name),
            c.statistic,
            c.p_value,
            if c.passed { "pass" } else { "fail" },
            if c.passed { "passed" } else { "FAILED" },
            escape(&c.says)
        );
    }
    out.push_str("</table>\n");
    for svg in [
        plots::return_levels(f, budget),
        plots::qq(f),
        plots::threshold(f),
        plots::mean_excess(f),
    ]
    .into_iter()
    .flatten()
    {
        out.push_str(&svg);
        out.push('\n');
    }
}
