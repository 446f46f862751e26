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
//!
//! The stream is time-ordered: a sample's cycle times its thread's interval is when it was
//! taken, so each thread keeps its per-second maxima (the series `rtlab worst` fits), as a run
//! rtlab measured does. Its header lines (`Thread N Interval: X`, `Thread N using cpu M.`,
//! `Using 2 cpus.`, ...) give each thread's interval and CPU.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use model::imported::Setting;
use model::limits::MAX_SERIES_SLOTS;
use model::measure::{MeasureRun, Series};
use model::{CpuSet, Nanos};

use crate::ImportError;
use crate::build::{self, Skipped, ThreadFigures};
use crate::cyclictest_opts;
use crate::cyclictest_summary::{plain, summary};

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
        if line.is_empty() || line.starts_with('#') || header_line(line) {
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
    /// Second of the run (cycle x interval) -> the largest latency in it and its samples.
    seconds: BTreeMap<u64, (u64, u64)>,
}

/// What the stream's own lines say about its threads, read before the samples: each thread's
/// interval as printed, the CPU it was pinned to, whether a histogram was asked for.
#[derive(Default)]
struct Header {
    printed: BTreeMap<u32, u64>,
    cpu_of: BTreeMap<u32, u32>,
    histogram: bool,
    /// The summary line cyclictest prints at the end with -q (`T: 0 (25197) P: 0 I:1000 ...`):
    /// each thread's interval as it was, and its thread id.
    summary: BTreeMap<u32, (Option<u64>, Option<u32>)>,
}

/// cyclictest's default distance between threads' intervals (-d), in microseconds.
const DEFAULT_DISTANCE_US: u64 = 500;

/// The interval each thread measured at, in microseconds, from the printed ones, and what was
/// assumed. cyclictest prints a thread's interval after adding the distance (-d) meant for the
/// next thread (every release: `interval += distance; printf("Thread %d Interval: %d")`), so
/// thread 0 of `-i 1000` prints 1500 and thread 1 2000; with a histogram (-h) no distance is
/// added. Two or more threads show the distance as their step; one thread is taken to have
/// the default distance.
fn intervals(h: &Header) -> (BTreeMap<u32, u64>, Option<String>) {
    let stated: BTreeMap<u32, u64> = h
        .summary
        .iter()
        .filter_map(|(&t, &(i, _))| Some((t, i?)))
        .collect();
    if !stated.is_empty() {
        // The summary line's `I:` is the thread's own interval.
        return (stated, None);
    }
    let printed: Vec<(u32, u64)> = h.printed.iter().map(|(&t, &i)| (t, i)).collect();
    if printed.is_empty() || h.histogram {
        return (h.printed.clone(), None);
    }
    let steps: Vec<Option<u64>> = printed
        .windows(2)
        .map(|w| {
            w[1].1
                .checked_sub(w[0].1)?
                .checked_div(u64::from(w[1].0 - w[0].0))
        })
        .collect();
    let distance = match steps.first() {
        None => DEFAULT_DISTANCE_US,
        Some(Some(d)) if steps.iter().all(|s| *s == Some(*d)) => *d,
        Some(_) => {
            return (
                h.printed.clone(),
                Some(
                    "the threads' printed intervals do not step evenly: each is taken as printed \
                     (cyclictest prints a thread's interval plus the distance -d)"
                        .to_string(),
                ),
            );
        }
    };
    if printed.iter().any(|&(_, i)| i <= distance) {
        return (h.printed.clone(), None);
    }
    let actual = printed.iter().map(|&(t, i)| (t, i - distance)).collect();
    let note = format!(
        "cyclictest prints each thread's interval plus the distance it adds for the next thread \
         (-d): {distance} us{} taken off, so thread {} measured every {} us",
        if steps.is_empty() {
            " (the default: one thread does not show it)"
        } else {
            ", the threads' step,"
        },
        printed[0].0,
        printed[0].1 - distance
    );
    (actual, Some(note))
}

