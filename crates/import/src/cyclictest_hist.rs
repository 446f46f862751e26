//! cyclictest's histogram output (`-h N`, `-H N` or `--histfile=FILE`): one row per
//! microsecond (`000007 001606 000293 ...`, one column per thread, with `-H` one more for all
//! threads together), then the `#` footer: `# Total:` (samples inside the histogram),
//! `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:`, `# Histogram Overflows:`
//! (samples above the range, left out of the rows) and the overflowed cycle numbers. Summary
//! lines in the same output (without `-q`) add thread ids, priority and interval.
//!
//! Every released layout reads (fixtures/imports/releases/README.md): rt-tests 0.28-0.55 (rows
//! and `# Total:` only, no overflow count), 0.56-0.72 (`# Max Latencys:`, overflows),
//! 0.73-0.84 (`Min/Avg Latencys`), 0.85-2.6 (the footer above), 2.7 and later (no `# Total:`,
//! empty rows left out). A line that is none of these in a file that is otherwise a histogram
//! is skipped with a note.

use std::time::{Duration, SystemTime};

use model::CpuSet;
use model::imported::Setting;
use model::measure::MeasureRun;

use crate::ImportError;
use crate::build::{self, Skipped, ThreadFigures};
use crate::cyclictest_opts;
use crate::cyclictest_summary::{self, Lines, plain};

/// Whether `text` has a cyclictest histogram header or footer.
pub(crate) fn detect(text: &str) -> bool {
    text.lines().map(plain).any(|l| {
        let l = l.trim();
        l == "# Histogram" || l.starts_with("# Total:")
    })
}

/// A footer line's numbers and its 1-based line number.
type Footer = Option<(usize, Vec<u64>)>;

/// The rows and footer lines of a histogram file, as read.
#[derive(Default)]
struct Table {
    /// (bucket, one count per column), buckets ascending.
    rows: Vec<(u64, Vec<u64>)>,
    total: Footer,
    mins: Footer,
    avgs: Footer,
    maxs: Footer,
    overflows: Footer,
    /// The maximum line is spelled `Latencies` (rt-tests 0.73 and later), whose footer also
    /// has minimum and average.
    full_footer: bool,
    last_line: usize,
    skipped: Skipped,
}

/// What the footer gives per thread, checked.
struct Columns {
    threads: usize,
    /// The line to blame for footer-wide errors.
    line: usize,
    overflow: Vec<u64>,
}

/// Reads a cyclictest histogram.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let table = read_table(file, text)?;
    let columns = check_columns(file, &table)?;
    let found = cyclictest_summary::lines(file, text)?;
    let figures = thread_figures(file, &table, &columns, &found)?;
    assemble(file, table, &columns, figures, &found, modified)
}

/// Step 1: the rows and footer lines, in order, each checked as it is read.
fn read_table(file: &str, text: &str) -> Result<Table, ImportError> {
    let mut table = Table::default();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        table.last_line = n;
        let line = plain(raw);
        let line = line.trim();
        if line.is_empty() || line.starts_with("T:") || cyclictest_opts::policy_line(line).is_some()
        {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            footer_line(file, &mut table, n, rest.trim())?;
            continue;
        }
        if !line.starts_with(|c: char| c.is_ascii_digit()) {
            table.skipped.line(n, line);
            continue;
        }
        if table.total.is_some() {
            return Err(ImportError::at(
                file,
                n,
                "expected nothing but `#` lines after `# Total:`",
            ));
        }
        histogram_row(file, &mut table, n, line)?;
    }
    Ok(table)
}

/// A `#` line: a footer line's numbers are kept; other `#` lines (the header, overflowed
/// cycle numbers, SMI counts, the old `# Max Latency: N / H`) are passed over.
fn footer_line(file: &str, table: &mut Table, n: usize, rest: &str) -> Result<(), ImportError> {
    let slot = if let Some(v) = rest.strip_prefix("Total:") {
        Some((&mut table.total, v))
    } else if let Some(v) = strip_either(rest, "Min Latencies:", "Min Latencys:") {
        Some((&mut table.mins, v))
    } else if let Some(v) = strip_either(rest, "Avg Latencies:", "Avg Latencys:") {
        Some((&mut table.avgs, v))
    } else if let Some(v) = rest.strip_prefix("Max Latencies:") {
        table.full_footer = true;
        Some((&mut table.maxs, v))
    } else if let Some(v) = rest.strip_prefix("Max Latencys:") {
        Some((&mut table.maxs, v))
    } else {
        rest.strip_prefix("Histogram Overflows:")
            .map(|v| (&mut table.overflows, v))
    };
    if let Some((slot, values)) = slot {
        let numbers = numbers(values)
            .ok_or_else(|| ImportError::at(file, n, "expected numbers after the footer label"))?;
        *slot = Some((n, numbers));
    }
    Ok(())
}

