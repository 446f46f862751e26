//! oslat's reports: the text summary of rt-tests 2.x (`Core:`, `Counter Freq:`, one
//! `NNN (us):` row per bucket, the last `(including overflows)`, then `Minimum:`, `Average:`,
//! `Maximum:`, `Max-Min:`, `Duration:`), the standalone v0.1 layout (`core_i:`, `cpu_mhz:`,
//! rows, `maxlat:`, `runtime:`) and the `--json` document (cyclictest's envelope; per thread
//! `cpu`, `freq`, `min`, `avg`, `max`, `duration` and a `histogram` keyed by row label).
//!
//! oslat measures operating-system noise, not wake-up latency: one sample per iteration of a
//! busy loop, the time between two reads of the CPU's counter. The run is stored with
//! [`Quantity::OsNoise`] so it is never mistaken for, or silently compared with, wake-up
//! latency.
//!
//! oslat's facts, from its source: the row labelled `L` holds samples in `[L - w, L)` for
//! bucket width `w` (1 us unless `-W`), so labels are upper edges; samples at or beyond the
//! last row's lower edge all go to the last row ("including overflows"); rt-tests 2.x before
//! `-W` existed prints minimum and maximum rounded up to the next microsecond (a minimum equal
//! to the lowest row's label shows it); its average counts samples at upper edges and adds the
//! first thread's overflow to every thread, so rtlab derives the mean itself.

mod json;
mod text;

use std::time::{Duration, SystemTime};

use model::imported::{ImportInfo, Quantity, Setting};
use model::measure::{MeasureParams, MeasureRun, Policy};
use model::{CpuSet, Nanos};

use crate::build::{self, RunFacts, ThreadFigures};
use crate::{Format, ImportError};

pub(crate) use json::parse_json;
pub(crate) use text::parse_text;

/// Whether `text` is oslat output, and which kind.
pub(crate) fn detect(text: &str) -> Option<Format> {
    if text.trim_start().starts_with('{') {
        let oslat = text.contains("\"oslat ")
            || text.contains("\"oslat\"")
            || (text.contains("\"freq\"") && !text.contains("\"cycles\""));
        return oslat.then_some(Format::OslatJson);
    }
    let cores = text
        .lines()
        .any(|l| matches!(l.trim_start().split(':').next(), Some("Core" | "core_i")));
    let rows = text.lines().any(|l| {
        let l = l.trim_start();
        row_label(l).is_some() || l.starts_with("oslat V ") || l.starts_with("Counter Freq:")
    });
    (cores && rows).then_some(Format::OslatText)
}

/// One thread (CPU) as oslat reported it, times in nanoseconds.
#[derive(Clone, Debug, Default)]
pub(super) struct Thread {
    cpu: u32,
    counter_mhz: Option<u64>,
    /// (row label = upper edge, samples).
    rows: Vec<(u64, u64)>,
    min: Option<u64>,
    max: Option<u64>,
    duration: Option<Duration>,
}

/// What an oslat report does not state: it always locks its memory; it names its priority
/// only where it ran one, its loop's period only with a duration, and never records
/// /dev/cpu_dma_latency.
fn not_stated(r: &Report, format: Format, params: &MeasureParams) -> Vec<Setting> {
    let mut out = vec![Setting::DmaLatency];
    if r.rtprio.is_none() && format == Format::OslatText {
        out.push(Setting::Policy);
    }
    if params.duration_ns.is_none() {
        out.push(Setting::Interval);
    }
    out.sort();
    out
}

