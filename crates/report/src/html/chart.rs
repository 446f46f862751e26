//! The one chart the report draws: series over a linear or logarithmic x axis and a linear or
//! logarithmic y axis, optional reference rules (a latency budget), and a legend beside the
//! plot, rendered to SVG text.
//!
//! plotters stays behind this type: the rest of the report describes a [`Chart`] in its own
//! terms (axes, points, rules) and gets SVG back, so the plotting crate can be replaced without
//! touching what is plotted. plotters draws the frame: caption, axes, ticks, grid and legend.
//! The data are written by this module as one `<path>` per series (every connected segment a
//! subpath, every lone point a small ring), placed with plotters' own coordinate mapping, so a
//! series is one element whatever its gaps. SVG needs no font: text is written as `<text>`
//! elements (`sans-serif`) and the browser lays it out; plotters only estimates text extents.
//! Values outside the chart's ranges are clamped to its edges.

use std::fmt::Write as _;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use super::legend::{LEGEND_LEFT, LEGEND_ROW, LegendLayout, legend_text};

/// Width of every chart, in SVG pixels: shown at this size on a laptop screen, and scaled to
/// about three quarters of it on an A4 page.
const WIDTH: u32 = 960;
/// Height of the plot (the legend goes under it).
const HEIGHT: u32 = 440;
/// Text sizes in SVG pixels: tick labels and legend at the page's body size (15 px), so that
/// printed at three quarters they stay readable (about 11 pt).
const TEXT_PX: f64 = 15.0;
/// Axis titles.
const AXIS_PX: f64 = 16.0;
/// The chart's title.
const TITLE_PX: f64 = 19.0;
/// plotters writes a font of size `s` as `font-size = s / 1.24`: sizes are given to it
/// multiplied by this.
const PLOTTERS_FONT: f64 = 1.24;
/// Radius of the ring that marks a lone point (a bin with empty neighbours).
const RING: i32 = 3;
/// Colour of reference rules (a budget): a dark red no series colour is close to.
const RULE_COLOUR: &str = "#8B0000";

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Linear from the range's start.
    Linear,
    /// Base-10 logarithmic; the range must be positive.
    Log,
}

/// How an axis' tick labels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ticks {
    /// Plain numbers (`10`, `0.5`, `1e7`); the unit, if any, is in the axis label.
    Plain,
    /// Values in microseconds, labelled with their unit: `10 us`, `2 ms`, `1 s`.
    Latency,
}

/// One axis.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Axis {
    /// Its description.
    pub(crate) label: String,
    /// Its range (positive for [`Scale::Log`]).
    pub(crate) range: (f64, f64),
    /// Its mapping.
    pub(crate) scale: Scale,
    /// How its ticks read.
    pub(crate) ticks: Ticks,
}

/// One series: a label for the legend and its points, split where the data has gaps.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    /// Legend text.
    pub(crate) label: String,
    /// Connected runs of points, in x order; a run of one point is drawn as a ring.
    pub(crate) segments: Vec<Vec<(f64, f64)>>,
}

