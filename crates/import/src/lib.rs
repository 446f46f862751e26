//! rtlab's importers: results other tools wrote, read into rtlab's measurement document
//! ([`MeasureRun`], `rtlab.measure/1`) so that `show`, `compare`, `report` and `export` work
//! on them, with an [`ImportInfo`](model::imported::ImportInfo) that says where they came
//! from and which figures are the tool's and which are estimates.
//!
//! Formats, recognised by content, never by file name: cyclictest `--json` output
//! ([`Format::CyclictestJson`]), cyclictest `-h`/`-H`/`--histfile` histograms with their `#`
//! footer ([`Format::CyclictestHist`]) and cyclictest's `T:` summary lines
//! ([`Format::CyclictestSummary`]), and `rtla timerlat hist` text output
//! ([`Format::RtlaTimerlatHist`]; `rtla osnoise hist` output is recognised and refused: it
//! measures noise, not wake-up latency). oslat output (text and JSON) is recognised and
//! refused for now, so its cyclictest-shaped JSON is never misread as cyclictest's.
//!
//! Parsers are pure functions of text: no file access, no clock (the caller passes the file's
//! modification time for sources that do not say when they ran), no printing. Every error
//! names the file and, where one is to blame, the line.

mod build;
mod cyclictest_hist;
mod cyclictest_json;
mod cyclictest_opts;
mod cyclictest_summary;
mod error;
mod rtla_hist;

use std::time::SystemTime;

use model::measure::MeasureRun;

pub use error::ImportError;

/// A format `rtlab import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// cyclictest `--json=FILE`.
    CyclictestJson,
    /// cyclictest `-h N` / `-H N` output or `--histfile`: one row per microsecond, `#` footer.
    CyclictestHist,
    /// cyclictest's `T: 0 (1234) P:80 I:1000 C: ... Min: ... Act: ... Avg: ... Max: ...` lines.
    CyclictestSummary,
    /// `rtla timerlat hist` text: `Index IRQ-000 Thr-000 ...` rows, `over:`/`count:`/`min:`/
    /// `avg:`/`max:` footer; the thread latency is imported.
    RtlaTimerlatHist,
}

/// What the error for an unknown file lists.
pub const SUPPORTED: &str = "cyclictest --json output, cyclictest -h/-H/--histfile histograms \
                             (with their '# Total:' footer), cyclictest summary lines ('T: 0 (...) \
                             P:.. I:.. C:.. Min:.. Act:.. Avg:.. Max:..'), rtla \
                             timerlat hist text output";

impl Format {
    /// The format's id, as stored in `import.format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest-json",
            Format::CyclictestHist => "cyclictest-hist",
            Format::CyclictestSummary => "cyclictest-summary",
            Format::RtlaTimerlatHist => "rtla-timerlat-hist",
        }
    }

    /// The format for a person (`cyclictest JSON`).
    pub fn describe(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest JSON",
            Format::CyclictestHist => "cyclictest histogram",
            Format::CyclictestSummary => "cyclictest summary",
            Format::RtlaTimerlatHist => "rtla timerlat histogram",
        }
    }

    /// The format an [`ImportInfo`](model::imported::ImportInfo) names.
    pub fn from_name(name: &str) -> Option<Format> {
        [
            Format::CyclictestJson,
            Format::CyclictestHist,
            Format::CyclictestSummary,
            Format::RtlaTimerlatHist,
        ]
        .into_iter()
        .find(|f| f.name() == name)
    }
}

/// Why oslat output is refused, for now: it is recognised so it is not misread as cyclictest's
/// (its JSON has the same shape), and said plainly.
pub const OSLAT_REFUSAL: &str = "oslat output is not read yet: oslat measures the gaps in a busy-polling loop, not wake-up latency, and rtlab has no run kind for it; import cyclictest or rtla timerlat output instead";

/// Whether `text` is oslat's output: its JSON (`"cmdline:": "oslat ...`, threads with `freq`
/// and no `cycles`) or its text report (`Core:`/`core_i:` with `NNN (us):` rows).
fn is_oslat(text: &str) -> bool {
    let json = text.trim_start().starts_with('{');
    if json {
        return text.contains("\"oslat ")
            || (text.contains("\"freq\"") && !text.contains("\"cycles\""));
    }
    let cores = text
        .lines()
        .any(|l| matches!(l.trim_start().split(':').next(), Some("Core" | "core_i")));
    let rows = text.lines().any(|l| l.trim_start().contains(" (us):"));
    cores && rows
}

/// Recognises the format of `text`, if it is one rtlab reads.
pub fn detect(text: &str) -> Option<Format> {
    if is_oslat(text) {
        None
    } else if rtla_hist::detect(text) {
        Some(Format::RtlaTimerlatHist)
    } else if cyclictest_json::detect(text) {
        Some(Format::CyclictestJson)
    } else if cyclictest_hist::detect(text) {
        Some(Format::CyclictestHist)
    } else if cyclictest_summary::detect(text) {
        Some(Format::CyclictestSummary)
    } else {
        None
    }
}

/// Reads one file's text (`file` names it in errors and in the result). `modified` (the
/// file's modification time) dates runs whose source records no time.
pub fn import(file: &str, text: &str, modified: SystemTime) -> Result<MeasureRun, ImportError> {
    match detect(text) {
        Some(Format::CyclictestJson) => cyclictest_json::parse(file, text, modified),
        Some(Format::CyclictestHist) => cyclictest_hist::parse(file, text, modified),
        Some(Format::CyclictestSummary) => cyclictest_summary::parse(file, text, modified),
        Some(Format::RtlaTimerlatHist) => rtla_hist::parse(file, text, modified),
        None if rtla_hist::is_osnoise(text) => {
            Err(ImportError::whole(file, rtla_hist::OSNOISE_REFUSAL))
        }
        None if is_oslat(text) => Err(ImportError::whole(file, OSLAT_REFUSAL)),
        None => Err(ImportError::whole(
            file,
            format!("not a format rtlab import reads; it reads {SUPPORTED}"),
        )),
    }
}

#[cfg(test)]
mod tests;
