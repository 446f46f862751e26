//! oslat's text report: rt-tests 1.9-2.4 (`Version:` line, `CPU Freq:`), 2.5 and later
//! (`oslat V` line, `Counter Freq:`, `-W` bucket labels with decimals) — header lines, `Core:`,
//! `NNN (us):` rows or `...` where `-z` left out empty ones, `Minimum:` .. `Duration:` — and
//! the standalone v0.1 layout (`core_i:`, `cpu_mhz:`, rows, `maxlat:`, `runtime:`). A row
//! rtlab does not know, after `Core:`, is skipped with a note.

use std::time::{Duration, SystemTime};

use model::measure::MeasureRun;

use super::{Report, Thread, finish, row_label, us_to_ns};
use crate::build::Skipped;
use crate::cyclictest_summary::plain;
use crate::{Format, ImportError};

/// Reads oslat's text report.
pub(crate) fn parse_text(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let mut reader = Reader {
        file,
        r: Report {
            format: Some(Format::OslatText),
            ..Report::default()
        },
        core_line: 0,
        last_line: 0,
        saw_max: false,
        skipped: Skipped::default(),
    };
    for (i, raw) in text.lines().enumerate() {
        if reader.line(i + 1, &plain(raw))? == Flow::Stop {
            break;
        }
    }
    reader.check_complete()?;
    let Reader { r, skipped, .. } = reader;
    let mut run = finish(file, r, modified)?;
    if let Some(info) = run.import.as_mut() {
        info.notes
            .push("the text report names no host or kernel: the host is unknown".to_string());
        info.notes.extend(skipped.notes("oslat's report"));
    }
    Ok(run)
}

/// Whether reading goes on after a line.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Go,
    /// `Duration:` ends the report.
    Stop,
}

/// The report as read so far.
struct Reader<'f> {
    file: &'f str,
    r: Report,
    /// The `Core:` line's number, 0 before it.
    core_line: usize,
    last_line: usize,
    saw_max: bool,
    skipped: Skipped,
}

impl Reader<'_> {
    /// Step 1: one line, header lines before `Core:`, rows after it.
    fn line(&mut self, n: usize, line: &str) -> Result<Flow, ImportError> {
        self.last_line = n;
        let line = line.trim();
        if line.is_empty() || self.header_line(line) {
            return Ok(Flow::Go);
        }
        let Some((label, rest)) = line.split_once(':') else {
            if self.core_line > 0 && line != "..." {
                self.skipped.line(n, line);
            }
            return Ok(Flow::Go);
        };
        let label = label.trim();
        if matches!(label, "Core" | "core_i") {
            self.cores(n, rest)?;
            return Ok(Flow::Go);
        }
        if self.core_line == 0 {
            return Ok(Flow::Go);
        }
        self.row(n, line, label, rest)
    }

    /// The header lines that say something: version, priority, bias.
    fn header_line(&mut self, line: &str) -> bool {
        let r = &mut self.r;
        if let Some(v) = line.strip_prefix("oslat V ") {
            r.version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version:") {
            r.version = Some(v.trim().trim_start_matches('v').to_string());
        } else if let Some(p) = line.strip_prefix("Thread priority:") {
            r.rtprio = p
                .trim()
                .strip_prefix("SCHED_FIFO:")
                .and_then(|p| p.parse().ok());
        } else if line.starts_with("Global bias set to") {
            r.bias = true;
        } else {
            return false;
        }
        true
    }

    /// `Core:` (or v0.1's `core_i:`): one thread per CPU named.
    fn cores(&mut self, n: usize, rest: &str) -> Result<(), ImportError> {
        let cpus = numbers(rest)
            .filter(|c| c.iter().all(|&c| c <= u64::from(model::cpuset::MAX_CPU)))
            .ok_or_else(|| {
                ImportError::at(
                    self.file,
                    n,
                    "expected one CPU number (0 to 8191) per thread after `Core:`",
                )
            })?;
        self.r.threads = cpus
            .into_iter()
            .map(|cpu| Thread {
                cpu: cpu as u32,
                ..Thread::default()
            })
            .collect();
        self.core_line = n;
        Ok(())
    }

    /// One `NAME: values` row after `Core:`. Rows rtlab does not know are skipped.
    fn row(&mut self, n: usize, line: &str, label: &str, rest: &str) -> Result<Flow, ImportError> {
        let (file, width) = (self.file, self.r.threads.len());
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
        let threads = &mut self.r.threads;
        match label {
            // `CPU Freq` before rt-tests 2.5, `Counter Freq` since.
            "Counter Freq" | "CPU Freq" | "cpu_mhz" => {
                for (t, v) in threads.iter_mut().zip(values("frequencies")?) {
                    t.counter_mhz = v.parse().ok();
                }
            }
            "Minimum" => {
                for (t, v) in threads.iter_mut().zip(each_us("minima")?) {
                    t.min = Some(v);
                }
            }
            "Maximum" | "maxlat" => {
                for (t, v) in threads.iter_mut().zip(each_us("maxima")?) {
                    t.max = Some(v);
                }
                self.saw_max = true;
            }
            "Duration" | "runtime" => {
                for (t, v) in threads.iter_mut().zip(values("durations")?) {
                    t.duration = v
                        .parse::<f64>()
                        .ok()
                        .and_then(|s| Duration::try_from_secs_f64(s).ok());
                }
                return Ok(Flow::Stop);
            }
            "Average" | "Max-Min" => {}
            _ => match row_label(line) {
                Some(edge) => {
                    let counts = values("counts")?
                        .iter()
                        .map(|w| w.parse::<u64>().ok())
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            ImportError::at(
                                file,
                                n,
                                format!("expected sample counts after `{label}:`"),
                            )
                        })?;
                    self.bucket(n, label, edge, counts)?;
                }
                None => self.skipped.line(n, line),
            },
        }
        Ok(Flow::Go)
    }

    /// A bucket row: labels ascend.
    fn bucket(
        &mut self,
        n: usize,
        label: &str,
        edge: u64,
        counts: Vec<u64>,
    ) -> Result<(), ImportError> {
        if let Some(&(prev, _)) = self.r.threads.first().and_then(|t| t.rows.last())
            && edge <= prev
        {
            return Err(ImportError::at(
                self.file,
                n,
                format!("expected a row above {label}"),
            ));
        }
        for (t, c) in self.r.threads.iter_mut().zip(counts) {
            t.rows.push((edge, c));
        }
        Ok(())
    }

    /// Step 2: the report has cores, rows and a maximum.
    fn check_complete(&self) -> Result<(), ImportError> {
        let end = self.last_line + 1;
        let missing = |what: &str| {
            ImportError::at(
                self.file,
                end,
                format!("expected {what} (is the file truncated?)"),
            )
        };
        if self.core_line == 0 {
            return Err(missing("a `Core:` line"));
        }
        if self.r.threads.first().is_none_or(|t| t.rows.is_empty()) {
            return Err(missing("`NNN (us):` bucket rows"));
        }
        if !self.saw_max {
            return Err(missing("a `Maximum:` row"));
        }
        Ok(())
    }
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
