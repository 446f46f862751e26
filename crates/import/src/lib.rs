//! rtlab's importers: results other tools wrote, read into rtlab's measurement document
//! ([`MeasureRun`], `rtlab.measure/1`) so that `show`, `compare`, `report` and `export` work
//! on them, with an [`ImportInfo`](model::imported::ImportInfo) that says where they came
//! from and which figures are the tool's and which are estimates.
//!
//! Formats, recognised by content, never by file name: cyclictest `--json` output
//! ([`Format::CyclictestJson`]), cyclictest `-h`/`-H`/`--histfile` histograms with their `#`
//! footer ([`Format::CyclictestHist`]), cyclictest's `T:` summary lines
//! ([`Format::CyclictestSummary`]) and its `-v` sample stream ([`Format::CyclictestVerbose`]), and `rtla timerlat hist` text output
//! ([`Format::RtlaTimerlatHist`]), and two measures of operating-system noise, stored as such
//! ([`model::imported::Quantity::OsNoise`]): oslat's text report and JSON
//! ([`Format::OslatText`], [`Format::OslatJson`]; recognised before cyclictest's JSON, whose
//! shape oslat's shares) and `rtla osnoise hist` text ([`Format::RtlaOsnoiseHist`]).
//! Per-CPU noise totals become noise runs (`rtlab.noise/1`, with a `noise` section and
//! empty per-CPU histograms): `rtla osnoise top` and `rtla hwnoise` text
//! ([`Format::RtlaOsnoiseTop`], [`Format::RtlaHwnoiseTop`]) and the osnoise tracer's trace
//! ([`Format::OsnoiseTrace`]). The hwlat detectors' outputs (hwlatdetect's report, the hwlat
//! tracer's trace) are read into a hwlat result instead ([`hwlat::import_hwlat`]).
//!
//! Every released layout of each format is read (fixtures/imports/releases/README.md names
//! them); a line a parser does not know, in a file that is otherwise clearly its format, is
//! skipped with a note starting [`SKIPPED_NOTE`]. gzip, xz and zstd files are decompressed
//! first ([`import_bytes`], [`decompress`]).
//!
//! Parsers are pure functions of text: no file access, no clock (the caller passes the file's
//! modification time for sources that do not say when they ran), no printing. Every error
//! names the file and, where one is to blame, the line.

mod build;
mod cyclictest_break;
mod cyclictest_hist;
mod cyclictest_json;
mod cyclictest_opts;
mod cyclictest_summary;
mod cyclictest_verbose;
mod decompress;
mod error;
pub mod hwlat;
mod noise_run;
mod oslat;
mod osnoise_top;
mod osnoise_trace;
mod rtla_hist;

use std::time::SystemTime;

use model::measure::MeasureRun;

pub use build::SKIPPED_NOTE;
pub use decompress::{Compression, decompress};
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
    /// cyclictest `-v`: one `THREAD:CYCLE:LATENCY` line per sample.
    CyclictestVerbose,
    /// `rtla timerlat hist` text: `Index IRQ-000 Thr-000 ...` rows, `over:`/`count:`/`min:`/
    /// `avg:`/`max:` footer; the thread latency is imported.
    RtlaTimerlatHist,
    /// `rtla osnoise hist` text: `Index CPU-000 ...` rows and the same footer; OS noise.
    RtlaOsnoiseHist,
    /// oslat's text report (rt-tests 2.x or the standalone v0.1); OS noise.
    OslatText,
    /// oslat `--json=FILE`; OS noise.
    OslatJson,
    /// `rtla osnoise top` text: per-CPU totals (Runtime, Noise, Max Noise, Max Single, HW,
    /// NMI, IRQ, Softirq, Thread); a noise run (`rtlab.noise/1`).
    RtlaOsnoiseTop,
    /// `rtla hwnoise` text: the same table with only the HW and NMI counts; a noise run.
    RtlaHwnoiseTop,
    /// The osnoise tracer's own trace (per-period summary lines, `osnoise:*` noise events);
    /// a noise run.
    OsnoiseTrace,
}

/// Every format, in the order [`Format::from_name`] tries them.
const ALL: [Format; 11] = [
    Format::CyclictestJson,
    Format::CyclictestHist,
    Format::CyclictestSummary,
    Format::CyclictestVerbose,
    Format::RtlaTimerlatHist,
    Format::RtlaOsnoiseHist,
    Format::OslatText,
    Format::OslatJson,
    Format::RtlaOsnoiseTop,
    Format::RtlaHwnoiseTop,
    Format::OsnoiseTrace,
];

