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

use std::time::{Duration, SystemTime};

use model::Nanos;
use model::measure::MeasureRun;
use model::noise::{Engine, NoiseCpu, NoiseInfo, PerSource};

use crate::build::Skipped;
use crate::cyclictest_summary::plain;
use crate::noise_run::{NoiseImport, noise_run, us_to_ns};
use crate::{Format, ImportError};

const OSNOISE_TITLE: &str = "Operating System Noise";
const HWNOISE_TITLE: &str = "Hardware-related Noise";

/// The tracer's threshold when rtla sets none (`tracing_thresh` 0), ns.
const DEFAULT_THRESHOLD_NS: u64 = 5_000;
/// rtla osnoise's runtime and period when not given, us.
const OSNOISE_DEFAULTS_US: (u64, u64) = (1_000_000, 1_000_000);
/// rtla hwnoise's (75 % of the CPU), us.
const HWNOISE_DEFAULTS_US: (u64, u64) = (750_000, 1_000_000);

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

/// Reads the output.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let mut tables: Vec<Table> = Vec::new();
    let mut skipped = Skipped::default();
    let mut command: Option<String> = None;
    let mut said: Vec<String> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = plain(raw);
        let t = l.trim();
        if let Some(format) = title(t) {
            tables.push(Table {
                format: Some(format),
                ..Table::default()
            });
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if t.contains("events missed") || t.contains("hit stop tracing") {
            said.push(t.chars().take(120).collect());
            continue;
        }
        let Some(table) = tables.last_mut() else {
            if command.is_none()
                && let Some(at) = t.find("rtla ")
            {
                command = Some(t[at..].chars().take(400).collect());
            } else {
                skipped.line(n, t);
            }
            continue;
        };
        if t.starts_with("duration:") && table.header.is_none() {
            table.duration = Some((n, t.to_string()));
        } else if is_header(t) && table.header.is_none() {
            let columns = if t.split_whitespace().any(|w| w == "IRQ") {
                12
            } else {
                9
            };
            table.header = Some((n, columns));
        } else if table.header.is_some() && t.starts_with(|c: char| c.is_ascii_digit()) {
            table.rows.push((n, t.to_string()));
        } else {
            skipped.line(n, t);
        }
    }
    let cut_at_end = !text.ends_with('\n');
    let last_line = text.lines().count();
    let (table, mut notes) = choose(file, &tables, cut_at_end, last_line)?;
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
    let noise = NoiseInfo {
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
    };
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
    if !words[1].starts_with('#') {
        return Err(err(format!(
            "expected the period count `#N`, found `{}`",
            words[1]
        )));
    }
    let pct_ok = words[4]
        .split_once('.')
        .is_some_and(|(a, b)| digits(a).is_some() && digits(b).is_some());
    if !pct_ok {
        return Err(err(format!(
            "expected `% CPU Aval` as `NN.NNNNN`, found `{}`",
            words[4]
        )));
    }
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
    if r.noise > r.runtime {
        return Err(err(format!(
            "CPU {cpu}: Noise {} is more than its Runtime {}",
            r.noise, r.runtime
        )));
    }
    if r.max_noise > r.noise || r.max_single > r.max_noise {
        return Err(err(format!(
            "CPU {cpu}: expected Max Single ({}) <= Max Noise ({}) <= Noise ({})",
            r.max_single, r.max_noise, r.noise
        )));
    }
    Ok(r)
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

/// What the command line set, in us.
#[derive(Default)]
struct Options {
    runtime: Option<u64>,
    period: Option<u64>,
    threshold: Option<u64>,
}

impl Options {
    fn from_command(command: Option<&str>, notes: &mut Vec<String>) -> Options {
        let mut o = Options::default();
        let Some(command) = command else { return o };
        let words: Vec<&str> = command.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let (flag, inline) = match w.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v)),
                _ => (*w, None),
            };
            let slot = match flag {
                "-r" | "--runtime" => &mut o.runtime,
                "-p" | "--period" => &mut o.period,
                "-T" | "--threshold" => &mut o.threshold,
                "-a" | "--auto" => {
                    o.threshold = Some(1);
                    continue;
                }
                _ => continue,
            };
            let value = inline.or_else(|| words.get(i + 1).copied()).unwrap_or("");
            match digits(value) {
                Some(v) => *slot = Some(v),
                None => notes.push(format!(
                    "the command line's `{flag} {value}` is not a number of us: not read"
                )),
            }
        }
        o
    }
}