/// The stream as read: samples per thread, lines skipped, the dma latency line's value, the
/// header.
struct Stream {
    threads: BTreeMap<u32, Thread>,
    skipped: Skipped,
    dma: Option<u32>,
    header: Header,
}

/// Reads a verbose stream.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let header = read_header(file, text)?;
    let (interval_of, interval_note) = intervals(&header);
    let Stream {
        threads,
        skipped,
        dma,
        header,
    } = read_samples(file, text, header, &interval_of)?;
    let cpu_of = cpus(&threads, &header);
    let unit = unit(&threads);
    let figures: Vec<ThreadFigures> = threads
        .iter()
        .map(|(&thread, t)| ThreadFigures {
            cpu: cpu_of.get(&thread).copied().unwrap_or(thread),
            tid: header.summary.get(&thread).and_then(|s| s.1),
            count: t.count,
            buckets: t.values.iter().map(|(&v, &n)| (v, n)).collect(),
            unknown: 0,
            min: t.values.keys().next().copied(),
            max: t.values.keys().next_back().copied(),
            avg: None,
            last: t.last,
            // Every sample, at its whole-microsecond value.
            exact: true,
            series: series(&t.seconds, unit.ns()),
        })
        .collect();
    let cpu_set: CpuSet = figures.iter().map(|f| f.cpu).collect();
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    // The first sampled thread's interval (cyclictest's -i; further threads add -d).
    let interval_us = threads.keys().find_map(|t| interval_of.get(t).copied());
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
    // The run lasted as long as its longest thread's cycles.
    let elapsed_us = threads
        .iter()
        .map(|(t, th)| {
            th.next_cycle
                .saturating_mul(thread_interval(&interval_of, *t))
        })
        .max()
        .unwrap_or(0);
    let mut notes = notes(&threads, skipped, interval_us.is_some(), !cpu_of.is_empty());
    notes.insert(1, unit.note());
    notes.extend(interval_note);
    build::cyclictest_text_run(
        build::CyclictestText {
            file,
            format: crate::Format::CyclictestVerbose,
            modified,
            elapsed: Duration::from_micros(elapsed_us),
            params,
            cpus: &cpu_set,
            notes,
            not_given: Vec::new(),
            not_stated,
            unit_ns: unit.ns(),
        },
        &figures,
    )
}

/// A thread's interval in microseconds: its own, else 1 ms (cyclictest's default).
fn thread_interval(interval_of: &BTreeMap<u32, u64>, thread: u32) -> u64 {
    interval_of.get(&thread).copied().unwrap_or(1000)
}

/// Thread -> CPU where the stream's `Thread N using cpu M.` lines pin every sampled thread to
/// a CPU of its own; otherwise none (CPU numbers are then the thread numbers).
fn cpus(threads: &BTreeMap<u32, Thread>, header: &Header) -> BTreeMap<u32, u32> {
    let mapped: BTreeMap<u32, u32> = threads
        .keys()
        .filter_map(|t| Some((*t, *header.cpu_of.get(t)?)))
        .collect();
    let distinct: std::collections::BTreeSet<u32> = mapped.values().copied().collect();
    match mapped.len() == threads.len() && distinct.len() == mapped.len() {
        true => mapped,
        false => BTreeMap::new(),
    }
}

/// The per-second maxima of one thread as a series of at most [`MAX_SERIES_SLOTS`] slots of
/// whole seconds (as rtlab's own runs keep them), in nanoseconds (`unit_ns` per value).
fn series(seconds: &BTreeMap<u64, (u64, u64)>, unit_ns: u64) -> Series {
    let Some((&last, _)) = seconds.last_key_value() else {
        return Series::default();
    };
    let span = last.saturating_add(1);
    let slot_s = span.div_ceil(MAX_SERIES_SLOTS as u64).max(1);
    let len = usize::try_from(span.div_ceil(slot_s)).unwrap_or(MAX_SERIES_SLOTS);
    let mut out = Series {
        slot_ns: Nanos::from_secs(slot_s),
        max_ns: vec![0; len],
        count: vec![0; len],
    };
    for (&second, &(max, n)) in seconds {
        let i = usize::try_from(second / slot_s)
            .unwrap_or(len - 1)
            .min(len - 1);
        out.max_ns[i] = out.max_ns[i].max(max.saturating_mul(unit_ns));
        out.count[i] = out.count[i].saturating_add(n);
    }
    out
}