/// What the error for an unknown file lists.
pub const SUPPORTED: &str = "the output of cyclictest (--json, -h histograms, summary and -v \
                             lines), rtla timerlat and osnoise hist, the osnoise tracer and \
                             oslat, plain or compressed; `rtlab import --help` lists each";

impl Format {
    /// The format's id, as stored in `import.format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest-json",
            Format::CyclictestHist => "cyclictest-hist",
            Format::CyclictestSummary => "cyclictest-summary",
            Format::CyclictestVerbose => "cyclictest-verbose",
            Format::RtlaTimerlatHist => "rtla-timerlat-hist",
            Format::RtlaOsnoiseHist => "rtla-osnoise-hist",
            Format::OslatText => "oslat-text",
            Format::OslatJson => "oslat-json",
            Format::RtlaOsnoiseTop => "rtla-osnoise-top",
            Format::RtlaHwnoiseTop => "rtla-hwnoise-top",
            Format::OsnoiseTrace => "osnoise-trace",
        }
    }

    /// The format for a person (`cyclictest JSON`).
    pub fn describe(self) -> &'static str {
        match self {
            Format::CyclictestJson => "cyclictest JSON",
            Format::CyclictestHist => "cyclictest histogram",
            Format::CyclictestSummary => "cyclictest summary",
            Format::CyclictestVerbose => "cyclictest -v samples",
            Format::RtlaTimerlatHist => "rtla timerlat histogram",
            Format::RtlaOsnoiseHist => "rtla osnoise histogram",
            Format::OslatText => "oslat report",
            Format::OslatJson => "oslat JSON",
            Format::RtlaOsnoiseTop => "rtla osnoise top output",
            Format::RtlaHwnoiseTop => "rtla hwnoise output",
            Format::OsnoiseTrace => "osnoise tracer trace",
        }
    }

    /// The format an [`ImportInfo`](model::imported::ImportInfo) names.
    pub fn from_name(name: &str) -> Option<Format> {
        ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Recognises the format of `text`, if it is one rtlab reads.
pub fn detect(text: &str) -> Option<Format> {
    if let Some(format) = oslat::detect(text) {
        Some(format)
    } else if rtla_hist::detect(text) {
        Some(Format::RtlaTimerlatHist)
    } else if rtla_hist::is_osnoise(text) {
        Some(Format::RtlaOsnoiseHist)
    } else if let Some(format) = osnoise_top::detect(text) {
        Some(format)
    } else if trace::osnoise::detect(text) {
        Some(Format::OsnoiseTrace)
    } else if cyclictest_json::detect(text) {
        Some(Format::CyclictestJson)
    } else if cyclictest_verbose::detect(text) {
        // Before the histogram and the summary: `-v -q` ends with the summary line and `-v -h`
        // with the histogram, and the samples in time order are what the run holds.
        Some(Format::CyclictestVerbose)
    } else if cyclictest_hist::detect(text) {
        Some(Format::CyclictestHist)
    } else if cyclictest_summary::detect(text) {
        Some(Format::CyclictestSummary)
    } else {
        None
    }
}

/// Reads one file's bytes as `rtlab import` does: a gzip, xz or zstd file is decompressed
/// first (at most [`model::limits::MAX_IMPORT_BYTES`]); a trace-cmd `.dat` file, a binary file
/// or rtlab's own result are refused with what to do instead; the text then goes to
/// [`import`]. Errors as [`import`].
pub fn import_bytes(
    file: &str,
    bytes: &[u8],
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let unpacked = decompress(file, bytes, model::limits::MAX_IMPORT_BYTES)?;
    let bytes = unpacked.as_deref().unwrap_or(bytes);
    if bytes.starts_with(TRACE_CMD_MAGIC) {
        return Err(ImportError::whole(
            file,
            format!(
                "this is a trace-cmd recording (trace.dat), not a latency result; run \
                 `trace-cmd report {file} > trace.txt` and give trace.txt to `rtlab explain`"
            ),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| {
        ImportError::whole(
            file,
            format!("not a text file (it is not UTF-8); rtlab import reads {SUPPORTED}"),
        )
    })?;
    import(file, text, modified)
}

/// The first bytes of every trace-cmd data file: `\x17\x08\x44` and `tracing`.
const TRACE_CMD_MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Reads one file's text (`file` names it in errors and in the result). `modified` (the
/// file's modification time) dates runs whose source records no time.
pub fn import(file: &str, text: &str, modified: SystemTime) -> Result<MeasureRun, ImportError> {
    if text.trim().is_empty() {
        return Err(ImportError::whole(
            file,
            format!("it is empty; rtlab import reads {SUPPORTED}"),
        ));
    }
    if is_rtlab_result(text) {
        // A result cut short is no result: `rtlab show` would refuse it too.
        if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
            return Err(ImportError::whole(
                file,
                format!(
                    "this is an rtlab result, but not whole: {}; nothing can read it",
                    model::measure::json_words(&e)
                ),
            ));
        }
        return Err(ImportError::whole(
            file,
            format!(
                "this is already an rtlab result ({}): there is nothing to import; give the \
                 file itself to `rtlab show {file}`, `rtlab compare {file} OTHER` or `rtlab \
                 report {file}`, which read result files as they are",
                model::measure::SCHEMA
            ),
        ));
    }
    match detect(text) {
        Some(format) => import_as(format, file, text, modified),
        None => match rtla_top(text) {
            Some(tool) => Err(ImportError::whole(
                file,
                format!(
                    "this is `rtla {tool} top` output: it holds per-CPU totals, not a \
                     distribution, so there is nothing to store as a run; run `rtla {tool} hist` \
                     and import its output"
                ),
            )),
            None if hwlat::detect_hwlat(text).is_some() => Err(ImportError::whole(
                file,
                format!(
                    "this is {}: hardware-latency samples, not a run to store; read it with \
                     `rtlab hwlat --from {file}`",
                    hwlat::detect_hwlat(text).map_or("hwlat output", |f| f.name())
                ),
            )),
            None => Err(ImportError::whole(
                file,
                format!("not a format rtlab import reads; it reads {SUPPORTED}"),
            )),
        },
    }
}

/// Reads one file's text as `format`, without detecting it: [`import`] once the format is
/// known (and a way to read a file whose content fools [`detect`]). Errors as [`import`].
pub fn import_as(
    format: Format,
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    // cyclictest's text outputs end with its `-b` break when one fired.
    let broke = |mut run: MeasureRun| {
        cyclictest_break::apply(text, &mut run);
        run
    };
    match format {
        Format::CyclictestJson => cyclictest_json::parse(file, text, modified),
        Format::CyclictestHist => cyclictest_hist::parse(file, text, modified).map(broke),
        Format::CyclictestSummary => cyclictest_summary::parse(file, text, modified).map(broke),
        Format::CyclictestVerbose => cyclictest_verbose::parse(file, text, modified).map(broke),
        Format::RtlaTimerlatHist => rtla_hist::parse(file, text, modified),
        Format::RtlaOsnoiseHist => rtla_hist::parse_osnoise(file, text, modified),
        Format::OslatText => oslat::parse_text(file, text, modified),
        Format::OslatJson => oslat::parse_json(file, text, modified),
        Format::RtlaOsnoiseTop | Format::RtlaHwnoiseTop => osnoise_top::parse(file, text, modified),
        Format::OsnoiseTrace => osnoise_trace::parse(file, text, modified),
    }
}

/// Whether `text` is rtlab's own result: a JSON object whose first key is `schema` with an
/// `rtlab.` value (as every document rtlab writes starts), read without parsing the file.
fn is_rtlab_result(text: &str) -> bool {
    let rest = text.trim_start().strip_prefix('{').map(str::trim_start);
    let rest = rest
        .and_then(|r| r.strip_prefix("\"schema\""))
        .map(str::trim_start);
    let rest = rest.and_then(|r| r.strip_prefix(':')).map(str::trim_start);
    rest.is_some_and(|r| r.starts_with("\"rtlab."))
}

/// `timerlat` when `text` is `rtla timerlat top` output (its title line: `Timer Latency`).
/// (`rtla osnoise top` output is read: it is a noise run.)
fn rtla_top(text: &str) -> Option<&'static str> {
    let title = text.lines().find(|l| !l.trim().is_empty())?.trim();
    (title == "Timer Latency").then_some("timerlat")
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_noise;
#[cfg(test)]
mod tests_oracle;
#[cfg(test)]
mod tests_osnoise;
#[cfg(test)]
mod tests_releases;
#[cfg(test)]
mod tests_verbose;
