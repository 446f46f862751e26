//! `rtla osnoise top` and `rtla hwnoise` text output, read into a noise run.
//!
//! The layout (rtla 5.17 to today): a title line (`Operating System Noise`, or
//! `Hardware-related Noise` for hwnoise), `duration: D HH:MM:SS | time is in us`, the column
//! line `CPU Period Runtime Noise % CPU Aval Max Noise Max Single HW NMI [IRQ Softirq
//! Thread]` (hwnoise stops after NMI), then one row per CPU that ran: `CPU #PERIODS RUNTIME
//! NOISE PCT MAX_NOISE MAX_SINGLE HW NMI [IRQ SOFTIRQ THREAD]`, times in microseconds, totals
//! since the start. Without `-q` the table is printed again every second after a screen-clear
//! code (`ESC c`), with colour escapes on a terminal; the last complete table is read. After
//! it rtla may say how many trace events it missed. The command line is read when the file
//! holds it (a shell prompt line with `rtla osnoise top ...` or `rtla hwnoise ...`).

mod settings;

use std::time::SystemTime;

use model::Nanos;
use model::measure::MeasureRun;
use model::noise::{Engine, NoiseCpu, NoiseInfo, PerSource};

use crate::build::Skipped;
use crate::cyclictest_summary::plain;
use crate::noise_run::{NoiseImport, noise_run, us_to_ns};
use crate::{Format, ImportError};
use settings::{Options, Settings, elapsed, settings};

const OSNOISE_TITLE: &str = "Operating System Noise";
const HWNOISE_TITLE: &str = "Hardware-related Noise";

/// Which top it is, when `text` is one: a title line followed within three lines by the
/// `CPU Period` column line.
pub(crate) fn detect(text: &str) -> Option<Format> {
    let lines: Vec<String> = text.lines().take(4000).map(plain).collect();
    lines.iter().enumerate().find_map(|(i, l)| {
        let format = title(l)?;
        let header = lines.iter().skip(i + 1).take(3).any(|h| is_header(h));
        header.then_some(format)
    })
}

fn title(line: &str) -> Option<Format> {
    match line.trim() {
        OSNOISE_TITLE => Some(Format::RtlaOsnoiseTop),
        HWNOISE_TITLE => Some(Format::RtlaHwnoiseTop),
        _ => None,
    }
}

fn is_header(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.starts_with(&["CPU", "Period", "Runtime", "Noise"])
}

/// One refresh of the screen.
#[derive(Default)]
struct Table {
    format: Option<Format>,
    /// (line, days, hours, minutes, seconds, unit) of the `duration:` line.
    duration: Option<(usize, String)>,
    /// (line, columns per row: 12, or 9 for hwnoise).
    header: Option<(usize, usize)>,
    rows: Vec<(usize, String)>,
}

impl Table {
    /// Files one line of this refresh: the `duration:` line, the column line, a CPU row,
    /// or (none of these) a skipped line.
    fn take(&mut self, n: usize, t: &str, skipped: &mut Skipped) {
        if t.starts_with("duration:") && self.header.is_none() {
            self.duration = Some((n, t.to_string()));
        } else if is_header(t) && self.header.is_none() {
            let columns = if t.split_whitespace().any(|w| w == "IRQ") {
                12
            } else {
                9
            };
            self.header = Some((n, columns));
        } else if self.header.is_some() && t.starts_with(|c: char| c.is_ascii_digit()) {
            self.rows.push((n, t.to_string()));
        } else {
            skipped.line(n, t);
        }
    }
}

/// What the lines of the output hold.
#[derive(Default)]
struct Screens {
    /// Every refresh of the table, in order.
    tables: Vec<Table>,
    /// Lines that are none of the below.
    skipped: Skipped,
    /// The `rtla ...` command line before the first table.
    command: Option<String>,
    /// What rtla said (missed events, a stop).
    said: Vec<String>,
}