/// Step 1: the lines that describe the threads (they come before the samples in every
/// release, but are read wherever they are).
fn read_header(file: &str, text: &str) -> Result<Header, ImportError> {
    let mut h = Header::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("# Histogram") {
            h.histogram = true;
        }
        if line.starts_with("T:") {
            if let Some(sm) = summary(&plain(line)).filter(|sm| sm.thread <= model::cpuset::MAX_CPU)
            {
                h.summary.insert(sm.thread, (sm.interval_us, sm.tid));
            }
            continue;
        }
        let thread = if let Some((t, interval)) = interval_line(line) {
            h.printed.insert(t, interval);
            t
        } else if let Some((t, cpu)) = cpu_line(line) {
            if cpu > model::cpuset::MAX_CPU {
                return Err(ImportError::at(
                    file,
                    i + 1,
                    format!("cpu {cpu}: beyond the largest CPU number"),
                ));
            }
            h.cpu_of.insert(t, cpu);
            t
        } else {
            continue;
        };
        if thread > model::cpuset::MAX_CPU {
            return Err(ImportError::at(
                file,
                i + 1,
                format!("thread {thread}: beyond the largest CPU number"),
            ));
        }
    }
    Ok(h)
}

/// cyclictest -v's `Thread N using cpu M.` line (a thread pinned with -a): thread and CPU.
fn cpu_line(line: &str) -> Option<(u32, u32)> {
    let rest = line.strip_prefix("Thread")?;
    let (thread, cpu) = rest.split_once("using cpu")?;
    Some((
        thread.trim().parse().ok()?,
        cpu.trim().trim_end_matches('.').trim().parse().ok()?,
    ))
}

/// A line cyclictest prints before its samples about its threads or the machine.
fn header_line(line: &str) -> bool {
    interval_line(line).is_some() || cpu_line(line).is_some() || chatter(line)
}

/// The lines cyclictest prints about the machine before its threads start (`Using 2 cpus.`,
/// `Max CPUs = 2`, `Online CPUs = 2`): nothing to keep.
fn chatter(line: &str) -> bool {
    let count = |rest: Option<&str>| rest.is_some_and(|r| r.trim().parse::<u32>().is_ok());
    count(line.strip_prefix("Max CPUs ="))
        || count(line.strip_prefix("Online CPUs ="))
        || count(
            line.strip_prefix("Using ")
                .and_then(|r| r.strip_suffix(" cpus.")),
        )
}

/// A row of cyclictest's histogram (`000012 000345 000002`), which `-h` prints after the
/// samples; the samples themselves hold every value.
fn histogram_row(line: &str) -> bool {
    let mut n = 0;
    line.split_whitespace().all(|w| {
        n += 1;
        w.bytes().all(|b| b.is_ascii_digit())
    }) && n >= 2
}