/// What a report says besides its threads.
#[derive(Debug, Default)]
pub(super) struct Report {
    format: Option<Format>,
    version: Option<String>,
    command: Option<String>,
    rtprio: Option<u8>,
    /// Bucket width given on the command line (`-W`), in ns.
    width: Option<u64>,
    bias: bool,
    started: Option<(SystemTime, Option<Duration>)>,
    threads: Vec<Thread>,
}
/// Builds the run from a parsed report.
fn finish(file: &str, r: Report, modified: SystemTime) -> Result<MeasureRun, ImportError> {
    let format = r.format.unwrap_or(Format::OslatText);
    if !build::distinct(&r.threads.iter().map(|t| t.cpu).collect::<Vec<_>>()) {
        return Err(ImportError::whole(
            file,
            "a CPU appears twice among oslat's threads",
        ));
    }
    let mut notes = vec![
        "oslat measures OS noise, not wake-up latency: one sample per iteration of a busy loop, \
         the time between two reads of the CPU's counter; nearly every sample falls in the first \
         bucket and the tail is time the loop lost to interrupts, other tasks and the hardware. \
         Compare it with other oslat or osnoise runs, not with wake-up latency"
            .to_string(),
    ];
    let width = bucket_width(&r, &mut notes);
    let mut figures = Vec::with_capacity(r.threads.len());
    let (mut rounded, mut overflowed) = (false, 0u64);
    for t in &r.threads {
        let placed = thread_figures(file, t, &r, width)?;
        rounded |= placed.rounded;
        overflowed = overflowed.saturating_add(placed.figures.unknown);
        figures.push(placed.figures);
    }
    notes.extend(figure_notes(&r, rounded, overflowed));
    let cpus: CpuSet = figures.iter().map(|f| f.cpu).collect();
    figures.sort_by_key(|f| f.cpu);
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let elapsed = r.threads.iter().filter_map(|t| t.duration).max();
    let mut params = build::neutral_params(&cpus);
    params.periods = max_count;
    params.mlock = true;
    if let Some(prio) = r.rtprio {
        params.policy = Policy::Fifo;
        params.priority = prio;
    }
    if let Some(d) = elapsed {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        params.duration_ns = Some(Nanos(ns));
        if let Some(period) = ns.checked_div(max_count) {
            params.interval_ns = Nanos(period.max(1));
        }
        notes.push(
            "oslat has no interval: params.interval_ns is the loop's mean period (duration / \
             samples)"
                .to_string(),
        );
    }
    let elapsed = elapsed.unwrap_or_default();
    let started = start_time(&r, elapsed, modified, &mut notes);
    if r.rtprio.is_none() && format == Format::OslatText {
        notes.push("the report names no SCHED_FIFO priority: the policy is shown as other".into());
    }
    let not_stated = not_stated(&r, format, &params);
    let results = figures.iter().map(|f| build::cpu_result(f, 1)).collect();
    let facts = RunFacts {
        host: build::unknown_host(&cpus),
        params,
        started,
        elapsed,
        import: ImportInfo {
            tool: r
                .version
                .map_or("oslat".to_string(), |v| format!("oslat {v}")),
            format: format.name().to_string(),
            file: file.to_string(),
            resolution_ns: width,
            command: r.command,
            quantity: Quantity::OsNoise,
            notes,
            not_given: Vec::new(),
            not_stated,
        },
    };
    build::run(file, facts, results)
}

/// Step 1: the bucket width: the command line's, else the smallest step between labels, else
/// 1 us; with its notes.
fn bucket_width(r: &Report, notes: &mut Vec<String>) -> u64 {
    let labels: std::collections::BTreeSet<u64> = r
        .threads
        .iter()
        .flat_map(|t| t.rows.iter().map(|&(l, _)| l))
        .collect();
    let step = labels
        .iter()
        .zip(labels.iter().skip(1))
        .map(|(a, b)| b - a)
        .min();
    let width = match (r.width, step) {
        (Some(w), _) => w,
        (None, Some(s)) => {
            if s != 1000 {
                notes.push(format!(
                    "the bucket width ({s} ns) is inferred from the step between row labels"
                ));
            }
            s
        }
        (None, None) => 1000,
    };
    notes.push(format!(
        "oslat's row labelled L holds samples in [L - {w}, L) and is stored at L - {w}, so \
         histogram values and percentiles are lower bounds within one bucket ({w})",
        w = show_ns(width)
    ));
    if r.bias {
        notes.push(
            "oslat ran with --bias: its row labels include the bias, so stored values are the \
             measured gaps"
                .to_string(),
        );
    }
    width
}

/// One thread's figures, and whether its minimum and maximum were printed rounded up.
struct Placed {
    figures: ThreadFigures,
    rounded: bool,
}

