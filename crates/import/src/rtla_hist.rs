//! rtla's `timerlat hist` text output: the `# RTLA timerlat histogram` header (time unit,
//! duration), an `Index IRQ-000 Thr-000 ...` column line (`Usr-NNN` columns with `-u`), one
//! row per non-empty bucket (`INDEX COUNT...`, the index is the bucket's lower bound), then the
//! `over:`, `count:`, `min:`, `avg:`, `max:` rows (`-` where a column has no samples). Newer
//! rtla adds an `ALL:` block after them; it and anything later are not read.
//!
//! The thread latency (`Thr-`: timer expiry to the timerlat thread running, what cyclictest
//! measures) becomes each CPU's wake-up latency; the IRQ columns' figures go to the notes.
//! `rtla osnoise hist` output has the same layout with one `CPU-NNN` column per CPU; each
//! sample is one noise occurrence (an `osnoise:sample_threshold` event: time taken from the
//! tracer's busy-looping thread), so the run is stored as OS noise, not wake-up latency.

use std::time::{Duration, SystemTime};

use model::imported::{ImportInfo, Quantity};
use model::measure::MeasureRun;
use model::{CpuSet, Nanos};

use crate::ImportError;
use crate::build::{self, RunFacts, ThreadFigures};
use crate::cyclictest_summary::plain;

/// The first line of `rtla timerlat hist` output.
const TIMERLAT: &str = "# RTLA timerlat histogram";
/// The first line of `rtla osnoise hist` output.
const OSNOISE: &str = "# RTLA osnoise histogram";

/// Whether `text` is `rtla timerlat hist` output.
pub(crate) fn detect(text: &str) -> bool {
    text.lines().any(|l| plain(l).trim() == TIMERLAT)
}

/// Whether `text` is `rtla osnoise hist` output.
pub(crate) fn is_osnoise(text: &str) -> bool {
    text.lines().any(|l| plain(l).trim() == OSNOISE)
}

/// What one column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Irq,
    Thread,
    User,
    /// osnoise's per-CPU noise.
    Cpu,
}

/// A footer row: one value per column (`None` for `-`) and its 1-based line number.
type Footer = Option<(usize, Vec<Option<u64>>)>;

/// Reads `rtla timerlat hist` output.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    read(file, text, modified, false)
}

/// Reads `rtla osnoise hist` output.
pub(crate) fn parse_osnoise(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    read(file, text, modified, true)
}

