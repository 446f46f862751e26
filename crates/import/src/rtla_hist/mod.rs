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

use model::imported::{ImportInfo, Quantity, Setting};
use model::measure::MeasureRun;
use model::{CpuSet, Nanos};

use crate::ImportError;
use crate::build::{self, RunFacts, ThreadFigures};
use crate::cyclictest_summary::plain;

mod table;

use table::{Table, read_table};

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
    let mut table = read_table(file, text)?;
    let footer = complete_footer(file, &table)?;
    let stats = column_stats(file, &table, &footer)?;
    let imported = imported_columns(file, &table, osnoise)?;
    // rtla prints only non-empty rows and not its bucket size (-b): the smallest step
    // between row indices is the width when two adjacent buckets hold samples.
    let step = table
        .rows
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .min()
        .unwrap_or(1);
    // rtla counts whole units: with one unit per bucket, each sample is its bucket's value.
    let exact = step == 1;
    let figures: Vec<ThreadFigures> = imported
        .iter()
        .map(|&c| column_figures(&table, &stats, c, exact))
        .collect();
    // timerlat's IRQ (and -u's user) columns: the run's timerlat section, as the engine
    // writes it.
    let beside = |kind: Kind| -> Vec<ThreadFigures> {
        (0..stats.len())
            .filter(|&c| stats[c].kind == kind)
            .map(|c| column_figures(&table, &stats, c, exact))
            .collect()
    };
    let (irq, user) = if osnoise {
        (Vec::new(), Vec::new())
    } else {
        (beside(Kind::Irq), beside(Kind::User))
    };
    let unknown = build::checked_total(figures.iter().map(|f| f.unknown)).ok_or_else(|| {
        ImportError::at(
            file,
            footer.over_line,
            "the `over:` counts add up to more than 2^64 samples",
        )
    })?;
    let (unit_ns, unit_name) = table.unit.unwrap_or((1000, "us"));
    let mut notes = build::histogram_notes(unit_name, step, unknown, None, exact);
    notes.extend(source_notes(unit_name, step, osnoise));
    notes.extend(std::mem::take(&mut table.skipped).notes("rtla's histogram output"));
    let mut run = assemble(
        file,
        Assembly {
            figures,
            notes,
            duration: table.duration,
            unit_ns,
            step,
            osnoise,
        },
        modified,
    )?;
    if !osnoise {
        run.params.engine = model::measure::Engine::Timerlat;
        let results = |list: Vec<ThreadFigures>| {
            list.iter()
                .map(|f| build::cpu_result(f, unit_ns))
                .collect::<Vec<_>>()
        };
        run.timerlat = Some(model::timerlat::TimerlatInfo {
            period_ns: run.params.interval_ns,
            in_instance: false,
            user_threads: !user.is_empty(),
            stop_ns: None,
            stack_ns: None,
            trace_clock: "unknown".to_string(),
            irq: results(irq),
            user: results(user),
            lost_events: 0,
            stop: None,
            analyses: Vec::new(),
        });
        run.check_bounds()
            .map_err(|e| ImportError::at(file, table.index_line, e))?;
    }
    Ok(run)
}

/// One column's figures: its rows, `over:` and footer.
fn column_figures(table: &Table, stats: &[ColumnStats], c: usize, exact: bool) -> ThreadFigures {
    let s = &stats[c];
    ThreadFigures {
        cpu: s.cpu,
        tid: None,
        count: s.total,
        buckets: table.rows.iter().map(|(k, v)| (*k, v[c])).collect(),
        unknown: s.over,
        min: s.min,
        max: s.max,
        avg: s.avg.map(|a| a as f64),
        last: None,
        exact,
        series: Default::default(),
    }
}

/// The footer rows, all present.
struct FooterRows {
    over_line: usize,
    count_line: usize,
    over: Vec<Option<u64>>,
    count: Vec<Option<u64>>,
    min: Vec<Option<u64>>,
    avg: Vec<Option<u64>>,
    max: Vec<Option<u64>>,
}

