//! The Markdown form of a comparison, for pull requests, tickets and wikis: the runs compared,
//! then the Linaro 2023 talk's table as one wide table — column groups Min / Avg / p99.9 / Max, one column
//! per CPU, a `Cluster` row naming the CPU groups when the host is heterogeneous, a `CPU` row,
//! one row per run and, in italics under every later run, its change against the first run.
//! Markdown tables have one header row, so the cluster and CPU rows are bold body rows, as in
//! the talk's slides. Cells are escaped (`|`, `<`).

use std::fmt::Write as _;

use super::text::{delta_label, started};
use super::{Comparison, Figure};

/// The comparison as Markdown, ending with a newline.
pub fn compare_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let baseline = c.baseline().unwrap_or_default();
    let _ = writeln!(out, "## Latency comparison\n");
    let _ = writeln!(
        out,
        "{} in us. Rows in italics give a run's change against {}.\n",
        capital(c.figures_word()),
        cell(baseline)
    );
    for warning in c.warnings() {
        let _ = writeln!(out, "**Warning:** {}.\n", cell(&warning));
    }
    runs_table(&mut out, c);
    out.push('\n');
    figures_table(&mut out, c, baseline);
    if let Some(v) = &c.verdict {
        let _ = writeln!(out, "\n**{}**", cell(&v.summary()));
        if !v.passed {
            out.push('\n');
        }
        for m in v.messages() {
            let _ = writeln!(out, "- {}", cell(&m));
        }
    }
    out
}

/// The runs compared: label, host, kernel, start and, when any has one, what they were
/// measured under.
fn runs_table(out: &mut String, c: &Comparison) {
    let conditions = c.has_conditions();
    let (more_head, more_rule) = if conditions {
        (" measured under |", " --- |")
    } else {
        ("", "")
    };
    let _ = writeln!(out, "| run | host | kernel | started (UTC) |{more_head}");
    let _ = writeln!(out, "| --- | --- | --- | --- |{more_rule}");
    for r in &c.runs {
        let more = if conditions {
            format!(" {} |", cell(&r.conditions()))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |{more}",
            cell(&r.label),
            cell(&r.hostname),
            cell(&r.kernel_release),
            cell(&started(&r.started_at))
        );
    }
}

/// The talk's table: the figure groups' header, the cluster and CPU rows, then each run and
/// under every later one its change against `baseline`.
fn figures_table(out: &mut String, c: &Comparison, baseline: &str) {
    let columns: Vec<u32> = c.clusters.iter().flat_map(|g| g.cpus.clone()).collect();
    let n = columns.len();
    let mut head = vec![String::new()];
    let mut rule = vec![":--".to_string()];
    for f in Figure::ALL {
        for i in 0..n {
            head.push(if i == 0 {
                f.title().to_string()
            } else {
                String::new()
            });
            rule.push("--:".to_string());
        }
    }
    row(out, &head);
    row(out, &rule);
    if c.heterogeneous {
        row(out, &cluster_row(c));
    }
    let mut cpus = vec!["**CPU**".to_string()];
    for _ in Figure::ALL {
        cpus.extend(columns.iter().map(|cpu| format!("**{cpu}**")));
    }
    row(out, &cpus);
    let delta = format!("*{}*", cell(&delta_label(baseline)));
    for (i, r) in c.runs.iter().enumerate() {
        let mut cells = vec![cell(&r.label)];
        for f in Figure::ALL {
            cells.extend(r.cpus.iter().map(|x| x.cell(f)));
        }
        row(out, &cells);
        if i > 0 && c.comparable(i) {
            let mut changes = vec![delta.clone()];
            for f in Figure::ALL {
                changes.extend((0..r.cpus.len()).map(|col| match c.delta_cell(i, col, f) {
                    d if d == "-" => d,
                    d => format!("*{d}*"),
                }));
            }
            row(out, &changes);
        }
    }
}

/// The bold `Cluster` row: each group's name over its first CPU, in every figure group.
fn cluster_row(c: &Comparison) -> Vec<String> {
    let mut names = vec!["**Cluster**".to_string()];
    for _ in Figure::ALL {
        for g in &c.clusters {
            for i in 0..g.cpus.len() {
                names.push(match (&g.name, i) {
                    (Some(name), 0) => format!("**{}**", cell(name)),
                    _ => String::new(),
                });
            }
        }
    }
    names
}

/// One table row.
fn row(out: &mut String, cells: &[String]) {
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

/// Text made safe for a table cell: `|` escaped, `<` escaped so that nothing a run brings is
/// read as HTML, line breaks as spaces.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "\\<")
        .replace(['\r', '\n'], " ")
}

/// `latencies` → `Latencies`.
pub(crate) fn capital(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}
