//! The terminal form of a comparison.
//!
//! the Linaro 2023 talk puts Min, Avg and Max side by side in one wide row per run; with four column groups
//! of eight one-decimal figures that is over 200 columns, wider than a terminal. So the terminal
//! form stacks the column groups: one section per figure (Min, Avg, p99.9, Max), each with the
//! cluster header (when the host is heterogeneous), the CPU numbers, one row per run, and under
//! every later run a `vs FIRST` row with its change against the first run (`+12%`; none for a
//! run that measured something else, such as OS noise against wake-up latency). Every
//! section shares one set of column widths, so a CPU's column runs straight down the page.
//! Clusters are set apart by `|`. Pure ASCII apart from what labels and host names contain.

use std::fmt::Write as _;

use super::{Comparison, Figure};

/// The comparison as terminal text, ending with a newline.
pub fn compare_text(c: &Comparison) -> String {
    let layout = Layout::new(c);
    let mut out = String::new();
    let baseline = c.baseline().unwrap_or_default();
    let _ = writeln!(
        out,
        "rtlab compare: {} run{}, {} in us, changes against {baseline}",
        c.runs.len(),
        if c.runs.len() == 1 { "" } else { "s" },
        c.figures_word()
    );
    for warning in c.warnings() {
        let _ = writeln!(out, "warning: {warning}");
    }
    let legend: Vec<[String; 5]> = c
        .runs
        .iter()
        .map(|r| {
            [
                r.label.clone(),
                or_unknown(&r.hostname),
                or_unknown(&r.kernel_release),
                started(&r.started_at),
                r.conditions(),
            ]
        })
        .collect();
    for line in align_left(&legend) {
        let _ = writeln!(out, "  {line}");
    }
    for figure in Figure::ALL {
        out.push('\n');
        for line in section(c, &layout, figure) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    if let Some(v) = &c.verdict {
        let _ = writeln!(out, "\n{}", v.summary());
    }
    out
}

/// The label of the rows that give a later run's change.
pub(crate) fn delta_label(baseline: &str) -> String {
    format!("vs {baseline}")
}

/// A run's start as `2026-01-12 11:52:32` (the recorded text when it is not RFC 3339).
pub(crate) fn started(at: &str) -> String {
    let head: String = at.chars().take(19).collect();
    if head.len() == 19 && head.as_bytes()[10] == b'T' {
        head.replace('T', " ")
    } else {
        at.to_string()
    }
}

fn or_unknown(text: &str) -> String {
    if text.is_empty() {
        "(unknown)".to_string()
    } else {
        text.to_string()
    }
}

/// Column widths shared by every section.
struct Layout {
    /// The label column.
    label: usize,
    /// One per CPU column, in column order.
    cells: Vec<usize>,
    /// The columns of each cluster, as ranges of `cells`.
    groups: Vec<std::ops::Range<usize>>,
}

impl Layout {
    fn new(c: &Comparison) -> Layout {
        let baseline = c.baseline().unwrap_or_default();
        let mut label = "CPU".len().max(2 + delta_label(baseline).len());
        for f in Figure::ALL {
            label = label.max(f.title().len());
        }
        for r in &c.runs {
            label = label.max(r.label.chars().count());
        }
        let columns: Vec<u32> = c.clusters.iter().flat_map(|g| g.cpus.clone()).collect();
        let mut cells: Vec<usize> = columns.iter().map(|cpu| cpu.to_string().len()).collect();
        for (row, r) in c.runs.iter().enumerate() {
            for (col, width) in cells.iter_mut().enumerate() {
                for f in Figure::ALL {
                    let figure = r.cpus.get(col).map_or(1, |x| x.cell(f).len());
                    *width = (*width).max(figure);
                    if row > 0 {
                        *width = (*width).max(c.delta_cell(row, col, f).len());
                    }
                }
            }
        }
        let mut groups = Vec::new();
        let mut start = 0;
        for g in &c.clusters {
            let range = start..start + g.cpus.len();
            start = range.end;
            // A name wider than its columns widens them evenly.
            if let (Some(name), false) = (&g.name, range.is_empty()) {
                let extra = name
                    .chars()
                    .count()
                    .saturating_sub(span(&cells[range.clone()]));
                let n = range.len();
                for (i, width) in cells[range.clone()].iter_mut().enumerate() {
                    *width += extra / n + usize::from(i < extra % n);
                }
            }
            groups.push(range);
        }
        Layout {
            label,
            cells,
            groups,
        }
    }

    /// One line: the label, then the cells right-aligned, clusters set apart by `|`.
    fn row(&self, label: &str, cells: &[String]) -> String {
        let mut line = pad_right(label, self.label);
        for (g, range) in self.groups.iter().enumerate() {
            if g > 0 {
                line.push_str("  |");
            }
            for col in range.clone() {
                let cell = cells.get(col).map_or("", String::as_str);
                let _ = write!(line, "  {cell:>width$}", width = self.cells[col]);
            }
        }
        line.trim_end().to_string()
    }

    /// The section's first line: its title, and each cluster's name over its columns.
    fn title(&self, title: &str, names: &[Option<String>]) -> String {
        let mut line = pad_right(title, self.label);
        for (g, range) in self.groups.iter().enumerate() {
            if g > 0 {
                line.push_str("  |");
            }
            let name = names.get(g).cloned().flatten().unwrap_or_default();
            line.push_str("  ");
            line.push_str(&pad_right(&name, span(&self.cells[range.clone()])));
        }
        line.trim_end().to_string()
    }
}

/// The width a run of columns covers, the gaps between them included.
fn span(widths: &[usize]) -> usize {
    widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)
}

/// `text` padded with spaces to `width` characters.
fn pad_right(text: &str, width: usize) -> String {
    let mut s = text.to_string();
    for _ in text.chars().count()..width {
        s.push(' ');
    }
    s
}

/// Left-aligned columns two spaces apart, trailing spaces trimmed.
fn align_left<const N: usize>(rows: &[[String; N]]) -> Vec<String> {
    let widths: Vec<usize> = (0..N)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(cell, &w)| pad_right(cell, w))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}

/// One figure's section: title (and cluster) line, CPU line, one row per run and a change row
/// under every later run.
fn section(c: &Comparison, layout: &Layout, figure: Figure) -> Vec<String> {
    let mut lines = Vec::new();
    let names: Vec<Option<String>> = if c.heterogeneous {
        c.clusters.iter().map(|g| g.name.clone()).collect()
    } else {
        Vec::new()
    };
    lines.push(layout.title(figure.title(), &names));
    let cpus: Vec<String> = c
        .clusters
        .iter()
        .flat_map(|g| g.cpus.iter().map(u32::to_string))
        .collect();
    lines.push(layout.row("CPU", &cpus));
    let delta = format!("  {}", delta_label(c.baseline().unwrap_or_default()));
    for (i, r) in c.runs.iter().enumerate() {
        let cells: Vec<String> = r.cpus.iter().map(|x| x.cell(figure)).collect();
        lines.push(layout.row(&r.label, &cells));
        if i > 0 && c.comparable(i) {
            let changes: Vec<String> = (0..r.cpus.len())
                .map(|col| c.delta_cell(i, col, figure))
                .collect();
            lines.push(layout.row(&delta, &changes));
        }
    }
    lines
}