/// A dashed reference line across the plot, with its label.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rule {
    /// `true`: a vertical line at an x value; `false`: a horizontal line at a y value.
    pub(crate) vertical: bool,
    /// Where.
    pub(crate) at: f64,
    /// Its text, written beside the line (`budget 50 us`).
    pub(crate) label: String,
}

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chart {
    /// The caption above the plot.
    pub(crate) title: String,
    /// The x axis.
    pub(crate) x: Axis,
    /// The y axis.
    pub(crate) y: Axis,
    /// The series, drawn in order, coloured by [`colour`].
    pub(crate) lines: Vec<Line>,
    /// Reference lines, drawn over the series.
    pub(crate) rules: Vec<Rule>,
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

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
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

/// A latency given in microseconds, with the unit that keeps the number short: `0.5 us`,
/// `20 us`, `1 ms`, `2.5 ms`, `1 s`.
pub(crate) fn latency_tick(us: f64) -> String {
    let magnitude = us.abs();
    if magnitude >= 1e6 {
        format!("{} s", tick(us / 1e6))
    } else if magnitude >= 1e3 {
        format!("{} ms", tick(us / 1e3))
    } else {
        format!("{} us", tick(us))
    }
}

impl Axis {
    fn tick_text(&self, value: f64) -> String {
        match self.ticks {
            Ticks::Plain => tick(value),
            Ticks::Latency => latency_tick(value),
        }
    }

    /// The range as drawn: ordered and non-empty; for a log axis positive, at least a decade
    /// wide, and a hair wider at both ends so decades at its very ends get their ticks
    /// despite rounding in plotters' tick search.
    fn drawn_range(&self) -> (f64, f64) {
        let (a, b) = ordered(self.range, 1.0);
        match self.scale {
            Scale::Linear => (a, b),
            Scale::Log => {
                let a = if a > 0.0 {
                    a
                } else {
                    (b / 10.0).max(f64::MIN_POSITIVE)
                };
                let b = b.max(a * 10.0);
                (a * 0.999, b * 1.001)
            }
        }
    }
}

impl Chart {
    /// The chart as a standalone SVG document (no XML declaration, so it can also be placed
    /// inline in HTML).
    pub(crate) fn to_svg(&self) -> String {
        let mut svg = String::new();
        let outcome = self.draw(&mut svg);
        match outcome {
            Ok(data) => match svg.rfind("</svg>") {
                Some(end) => {
                    svg.insert_str(end, &data);
                    svg
                }
                None => svg + &data,
            },
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

    /// Draws the frame and legend into `svg` with plotters; returns the data and rules as SVG
    /// elements, to go at the end of the document (over the grid).
    fn draw(&self, svg: &mut String) -> Result<String, String> {
        let layout = LegendLayout::of(self.lines.iter().map(|l| l.label.as_str()), WIDTH);
        let height = HEIGHT + layout.height();
        let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot, legend) = root.split_vertically(HEIGHT);

        let (x0, x1) = self.x.drawn_range();
        let (y0, y1) = self.y.drawn_range();
        let mut builder = ChartBuilder::on(&plot);
        builder
            .caption(&self.title, ("sans-serif", TITLE_PX * PLOTTERS_FONT))
            .margin(14)
            .x_label_area_size(56)
            .y_label_area_size(96);
        let err = |e: plotters::drawing::DrawingAreaErrorKind<_>| e.to_string();
        let data = match (self.x.scale, self.y.scale) {
            (Scale::Linear, Scale::Linear) => {
                self.frame(builder.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?)?
            }
            (Scale::Linear, Scale::Log) => self.frame(
                builder
                    .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                    .map_err(err)?,
            )?,
            (Scale::Log, Scale::Linear) => self.frame(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                    .map_err(err)?,
            )?,
            (Scale::Log, Scale::Log) => self.frame(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                    .map_err(err)?,
            )?,
        };
        self.draw_legend(&legend, &layout)?;
        root.present().map_err(|e| e.to_string())?;
        Ok(data)
    }

    /// Draws axes, ticks and grid; returns the series and rules as SVG elements placed in the
    /// chart's coordinates.
    fn frame<X, Y>(
        &self,
        mut chart: ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    ) -> Result<String, String>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let x_fmt = |v: &f64| self.x.tick_text(*v);
        let y_fmt = |v: &f64| self.y.tick_text(*v);
        chart
            .configure_mesh()
            .x_desc(self.x.label.as_str())
            .y_desc(self.y.label.as_str())
            .x_labels(10)
            .y_labels(8)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .bold_line_style(RGBColor(214, 214, 214))
            .light_line_style(RGBColor(240, 240, 240))
            .axis_desc_style(("sans-serif", AXIS_PX * PLOTTERS_FONT))
            .label_style(("sans-serif", TEXT_PX * PLOTTERS_FONT))
            .draw()
            .map_err(|e| e.to_string())?;
        let (x0, x1) = self.x.drawn_range();
        let (y0, y1) = self.y.drawn_range();
        let at = |(x, y): (f64, f64)| chart.backend_coord(&(x.clamp(x0, x1), y.clamp(y0, y1)));
        let mut out = String::new();
        let count = self.lines.len();
        for (i, line) in self.lines.iter().enumerate() {
            let d = path_data(&line.segments, &at);
            if !d.is_empty() {
                let _ = writeln!(
                    out,
                    "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" \
                     stroke-linejoin=\"round\"/>",
                    hex(colour(i, count))
                );
            }
        }
        for rule in &self.rules {
            let ((ax, ay), (bx, by)) = if rule.vertical {
                (at((rule.at, y0)), at((rule.at, y1)))
            } else {
                (at((x0, rule.at)), at((x1, rule.at)))
            };
            let _ = writeln!(
                out,
                "<line x1=\"{ax}\" y1=\"{ay}\" x2=\"{bx}\" y2=\"{by}\" stroke=\"{RULE_COLOUR}\" \
                 stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>"
            );
            let (tx, ty, anchor) = if rule.vertical {
                (bx + 4, by + 16, "start")
            } else {
                (bx - 4, by - 6, "end")
            };
            let _ = writeln!(
                out,
                "<text x=\"{tx}\" y=\"{ty}\" font-family=\"sans-serif\" font-size=\"{TEXT_PX}\" \
                 fill=\"{RULE_COLOUR}\" text-anchor=\"{anchor}\">{}</text>",
                xml_escape(&rule.label)
            );
        }
        Ok(out)
    }

    /// The legend under the plot: entries in rows, left to right, in columns of one width.
    fn draw_legend(
        &self,
        area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        layout: &LegendLayout,
    ) -> Result<(), String> {
        let count = self.lines.len();
        let font = ("sans-serif", TEXT_PX * PLOTTERS_FONT)
            .into_font()
            .color(&BLACK);
        for (i, line) in self.lines.iter().enumerate() {
            let column = (i % layout.columns) as i32;
            let row = (i / layout.columns) as i32;
            let x = LEGEND_LEFT as i32 + column * layout.column_width as i32;
            let y = (LEGEND_ROW / 2) as i32 + row * LEGEND_ROW as i32;
            let style = ShapeStyle::from(colour(i, count)).stroke_width(3);
            area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], style))
                .map_err(|e| e.to_string())?;
            area.draw(&Text::new(
                legend_text(&line.label),
                (x + 32, y - (TEXT_PX * 0.55) as i32),
                font.clone(),
            ))
            .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The `d` attribute of one series: a subpath per segment (points that land on the same pixel
/// merged), a ring for a segment that is one point; empty when nothing is finite.
fn path_data(segments: &[Vec<(f64, f64)>], at: &dyn Fn((f64, f64)) -> (i32, i32)) -> String {
    let mut d = String::new();
    for segment in segments {
        let mut pixels: Vec<(i32, i32)> = Vec::with_capacity(segment.len());
        for &(x, y) in segment {
            if !(x.is_finite() && y.is_finite()) {
                continue;
            }
            let p = at((x, y));
            if pixels.last() != Some(&p) {
                pixels.push(p);
            }
        }
        match pixels.as_slice() {
            [] => {}
            [(x, y)] => {
                let _ = write!(
                    d,
                    "M{},{y}a{RING},{RING} 0 1,0 {},0a{RING},{RING} 0 1,0 -{},0",
                    x - RING,
                    2 * RING,
                    2 * RING
                );
            }
            [(x, y), rest @ ..] => {
                let _ = write!(d, "M{x},{y}L");
                for (i, (x, y)) in rest.iter().enumerate() {
                    let _ = write!(d, "{}{x},{y}", if i == 0 { "" } else { " " });
                }
            }
        }
    }
    d
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

    fn axis(label: &str, range: (f64, f64), scale: Scale, ticks: Ticks) -> Axis {
        Axis {
            label: label.into(),
            range,
            scale,
            ticks,
        }
    }

    fn chart(y_scale: Scale) -> Chart {
        Chart {
            title: "t".into(),
            x: axis("latency", (1.0, 1000.0), Scale::Log, Ticks::Latency),
            y: axis("samples", (0.5, 1000.0), y_scale, Ticks::Plain),
            lines: vec![
                Line {
                    label: "CPU 0".into(),
                    segments: vec![vec![(1.5, 1.0), (2.5, 10.0), (3.5, 100.0)]],
                },
                Line {
                    label: "CPU 1".into(),
                    segments: vec![vec![(1.5, 5.0), (3.5, 0.0)], vec![(500.5, 1.0)]],
                },
            ],
            rules: vec![Rule {
                vertical: true,
                at: 50.0,
                label: "budget 50 us".into(),
            }],
        }
    }

    fn data(svg: &str) -> Vec<&str> {
        svg.lines()
            .filter(|l| l.starts_with("<path") && l.contains("stroke-width=\"2\""))
            .collect()
    }

    #[test]
    fn one_path_per_series_in_its_colour_with_lone_points_as_rings() {
        let svg = chart(Scale::Log).to_svg();
        assert!(
            svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        let data = data(&svg);
        assert_eq!(data.len(), 2, "{svg}");
        assert!(data[0].contains("#1F77B4"), "{}", data[0]);
        assert!(data[1].contains("#FF7F0E"), "{}", data[1]);
        // CPU 1: a line of two points, then a lone point drawn as a ring (two arcs).
        let d = data[1]
            .split("d=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(d.matches('M').count(), 2, "{d}");
        assert_eq!(d.matches('L').count(), 1, "{d}");
        assert_eq!(d.matches('a').count(), 2, "{d}");
        assert!(svg.contains(">\nlatency\n</text>"), "{svg}");
        assert!(svg.contains(">\nCPU 1\n</text>"));
    }

    #[test]
    fn latency_ticks_carry_units_and_counts_are_powers_of_ten() {
        let svg = chart(Scale::Log).to_svg();
        for label in ["1 us", "10 us", "100 us", "1 ms", "1", "10", "100", "1000"] {
            assert!(
                svg.contains(&format!(">\n{label}\n</text>")),
                "{label}: {svg}"
            );
        }
        assert_eq!(latency_tick(0.5), "0.5 us");
        assert_eq!(latency_tick(250.0), "250 us");
        assert_eq!(latency_tick(2_500.0), "2.5 ms");
        assert_eq!(latency_tick(1e6), "1 s");
    }

    #[test]
    fn a_rule_is_a_dashed_line_with_its_label() {
        let svg = chart(Scale::Log).to_svg();
        let rule = svg
            .lines()
            .find(|l| l.starts_with("<line") && l.contains(RULE_COLOUR))
            .unwrap_or_else(|| panic!("{svg}"));
        assert!(rule.contains("stroke-dasharray"), "{rule}");
        let x1 = rule
            .split("x1=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let x2 = rule
            .split("x2=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(x1, x2, "vertical: {rule}");
        assert!(svg.contains(">budget 50 us</text>"), "{svg}");
    }

    #[test]
    fn degenerate_ranges_still_draw() {
        let mut c = chart(Scale::Linear);
        c.x.range = (3.0, 3.0);
        c.y.range = (f64::NAN, 0.0);
        let svg = c.to_svg();
        assert_eq!(data(&svg).len(), 2, "{svg}");
        assert!(!svg.contains("could not be drawn"));
        c.x.scale = Scale::Linear;
        c.x.range = (0.0, 0.0);
        assert_eq!(data(&c.to_svg()).len(), 2);
    }

    #[test]
    fn points_on_one_pixel_merge_and_nothing_finite_draws_nothing() {
        let at = |(x, y): (f64, f64)| (x.round() as i32, y.round() as i32);
        assert_eq!(
            path_data(&[vec![(1.0, 1.0), (1.2, 1.1), (3.0, 4.0)]], &at),
            "M1,1L3,4"
        );
        assert_eq!(
            path_data(&[vec![(1.0, 1.0), (1.2, 0.9)]], &at),
            "M-2,1a3,3 0 1,0 6,0a3,3 0 1,0 -6,0"
        );
        assert_eq!(path_data(&[vec![(f64::NAN, 1.0)], vec![]], &at), "");
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
    fn many_series_get_distinct_colours() {
        let colours: std::collections::HashSet<_> =
            (0..24).map(|i| format!("{:?}", colour(i, 24))).collect();
        assert_eq!(colours.len(), 24);
    }
}
