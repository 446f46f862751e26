//! cyclictest's verbose stream (`-v`): one line per sample, `THREAD:CYCLE:LATENCY` with each
//! field right-aligned in eight columns (`       0:      17:      12`), the format of every
//! rt-tests release from 0.19 to 2.x; with `--smi` a fourth column (the SMI count) follows the
//! latency. People pipe it into gzip for hour-long runs and plot it; here every sample is kept
//! exactly: the run's histogram, minimum, mean, standard deviation and maximum are the
//! samples' own.
//!
//! cyclictest prints the samples it has buffered, so a slow terminal or disk can lose some,
//! and `-o N` (oscilloscope reduction) prints one line per N cycles with their maximum: a
//! cycle number that skips ahead says so in a note.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use model::imported::Setting;
use model::measure::MeasureRun;
use model::{CpuSet, Nanos};

use crate::ImportError;
use crate::build::{self, Skipped, ThreadFigures};
use crate::cyclictest_opts;
use crate::cyclictest_summary::plain;

/// How many sample lines a file must have to be taken for a verbose stream (they must also
/// be four in five of its lines that are not `#` comments).
const MIN_SAMPLES: usize = 1;

/// The most distinct latency values one thread may have: a million microseconds is a second
/// of spread, beyond any run; a file with more is not a cyclictest stream, and the bound keeps
/// its memory small.
const MAX_DISTINCT: usize = 1 << 20;

/// One sample line: thread, cycle, latency (cyclictest's unit).
fn sample(line: &str) -> Option<(u32, u64, u64)> {
    let mut parts = line.trim().splitn(3, ':');
    let thread = parts.next()?.trim().parse().ok()?;
    let cycle = parts.next()?.trim().parse().ok()?;
    // The latency, then with --smi the SMI count after whitespace.
    let mut rest = parts.next()?.split_whitespace();
    let latency = rest.next()?.parse().ok()?;
    match rest.next() {
        None => {}
        Some(smi) => {
            smi.parse::<u64>().ok()?;
            if rest.next().is_some() {
                return None;
            }
        }
    }
    Some((thread, cycle, latency))
}

/// Whether `text` is a verbose stream: sample lines are most of its non-comment lines.
pub(crate) fn detect(text: &str) -> bool {
    let (mut samples, mut other) = (0usize, 0usize);
    for line in text.lines().take(10_000) {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || interval_line(line).is_some() {
            continue;
        }
        if sample(line).is_some() {
            samples += 1;
        } else {
            other += 1;
        }
    }
    samples >= MIN_SAMPLES && samples > other.saturating_mul(4)
}

/// cyclictest -v's `Thread N Interval: X` line (its thread's interval in its unit): the
/// thread and the interval.
fn interval_line(line: &str) -> Option<(u32, u64)> {
    let rest = line.strip_prefix("Thread")?;
    let (thread, interval) = rest.split_once("Interval:")?;
    Some((thread.trim().parse().ok()?, interval.trim().parse().ok()?))
}

/// One thread's samples as read.
#[derive(Default)]
struct Thread {
    /// Latency value -> samples.
    values: BTreeMap<u64, u64>,
    count: u64,
    last: Option<u64>,
    next_cycle: u64,
    /// Cycles that the stream skipped.
    missing: u64,
}

/// The stream as read: samples per thread, lines skipped, the dma latency line's value, the
/// interval its `Thread N Interval:` lines state.
struct Stream {
    threads: BTreeMap<u32, Thread>,
    skipped: Skipped,
    dma: Option<u32>,
    interval: Option<u64>,
}

/// Reads a verbose stream.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let Stream {
        threads,
        skipped,
        dma,
        interval: interval_us,
    } = read_samples(file, text)?;
    let figures: Vec<ThreadFigures> = threads
        .iter()
        .map(|(&cpu, t)| ThreadFigures {
            cpu,
            tid: None,
            count: t.count,
            buckets: t.values.iter().map(|(&v, &n)| (v, n)).collect(),
            unknown: 0,
            min: t.values.keys().next().copied(),
            max: t.values.keys().next_back().copied(),
            avg: None,
            last: t.last,
            // Every sample, at its whole-microsecond value.
            exact: true,
        })
        .collect();
    let cpu_set: CpuSet = threads.keys().copied().collect();
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let mut params = build::neutral_params(&cpu_set);
    params.periods = max_count;
    params.dma_latency_us = dma;
    let mut not_stated = vec![Setting::Policy, Setting::Mlock];
    match interval_us {
        Some(us) => params.interval_ns = Nanos::from_us(us),
        None => not_stated.push(Setting::Interval),
    }
    if dma.is_none() {
        not_stated.push(Setting::DmaLatency);
    }
    not_stated.sort();
    let elapsed = Duration::from_micros(max_count.saturating_mul(interval_us.unwrap_or(1000)));
    let notes = notes(&threads, skipped, interval_us.is_some());
    build::cyclictest_text_run(
        build::CyclictestText {
            file,
            format: crate::Format::CyclictestVerbose,
            modified,
            elapsed,
            params,
            cpus: &cpu_set,
            notes,
            not_given: Vec::new(),
            not_stated,
        },
        &figures,
    )
}