/// Sorts the lines of the output into tables, the command line and what rtla said.
fn scan(text: &str) -> Screens {
    let mut s = Screens::default();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = plain(raw);
        let t = l.trim();
        if let Some(format) = title(t) {
            s.tables.push(Table {
                format: Some(format),
                ..Table::default()
            });
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if t.contains("events missed") || t.contains("hit stop tracing") {
            s.said.push(t.chars().take(120).collect());
            continue;
        }
        let Some(table) = s.tables.last_mut() else {
            if s.command.is_none()
                && let Some(at) = t.find("rtla ")
            {
                s.command = Some(t[at..].chars().take(400).collect());
            } else {
                s.skipped.line(n, t);
            }
            continue;
        };
        table.take(n, t, &mut s.skipped);
    }
    s
}

/// Reads the output.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let Screens {
        tables,
        skipped,
        command,
        said,
    } = scan(text);
    let cut_at_end = !text.ends_with('\n');
    let last_line = text.lines().count();
    let (table, mut notes) = choose(file, &tables, cut_at_end, last_line)?;
    let rows = read_rows(file, table)?;
    let format = table.format.unwrap_or(Format::RtlaOsnoiseTop);
    let hwnoise = format == Format::RtlaHwnoiseTop || table.header.is_some_and(|h| h.1 == 9);
    let unit_ns = match &table.duration {
        Some((n, d)) if d.contains("time is in ns") => {
            notes.push(format!("line {n}: rtla says its times are in ns"));
            1
        }
        _ => 1000,
    };
    let opts = Options::from_command(command.as_deref(), &mut notes);
    let settings = settings(&rows, &opts, hwnoise, unit_ns, &mut notes);
    let elapsed = elapsed(table, &rows, settings.period_us, &mut notes);
    let cpus = rows
        .iter()
        .map(|r| noise_cpu(file, r, unit_ns))
        .collect::<Result<Vec<_>, _>>()?;
    notes.extend(column_notes(hwnoise, unit_ns));
    notes.extend(said.iter().map(|s| format!("rtla said: {s}")));
    notes.extend(skipped.notes("rtla's top output"));
    let noise = noise_info(hwnoise, &settings, &said, cpus);
    let tool = if hwnoise {
        "rtla hwnoise"
    } else {
        "rtla osnoise top"
    };
    noise_run(
        NoiseImport {
            file,
            format: if hwnoise {
                Format::RtlaHwnoiseTop
            } else {
                Format::RtlaOsnoiseTop
            },
            tool: tool.to_string(),
            command,
            modified,
            elapsed,
            resolution_ns: unit_ns,
            notes,
        },
        noise,
    )
}

/// The chosen table's rows, read and sorted by CPU; a CPU with two rows is an error.
fn read_rows(file: &str, table: &Table) -> Result<Vec<Row>, ImportError> {
    let mut rows = Vec::with_capacity(table.rows.len());
    for (n, row) in &table.rows {
        rows.push(read_row(file, *n, row, table.header.map_or(12, |h| h.1))?);
    }
    if let Some((cpu, n)) = duplicate(&rows) {
        return Err(ImportError::at(
            file,
            n,
            format!("CPU {cpu} has a second row in the table; each CPU has one"),
        ));
    }
    rows.sort_by_key(|r| r.cpu);
    Ok(rows)
}

/// The noise part of the run: the tracer, its settings, what rtla said and the CPUs.
fn noise_info(
    hwnoise: bool,
    settings: &Settings,
    said: &[String],
    cpus: Vec<NoiseCpu>,
) -> NoiseInfo {
    NoiseInfo {
        engine: Engine::Imported,
        counter: if hwnoise {
            "rtla-hwnoise"
        } else {
            "rtla-osnoise"
        }
        .to_string(),
        counter_hz: None,
        threshold_ns: Nanos(settings.threshold_ns),
        runtime_ns: Nanos(settings.runtime_us.saturating_mul(1000)),
        period_ns: Nanos(settings.period_us.saturating_mul(1000)),
        attribution: "tracer".to_string(),
        attribution_note: (!said.is_empty()).then(|| format!("rtla said: {}", said.join("; "))),
        hypervisor: None,
        cpus,
    }
}