/// Step 2: the `Index` line and every footer row are there.
fn complete_footer(file: &str, table: &Table) -> Result<FooterRows, ImportError> {
    let end = table.last_line + 1;
    if table.index_line == 0 {
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
    let (over_line, over) = table.over.clone().ok_or_else(|| missing("over:"))?;
    let (count_line, count) = table.count.clone().ok_or_else(|| missing("count:"))?;
    let (_, min) = table.min.clone().ok_or_else(|| missing("min:"))?;
    let (_, avg) = table.avg.clone().ok_or_else(|| missing("avg:"))?;
    let (_, max) = table.max.clone().ok_or_else(|| missing("max:"))?;
    Ok(FooterRows {
        over_line,
        count_line,
        over,
        count,
        min,
        avg,
        max,
    })
}

/// One column's footer figures, checked.
#[derive(Clone, Copy)]
struct ColumnStats {
    kind: Kind,
    cpu: u32,
    total: u64,
    over: u64,
    min: Option<u64>,
    avg: Option<u64>,
    max: Option<u64>,
}

/// Step 3: every column adds up (rows + over = count) and has its figures.
fn column_stats(
    file: &str,
    table: &Table,
    f: &FooterRows,
) -> Result<Vec<ColumnStats>, ImportError> {
    let mut stats = Vec::with_capacity(table.columns.len());
    for (c, &(kind, cpu)) in table.columns.iter().enumerate() {
        let name = column_name(kind, cpu);
        let (Some(o), Some(total)) = (f.over[c], f.count[c]) else {
            return Err(ImportError::at(
                file,
                f.over_line,
                format!("{name}: expected numbers in `over:` and `count:`, found `-`"),
            ));
        };
        let at = |what: String| ImportError::at(file, f.count_line, format!("{name}: {what}"));
        let overflow = || at("the rows and `over:` add up to more than 2^64 samples".into());
        let in_rows = build::checked_total(table.rows.iter().map(|(_, v)| v[c]));
        let in_rows = in_rows.ok_or_else(overflow)?;
        if in_rows.checked_add(o).ok_or_else(overflow)? != total {
            return Err(at(format!(
                "the rows hold {in_rows} samples and `over:` {o}, but `count:` says {total}"
            )));
        }
        let (min, avg, max) = (f.min[c], f.avg[c], f.max[c]);
        if let (Some(lo), Some(hi)) = (min, max)
            && lo > hi
        {
            return Err(at(format!("minimum {lo} is above maximum {hi}")));
        }
        if total > 0 && (min.is_none() || avg.is_none() || max.is_none()) {
            return Err(at(format!(
                "{total} samples but `-` in `min:`, `avg:` or `max:`"
            )));
        }
        stats.push(ColumnStats {
            kind,
            cpu,
            total,
            over: o,
            min,
            avg,
            max,
        });
    }
    Ok(stats)
}

/// Step 4: the columns imported (`Thr-`, or `CPU-` for osnoise), one per CPU.
fn imported_columns(file: &str, table: &Table, osnoise: bool) -> Result<Vec<usize>, ImportError> {
    let (wanted, wanted_name) = if osnoise {
        (Kind::Cpu, "CPU")
    } else {
        (Kind::Thread, "Thr")
    };
    let threads: Vec<usize> = (0..table.columns.len())
        .filter(|&c| table.columns[c].0 == wanted)
        .collect();
    if threads.is_empty() {
        return Err(ImportError::at(
            file,
            table.index_line,
            if osnoise {
                "expected `CPU-NNN` columns in an osnoise histogram"
            } else {
                "expected `Thr-NNN` columns: rtlab imports the thread latency (was rtla run with \
                 --no-thread?)"
            },
        ));
    }
    let cpus: Vec<u32> = threads.iter().map(|&c| table.columns[c].1).collect();
    if !build::distinct(&cpus) {
        return Err(ImportError::at(
            file,
            table.index_line,
            format!("expected one `{wanted_name}-NNN` column per CPU, found a CPU twice"),
        ));
    }
    Ok(threads)
}

/// What rtla's files leave out, and what the samples are.
fn source_notes(unit_name: &str, step: u64, osnoise: bool) -> Vec<String> {
    vec![
        format!(
            "the file does not record rtla's bucket size (-b, default 1 {unit_name}): it is \
             taken as the smallest step between row indices ({step} {unit_name}); a row's index \
             is its bucket's lower bound either way"
        ),
        format!("the footer's average is rtla's integer average, truncated to whole {unit_name}"),
        if osnoise {
            "rtla osnoise measures OS noise, not wake-up latency: each sample is one noise \
             occurrence (an osnoise:sample_threshold event, time taken from the tracer's \
             busy-looping thread by an interrupt, softirq, thread, NMI or the hardware), so \
             counts are events, not loop iterations or periods; compare it with other noise \
             runs, not with wake-up latency. CPU numbers are rtla's; the host is unknown"
                .to_string()
        } else {
            "the per-CPU latency is rtla's thread latency (Thr-: timer expiry to the timerlat \
             thread running, as cyclictest measures); CPU numbers are rtla's; the host is \
             unknown"
                .to_string()
        },
    ]
}

/// What [`assemble`] builds the run from.
struct Assembly {
    figures: Vec<ThreadFigures>,
    notes: Vec<String>,
    duration: Option<Duration>,
    unit_ns: u64,
    step: u64,
    osnoise: bool,
}

/// Step 5: parameters and dates from the duration, and the run.
fn assemble(file: &str, a: Assembly, modified: SystemTime) -> Result<MeasureRun, ImportError> {
    let Assembly {
        figures,
        mut notes,
        duration,
        unit_ns,
        step,
        osnoise,
    } = a;
    let cpu_set: CpuSet = figures.iter().map(|f| f.cpu).collect();
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let mut params = build::neutral_params(&cpu_set);
    params.periods = max_count;
    let interval_stated = duration.is_some() && max_count > 0 && !osnoise;
    let elapsed = length(duration, max_count, osnoise, &mut params, &mut notes);
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
            // The histogram states no policy, mlock or dma latency request; the interval only
            // as a timerlat run's duration over its samples.
            not_stated: Setting::ALL
                .into_iter()
                .filter(|s| !(interval_stated && *s == Setting::Interval))
                .collect(),
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

/// The run's length: the file's duration (with a timerlat run's period estimated from it), or
/// its samples at rtla's default 1 ms period; the notes say which.
fn length(
    duration: Option<Duration>,
    max_count: u64,
    osnoise: bool,
    params: &mut model::measure::MeasureParams,
    notes: &mut Vec<String>,
) -> Duration {
    match duration {
        Some(d) => {
            params.duration_ns = Some(Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)));
            if max_count > 0 && !osnoise {
                let us = (d.as_micros() / u128::from(max_count)).max(1);
                params.interval_ns = Nanos::from_us(u64::try_from(us).unwrap_or(u64::MAX));
            }
            notes.push(if osnoise {
                "the file records its duration but no time: the run is dated by the file's \
                 modification time; osnoise's period and runtime (-p, -r), policy and priority \
                 are not stated"
                    .to_string()
            } else {
                "the file records its duration but no time: the run is dated by the file's \
                 modification time; the period (-p) is estimated as duration / samples; policy \
                 and priority are not stated"
                    .to_string()
            });
            d
        }
        None => {
            notes.push(
                "the file records no time or duration: the run is dated by the file's \
                 modification time and its length estimated as samples x 1 ms (rtla's default \
                 period); period, policy and priority are not stated"
                    .to_string(),
            );
            Duration::from_millis(max_count)
        }
    }
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
