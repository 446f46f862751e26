//! The one chart the report draws: lines over a linear x axis and a linear or logarithmic y
//! axis, with a legend beside the plot, rendered to SVG text.
//!
//! plotters stays behind this type: the rest of the report describes a [`Chart`] in its own
//! terms (labels, ranges, points) and gets SVG back, so the plotting crate can be replaced
//! without touching what is plotted. SVG needs no font: text is written as `<text>` elements
//! (`sans-serif`) and the browser lays it out; plotters only estimates text extents.
//!
//! Every series is one `<polyline>` per connected segment, in the series' colour; axes and
//! grid lines are plain lines. Values outside the chart's ranges are clamped to its edges.

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Width of every chart, in SVG pixels.
const WIDTH: u32 = 960;
/// Height of every chart.
const HEIGHT: u32 = 440;
/// Height of one legend entry.
const LEGEND_ROW: u32 = 16;
/// Longest legend label kept (characters); longer ones end in `...`.
const LEGEND_CHARS: usize = 28;

/// How the y axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum YScale {
    /// Linear from the range's start.
    Linear,
    /// Base-10 logarithmic; the range must be positive.
    Log,
}

/// One series: a label for the legend and its points, split where the data has gaps.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    /// Legend text.
    pub(crate) label: String,
    /// Connected runs of points, in x order; each becomes one polyline.
    pub(crate) segments: Vec<Vec<(f64, f64)>>,
}

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chart {
    /// The caption above the plot.
    pub(crate) title: String,
    /// x axis description.
    pub(crate) x_label: String,
    /// y axis description.
    pub(crate) y_label: String,
    /// x axis range.
    pub(crate) x_range: (f64, f64),
    /// y axis range (positive for [`YScale::Log`]).
    pub(crate) y_range: (f64, f64),
    /// y axis mapping.
    pub(crate) y_scale: YScale,
    /// The series, drawn in order, coloured by [`colour`].
    pub(crate) lines: Vec<Line>,
}

/// Series colour `index` of `count`: the Tableau 10 palette up to ten series, evenly spaced
/// hues beyond.
fn colour(index: usize, count: usize) -> RGBColor {
    const TABLEAU: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    if count <= TABLEAU.len() {
        let (r, g, b) = TABLEAU[index % TABLEAU.len()];
        return RGBColor(r, g, b);
    }
    let hue = index as f64 / count as f64;
    let lightness = if index.is_multiple_of(2) { 0.38 } else { 0.52 };
    let (r, g, b) = HSLColor(hue, 0.75, lightness).rgb();
    RGBColor(r, g, b)
}

/// A tick label: whole numbers without decimals, others with up to three significant
/// decimals; very small or large magnitudes in exponent form (`1e-5`).
pub(crate) fn tick(value: f64) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    let magnitude = value.abs();
    if !(1e-3..1e7).contains(&magnitude) {
        let exponent = magnitude.log10().round() as i32;
        if (magnitude / 10f64.powi(exponent) - 1.0).abs() < 1e-9 {
            return format!("{}1e{exponent}", if value < 0.0 { "-" } else { "" });
        }
        return format!("{value:.1e}");
    }
    if (value - value.round()).abs() < 1e-9 {
        return format!("{}", value.round() as i64);
    }
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `text` cut to [`LEGEND_CHARS`] characters.
fn legend_text(text: &str) -> String {
    if text.chars().count() <= LEGEND_CHARS {
        text.to_string()
    } else {
        let mut cut: String = text.chars().take(LEGEND_CHARS - 3).collect();
        cut.push_str("...");
        cut
    }
}

impl Chart {
    /// The chart as a standalone SVG document (no XML declaration, so it can also be placed
    /// inline in HTML).
    pub(crate) fn to_svg(&self) -> String {
        let mut svg = String::new();
        let outcome = self.draw(&mut svg);
        match outcome {
            Ok(()) => svg,
            // Drawing into a String does not fail for finite, ordered ranges; should it
            // anyway, the report says so where the plot would be instead of losing the page.
            Err(why) => format!(
                "<svg width=\"{WIDTH}\" height=\"40\" viewBox=\"0 0 {WIDTH} 40\" \
                 xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"25\">{} could not be \
                 drawn: {}</text></svg>\n",
                xml_escape(&self.title),
                xml_escape(&why)
            ),
        }
    }

    fn draw(&self, svg: &mut String) -> Result<(), String> {
        let rows_fit = ((HEIGHT - 60) / LEGEND_ROW).max(1) as usize;
        let columns = self.lines.len().div_ceil(rows_fit).max(1);
        let widest = self
            .lines
            .iter()
            .map(|l| legend_text(&l.label).chars().count())
            .max()
            .unwrap_or(0) as u32;
        let column_width = 36 + widest * 7;
        let legend_width = (16 + columns as u32 * column_width).min(WIDTH / 2);

        let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot, legend) = root.split_horizontally(WIDTH - legend_width);