/// The table to read: the last one, unless it was cut short (no rows, fewer CPUs than the
/// one before, or a last row cut at the end of the file), then the one before it.
fn choose<'a>(
    file: &str,
    tables: &'a [Table],
    cut_at_end: bool,
    last_line: usize,
) -> Result<(&'a Table, Vec<String>), ImportError> {
    let complete = |t: &Table| {
        let cut_row = cut_at_end
            && t.rows.last().is_some_and(|(n, row)| {
                *n == last_line && read_row(file, *n, row, t.header.map_or(12, |h| h.1)).is_err()
            });
        t.header.is_some() && !t.rows.is_empty() && !cut_row
    };
    let mut notes = Vec::new();
    let Some(last) = tables.last() else {
        return Err(ImportError::whole(
            file,
            "expected the `Operating System Noise` title line",
        ));
    };
    let chosen = match tables.len().checked_sub(2).map(|i| &tables[i]) {
        Some(before) if !complete(last) || last.rows.len() < before.rows.len() => {
            notes.push(
                "the last refresh of the table was cut short (the output ends inside it): the \
                 one before it is read"
                    .to_string(),
            );
            before
        }
        _ => last,
    };
    if tables.len() > 1 {
        notes.push(format!(
            "the output holds {} refreshes of the table (top without -q): the last complete \
             one is read; its figures are totals since the start",
            tables.len()
        ));
    }
    let Some((header_line, _)) = chosen.header else {
        return Err(ImportError::at(
            file,
            last_line + 1,
            "expected the `CPU Period Runtime Noise ...` column line (is the file truncated?)",
        ));
    };
    if chosen.rows.is_empty() {
        return Err(ImportError::at(
            file,
            header_line + 1,
            "expected a row per CPU after the column line (is the file truncated?)",
        ));
    }
    if !complete(chosen) {
        let n = chosen.rows.last().map_or(last_line, |r| r.0);
        read_row(
            file,
            n,
            &chosen.rows.last().expect("rows").1,
            chosen.header.map_or(12, |h| h.1),
        )?;
    }
    Ok((chosen, notes))
}

/// One row's figures, as printed (microseconds).
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    line: usize,
    cpu: u32,
    periods: u64,
    runtime: u64,
    noise: u64,
    max_noise: u64,
    max_single: u64,
    counts: PerSource,
}

fn read_row(file: &str, n: usize, row: &str, columns: usize) -> Result<Row, ImportError> {
    let err = |what: String| ImportError::at(file, n, what);
    let words: Vec<&str> = row.split_whitespace().collect();
    if words.len() != columns {
        return Err(err(format!(
            "expected {columns} columns in a CPU row (CPU #PERIODS RUNTIME NOISE %AVAIL MAX_NOISE \
             MAX_SINGLE HW NMI{}), found {}",
            if columns == 12 {
                " IRQ SOFTIRQ THREAD"
            } else {
                ""
            },
            words.len()
        )));
    }
    let num = |i: usize, what: &str| {
        let w = words[i]
            .strip_prefix('#')
            .filter(|_| i == 1)
            .unwrap_or(words[i]);
        digits(w).ok_or_else(|| {
            err(format!(
                "expected a whole number below 2^64 for {what}, found `{}`",
                words[i].chars().take(40).collect::<String>()
            ))
        })
    };
    let cpu = num(0, "the CPU")?;
    let cpu = u32::try_from(cpu)
        .ok()
        .filter(|c| *c <= model::limits::MAX_CPU)
        .ok_or_else(|| {
            err(format!(
                "CPU {cpu} is past the largest CPU number rtlab reads ({})",
                model::limits::MAX_CPU
            ))
        })?;
    check_marks(&words).map_err(err)?;
    let mut counts = [0u64; 5];
    for (k, slot) in counts.iter_mut().enumerate().take(columns - 7) {
        *slot = num(7 + k, ["HW", "NMI", "IRQ", "Softirq", "Thread"][k])?;
    }
    let r = Row {
        line: n,
        cpu,
        periods: num(1, "the period count")?,
        runtime: num(2, "Runtime")?,
        noise: num(3, "Noise")?,
        max_noise: num(5, "Max Noise")?,
        max_single: num(6, "Max Single")?,
        counts: PerSource {
            hw: counts[0],
            nmi: counts[1],
            irq: counts[2],
            softirq: counts[3],
            thread: counts[4],
        },
    };
    check_figures(&r).map_err(err)?;
    Ok(r)
}