/// Runtime, period (us) and threshold (ns) as applied.
struct Settings {
    runtime_us: u64,
    period_us: u64,
    threshold_ns: u64,
}

fn settings(
    rows: &[Row],
    o: &Options,
    hwnoise: bool,
    unit_ns: u64,
    notes: &mut Vec<String>,
) -> Settings {
    let (default_runtime, default_period) = if hwnoise {
        HWNOISE_DEFAULTS_US
    } else {
        OSNOISE_DEFAULTS_US
    };
    // Every period's runtime is the same: the table's runtime over its periods.
    let per: Vec<Option<u64>> = rows
        .iter()
        .map(|r| {
            let per = (r.periods > 0 && r.runtime % r.periods == 0).then(|| r.runtime / r.periods);
            // In us, whatever the table's unit.
            per.map(|p| p.saturating_mul(unit_ns) / 1000)
        })
        .collect();
    let derived = per
        .first()
        .copied()
        .flatten()
        .filter(|d| per.iter().all(|p| *p == Some(*d)));
    let runtime = match (o.runtime, derived) {
        (Some(r), _) => r,
        (None, Some(d)) => {
            notes.push(format!(
                "the runtime per period ({d} us) is the table's Runtime over its periods"
            ));
            d
        }
        (None, None) => {
            notes.push(format!("the runtime per period is not given: rtla's default {default_runtime} us is assumed"));
            default_runtime
        }
    };
    let mut period = o.period.unwrap_or_else(|| {
        notes.push(format!(
            "the period is not given: rtla's default {default_period} us is assumed"
        ));
        default_period
    });
    if runtime > period {
        notes.push(format!("the runtime {runtime} us is longer than the period {period} us: the period is taken as the runtime"));
        period = runtime;
    }
    let threshold_ns = match o.threshold {
        Some(t) => t.saturating_mul(1000),
        None => {
            notes.push(
                "the threshold is not given: the tracer's default 5 us (tracing_thresh 0) is \
                 assumed"
                    .to_string(),
            );
            DEFAULT_THRESHOLD_NS
        }
    };
    Settings {
        runtime_us: runtime,
        period_us: period,
        threshold_ns,
    }
}

/// The `duration:` line's time, or the periods counted times the period.
fn elapsed(table: &Table, rows: &[Row], period_us: u64, notes: &mut Vec<String>) -> Duration {
    if let Some((n, line)) = &table.duration {
        match read_duration(line) {
            Some(d) => return d,
            None => notes.push(format!(
                "line {n}: the duration `{}` does not read (early rtla versions printed the local \
                 time zone's hours there): the length is the periods counted times the period",
                line.chars().take(60).collect::<String>()
            )),
        }
    } else {
        notes.push(
            "there is no `duration:` line: the length is the periods counted times the period"
                .to_string(),
        );
    }
    let periods = rows.iter().map(|r| r.periods).max().unwrap_or(0);
    Duration::from_micros(periods.saturating_mul(period_us))
}

/// `duration:   0 00:01:00 | time is in us` → 60 s.
fn read_duration(line: &str) -> Option<Duration> {
    let body = line.strip_prefix("duration:")?.split('|').next()?;
    let mut words = body.split_whitespace();
    let days = digits(words.next()?)?;
    let hms: Vec<u64> = words
        .next()?
        .split(':')
        .map(digits)
        .collect::<Option<_>>()?;
    let [h, m, s] = hms[..] else { return None };
    if words.next().is_some() || h > 23 || m > 59 || s > 59 || days > 366 {
        return None;
    }
    Some(Duration::from_secs(((days * 24 + h) * 60 + m) * 60 + s))
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