/// Step 2: every sample line into its thread (its value, and its second of the run from its
/// cycle and the thread's interval); other lines skipped with a note.
fn read_samples(
    file: &str,
    text: &str,
    header: Header,
    interval_of: &BTreeMap<u32, u64>,
) -> Result<Stream, ImportError> {
    let mut threads: BTreeMap<u32, Thread> = BTreeMap::new();
    let mut skipped = Skipped::default();
    let mut dma = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = plain(raw);
        let line = line.trim();
        if line.is_empty()
            || cyclictest_opts::policy_line(line).is_some()
            || header_line(line)
            || summary(line).is_some()
            || (header.histogram && histogram_row(line))
        {
            continue;
        }
        if let Some(d) = cyclictest_opts::dma_latency_line(line) {
            dma = Some(d);
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
        t.next_cycle = t.next_cycle.max(cycle.saturating_add(1));
        let us = u128::from(cycle) * u128::from(thread_interval(interval_of, thread));
        let second = u64::try_from(us / 1_000_000).unwrap_or(u64::MAX);
        let slot = t.seconds.entry(second).or_default();
        *slot = (slot.0.max(latency), slot.1.saturating_add(1));
    }
    if threads.is_empty() {
        return Err(ImportError::whole(
            file,
            "expected cyclictest -v sample lines `THREAD:CYCLE:LATENCY`",
        ));
    }
    Ok(Stream {
        threads,
        skipped,
        dma,
        header,
    })
}

/// The unit of a stream's latencies. cyclictest writes microseconds, or nanoseconds with -N,
/// and its verbose stream says neither: the values tell. A wake-up's median latency is
/// microseconds on any machine a latency test runs on (tens on a loaded VM, a few on a tuned
/// PREEMPT_RT board) and never under a microsecond, so a median of 1000 or more is nanoseconds
/// (a median of 1 ms would not be a latency test), and below it microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    /// Microseconds, with the median that says so.
    Micro(u64),
    /// Nanoseconds (-N), with the median that says so.
    Nano(u64),
}

/// The median above which a stream is nanoseconds.
const NANO_MEDIAN: u64 = 1000;

impl Unit {
    fn ns(self) -> u64 {
        match self {
            Unit::Micro(_) => 1000,
            Unit::Nano(_) => 1,
        }
    }

    fn note(self) -> String {
        match self {
            Unit::Micro(m) => format!(
                "values are read as microseconds (median {m}; -N streams have {NANO_MEDIAN} or more)"
            ),
            Unit::Nano(m) => format!("values are read as nanoseconds (cyclictest -N): median {m}"),
        }
    }
}

/// The unit of every thread's values, from their median over all threads.
fn unit(threads: &BTreeMap<u32, Thread>) -> Unit {
    let mut all: BTreeMap<u64, u64> = BTreeMap::new();
    for t in threads.values() {
        for (&v, &n) in &t.values {
            let e = all.entry(v).or_default();
            *e = e.saturating_add(n);
        }
    }
    let total = all.values().fold(0u64, |a, &n| a.saturating_add(n));
    let mut seen = 0u64;
    let median = all
        .iter()
        .find(|&(_, &n)| {
            seen = seen.saturating_add(n);
            seen.saturating_mul(2) >= total
        })
        .map_or(0, |(&v, _)| v);
    if median >= NANO_MEDIAN {
        Unit::Nano(median)
    } else {
        Unit::Micro(median)
    }
}

/// Step 3: what the stream gives and does not (`interval`: its `Thread N Interval:` lines
/// state the interval; `pinned`: its `using cpu` lines name each thread's CPU).
fn notes(
    threads: &BTreeMap<u32, Thread>,
    skipped: Skipped,
    interval: bool,
    pinned: bool,
) -> Vec<String> {
    let mut notes = vec![
        "every sample is cyclictest's own, at its resolution: the histogram, minimum, mean, \
         standard deviation and maximum are the samples'"
            .to_string(),
        if pinned {
            "CPU numbers are those the stream's `Thread N using cpu M.` lines name; the host is \
             unknown"
                .to_string()
        } else {
            "CPU numbers are cyclictest's thread numbers; the host is unknown".to_string()
        },
        if interval {
            "the stream records no time: the run is dated by the file's modification time, its \
             length is the longest thread's cycles x its interval, and each sample's second \
             (for the per-second maxima) is its cycle x its thread's interval"
                .to_string()
        } else {
            "the stream records no time or interval: the run is dated by the file's \
             modification time, and its length and each sample's second (for the per-second \
             maxima) assume cyclictest's default 1 ms interval"
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