/// `text` without `a` or `b` at its start.
fn strip_either<'t>(text: &'t str, a: &str, b: &str) -> Option<&'t str> {
    text.strip_prefix(a).or_else(|| text.strip_prefix(b))
}

/// A `BUCKET COUNT...` row: buckets ascend (2.7 and later leave empty ones out) and every row
/// has as many counts as the first.
fn histogram_row(file: &str, table: &mut Table, n: usize, line: &str) -> Result<(), ImportError> {
    let values = numbers(line).filter(|v| v.len() >= 2).ok_or_else(|| {
        ImportError::at(
            file,
            n,
            "expected a histogram row `BUCKET COUNT...` (numbers) or a `#` footer line",
        )
    })?;
    if let Some((prev, first)) = table.rows.last().map(|(b, c)| (*b, c.len()))
        && (values[0] <= prev || values.len() - 1 != first)
    {
        return Err(ImportError::at(
            file,
            n,
            format!(
                "expected bucket {} with {first} counts, found bucket {} with {}",
                prev.saturating_add(1),
                values[0],
                values.len() - 1
            ),
        ));
    }
    table.rows.push((values[0], values[1..].to_vec()));
    Ok(())
}

/// Step 2: the footer is complete for its layout and its lines agree on the thread count.
fn check_columns(file: &str, table: &Table) -> Result<Columns, ImportError> {
    let end = table.last_line + 1;
    check_footer_lines(file, table)?;
    // The thread count: the minimum line's, else the maximum line's, else the total's (the
    // oldest layouts have no all-threads column).
    let threads = [&table.mins, &table.maxs, &table.total]
        .into_iter()
        .flatten()
        .map(|(_, v)| v.len())
        .next()
        .unwrap_or(0);
    // Errors about the footer as a whole name the `# Total:` line, else the first footer line.
    let line = [&table.total, &table.mins, &table.maxs]
        .into_iter()
        .flatten()
        .map(|(line, _)| *line)
        .next()
        .unwrap_or(end);
    if threads > model::cpuset::MAX_CPU as usize + 1 {
        return Err(ImportError::at(
            file,
            line,
            format!(
                "{threads} thread columns: more than the {} CPUs a kernel can have",
                model::cpuset::MAX_CPU + 1
            ),
        ));
    }
    let columns = table.rows.first().map_or(threads, |(_, c)| c.len());
    let len = |f: &Footer| f.as_ref().map_or(threads, |(_, v)| v.len());
    if threads == 0
        || len(&table.avgs) < threads
        || len(&table.maxs) < threads
        || len(&table.total) < threads
        || !(columns == threads || columns == threads + 1)
    {
        return Err(ImportError::at(
            file,
            line,
            format!(
                "expected {columns} thread columns in every footer line, found Total {}, Min \
                 {threads}, Avg {}, Max {}",
                len(&table.total),
                len(&table.avgs),
                len(&table.maxs)
            ),
        ));
    }
    let overflow = match &table.overflows {
        Some((line, o)) if o.len() < threads => {
            return Err(ImportError::at(
                file,
                *line,
                format!("expected {threads} overflow counts"),
            ));
        }
        Some((_, o)) => o.clone(),
        None => vec![0; threads],
    };
    Ok(Columns {
        threads,
        line,
        overflow,
    })
}

/// The footer lines its layout needs are there: `# Total:` (or the maximum line), and
/// with any of minimum, average and maximum all three.
fn check_footer_lines(file: &str, table: &Table) -> Result<(), ImportError> {
    let end = table.last_line + 1;
    let missing = |label: &str| {
        ImportError::at(
            file,
            end,
            format!("expected a `# {label}` footer line (is the file truncated?)"),
        )
    };
    if table.total.is_none() && table.maxs.is_none() {
        return Err(missing("Total:"));
    }
    let full = table.full_footer || table.mins.is_some() || table.avgs.is_some();
    if full {
        table
            .mins
            .as_ref()
            .ok_or_else(|| missing("Min Latencies:"))?;
        table
            .avgs
            .as_ref()
            .ok_or_else(|| missing("Avg Latencies:"))?;
        table
            .maxs
            .as_ref()
            .ok_or_else(|| missing("Max Latencies:"))?;
    }
    Ok(())
}