/// The row's marked columns: the period count written `#N`, `% CPU Aval` as `NN.NNNNN`.
fn check_marks(words: &[&str]) -> Result<(), String> {
    if !words[1].starts_with('#') {
        return Err(format!(
            "expected the period count `#N`, found `{}`",
            words[1]
        ));
    }
    let pct_ok = words[4]
        .split_once('.')
        .is_some_and(|(a, b)| digits(a).is_some() && digits(b).is_some());
    if !pct_ok {
        return Err(format!(
            "expected `% CPU Aval` as `NN.NNNNN`, found `{}`",
            words[4]
        ));
    }
    Ok(())
}

/// The row's figures agree: Max Single <= Max Noise <= Noise <= Runtime.
fn check_figures(r: &Row) -> Result<(), String> {
    let cpu = r.cpu;
    if r.noise > r.runtime {
        return Err(format!(
            "CPU {cpu}: Noise {} is more than its Runtime {}",
            r.noise, r.runtime
        ));
    }
    if r.max_noise > r.noise || r.max_single > r.max_noise {
        return Err(format!(
            "CPU {cpu}: expected Max Single ({}) <= Max Noise ({}) <= Noise ({})",
            r.max_single, r.max_noise, r.noise
        ));
    }
    Ok(())
}

fn digits(w: &str) -> Option<u64> {
    (!w.is_empty() && w.len() <= 20 && w.bytes().all(|b| b.is_ascii_digit()))
        .then(|| w.parse().ok())
        .flatten()
}

fn duplicate(rows: &[Row]) -> Option<(u32, usize)> {
    let mut seen = std::collections::BTreeSet::new();
    rows.iter()
        .find(|r| !seen.insert(r.cpu))
        .map(|r| (r.cpu, r.line))
}

fn noise_cpu(file: &str, r: &Row, unit_ns: u64) -> Result<NoiseCpu, ImportError> {
    let ns = |what: &str, v: u64| {
        if unit_ns == 1 {
            Ok(v)
        } else {
            us_to_ns(file, r.line, &format!("CPU {}: {what}", r.cpu), v)
        }
    };
    let interruptions = crate::build::checked_total([
        r.counts.hw,
        r.counts.nmi,
        r.counts.irq,
        r.counts.softirq,
        r.counts.thread,
    ])
    .ok_or_else(|| {
        ImportError::at(
            file,
            r.line,
            format!("CPU {}: the counts add up past 2^64", r.cpu),
        )
    })?;
    Ok(NoiseCpu {
        cpu: r.cpu,
        runtime_ns: ns("Runtime", r.runtime)?,
        noise_ns: ns("Noise", r.noise)?,
        interruptions,
        max_single_ns: ns("Max Single", r.max_single)?,
        max_period_noise_ns: ns("Max Noise", r.max_noise)?,
        counts: Some(r.counts),
        ..NoiseCpu::default()
    })
}

fn column_notes(hwnoise: bool, unit_ns: u64) -> Vec<String> {
    let mut notes = vec![
        "each CPU's interruptions are the sum of its HW, NMI, IRQ, Softirq and Thread counts: \
         the tracer counts every NMI, IRQ, softirq and thread that ran during its runtime, \
         however short, and every noise above the threshold that none of them explains (HW), so \
         the sum is an upper bound on the interruptions above the threshold"
            .to_string(),
    ];
    if unit_ns == 1000 {
        notes.push(
            "rtla prints times in whole microseconds: they are stored in ns, exact to 1 us"
                .to_string(),
        );
    }
    if hwnoise {
        notes.push(
            "rtla hwnoise samples with interrupts off and prints only the HW and NMI counts: the \
             IRQ, softirq and thread counts are 0 because its output has no such columns"
                .to_string(),
        );
    }
    notes
}

#[cfg(test)]
mod tests;
