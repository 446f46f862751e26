//! cyclictest's histogram output (`-h N`, `-H N` or `--histfile=FILE`): one row per
//! microsecond (`000007 001606 000293 ...`, one column per thread, with `-H` one more for all
//! threads together), then the `#` footer: `# Total:` (samples inside the histogram),
//! `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:`, `# Histogram Overflows:`
//! (samples above the range, left out of the rows) and the overflowed cycle numbers. Summary
//! lines in the same output (without `-q`) add thread ids, priority and interval.

use std::time::{Duration, SystemTime};

use model::CpuSet;
use model::imported::ImportInfo;
use model::measure::MeasureRun;

use crate::ImportError;
use crate::build::{self, RunFacts, ThreadFigures};
use crate::cyclictest_opts;
use crate::cyclictest_summary::{self, plain};

/// Whether `text` has a cyclictest histogram header or footer.
pub(crate) fn detect(text: &str) -> bool {
    text.lines().map(plain).any(|l| {
        let l = l.trim();
        l == "# Histogram" || l.starts_with("# Total:")
    })
}

/// A footer line's numbers and its 1-based line number.
type Footer = Option<(usize, Vec<u64>)>;

/// Reads a cyclictest histogram.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let mut rows: Vec<(u64, Vec<u64>)> = Vec::new();
    let (mut total, mut mins, mut avgs, mut maxs, mut overflows): (
        Footer,
        Footer,
        Footer,
        Footer,
        Footer,
    ) = (None, None, None, None, None);
    let mut last_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        last_line = n;
        let line = plain(raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim();
            let slot = if let Some(v) = rest.strip_prefix("Total:") {
                Some((&mut total, v))
            } else if let Some(v) = rest.strip_prefix("Min Latencies:") {
                Some((&mut mins, v))
            } else if let Some(v) = rest.strip_prefix("Avg Latencies:") {
                Some((&mut avgs, v))
            } else if let Some(v) = rest.strip_prefix("Max Latencies:") {
                Some((&mut maxs, v))
            } else {
                rest.strip_prefix("Histogram Overflows:")
                    .map(|v| (&mut overflows, v))
            };
            if let Some((slot, values)) = slot {
                let numbers = numbers(values).ok_or_else(|| {
                    ImportError::at(file, n, "expected numbers after the footer label")
                })?;
                *slot = Some((n, numbers));
            }
            continue;
        }
        if line.starts_with("T:") || cyclictest_opts::policy_line(line).is_some() {
            continue;
        }
        if total.is_some() {
            return Err(ImportError::at(
                file,
                n,
                "expected nothing but `#` lines after `# Total:`",
            ));
        }
        let values = numbers(line).filter(|v| v.len() >= 2).ok_or_else(|| {
            ImportError::at(
                file,
                n,
                "expected a histogram row `BUCKET COUNT...` (numbers) or a `#` footer line",
            )
        })?;
        if let Some((prev, first)) = rows.last().map(|(b, c)| (*b, c.len()))
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
        rows.push((values[0], values[1..].to_vec()));
    }
    let end = last_line + 1;
    let missing = |label: &str| {
        ImportError::at(
            file,
            end,
            format!("expected a `# {label}` footer line (is the file truncated?)"),
        )
    };
    let (total_line, totals) = total.ok_or_else(|| missing("Total:"))?;
    let (_, mins) = mins.ok_or_else(|| missing("Min Latencies:"))?;
    let (_, avgs) = avgs.ok_or_else(|| missing("Avg Latencies:"))?;
    let (_, maxs) = maxs.ok_or_else(|| missing("Max Latencies:"))?;
    let threads = mins.len();
    if threads > model::cpuset::MAX_CPU as usize + 1 {
        return Err(ImportError::at(
            file,
            total_line,
            format!(
                "{threads} thread columns: more than the {} CPUs a kernel can have",
                model::cpuset::MAX_CPU + 1
            ),
        ));
    }
    let columns = rows.first().map_or(threads, |(_, c)| c.len());
    if threads == 0
        || avgs.len() < threads
        || maxs.len() < threads
        || totals.len() < threads
        || !(columns == threads || columns == threads + 1)
    {
        return Err(ImportError::at(
            file,
            total_line,
            format!(
                "expected {columns} thread columns in every footer line, found Total {}, Min \
                 {threads}, Avg {}, Max {}",
                totals.len(),
                avgs.len(),
                maxs.len()
            ),
        ));
    }
    let overflow = match &overflows {
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

    let found = cyclictest_summary::lines(file, text)?;
    let mut figures = Vec::with_capacity(threads);
    for t in 0..threads {
        let buckets: Vec<(u64, u64)> = rows.iter().map(|(b, c)| (*b, c[t])).collect();
        let in_hist = build::checked_total(buckets.iter().map(|&(_, c)| c)).ok_or_else(|| {
            ImportError::at(
                file,
                total_line,
                format!("thread {t}: the rows' counts add up to more than 2^64 samples"),
            )
        })?;
        if in_hist != totals[t] {
            return Err(ImportError::at(
                file,
                total_line,
                format!(
                    "thread {t}: the rows hold {in_hist} samples but `# Total:` says {}",
                    totals[t]
                ),
            ));
        }
        let count = totals[t].checked_add(overflow[t]).ok_or_else(|| {
            ImportError::at(
                file,
                total_line,
                format!("thread {t}: `# Total:` plus the overflows is more than 2^64 samples"),
            )
        })?;
        if count > 0 && mins[t] > maxs[t] {
            return Err(ImportError::at(
                file,
                total_line,
                format!(
                    "thread {t}: minimum {} is above maximum {}",
                    mins[t], maxs[t]
                ),
            ));
        }
        let summary = found.threads.get(&(t as u32));
        figures.push(ThreadFigures {
            cpu: t as u32,
            tid: summary.and_then(|s| s.tid),
            count,
            unknown: overflow[t],
            buckets,
            min: Some(mins[t]),
            max: Some(maxs[t]),
            avg: Some(avgs[t] as f64),
            last: summary.and_then(|s| s.act),
        });
    }

    let cpu_set: CpuSet = (0..threads as u32).collect();
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let mut params = build::neutral_params(&cpu_set);
    let interval_us = match found.threads.values().next() {
        Some(first) => {
            cyclictest_summary::apply(&mut params, &found, first, max_count);
            first.interval_us.unwrap_or(1000)
        }
        None => {
            params.periods = max_count;
            params.dma_latency_us = found.dma_latency_us;
            1000
        }
    };
    let elapsed = Duration::from_micros(max_count.saturating_mul(interval_us));
    let unknown =
        build::checked_total(overflow.iter().take(threads).copied()).ok_or_else(|| {
            ImportError::at(
                file,
                total_line,
                "the overflow counts add up to more than 2^64 samples",
            )
        })?;
    let range = rows.last().and_then(|(b, _)| b.checked_add(1));
    let mut notes = build::histogram_notes("us", 1, unknown, range);
    notes.extend([
        "the footer's average is rounded to 1 us".to_string(),
        "CPU numbers are cyclictest's thread numbers; the host is unknown".to_string(),
        "the file records no time: the run is dated by the file's modification time and its \
         length estimated as cycles x interval"
            .to_string(),
    ]);
    if found.threads.is_empty() {
        notes.push(
            "the file has no summary lines: priority, policy and interval are unknown and \
             shown as neutral values"
                .to_string(),
        );
    }
    let results = figures.iter().map(|f| build::cpu_result(f, 1000)).collect();
    let facts = RunFacts {
        host: build::unknown_host(&cpu_set),
        params,
        started: modified.checked_sub(elapsed).unwrap_or(modified),
        elapsed,
        import: ImportInfo {
            tool: "cyclictest".to_string(),
            format: crate::Format::CyclictestHist.name().to_string(),
            file: file.to_string(),
            resolution_ns: 1000,
            command: None,
            quantity: model::imported::Quantity::WakeupLatency,
            notes,
            not_given: Vec::new(),
        },
    };
    build::run(file, facts, results)
}

/// Whitespace-separated unsigned numbers; `None` if any word is not one.
fn numbers(text: &str) -> Option<Vec<u64>> {
    text.split_whitespace().map(|w| w.parse().ok()).collect()
}
