//! cyclictest's summary lines, `T: 0 (27877) P:80 I:10000 C: 10000 Min: 12 Act: 13 Avg: 16
//! Max: 66`, as printed live (cursor-movement escapes, one refresh after another: the last
//! line of each thread counts) or once with `-q`; with the `policy:` and
//! `/dev/cpu_dma_latency` lines cyclictest prints beside them.
//!
//! These lines give count, minimum, average and maximum only: no distribution.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use model::CpuSet;
use model::imported::{Figure, Setting};
use model::measure::{MeasureRun, Policy};

use crate::ImportError;
use crate::build::{self, ThreadFigures};
use crate::cyclictest_opts;

/// One thread's summary line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Summary {
    pub thread: u32,
    pub tid: Option<u32>,
    pub priority: Option<u8>,
    pub interval_us: Option<u64>,
    pub cycles: u64,
    pub min: u64,
    pub act: Option<u64>,
    pub avg: u64,
    pub max: u64,
}

const EXPECTED: &str = "expected a cyclictest summary line \
                        `T: N (TID) P:.. I:.. C:.. Min:.. Act:.. Avg:.. Max:..`";

/// The text of a line without terminal escapes (`ESC [ ... letter`) and carriage returns.
pub(crate) fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                if chars.next() == Some('[') {
                    for d in chars.by_ref() {
                        if d.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether a (plain) line claims to be a summary line.
fn is_summary(line: &str) -> bool {
    line.trim_start().starts_with("T:")
}

/// Whether `text` has at least one summary line that parses.
pub(crate) fn detect(text: &str) -> bool {
    text.lines()
        .map(plain)
        .any(|l| is_summary(&l) && summary(&l).is_some())
}

/// Parses one (plain) summary line.
pub(crate) fn summary(line: &str) -> Option<Summary> {
    let rest = line.trim_start().strip_prefix("T:")?;
    let (thread, rest) = rest.split_once('(')?;
    let (tid, rest) = rest.split_once(')')?;
    let thread = thread.trim().parse().ok()?;
    let tid = tid.trim().parse().ok();
    let spaced = rest.replace(':', ": ");
    let mut fields = BTreeMap::new();
    let mut words = spaced.split_whitespace();
    while let Some(key) = words.next() {
        let key = key.strip_suffix(':')?;
        let value: u64 = words.next()?.parse().ok()?;
        fields.insert(key, value);
    }
    Some(Summary {
        thread,
        tid,
        priority: fields.get("P").and_then(|&p| u8::try_from(p).ok()),
        interval_us: fields.get("I").copied(),
        cycles: *fields.get("C")?,
        min: *fields.get("Min")?,
        act: fields.get("Act").copied(),
        avg: *fields.get("Avg")?,
        max: *fields.get("Max")?,
    })
}

/// Every thread's last summary line in `text`, with the `policy:` and dma-latency lines.
pub(crate) struct Lines {
    pub threads: BTreeMap<u32, Summary>,
    pub policy: Option<Policy>,
    pub dma_latency_us: Option<u32>,
}

/// Collects summary lines; a `T:` line that does not parse or holds impossible figures is an
/// error naming its line.
pub(crate) fn lines(file: &str, text: &str) -> Result<Lines, ImportError> {
    let mut out = Lines {
        threads: BTreeMap::new(),
        policy: None,
        dma_latency_us: None,
    };
    for (i, raw) in text.lines().enumerate() {
        let line = plain(raw);
        if let Some(p) = cyclictest_opts::policy_line(&line) {
            out.policy = Some(p);
        } else if let Some(d) = cyclictest_opts::dma_latency_line(&line) {
            out.dma_latency_us = Some(d);
        } else if is_summary(&line) {
            let s = summary(&line).ok_or_else(|| ImportError::at(file, i + 1, EXPECTED))?;
            if s.thread > model::cpuset::MAX_CPU {
                return Err(ImportError::at(
                    file,
                    i + 1,
                    format!(
                        "thread {}: a thread number stands for a CPU here, and the largest CPU \
                         number is {}",
                        s.thread,
                        model::cpuset::MAX_CPU
                    ),
                ));
            }
            if s.cycles > 0 && !(s.min <= s.avg && s.avg <= s.max) {
                return Err(ImportError::at(
                    file,
                    i + 1,
                    format!(
                        "thread {}: expected Min <= Avg <= Max, found {} / {} / {}",
                        s.thread, s.min, s.avg, s.max
                    ),
                ));
            }
            out.threads.insert(s.thread, s);
        }
    }
    Ok(out)
}

/// Reads a file of summary lines (the last line of each thread counts).
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let found = lines(file, text)?;
    if found.threads.is_empty() {
        return Err(ImportError::whole(file, EXPECTED));
    }
    let figures: Vec<ThreadFigures> = found
        .threads
        .values()
        .map(|s| {
            let mut buckets = Vec::new();
            if s.cycles >= 1 {
                buckets.push((s.min, 1));
            }
            if s.cycles >= 2 {
                buckets.push((s.max, 1));
            }
            ThreadFigures {
                cpu: s.thread,
                tid: s.tid,
                count: s.cycles,
                unknown: s.cycles.saturating_sub(2),
                buckets,
                min: Some(s.min),
                max: Some(s.max),
                avg: Some(s.avg as f64),
                last: s.act,
                exact: false,
                series: Default::default(),
            }
        })
        .collect();
    let first = found.threads.values().next().expect("at least one thread");
    let cpu_set: CpuSet = found.threads.keys().copied().collect();
    let mut params = build::neutral_params(&cpu_set);
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let not_stated = apply(&mut params, &found, first, max_count);
    let interval_us = first.interval_us.unwrap_or(1000);
    let elapsed = Duration::from_micros(max_count.saturating_mul(interval_us));
    let notes = vec![
        "summary lines give count, minimum, average and maximum only: there are no \
         percentiles and no standard deviation, and they are shown as '-'; the histogram \
         holds one sample at the minimum and one at the maximum, the others are counted in \
         above_range with unknown values"
            .to_string(),
        "the mean is cyclictest's average rounded to 1 us".to_string(),
        "CPU numbers are cyclictest's thread numbers; the host is unknown".to_string(),
        "the file records no time: the run is dated by the file's modification time and its \
         length estimated as cycles x interval"
            .to_string(),
    ];
    build::cyclictest_text_run(
        build::CyclictestText {
            file,
            format: crate::Format::CyclictestSummary,
            modified,
            elapsed,
            params,
            cpus: &cpu_set,
            notes,
            not_given: vec![Figure::Percentiles, Figure::Stddev],
            not_stated,
            unit_ns: 1000,
        },
        &figures,
    )
}

/// Parameters from summary lines: thread 0's priority and interval, the policy line, the dma
/// latency line; the settings they do not state (cyclictest's text never states mlock).
pub(crate) fn apply(
    params: &mut model::measure::MeasureParams,
    found: &Lines,
    first: &Summary,
    count: u64,
) -> Vec<Setting> {
    params.priority = first.priority.unwrap_or(0);
    params.policy = found.policy.unwrap_or(if params.priority > 0 {
        Policy::Fifo
    } else {
        Policy::Other
    });
    params.interval_ns = model::Nanos::from_us(first.interval_us.unwrap_or(1000));
    params.periods = count;
    params.dma_latency_us = found.dma_latency_us;
    let mut not_stated = vec![Setting::Mlock];
    if first.priority.is_none() && found.policy.is_none() {
        not_stated.push(Setting::Policy);
    }
    if first.interval_us.is_none() {
        not_stated.push(Setting::Interval);
    }
    if found.dma_latency_us.is_none() {
        not_stated.push(Setting::DmaLatency);
    }
    not_stated.sort();
    not_stated
}
