//! `rtlab import`: its options and the formats it reads.

use std::path::PathBuf;

use clap::Args;

use super::store::DbArgs;
use super::values::TextOrJson;

/// The long help of `rtlab import`.
pub const IMPORT_LONG: &str = "\
Read results that other tools wrote, store each file as a run, and print one line per run with \
its id. The format is recognised from the content, not the file name:

  cyclictest --json=FILE output (rt-tests 2.x), quirks included: the keys 'cmdline:' and \
'rt_test_version:' with their trailing colon; samples above the histogram range, which the \
JSON leaves out of each thread's histogram, are counted as unknown (above the range), never \
dropped, so every CPU's count equals cyclictest's cycles.

  cyclictest -h N / -H N output or --histfile=FILE: one row per microsecond and the '#' \
footer ('# Total:', '# Min/Avg/Max Latencies:', '# Histogram Overflows:'), in the layout of \
every rt-tests release (0.28 to 2.x: no overflow count before 0.56, no minimum and average \
before 0.73, no '# Total:' and no empty rows from 2.7); summary lines in the same output add \
thread ids, priority and interval.

  cyclictest -v output, one 'THREAD:CYCLE:LATENCY' line per sample (as piped into gzip for \
long runs): every sample is kept exactly.

  cyclictest summary lines ('T: 0 (1234) P:80 I:1000 C: 1000 Min: 5 Act: 8 Avg: 9 Max: 33'), \
as printed live or with -q: the last line of each thread counts. They hold no distribution: \
such a run has no percentiles and no standard deviation, shown as '-'.

  rtla timerlat hist output ('# RTLA timerlat histogram', 'Index IRQ-000 Thr-000 ...' rows, 'over:', 'count:', 'min:', 'avg:', 'max:'): each CPU's latency is the thread latency (Thr-, timer expiry to the thread running, as cyclictest measures); the IRQ figures go to the notes; 'over:' samples are counted as unknown.

Two measures of operating-system noise are read and stored as noise, not wake-up latency: \
tables and reports say so, and compare warns when runs of both kinds meet and refuses to judge \
them with --fail-if-worse.

  oslat's text report (rt-tests 2.x: 'Core:', 'NNN (us):' rows, the last '(including \
overflows)', Minimum/Maximum/Duration; or the standalone v0.1 layout with 'core_i:' and \
'maxlat:') and its --json output. Each sample is one turn of a busy loop; a row labelled L \
holds gaps in [L - 1 us, L) and is stored at its lower edge; samples in the last row beyond \
its range are counted as unknown; the minimum that rt-tests 2.x rounds up is stored 1 us \
lower, its maximum is kept as oslat printed it (the worst case); the mean is derived from the \
histogram.

  rtla osnoise hist output ('# RTLA osnoise histogram', 'Index CPU-000 ...'): each sample is \
one noise event; the bucket size is taken from the step between row indices.

An imported run works with show, compare, report and export like a measured one. What the \
source does not give exactly is said in the run's 'import' record (rtlab show RUN --format \
json): cyclictest counts in 1-us buckets, so histogram values are lower bounds within 1 us; \
its average is rounded; the standard deviation is estimated; CPU numbers of histogram and \
summary files are cyclictest's thread numbers; a file that records no time is dated by its \
modification time.

Files compressed with gzip, xz or zstd are read as they are, recognised by their first bytes \
(not the name); what they decompress to is bounded like a plain file. A line rtlab does not \
know, in a file that is otherwise clearly one of these formats, is skipped and said in a note \
printed under the run's line.

Every file is parsed before anything is stored: a file rtlab cannot read is reported with its \
line, exit status 2, and nothing is imported.";

/// Options of `rtlab import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files to import (cyclictest JSON, histogram, summary or -v output; rtla timerlat or
    /// osnoise hist; oslat text or JSON), plain or gzip/xz/zstd compressed.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Label the imported run (as `rtlab label` does), e.g. "RT-#2"; with several files, each
    /// gets it numbered in the order given ("imx8-1", "imx8-2"), so a label names one run.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The machine the files were measured on, for files that do not name it (cyclictest's
    /// histogram and summary lines, rtla and oslat text): what `runs`, `compare` and the
    /// report show as its host. A file that names its host keeps it.
    #[arg(long, value_name = "HOST", value_parser = parse_name)]
    pub host: Option<String>,
    /// The kernel release they ran on, for files that do not say (`6.6.23-rt28`).
    #[arg(long, value_name = "RELEASE", value_parser = parse_name)]
    pub kernel: Option<String>,
    /// The latency budget the runs are to be held to (`50us`), recorded with each as if it
    /// had been measured with `rtlab measure --budget`: `show`, `report`, `export` and the
    /// server judge it against that. Without it an imported run is judged on completeness
    /// only.
    #[arg(long, value_name = "TIME", value_parser = super::values::parse_time)]
    pub budget: Option<model::Nanos>,
    /// What to print: a line per file (text), or a JSON array with each file's run id.
    #[arg(long, value_enum, default_value = "text")]
    pub format: TextOrJson,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
    /// Upload every imported run to an `rtlab serve` after saving it.
    #[command(flatten)]
    pub push: super::push::PushToArgs,
}

/// A host name or kernel release as typed: 1 to 64 printable characters, no spaces.
fn parse_name(text: &str) -> Result<String, String> {
    let ok = |c: char| c.is_ascii_graphic();
    if text.is_empty() || text.chars().count() > 64 || !text.chars().all(ok) {
        return Err(format!(
            "'{}' is not a name: give 1 to 64 printable characters without spaces",
            text.escape_default()
        ));
    }
    Ok(text.to_string())
}