/// Step 2: a thread's rows as samples at their lower edges, its last row's samples beyond
/// the range as unknown, its minimum, mean and (oslat's own) maximum.
fn thread_figures(file: &str, t: &Thread, r: &Report, width: u64) -> Result<Placed, ImportError> {
    let count = build::checked_total(t.rows.iter().map(|&(_, n)| n)).ok_or_else(|| {
        ImportError::whole(
            file,
            format!("CPU {}: the histogram holds more than 2^64 samples", t.cpu),
        )
    })?;
    let nonempty: Vec<(u64, u64)> = t.rows.iter().copied().filter(|&(_, n)| n > 0).collect();
    let lower = |label: u64| label.saturating_sub(width);
    let (Some(&(low_label, _)), Some(&(top_label, top_n))) = (nonempty.first(), nonempty.last())
    else {
        return Ok(Placed {
            figures: ThreadFigures {
                cpu: t.cpu,
                ..ThreadFigures::default()
            },
            rounded: false,
        });
    };
    // rt-tests 2.x before -W and v0.1 print min and max rounded up to whole us: their
    // minimum is the lowest row's label (below it with --bias, which merges the rows
    // under the bias into the lowest). Versions with -W print them truncated.
    let up = r.width.is_none()
        && t.min.is_none_or(|m| {
            m >= 1000 && m.is_multiple_of(1000) && (m == low_label || (r.bias && m < low_label))
        });
    let adjust = |v: u64| if up { v.saturating_sub(1000) } else { v };
    let min = t
        .min
        .map(adjust)
        .unwrap_or(lower(low_label))
        .min(lower(low_label));
    let max = t.max.map(adjust).unwrap_or(lower(top_label));
    // The worst case is kept as oslat printed it (an upper bound when rounded up); the
    // adjusted value places the samples.
    let worst = t.max.unwrap_or(max).max(lower(top_label));
    if max.saturating_add(1000) < lower(top_label) {
        return Err(ImportError::whole(
            file,
            format!(
                "CPU {}: oslat's maximum {} is below its highest non-empty row ({} us)",
                t.cpu,
                show_ns(max),
                top_label / 1000
            ),
        ));
    }
    // The highest row holds values beyond its range exactly when the maximum is.
    let over = max >= top_label;
    let known: Vec<(u64, u64)> = nonempty
        .iter()
        .filter(|&&(l, _)| !(over && l == top_label))
        .map(|&(l, n)| (if l == low_label { min } else { lower(l) }, n))
        .collect();
    let unknown = if over { top_n } else { 0 };
    let mut sum: f64 = known.iter().map(|&(v, n)| v as f64 * n as f64).sum();
    if over {
        sum += (top_n - 1) as f64 * lower(top_label) as f64 + max as f64;
    }
    Ok(Placed {
        figures: ThreadFigures {
            cpu: t.cpu,
            tid: None,
            count,
            buckets: known,
            unknown,
            min: Some(min),
            max: Some(worst),
            avg: (count > 0).then(|| sum / count as f64),
            last: None,
            // oslat measures finer than its buckets.
            exact: false,
            series: Default::default(),
        },
        rounded: up,
    })
}

/// Step 3: notes on rounding, overflow, the mean and the counter frequencies.
fn figure_notes(r: &Report, rounded: bool, overflowed: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if rounded {
        notes.push(
            "this oslat prints minimum and maximum rounded up to the next whole microsecond: \
             the minimum is stored 1 us lower, a lower bound like the histogram; the maximum is \
             oslat's own, the worst case (an upper bound within 1 us)"
                .to_string(),
        );
    }
    if overflowed > 0 {
        notes.push(format!(
            "{overflowed} samples were in oslat's last row, which includes every sample beyond \
             its range: their values are unknown and counted in above_range, so percentiles that \
             fall there read as the maximum"
        ));
    }
    notes.push(
        "the mean is derived from the histogram (each sample at its bucket's lower edge, \
         samples beyond the last bucket at its lower edge but the maximum); oslat's own average \
         counts samples at upper edges and, in rt-tests 2.x, adds the first thread's overflow \
         to every thread, so it is not used. The standard deviation is estimated"
            .to_string(),
    );
    let freqs: Vec<String> = r
        .threads
        .iter()
        .filter_map(|t| t.counter_mhz.map(|f| format!("CPU {} {f} MHz", t.cpu)))
        .collect();
    if !freqs.is_empty() {
        notes.push(format!(
            "counter frequency as oslat measured it: {}",
            freqs.join(", ")
        ));
    }
    notes
}

/// Step 4: when the measurement started: the report's end time less the measured duration
/// (its start time includes the pre-heat), its start time, or the file's modification time.
fn start_time(
    r: &Report,
    elapsed: Duration,
    modified: SystemTime,
    notes: &mut Vec<String>,
) -> SystemTime {
    match r.started {
        Some((s, Some(total))) if total >= elapsed => s
            .checked_add(total)
            .and_then(|end| end.checked_sub(elapsed))
            .unwrap_or(s),
        Some((s, _)) => s,
        None => {
            notes.push(
                "the file records no time: the run is dated by the file's modification time"
                    .to_string(),
            );
            modified.checked_sub(elapsed).unwrap_or(modified)
        }
    }
}
/// `001 (us): ...` → the label in ns.
fn row_label(line: &str) -> Option<u64> {
    let (label, _) = line.split_once(" (us):")?;
    us_to_ns(label.trim())
}
/// `8034` or `0.250` (microseconds, up to three decimals) → ns.
fn us_to_ns(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 3 {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = format!("{frac:0<3}").parse().ok()?;
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(1000)?
        .checked_add(frac_ns)
}
/// `1 us`, `250 ns`.
fn show_ns(ns: u64) -> String {
    if ns.is_multiple_of(1000) {
        format!("{} us", ns / 1000)
    } else {
        format!("{ns} ns")
    }
}
