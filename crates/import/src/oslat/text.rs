//! oslat's text report: rt-tests 2.x (header lines, `Core:`, `Counter Freq:`, `NNN (us):` rows
//! or `...` where `-z` left out empty ones, `Minimum:` .. `Duration:`) and the standalone v0.1
//! layout (`core_i:`, `cpu_mhz:`, rows, `maxlat:`, `runtime:`).

use std::time::{Duration, SystemTime};

use model::measure::MeasureRun;

use super::{Report, Thread, finish, row_label, us_to_ns};
use crate::cyclictest_summary::plain;
use crate::{Format, ImportError};

/// Reads oslat's text report.
pub(crate) fn parse_text(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let mut r = Report {
        format: Some(Format::OslatText),
        ..Report::default()
    };
    let mut core_line = 0;
    let mut last_line = 0;
    let mut saw_max = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        last_line = n;
        let line = plain(raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(v) = line.strip_prefix("oslat V ") {
            r.version = Some(v.trim().to_string());
            continue;
        }
        if let Some(v) = line.strip_prefix("Version:") {
            r.version = Some(v.trim().trim_start_matches('v').to_string());
            continue;
        }
        if let Some(p) = line.strip_prefix("Thread priority:") {
            r.rtprio = p
                .trim()
                .strip_prefix("SCHED_FIFO:")
                .and_then(|p| p.parse().ok());
            continue;
        }
        if line.starts_with("Global bias set to") {
            r.bias = true;
            continue;
        }
        let Some((label, rest)) = line.split_once(':') else {
            if core_line > 0 && line != "..." {
                return Err(ImportError::at(
                    file,
                    n,
                    "expected an oslat report row `NAME: values`",
                ));
            }
            continue;
        };
        let label = label.trim();
        if matches!(label, "Core" | "core_i") {
            let cpus = numbers(rest)
                .filter(|c| c.iter().all(|&c| c <= u64::from(model::cpuset::MAX_CPU)))
                .ok_or_else(|| {
                    ImportError::at(
                        file,
                        n,
                        "expected one CPU number (0 to 8191) per thread after `Core:`",
                    )
                })?;
            r.threads = cpus
                .into_iter()
                .map(|cpu| Thread {
                    cpu: cpu as u32,
                    ..Thread::default()
                })
                .collect();
            core_line = n;
            continue;
        }
        if core_line == 0 {
            continue;
        }
        let width = r.threads.len();
        let values = |what: &str| -> Result<Vec<&str>, ImportError> {
            let words: Vec<&str> = rest
                .split_whitespace()
                .take_while(|w| !w.starts_with('('))
                .collect();
            if words.len() == width {
                Ok(words)
            } else {
                Err(ImportError::at(
                    file,
                    n,
                    format!(
                        "expected {width} {what} after `{label}:`, one per thread, found {}",
                        words.len()
                    ),
                ))
            }
        };
        let each_us = |what: &str| -> Result<Vec<u64>, ImportError> {
            values(what)?
                .iter()
                .map(|w| us_to_ns(w))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    ImportError::at(
                        file,
                        n,
                        format!("expected {what} in microseconds after `{label}:`"),
                    )
                })
        };
        match label {
            "Counter Freq" | "cpu_mhz" => {
                for (t, v) in r.threads.iter_mut().zip(values("frequencies")?) {
                    t.counter_mhz = v.parse().ok();
                }
            }
            "Minimum" => {
                for (t, v) in r.threads.iter_mut().zip(each_us("minima")?) {
                    t.min = Some(v);
                }
            }
            "Maximum" | "maxlat" => {
                for (t, v) in r.threads.iter_mut().zip(each_us("maxima")?) {
                    t.max = Some(v);
                }
                saw_max = true;
            }
            "Duration" | "runtime" => {
                for (t, v) in r.threads.iter_mut().zip(values("durations")?) {
                    t.duration = v
                        .parse::<f64>()
                        .ok()
                        .and_then(|s| Duration::try_from_secs_f64(s).ok());
                }
                break;
            }
            "Average" | "Max-Min" => {}
            _ => {
                let Some(edge) = row_label(line) else {
                    return Err(ImportError::at(
                        file,
                        n,
                        format!(
                            "unknown row `{label}:`: expected `NNN (us):` bucket rows, `Minimum:`, `Maximum:` or `Duration:`"
                        ),
                    ));
                };
                let counts = values("counts")?
                    .iter()
                    .map(|w| w.parse::<u64>().ok())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        ImportError::at(file, n, format!("expected sample counts after `{label}:`"))
                    })?;
                if let Some(&(prev, _)) = r.threads.first().and_then(|t| t.rows.last())
                    && edge <= prev
                {
                    return Err(ImportError::at(
                        file,
                        n,
                        format!("expected a row above {label}"),
                    ));
                }
                for (t, c) in r.threads.iter_mut().zip(counts) {
                    t.rows.push((edge, c));
                }
            }
        }
    }
    if core_line == 0 {
        return Err(ImportError::at(
            file,
            last_line + 1,
            "expected a `Core:` line (is the file truncated?)",
        ));
    }
    if r.threads.first().is_none_or(|t| t.rows.is_empty()) {
        return Err(ImportError::at(
            file,
            last_line + 1,
            "expected `NNN (us):` bucket rows (is the file truncated?)",
        ));
    }
    if !saw_max {
        return Err(ImportError::at(
            file,
            last_line + 1,
            "expected a `Maximum:` row (is the file truncated?)",
        ));
    }
    let mut run = finish(file, r, modified)?;
    if let Some(info) = run.import.as_mut() {
        info.notes
            .push("the text report names no host or kernel: the host is unknown".to_string());
    }
    Ok(run)
}
/// Whitespace-separated numbers up to an optional `(unit)`.
fn numbers(text: &str) -> Option<Vec<u64>> {
    let words: Vec<&str> = text
        .split_whitespace()
        .take_while(|w| !w.starts_with('('))
        .collect();
    if words.is_empty() {
        return None;
    }
    words.iter().map(|w| w.parse().ok()).collect()
}
