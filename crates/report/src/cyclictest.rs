//! Output in cyclictest's text formats, so scripts written for cyclictest (rt-tests) keep
//! working on rtlab results: the `-q` summary lines ([`summary`]) and the `-h`/`-H` histogram
//! with its footer ([`histogram`]).
//!
//! The layouts were checked against cyclictest 2.40 (Debian rt-tests) and a `--histfile` from
//! rt-tests 2.60: field widths, zero padding, tabs between histogram columns, the all-threads
//! column of `-H` (only with more than one thread, and not on the `Min`/`Avg` footer lines),
//! ` # 00097 others` after a truncated overflow list, and the blank line that ends the
//! histogram.
//!
//! Where rtlab's data differs from cyclictest's, the numbers follow these rules:
//!
//! * Whole microseconds are truncated, as cyclictest truncates each sample. Min, Act and Max
//!   are therefore exact; Avg is the exact mean truncated, where cyclictest truncates every
//!   sample before averaging, so it can read up to 1 us higher than cyclictest would.
//! * Histogram rows come from rtlab's log-linear histogram: a bucket `[lo, lo + width)` is
//!   counted in microsecond `floor(lo / 1000)`. Buckets below 16 us are at most 8 ns wide and
//!   start on every whole microsecond, so rows below 16 us are exact; above that a bucket may
//!   straddle a microsecond boundary (by at most 512 ns below 1 ms, 0.1 % above), and its
//!   samples then land one row low. A sample is an overflow when its bucket's microsecond is
//!   `max_us` or more, or when it lies beyond the histogram's range (about 17.2 s), so each
//!   thread's `Total` plus its `Histogram Overflows` is exactly its sample count.
//! * cyclictest lists the cycle numbers of the first `max_us` overflowing samples. rtlab keeps
//!   only each CPU's worst samples (`spikes`), so the list holds the cycles of the kept spikes
//!   that overflow (by the same bucket rule), ascending, at most `max_us` of them, and
//!   ` # NNNNN others` counts the overflows not listed. rtlab's cycle is the 0-based period
//!   number, which also counts periods lost to overruns.
//! * A CPU without samples prints 0 for its minimum, average and maximum.

use std::fmt::Write as _;

use model::histogram::{RANGE_END_NS, bucket_bounds, bucket_index};
use model::measure::{CpuResult, MeasureRun};
use model::stats::Accumulator;

/// `# /dev/cpu_dma_latency set to 0us`, when the run held a `/dev/cpu_dma_latency` request.
pub fn dma_latency_line(run: &MeasureRun) -> Option<String> {
    run.params
        .dma_latency_us
        .map(|us| format!("# /dev/cpu_dma_latency set to {us}us"))
}

/// What `cyclictest -q` prints at the end: the `/dev/cpu_dma_latency` line when a request was
/// held, then one `T:` line per CPU, thread index = position in `run.cpus`. Ends with a newline.
pub fn summary(run: &MeasureRun) -> String {
    let mut out = String::new();
    if let Some(line) = dma_latency_line(run) {
        out.push_str(&line);
        out.push('\n');
    }
    let interval_us = run.params.interval_ns.as_us_trunc();
    for (i, c) in run.cpus.iter().enumerate() {
        let r = &c.raw;
        let (min, avg, max) = min_avg_max_us(r);
        let act = if r.count > 0 { r.last_ns / 1_000 } else { 0 };
        let _ = writeln!(
            out,
            "T:{i:2} ({tid:5}) P:{prio:2} I:{interval_us} C:{count:7} Min:{min:7} Act:{act:5} \
             Avg:{avg:5} Max:{max:8}",
            tid = c.tid.unwrap_or(0),
            prio = run.params.priority,
            count = r.count,
        );
    }
    out
}

