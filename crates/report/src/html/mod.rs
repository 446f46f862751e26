//! The HTML report of `rtlab report`: one self-contained page per set of runs, and every plot
//! of it as a standalone SVG file.
//!
//! Per run the page shows a header (name, source, host, kernel, preemption model, when,
//! parameters, status), the per-CPU table with the figures of [`crate::table`], the latency
//! histogram in the OSADL look, the exceedance plot, the maximum latency over time, the load
//! achieved, the audit summary, the warnings and the environment; sections without data are
//! left out. Several runs get one section each, after a chart overlaying their all-CPU
//! exceedance curves (one chart for wake-up latency runs, another for noise runs: the two
//! are never drawn as if comparable). A latency budget, when given, is drawn on every latency
//! axis.
//!
//! The page needs no network: CSS and SVG are inline, text uses the generic `sans-serif`
//! family, there is no script, and a Content-Security-Policy forbids fetching anything. The
//! page is laid out by a minijinja template embedded in the binary ([`page`]); plots are drawn
//! by [`chart`] behind a small chart type. This module returns text only; the caller writes
//! the files (docs/decisions/0011-html-reports.md).

pub(crate) mod chart;
mod facts;
pub mod fleet;
mod host;
mod legend;
mod machine;
pub mod monitor;
mod noise;
mod page;
mod plots;
mod timeline;
mod verdict;
mod why;

#[cfg(test)]
mod plot_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod verdict_tests;

use model::Nanos;
use model::measure::MeasureRun;

/// A run to report on, with what names it.
#[derive(Clone, Copy, Debug)]
pub struct ReportRun<'a> {
    /// The result.
    pub run: &'a MeasureRun,
    /// Its label when it has one, else its id or file name: the section heading and the
    /// run's entry in the legend of the chart over several runs (with its load, when it ran
    /// under one and the name does not say so).
    pub name: &'a str,
    /// Where it came from, in words (`stored run 1a2b3c4d5e6f`, `file results/rt.json`).
    pub source: &'a str,
    /// A short key for file names and anchors: a stored run's id, a file's stem. Characters
    /// other than letters, digits, `.`, `_` and `-` become `-`; a key used twice gets `-2`.
    pub key: &'a str,
}

/// What the report is asked to show beyond the runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// The latency budget: a dashed line on every latency axis of wake-up latency runs.
    pub budget: Option<Nanos>,
    /// The runs followed each other (a campaign's phases): add the worst case over time of
    /// all of them on one time axis.
    pub timeline: bool,
}

/// One plot as a standalone SVG file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SvgFile {
    /// File name: `<key>-histogram.svg`, `<key>-exceedance.svg`, `<key>-max-over-time.svg`,
    /// and `runs-exceedance.svg` (`runs-noise-exceedance.svg` for noise runs) for the chart
    /// over several runs.
    pub name: String,
    /// The SVG document.
    pub svg: String,
}

/// A rendered report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HtmlReport {
    /// The HTML page.
    pub page: String,
    /// Every plot of the page, as files, in page order.
    pub svg_files: Vec<SvgFile>,
}

/// Renders the report over `runs` (in the order given).
pub fn html_report(runs: &[ReportRun<'_>], options: &ReportOptions) -> HtmlReport {
    page::render(runs, options)
}

/// `key` as a file-name part: only letters, digits, `.`, `_` and `-`, not starting with `.` or `-`,
/// never empty.
fn file_key(key: &str) -> String {
    let clean: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_start_matches(['.', '-']);
    if clean.is_empty() {
        "run".to_string()
    } else {
        clean.to_string()
    }
}

/// [`file_key`] of every run, made unique by `-2`, `-3`, ... in order.
fn unique_keys(runs: &[ReportRun<'_>]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    runs.iter()
        .map(|r| {
            let base = file_key(r.key);
            let mut key = base.clone();
            let mut n = 2;
            while !seen.insert(key.clone()) || key == "runs" {
                key = format!("{base}-{n}");
                n += 1;
            }
            key
        })
        .collect()
}