/// Reads either histogram; `osnoise` picks the columns imported and what the run says.
fn read(
    file: &str,
    text: &str,
    modified: SystemTime,
    osnoise: bool,
) -> Result<MeasureRun, ImportError> {
    let mut unit: Option<(u64, &str)> = None;
    let mut duration: Option<Duration> = None;
    let mut columns: Vec<(Kind, u32)> = Vec::new();
    let mut index_line = 0;
    let mut rows: Vec<(u64, Vec<u64>)> = Vec::new();
    let (mut over, mut count, mut min, mut avg, mut max): (Footer, Footer, Footer, Footer, Footer) =
        (None, None, None, None, None);
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
            if let Some(u) = rest.strip_prefix("Time unit is ") {
                unit = Some(match u.trim() {
                    "microseconds (us)" => (1000, "us"),
                    "nanoseconds (ns)" => (1, "ns"),
                    other => {
                        return Err(ImportError::at(
                            file,
                            n,
                            format!(
                                "unknown time unit `{other}`: expected `microseconds (us)` or \
                                 `nanoseconds (ns)`"
                            ),
                        ));
                    }
                });
            } else if let Some(d) = rest.strip_prefix("Duration:") {
                duration = Some(parse_duration(d).ok_or_else(|| {
                    ImportError::at(
                        file,
                        n,
                        "expected a duration `D HH:MM:SS` after `# Duration:`",
                    )
                })?);
            }
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        if first == "Index" {
            columns = words
                .map(column)
                .collect::<Option<_>>()
                .filter(|c: &Vec<_>| !c.is_empty())
                .ok_or_else(|| {
                    ImportError::at(
                        file,
                        n,
                        "expected column names `IRQ-NNN`, `Thr-NNN`, `Usr-NNN` or `CPU-NNN` after \
                         `Index`",
                    )
                })?;
            index_line = n;
            continue;
        }
        if first == "ALL:" {
            break;
        }
        if index_line == 0 {
            return Err(ImportError::at(
                file,
                n,
                "expected the `Index IRQ-000 Thr-000 ...` (or `Index CPU-000 ...`) column line \
                 before the rows",
            ));
        }
        let slot = match first {
            "over:" => Some(&mut over),
            "count:" => Some(&mut count),
            "min:" => Some(&mut min),
            "avg:" => Some(&mut avg),
            "max:" => Some(&mut max),
            _ => None,
        };
        if let Some(slot) = slot {
            let values: Option<Vec<Option<u64>>> = words
                .map(|w| {
                    if w == "-" {
                        Some(None)
                    } else {
                        w.parse().ok().map(Some)
                    }
                })
                .collect();
            let values = values.filter(|v| v.len() == columns.len()).ok_or_else(|| {
                ImportError::at(
                    file,
                    n,
                    format!(
                        "expected {} numbers (or `-`) after `{first}`, one per column",
                        columns.len()
                    ),
                )
            })?;
            *slot = Some((n, values));
            if first == "max:" {
                break;
            }
            continue;
        }
        if count.is_some() || over.is_some() {
            return Err(ImportError::at(
                file,
                n,
                "expected a footer row (`count:`, `min:`, `avg:`, `max:`) after `over:`",
            ));
        }
        let values: Option<Vec<u64>> = line.split_whitespace().map(|w| w.parse().ok()).collect();
        let values = values
            .filter(|v| v.len() == columns.len() + 1)
            .ok_or_else(|| {
                ImportError::at(
                    file,
                    n,
                    format!(
                        "expected a histogram row `INDEX` and {} counts, or a footer row",
                        columns.len()
                    ),
                )
            })?;
        if let Some(&(prev, _)) = rows.last()
            && values[0] <= prev
        {
            return Err(ImportError::at(
                file,
                n,
                format!("expected an index above {prev}, found {}", values[0]),
            ));
        }
        rows.push((values[0], values[1..].to_vec()));
    }
    let end = last_line + 1;
    if index_line == 0 {
        return Err(ImportError::at(
            file,
            end,
            "expected the `Index IRQ-000 Thr-000 ...` column line (is the file truncated?)",
        ));
    }
    let missing = |label: &str| {
        ImportError::at(
            file,
            end,
            format!("expected the `{label}` footer row (is the file truncated?)"),
        )
    };
    let (over_line, over) = over.ok_or_else(|| missing("over:"))?;
    let (count_line, count) = count.ok_or_else(|| missing("count:"))?;
    let (_, min) = min.ok_or_else(|| missing("min:"))?;
    let (_, avg) = avg.ok_or_else(|| missing("avg:"))?;
    let (_, max) = max.ok_or_else(|| missing("max:"))?;
    let (unit_ns, unit_name) = unit.unwrap_or((1000, "us"));

    // Every column must add up: rows + over = count.
    let mut stats = Vec::with_capacity(columns.len());
    for (c, &(kind, cpu)) in columns.iter().enumerate() {
        let name = column_name(kind, cpu);
        let (Some(o), Some(total)) = (over[c], count[c]) else {
            return Err(ImportError::at(
                file,
                over_line,
                format!("{name}: expected numbers in `over:` and `count:`, found `-`"),
            ));
        };
        let in_rows = build::checked_total(rows.iter().map(|(_, v)| v[c]));
        let overflow = || {
            ImportError::at(
                file,
                count_line,
                format!("{name}: the rows and `over:` add up to more than 2^64 samples"),
            )
        };
        let in_rows = in_rows.ok_or_else(overflow)?;
        if in_rows.checked_add(o).ok_or_else(overflow)? != total {
            return Err(ImportError::at(
                file,
                count_line,
                format!(
                    "{name}: the rows hold {in_rows} samples and `over:` {o}, but `count:` says \
                     {total}"
                ),
            ));
        }
        if let (Some(lo), Some(hi)) = (min[c], max[c])
            && lo > hi
        {
            return Err(ImportError::at(
                file,
                count_line,
                format!("{name}: minimum {lo} is above maximum {hi}"),
            ));
        }
        if total > 0 && (min[c].is_none() || avg[c].is_none() || max[c].is_none()) {
            return Err(ImportError::at(
                file,
                count_line,
                format!("{name}: {total} samples but `-` in `min:`, `avg:` or `max:`"),
            ));
        }
        stats.push((kind, cpu, total, o, min[c], avg[c], max[c]));
    }

    let (wanted, wanted_name) = if osnoise {
        (Kind::Cpu, "CPU")
    } else {
        (Kind::Thread, "Thr")
    };
    let threads: Vec<usize> = (0..columns.len())
        .filter(|&c| columns[c].0 == wanted)
        .collect();
    if threads.is_empty() {
        return Err(ImportError::at(
            file,
            index_line,
            if osnoise {
                "expected `CPU-NNN` columns in an osnoise histogram"
            } else {
                "expected `Thr-NNN` columns: rtlab imports the thread latency (was rtla run with \
                 --no-thread?)"
            },
        ));
    }
    let cpus: Vec<u32> = threads.iter().map(|&c| columns[c].1).collect();
    if !build::distinct(&cpus) {
        return Err(ImportError::at(
            file,
            index_line,
            format!("expected one `{wanted_name}-NNN` column per CPU, found a CPU twice"),
        ));
    }
    let figures: Vec<ThreadFigures> = threads
        .iter()
        .map(|&c| {
            let (_, cpu, total, o, lo, mean, hi) = stats[c];
            ThreadFigures {
                cpu,
                tid: None,
                count: total,
                buckets: rows.iter().map(|(k, v)| (*k, v[c])).collect(),
                unknown: o,
                min: lo,
                max: hi,
                avg: mean.map(|a| a as f64),
                last: None,
            }
        })
        .collect();

    let cpu_set: CpuSet = cpus.iter().copied().collect();
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let mut params = build::neutral_params(&cpu_set);
    params.periods = max_count;
    let unknown = build::checked_total(figures.iter().map(|f| f.unknown)).ok_or_else(|| {
        ImportError::at(
            file,
            over_line,
            "the `over:` counts add up to more than 2^64 samples",
        )
    })?;
    // rtla prints only non-empty rows and not its bucket size (-b): the smallest step
    // between row indices is the width when two adjacent buckets hold samples.
    let step = rows.windows(2).map(|w| w[1].0 - w[0].0).min().unwrap_or(1);
    let mut notes = build::histogram_notes(unit_name, step, unknown, None);
    notes.push(format!(
        "the file does not record rtla's bucket size (-b, default 1 {unit_name}): it is taken \
         as the smallest step between row indices ({step} {unit_name}); a row's index is its \
         bucket's lower bound either way"
    ));
    notes.push(format!(
        "the footer's average is rtla's integer average, truncated to whole {unit_name}"
    ));
    notes.push(if osnoise {
        "rtla osnoise measures OS noise, not wake-up latency: each sample is one noise \
         occurrence (an osnoise:sample_threshold event, time taken from the tracer's \
         busy-looping thread by an interrupt, softirq, thread, NMI or the hardware), so counts \
         are events, not loop iterations or periods; compare it with other noise runs, not with \
         wake-up latency. CPU numbers are rtla's; the host is unknown"
            .to_string()
    } else {
        "the per-CPU latency is rtla's thread latency (Thr-: timer expiry to the timerlat \
         thread running, as cyclictest measures); CPU numbers are rtla's; the host is unknown"
            .to_string()
    });
    for &(kind, cpu, total, o, lo, mean, hi) in &stats {
        if kind == wanted {
            continue;
        }
        let what = match kind {
            Kind::Irq => "IRQ latency (timer expiry to the timer IRQ handler)",
            Kind::Cpu => "noise",
            _ => "user-space thread latency (-u: timer expiry to the user thread running)",
        };
        let show = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{v} {unit_name}"));
        notes.push(format!(
            "CPU {cpu} {what}: count {total}, over {o}, min {}, avg {}, max {}",
            show(lo),
            show(mean),
            show(hi)
        ));
    }
    let elapsed = match duration {
        Some(d) => {
            params.duration_ns = Some(Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)));
            if max_count > 0 && !osnoise {
                let us = (d.as_micros() / u128::from(max_count)).max(1);
                params.interval_ns = Nanos::from_us(u64::try_from(us).unwrap_or(u64::MAX));
            }
            notes.push(if osnoise {
                "the file records its duration but no time: the run is dated by the file's \
                 modification time; osnoise's period and runtime (-p, -r), policy and priority \
                 are not recorded and shown as neutral values"
                    .to_string()
            } else {
                "the file records its duration but no time: the run is dated by the file's \
                 modification time; the period (-p) is estimated as duration / samples; policy \
                 and priority are unknown and shown as neutral values"
                    .to_string()
            });
            d
        }
        None => {
            notes.push(
                "the file records no time or duration: the run is dated by the file's \
                 modification time and its length estimated as samples x 1 ms (rtla's default \
                 period); policy and priority are unknown and shown as neutral values"
                    .to_string(),
            );
            Duration::from_millis(max_count)
        }
    };
    let results = figures
        .iter()
        .map(|f| build::cpu_result(f, unit_ns))
        .collect();
    let facts = RunFacts {
        host: build::unknown_host(&cpu_set),
        params,
        started: modified.checked_sub(elapsed).unwrap_or(modified),
        elapsed,
        import: ImportInfo {
            tool: if osnoise {
                "rtla osnoise hist"
            } else {
                "rtla timerlat hist"
            }
            .to_string(),
            format: if osnoise {
                crate::Format::RtlaOsnoiseHist
            } else {
                crate::Format::RtlaTimerlatHist
            }
            .name()
            .to_string(),
            file: file.to_string(),
            resolution_ns: unit_ns.saturating_mul(step),
            command: None,
            quantity: if osnoise {
                Quantity::OsNoise
            } else {
                Quantity::WakeupLatency
            },
            notes,
            not_given: Vec::new(),
        },
    };
    build::run(file, facts, results)
}