/// What `cyclictest -h max_us` (or `-H max_us` with `with_summary_column`) prints: `# Histogram`,
/// rows `000000` to `max_us - 1`, the footer and a closing blank line. The
/// `/dev/cpu_dma_latency` line that cyclictest prints first is [`dma_latency_line`].
pub fn histogram(run: &MeasureRun, max_us: u64, with_summary_column: bool) -> String {
    let threads = run.cpus.len();
    // cyclictest adds the all-threads column only when there is more than one thread.
    let all_column = with_summary_column && threads > 1;
    let rows: Vec<Vec<(u64, u64)>> = run.cpus.iter().map(|c| micro_rows(c, max_us)).collect();
    let mut cursors = vec![0usize; threads];
    let mut totals = vec![0u64; threads];

    let mut out = String::from("# Histogram\n");
    for us in 0..max_us {
        let _ = write!(out, "{us:06} ");
        let mut all = 0u64;
        for (j, thread_rows) in rows.iter().enumerate() {
            let count = match thread_rows.get(cursors[j]) {
                Some(&(row, count)) if row == us => {
                    cursors[j] += 1;
                    count
                }
                _ => 0,
            };
            totals[j] += count;
            all += count;
            if j > 0 {
                out.push('\t');
            }
            let _ = write!(out, "{count:06}");
        }
        if all_column {
            let _ = write!(out, "\t{all:06}");
        }
        out.push('\n');
    }

    let overflows: Vec<u64> = run
        .cpus
        .iter()
        .zip(&totals)
        .map(|(c, &total)| c.histogram.count() - total)
        .collect();
    let figures: Vec<(u64, u64, u64)> = run.cpus.iter().map(|c| min_avg_max_us(&c.raw)).collect();

    footer_line(
        &mut out,
        "Total",
        9,
        &totals,
        all_column.then(|| totals.iter().sum()),
    );
    let mins: Vec<u64> = figures.iter().map(|f| f.0).collect();
    footer_line(&mut out, "Min Latencies", 5, &mins, None);
    let avgs: Vec<u64> = figures.iter().map(|f| f.1).collect();
    footer_line(&mut out, "Avg Latencies", 5, &avgs, None);
    let maxs: Vec<u64> = figures.iter().map(|f| f.2).collect();
    let maxmax = maxs.iter().copied().max().unwrap_or(0);
    footer_line(
        &mut out,
        "Max Latencies",
        5,
        &maxs,
        all_column.then_some(maxmax),
    );
    let all_overflows = overflows.iter().sum();
    footer_line(
        &mut out,
        "Histogram Overflows",
        5,
        &overflows,
        all_column.then_some(all_overflows),
    );

    out.push_str("# Histogram Overflow at cycle number:\n");
    for (i, (c, &overflow)) in run.cpus.iter().zip(&overflows).enumerate() {
        let _ = write!(out, "# Thread {i}:");
        let cycles = overflow_cycles(c, max_us);
        for cycle in &cycles {
            let _ = write!(out, " {cycle:05}");
        }
        let others = overflow.saturating_sub(cycles.len() as u64);
        if others > 0 {
            let _ = write!(out, " # {others:05} others");
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The smallest `max_us` for [`histogram`] that leaves no overflow: the largest maximum in
/// whole microseconds plus one, at least 1. Samples beyond the histogram's range (about 17.2 s)
/// are overflows whatever the bound, so the bound stops at the first microsecond past the range.
pub fn default_histogram_max_us(run: &MeasureRun) -> u64 {
    let range_end_us = RANGE_END_NS.div_ceil(1_000);
    run.cpus
        .iter()
        .filter(|c| c.raw.count > 0)
        .map(|c| (c.raw.max_ns / 1_000).saturating_add(1).min(range_end_us))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Minimum, mean and maximum in whole microseconds, truncated; zeros when empty.
fn min_avg_max_us(r: &Accumulator) -> (u64, u64, u64) {
    if r.count == 0 {
        return (0, 0, 0);
    }
    let avg = u128::from(r.sum_ns) / (u128::from(r.count) * 1_000);
    (r.min_ns / 1_000, avg as u64, r.max_ns / 1_000)
}

/// `# Name: v v v [all]`, each value zero-padded to `width`.
fn footer_line(out: &mut String, name: &str, width: usize, values: &[u64], all: Option<u64>) {
    let _ = write!(out, "# {name}:");
    for v in values.iter().chain(all.as_ref()) {
        let _ = write!(out, " {v:0width$}");
    }
    out.push('\n');
}

/// The microsecond row of a sample, by the bucket rule of the module doc; `None` beyond the
/// histogram's range.
fn micro_of(latency_ns: u64) -> Option<u64> {
    (latency_ns < RANGE_END_NS).then(|| bucket_bounds(bucket_index(latency_ns)).0 / 1_000)
}

/// A CPU's in-range counts per microsecond below `max_us`, ascending, as (row, count).
fn micro_rows(c: &CpuResult, max_us: u64) -> Vec<(u64, u64)> {
    let mut rows: Vec<(u64, u64)> = Vec::new();
    for (lo, _width, count) in c.histogram.buckets() {
        let us = lo / 1_000;
        if us >= max_us {
            break;
        }
        match rows.last_mut() {
            Some((row, n)) if *row == us => *n += count,
            _ => rows.push((us, count)),
        }
    }
    rows
}

/// Cycle numbers of the kept spikes that overflow `max_us`, ascending, at most `max_us` of
/// them (the size of cyclictest's outlier list).
fn overflow_cycles(c: &CpuResult, max_us: u64) -> Vec<u64> {
    let mut cycles: Vec<u64> = c
        .spikes
        .iter()
        .filter(|s| micro_of(s.latency_ns).is_none_or(|us| us >= max_us))
        .map(|s| s.cycle)
        .collect();
    cycles.sort_unstable();
    cycles.truncate(usize::try_from(max_us).unwrap_or(usize::MAX));
    cycles
}

#[cfg(test)]
mod tests;
