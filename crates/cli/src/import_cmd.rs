//! `rtlab import FILE... [--label TEXT] [--db PATH]`: results other tools wrote (cyclictest
//! JSON, histograms, summary lines and -v samples; rtla timerlat and osnoise hist; oslat text
//! and JSON), plain or compressed, read by the `import` room, stored as runs.
//!
//! All or nothing: every file is read and parsed before anything is saved; the first file that
//! does not parse is the one error line (exit 2) and the store is not touched. A save that fails
//! part way removes the runs this command already saved.

use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::{Context, Result};
use clap::Args;
use model::measure::MeasureRun;

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::store_args::DbArgs;

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
    /// Label every imported run (as `rtlab label` does), e.g. "RT-#2".
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The store.
    #[command(flatten)]
    pub db: DbArgs,
}

/// A read error as a person reads it: "no such file" for a path that is not there.
fn read_error(e: &str) -> String {
    if e == "No such file or directory" {
        "no such file".to_string()
    } else {
        e.to_string()
    }
}

/// One parsed file.
struct Parsed {
    file: String,
    format: &'static str,
    run: MeasureRun,
}

/// `rtlab import`.
pub fn run(args: &ImportArgs) -> Result<Exit> {
    let mut parsed = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let name = path.display().to_string();
        // A compressed file is read up to the same bound; its decompressed size is bounded
        // again by the import room.
        let bytes = sys::fs::read_input(path, model::limits::MAX_IMPORT_BYTES)
            .map_err(|e| UsageError(format!("{name}: {}", read_error(&e))))?;
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .unwrap_or_else(|_| SystemTime::now());
        let run =
            import::import_bytes(&name, &bytes, modified).map_err(|e| UsageError(e.to_string()))?;
        let format = run
            .import
            .as_ref()
            .and_then(|i| import::Format::from_name(&i.format))
            .map_or("import", import::Format::describe);
        parsed.push(Parsed {
            file: name,
            format,
            run,
        });
    }
    let mut store = crate::store_cmd::open(args.db.db.as_deref())?;
    let label = args.label.as_deref();
    let mut saved = Vec::with_capacity(parsed.len());
    for p in &parsed {
        match store.save_measure(&p.run, label, None) {
            Ok(id) => saved.push(id),
            Err(e) => {
                for id in &saved {
                    let _ = store.remove(id);
                }
                return Err(e).with_context(|| format!("saving {}", p.file));
            }
        }
    }
    let mut text = String::new();
    for (p, id) in parsed.iter().zip(&saved) {
        let cpus = p.run.cpus.len();
        text.push_str(&format!(
            "imported {} as run {id} ({}, {cpus} CPU{}, {} samples)\n",
            p.file,
            p.format,
            if cpus == 1 { "" } else { "s" },
            p.run.all.raw.count
        ));
        // Lines the importer did not know and skipped are said here, not only in the notes.
        let notes = p.run.import.as_ref().map_or(&[][..], |i| &i.notes[..]);
        for note in notes.iter().filter(|n| n.starts_with(import::SKIPPED_NOTE)) {
            text.push_str(&format!("  note: {note}\n"));
        }
    }
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}
