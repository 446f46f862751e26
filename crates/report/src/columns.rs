//! Text columns: rows of cells aligned to each column's widest cell, two spaces apart. Every
//! terminal table of this crate is laid out here.

use std::fmt::Write as _;

/// Right-aligns every cell to its column's widest cell, columns two spaces apart.
pub(crate) fn align_right(rows: &[Vec<String>]) -> Vec<String> {
    align(rows, false)
}

/// Aligns every cell to its column's widest cell, columns two spaces apart: right-aligned,
/// except the first column when `first_left` (a name column).
pub fn align(rows: &[Vec<String>], first_left: bool) -> Vec<String> {
    lay_out(rows, usize::from(first_left))
}

/// Aligns cells to their column's widest, two spaces apart: the first two columns to the
/// left, the rest to the right.
pub(crate) fn align_two_left(rows: &[Vec<String>]) -> Vec<String> {
    lay_out(rows, 2)
}

/// The one layout: widths counted in characters (as `format!` pads them, so `µs` and names
/// beyond ASCII line up), the first `left` columns to the left, the rest to the right.
fn lay_out(rows: &[Vec<String>], left: usize) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, &w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                if i < left {
                    let _ = write!(line, "{cell:<w$}");
                } else {
                    let _ = write!(line, "{cell:>w$}");
                }
            }
            line
        })
        .collect()
}
