//! The legend of a chart: under the plot, its entries in rows of equal columns, as many across
//! as the widest label allows, so a run's name and load are shown whole.

/// Height of one legend row.
pub(super) const LEGEND_ROW: u32 = 24;
/// The most a legend text's characters are taken to be wide, at [`TEXT_PX`].
const LEGEND_CHAR_PX: u32 = 9;
/// Longest legend label kept (characters); longer ones end in `...`. A label this long takes a
/// row of its own.
const LEGEND_CHARS: usize = 96;

/// Where the legend's entries start: under the plot's y axis labels.
pub(super) const LEGEND_LEFT: u32 = 24;

/// How a legend's entries are laid out under the plot.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct LegendLayout {
    pub(super) columns: usize,
    pub(super) rows: usize,
    pub(super) column_width: u32,
}

impl LegendLayout {
    /// As many columns as the widest label allows across a chart `width` wide; a row per
    /// that many.
    pub(super) fn of<'a>(
        labels: impl Iterator<Item = &'a str> + Clone,
        width: u32,
    ) -> LegendLayout {
        let widest = labels
            .clone()
            .map(|l| legend_text(l).chars().count())
            .max()
            .unwrap_or(0) as u32;
        // The swatch, its gap, the text and a gap to the next column.
        let column_width = 32 + widest * LEGEND_CHAR_PX + 24;
        let columns = (width.saturating_sub(LEGEND_LEFT) / column_width).max(1) as usize;
        LegendLayout {
            columns,
            rows: labels.count().div_ceil(columns),
            column_width,
        }
    }

    /// The legend's height under the plot.
    pub(super) fn height(&self) -> u32 {
        self.rows as u32 * LEGEND_ROW + 8
    }
}

/// `text` cut to [`LEGEND_CHARS`] characters.
pub(super) fn legend_text(text: &str) -> String {
    if text.chars().count() <= LEGEND_CHARS {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(LEGEND_CHARS - 3).collect();
        cut.push_str("...");
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDTH: u32 = 960;

    #[test]
    fn only_a_label_longer_than_a_row_is_cut() {
        assert_eq!(legend_text(&"x".repeat(500)).chars().count(), LEGEND_CHARS);
    }

    #[test]
    fn a_run_with_its_load_is_named_whole_in_the_legend_under_the_plot() {
        let label = "full load, load cpu:100%,timer-storm,messaging";
        assert_eq!(legend_text(label), label);
        let layout = LegendLayout::of(["idle", "cpu:60%, load cpu:60%", label].into_iter(), WIDTH);
        // Every column fits across the chart.
        let across = LEGEND_LEFT + layout.columns as u32 * layout.column_width;
        assert!(across <= WIDTH, "{layout:?}");
        assert_eq!(layout.rows, 3usize.div_ceil(layout.columns));
        // Short labels share rows; 64 CPUs take a few rows, not a column off the chart.
        let cpus: Vec<String> = (0..64).map(|c| format!("CPU {c}")).collect();
        let names: Vec<&str> = cpus.iter().map(String::as_str).collect();
        let layout = LegendLayout::of(names.iter().copied(), WIDTH);
        assert!(layout.columns >= 8 && layout.rows <= 8, "{layout:?}");
    }
}