/// Step 1: every sample line into its thread; other lines skipped with a note.
fn read_samples(file: &str, text: &str) -> Result<Stream, ImportError> {
    let mut threads: BTreeMap<u32, Thread> = BTreeMap::new();
    let mut skipped = Skipped::default();
    let mut dma = None;
    let mut intervals = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = plain(raw);
        let line = line.trim();
        if line.is_empty() || cyclictest_opts::policy_line(line).is_some() {
            continue;
        }
        if let Some(d) = cyclictest_opts::dma_latency_line(line) {
            dma = Some(d);
            continue;
        }
        if let Some((thread, interval)) = interval_line(line) {
            if thread > model::cpuset::MAX_CPU {
                return Err(ImportError::at(
                    file,
                    n,
                    format!("thread {thread}: beyond the largest CPU number"),
                ));
            }
            intervals.insert(thread, interval);
            continue;
        }
        let Some((thread, cycle, latency)) = sample(line) else {
            if !line.starts_with('#') {
                skipped.line(n, line);
            }
            continue;
        };
        if thread > model::cpuset::MAX_CPU {
            return Err(ImportError::at(
                file,
                n,
                format!(
                    "thread {thread}: a thread number stands for a CPU here, and the largest \
                     CPU number is {}",
                    model::cpuset::MAX_CPU
                ),
            ));
        }
        let t = threads.entry(thread).or_default();
        t.count = t
            .count
            .checked_add(1)
            .ok_or_else(|| ImportError::at(file, n, "more than 2^64 samples in one thread"))?;
        if t.values.len() >= MAX_DISTINCT && !t.values.contains_key(&latency) {
            return Err(ImportError::at(
                file,
                n,
                format!(
                    "thread {thread}: more than {MAX_DISTINCT} distinct latencies; is this a \
                     cyclictest -v stream?"
                ),
            ));
        }
        *t.values.entry(latency).or_default() += 1;
        t.last = Some(latency);
        t.missing = t.missing.saturating_add(cycle.saturating_sub(t.next_cycle));
        t.next_cycle = cycle.saturating_add(1);
    }
    if threads.is_empty() {
        return Err(ImportError::whole(
            file,
            "expected cyclictest -v sample lines `THREAD:CYCLE:LATENCY`",
        ));
    }
    // The first sampled thread's interval, as its line states it (cyclictest's -i; further
    // threads add -d's distance).
    let interval = threads.keys().find_map(|t| intervals.get(t).copied());
    Ok(Stream {
        threads,
        skipped,
        dma,
        interval,
    })
}

/// Step 2: what the stream gives and does not (`interval`: its `Thread N Interval:` lines
/// state the interval).
fn notes(threads: &BTreeMap<u32, Thread>, skipped: Skipped, interval: bool) -> Vec<String> {
    let mut notes = vec![
        "every sample is cyclictest's own (1-us resolution): the histogram, minimum, mean, \
         standard deviation and maximum are the samples'"
            .to_string(),
        "values are read as microseconds, cyclictest's default (a stream written with -N \
         holds nanoseconds)"
            .to_string(),
        "CPU numbers are cyclictest's thread numbers; the host is unknown".to_string(),
        if interval {
            "the stream records no time: the run is dated by the file's modification time and \
             its length estimated as cycles x the first thread's interval"
                .to_string()
        } else {
            "the stream records no time or interval: the run is dated by the file's \
             modification time and its length estimated as cycles x 1 ms"
                .to_string()
        },
    ];
    let missing: u64 = threads.values().map(|t| t.missing).sum();
    if missing > 0 {
        notes.push(format!(
            "{missing} cycles are missing from the stream (cycle numbers skip ahead): \
             cyclictest's -o reduction prints one line per group, and a full buffer loses \
             lines; only the samples present are counted"
        ));
    }
    notes.extend(skipped.notes("cyclictest's -v stream"));
    notes
}
