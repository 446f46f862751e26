//! The HTML form of a comparison: the Linaro 2023 talk's table with real spanning headers — a row of
//! column groups (Min / Avg / p99.9 / Max), a row of clusters when the host is heterogeneous,
//! a row of CPU numbers — one row per run, and a `delta` row under every later run. Every text
//! that comes from a run (labels, host names, kernel releases, cluster names) is escaped.
//!
//! [`compare_html`] is the table alone, for embedding in a larger page; [`compare_html_page`]
//! a small self-contained document (inline style, no scripts, nothing fetched) with the runs
//! compared and the verdict.

use std::fmt::Write as _;

use super::text::{delta_label, started};
use super::{Comparison, Figure};

/// The comparison table as an HTML fragment (`<table class="rtlab-compare">`), ending with a
/// newline.
pub fn compare_html(c: &Comparison) -> String {
    let mut out = String::new();
    let baseline = c.baseline().unwrap_or_default();
    let columns: Vec<u32> = c.clusters.iter().flat_map(|g| g.cpus.clone()).collect();
    let head_rows = if c.heterogeneous { 3 } else { 2 };
    out.push_str("<table class=\"rtlab-compare\">\n<thead>\n");
    let _ = write!(
        out,
        "<tr><th rowspan=\"{head_rows}\" scope=\"col\">run</th>"
    );
    for f in Figure::ALL {
        let _ = write!(
            out,
            "<th colspan=\"{}\" scope=\"colgroup\" class=\"sep\">{} (us)</th>",
            columns.len(),
            f.title()
        );
    }
    out.push_str("</tr>\n");
    if c.heterogeneous {
        out.push_str("<tr>");
        for _ in Figure::ALL {
            for g in &c.clusters {
                let _ = write!(
                    out,
                    "<th colspan=\"{}\" scope=\"colgroup\" class=\"sep\">{}</th>",
                    g.cpus.len(),
                    escape(g.name.as_deref().unwrap_or_default())
                );
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("<tr>");
    for _ in Figure::ALL {
        for (col, cpu) in columns.iter().enumerate() {
            let _ = write!(out, "<th scope=\"col\"{}>{cpu}</th>", sep(c, col));
        }
    }
    out.push_str("</tr>\n</thead>\n<tbody>\n");
    for (i, r) in c.runs.iter().enumerate() {
        let _ = write!(out, "<tr><th scope=\"row\">{}</th>", escape(&r.label));
        for f in Figure::ALL {
            for (col, x) in r.cpus.iter().enumerate() {
                let _ = write!(out, "<td{}>{}</td>", sep(c, col), x.cell(f));
            }
        }
        out.push_str("</tr>\n");
        if i > 0 && c.comparable(i) {
            let _ = write!(
                out,
                "<tr class=\"delta\"><th scope=\"row\">{}</th>",
                escape(&delta_label(baseline))
            );
            for f in Figure::ALL {
                for col in 0..r.cpus.len() {
                    let _ = write!(out, "<td{}>{}</td>", sep(c, col), c.delta_cell(i, col, f));
                }
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// ` class="sep"` on the first column of a cluster (a left rule in the page's style).
fn sep(c: &Comparison, col: usize) -> &'static str {
    let mut start = 0;
    for g in &c.clusters {
        if col == start {
            return " class=\"sep\"";
        }
        start += g.cpus.len();
    }
    ""
}

const STYLE: &str = "\
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #ddd; }
td { text-align: right; font-variant-numeric: tabular-nums; }
tbody th { text-align: left; white-space: nowrap; }
.sep { border-left: 1px solid #999; }
tr.delta { font-style: italic; color: #555; }
.pass { color: #186a2e; }
.fail { color: #a4161a; }
";

/// A self-contained HTML document: the runs compared, the table and the verdict.
pub fn compare_html_page(c: &Comparison) -> String {
    let labels: Vec<&str> = c.runs.iter().map(|r| r.label.as_str()).collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>rtlab compare: {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <h1>Latency comparison</h1>\n",
        escape(&labels.join(", "))
    );
    let conditions = c.has_conditions();
    let _ = write!(
        out,
        "<table class=\"rtlab-runs\">\n<thead><tr><th>run</th><th>host</th><th>kernel</th>\
         <th>started (UTC)</th>{}</tr></thead>\n<tbody>\n",
        if conditions {
            "<th>measured under</th>"
        } else {
            ""
        }
    );
    for r in &c.runs {
        let more = if conditions {
            format!("<td>{}</td>", escape(&r.conditions()))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{}</td>{more}</tr>",
            escape(&r.label),
            escape(&r.hostname),
            escape(&r.kernel_release),
            escape(&started(&r.started_at))
        );
    }
    out.push_str("</tbody>\n</table>\n");
    let _ = writeln!(
        out,
        "<p>{} in microseconds. Rows in italics give a run's change against {}.</p>",
        super::markdown::capital(c.figures_word()),
        escape(c.baseline().unwrap_or_default())
    );
    for warning in c.warnings() {
        let _ = writeln!(
            out,
            "<p class=\"fail\"><strong>Warning:</strong> {}.</p>",
            escape(&warning)
        );
    }
    out.push_str(&compare_html(c));
    if let Some(v) = &c.verdict {
        let class = if v.passed { "pass" } else { "fail" };
        let _ = writeln!(out, "<p class=\"{class}\">{}</p>", escape(&v.summary()));
        if !v.passed {
            out.push_str("<ul>\n");
            for m in v.messages() {
                let _ = writeln!(out, "<li>{}</li>", escape(&m));
            }
            out.push_str("</ul>\n");
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Text made safe for HTML element content and quoted attributes (also the timerlat
/// section's, `crate::timerlat`).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