        let (x0, x1) = ordered(self.x_range, 1.0);
        let (y0, y1) = ordered(self.y_range, 1.0);
        let mut builder = ChartBuilder::on(&plot);
        builder
            .caption(&self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72);
        match self.y_scale {
            YScale::Linear => {
                let chart = builder
                    .build_cartesian_2d(x0..x1, y0..y1)
                    .map_err(|e| e.to_string())?;
                self.draw_lines(chart, (y0, y1))?;
            }
            YScale::Log => {
                let (y0, y1) = (y0.max(f64::MIN_POSITIVE), y1.max(y0 * 10.0));
                // A hair beyond the range, so decades at its very ends (0.1 .. 1) get their
                // ticks despite rounding in plotters' tick search.
                let (y0, y1) = (y0 * 0.999, y1 * 1.001);
                let chart = builder
                    .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                    .map_err(|e| e.to_string())?;
                self.draw_lines(chart, (y0, y1))?;
            }
        }
        self.draw_legend(&legend, rows_fit, column_width)?;
        root.present().map_err(|e| e.to_string())?;
        Ok(())
    }

    fn draw_lines<'a, Y>(
        &self,
        mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
        (y0, y1): (f64, f64),
    ) -> Result<(), String>
    where
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let x_fmt = |v: &f64| tick(*v);
        let y_fmt = |v: &f64| tick(*v);
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_labels(12)
            .y_labels(8)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .bold_line_style(RGBColor(214, 214, 214))
            .light_line_style(RGBColor(240, 240, 240))
            .axis_desc_style(("sans-serif", 14))
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(|e| e.to_string())?;
        let (x0, x1) = ordered(self.x_range, 1.0);
        let count = self.lines.len();
        for (i, line) in self.lines.iter().enumerate() {
            let style = ShapeStyle::from(colour(i, count)).stroke_width(2);
            for segment in &line.segments {
                let points = segment
                    .iter()
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .map(|&(x, y)| (x.clamp(x0, x1), y.clamp(y0, y1)));
                chart
                    .draw_series(LineSeries::new(points, style))
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    fn draw_legend(
        &self,
        area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        rows_fit: usize,
        column_width: u32,
    ) -> Result<(), String> {
        let count = self.lines.len();
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        for (i, line) in self.lines.iter().enumerate() {
            let column = (i / rows_fit) as i32;
            let row = (i % rows_fit) as i32;
            let x = 4 + column * column_width as i32;
            let y = 44 + row * LEGEND_ROW as i32;
            let style = ShapeStyle::from(colour(i, count)).stroke_width(3);
            area.draw(&PathElement::new(vec![(x, y), (x + 22, y)], style))
                .map_err(|e| e.to_string())?;
            area.draw(&Text::new(
                legend_text(&line.label),
                (x + 28, y - 7),
                font.clone(),
            ))
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// A range with start below end (an empty or inverted one widened by `pad`).
fn ordered((a, b): (f64, f64), pad: f64) -> (f64, f64) {
    let (a, b) = if a.is_finite() && b.is_finite() {
        (a.min(b), a.max(b))
    } else {
        (0.0, pad)
    };
    if b > a { (a, b) } else { (a, a + pad) }
}

/// `text` safe inside an XML element.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(y_scale: YScale) -> Chart {
        Chart {
            title: "t".into(),
            x_label: "latency (us)".into(),
            y_label: "samples".into(),
            x_range: (0.0, 10.0),
            y_range: (0.5, 1000.0),
            y_scale,
            lines: vec![
                Line {
                    label: "CPU 0".into(),
                    segments: vec![vec![(0.0, 1.0), (1.0, 10.0), (2.0, 100.0)]],
                },
                Line {
                    label: "CPU 1".into(),
                    segments: vec![vec![(0.0, 5.0), (3.0, 0.0)], vec![(5.0, 1.0), (6.0, 2.0)]],
                },
            ],
        }
    }

    #[test]
    fn one_polyline_per_segment_in_the_series_colour() {
        let svg = chart(YScale::Log).to_svg();
        assert!(svg.starts_with("<svg "), "{svg}");
        let data: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\""))
            .collect();
        assert_eq!(data.len(), 3, "{svg}");
        assert!(data[0].contains("#1F77B4"), "{}", data[0]);
        assert!(data[1].contains("#FF7F0E") && data[2].contains("#FF7F0E"));
        assert!(svg.contains(">\nlatency (us)\n</text>"), "{svg}");
        assert!(svg.contains(">\nCPU 1\n</text>"));
    }

    #[test]
    fn log_axis_labels_are_powers_of_ten() {
        let svg = chart(YScale::Log).to_svg();
        for label in ["1", "10", "100", "1000"] {
            assert!(
                svg.contains(&format!(">\n{label}\n</text>")),
                "{label}: {svg}"
            );
        }
    }

    #[test]
    fn degenerate_ranges_still_draw() {
        let mut c = chart(YScale::Linear);
        c.x_range = (3.0, 3.0);
        c.y_range = (f64::NAN, 0.0);
        let svg = c.to_svg();
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(!svg.contains("could not be drawn"));
    }

    #[test]
    fn ticks_read_naturally() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(50.0), "50");
        assert_eq!(tick(12.5), "12.5");
        assert_eq!(tick(0.125), "0.125");
        assert_eq!(tick(1e-5), "1e-5");
        assert_eq!(tick(1e7), "1e7");
        assert_eq!(tick(2.5e-6), "2.5e-6");
    }

    #[test]
    fn many_series_get_distinct_colours_and_long_labels_are_cut() {
        let colours: std::collections::HashSet<_> =
            (0..24).map(|i| format!("{:?}", colour(i, 24))).collect();
        assert_eq!(colours.len(), 24);
        assert_eq!(legend_text(&"x".repeat(40)).chars().count(), LEGEND_CHARS);
    }
}