/// Step 3: each thread's figures; the rows must add up to `# Total:` where there is one.
fn thread_figures(
    file: &str,
    table: &Table,
    columns: &Columns,
    found: &Lines,
) -> Result<Vec<ThreadFigures>, ImportError> {
    let at = |what: String| ImportError::at(file, columns.line, what);
    let footer = |f: &Footer, t: usize| f.as_ref().map(|(_, v)| v[t]);
    let mut figures = Vec::with_capacity(columns.threads);
    for t in 0..columns.threads {
        let buckets: Vec<(u64, u64)> = table.rows.iter().map(|(b, c)| (*b, c[t])).collect();
        let in_hist = build::checked_total(buckets.iter().map(|&(_, c)| c)).ok_or_else(|| {
            at(format!(
                "thread {t}: the rows' counts add up to more than 2^64 samples"
            ))
        })?;
        if let Some(total) = footer(&table.total, t)
            && in_hist != total
        {
            return Err(at(format!(
                "thread {t}: the rows hold {in_hist} samples but `# Total:` says {total}"
            )));
        }
        let count = in_hist.checked_add(columns.overflow[t]).ok_or_else(|| {
            at(format!(
                "thread {t}: `# Total:` plus the overflows is more than 2^64 samples"
            ))
        })?;
        let (min, max) = (footer(&table.mins, t), footer(&table.maxs, t));
        if let (Some(min), Some(max)) = (min, max)
            && count > 0
            && min > max
        {
            return Err(at(format!(
                "thread {t}: minimum {min} is above maximum {max}"
            )));
        }
        let summary = found.threads.get(&(t as u32));
        figures.push(ThreadFigures {
            cpu: t as u32,
            tid: summary.and_then(|s| s.tid),
            count,
            unknown: columns.overflow[t],
            buckets,
            min,
            max,
            avg: footer(&table.avgs, t).map(|a| a as f64),
            last: summary.and_then(|s| s.act),
            // cyclictest counts whole microseconds, one bucket each.
            exact: true,
            series: Default::default(),
        });
    }
    Ok(figures)
}

/// Step 4: parameters from the summary lines, notes, and the run.
fn assemble(
    file: &str,
    table: Table,
    columns: &Columns,
    figures: Vec<ThreadFigures>,
    found: &Lines,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let cpu_set: CpuSet = (0..columns.threads as u32).collect();
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let mut params = build::neutral_params(&cpu_set);
    let (interval_us, not_stated) = match found.threads.values().next() {
        Some(first) => {
            let not_stated = cyclictest_summary::apply(&mut params, found, first, max_count);
            (first.interval_us.unwrap_or(1000), not_stated)
        }
        None => {
            params.periods = max_count;
            params.dma_latency_us = found.dma_latency_us;
            // A histogram alone states no policy, interval or mlock.
            let mut not_stated = vec![Setting::Policy, Setting::Interval, Setting::Mlock];
            if found.dma_latency_us.is_none() {
                not_stated.push(Setting::DmaLatency);
            }
            (1000, not_stated)
        }
    };
    let elapsed = Duration::from_micros(max_count.saturating_mul(interval_us));
    let unknown = build::checked_total(columns.overflow.iter().take(columns.threads).copied())
        .ok_or_else(|| {
            ImportError::at(
                file,
                columns.line,
                "the overflow counts add up to more than 2^64 samples",
            )
        })?;
    let mut notes = layout_notes(&table, unknown);
    if found.threads.is_empty() {
        notes.push(
            "the file has no summary lines: priority, policy and interval are not stated"
                .to_string(),
        );
    }
    notes.extend(table.skipped.notes("cyclictest's histogram output"));
    build::cyclictest_text_run(
        build::CyclictestText {
            file,
            format: crate::Format::CyclictestHist,
            modified,
            elapsed,
            params,
            cpus: &cpu_set,
            notes,
            not_given: Vec::new(),
            not_stated,
            unit_ns: 1000,
        },
        &figures,
    )
}

/// What the file's layout gives and does not.
fn layout_notes(table: &Table, unknown: u64) -> Vec<String> {
    let range = table.rows.last().and_then(|(b, _)| b.checked_add(1));
    let mut notes = build::histogram_notes("us", 1, unknown, range, true);
    if table.avgs.is_some() {
        notes.push("the footer's average is rounded to 1 us".to_string());
    } else {
        notes.push(
            "this cyclictest (rt-tests before 0.73) prints no minimum or average per thread: \
             the minimum is the lowest non-empty bucket and the mean is derived from the \
             histogram"
                .to_string(),
        );
    }
    if table.maxs.is_none() {
        notes.push(
            "this cyclictest prints no maximum per thread: the maximum is the highest \
             non-empty bucket, a lower bound"
                .to_string(),
        );
    }
    if table.overflows.is_none() {
        notes.push(
            "this cyclictest (rt-tests before 0.56) does not count samples above its histogram \
             range: any such samples are missing from the run"
                .to_string(),
        );
    }
    if table.total.is_none() {
        notes.push(
            "this cyclictest (rt-tests 2.7 or later) prints no `# Total:` line: each thread's \
             count is its rows' sum plus its overflows"
                .to_string(),
        );
    }
    notes.extend([
        "CPU numbers are cyclictest's thread numbers; the host is unknown".to_string(),
        "the file records no time: the run is dated by the file's modification time and its \
         length estimated as cycles x interval"
            .to_string(),
    ]);
    notes
}

/// Whitespace-separated unsigned numbers; `None` if any word is not one.
fn numbers(text: &str) -> Option<Vec<u64>> {
    text.split_whitespace().map(|w| w.parse().ok()).collect()
}