/// `IRQ-003` → (Irq, 3).
fn column(word: &str) -> Option<(Kind, u32)> {
    let (kind, cpu) = word.split_once('-')?;
    let kind = match kind {
        "IRQ" => Kind::Irq,
        "Thr" => Kind::Thread,
        "Usr" => Kind::User,
        "CPU" => Kind::Cpu,
        _ => return None,
    };
    let cpu: u32 = cpu.parse().ok()?;
    (cpu <= model::cpuset::MAX_CPU).then_some((kind, cpu))
}

/// The column's name as rtla prints it.
fn column_name(kind: Kind, cpu: u32) -> String {
    let prefix = match kind {
        Kind::Irq => "IRQ",
        Kind::Thread => "Thr",
        Kind::User => "Usr",
        Kind::Cpu => "CPU",
    };
    format!("{prefix}-{cpu:03}")
}

/// `0 00:10:00` (days, then hours:minutes:seconds).
fn parse_duration(text: &str) -> Option<Duration> {
    let mut words = text.split_whitespace();
    let days: u64 = words.next()?.parse().ok()?;
    let hms: Vec<u64> = words
        .next()?
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if words.next().is_some() || hms.len() != 3 || hms[1] > 59 || hms[2] > 59 {
        return None;
    }
    let secs = days
        .checked_mul(24)?
        .checked_add(hms[0])?
        .checked_mul(3600)?
        .checked_add(hms[1] * 60 + hms[2])?;
    Some(Duration::from_secs(secs))
}
