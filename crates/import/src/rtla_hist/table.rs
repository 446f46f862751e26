//! Reading an rtla histogram file's lines into a [`Table`]: the `#` header (time unit,
//! duration), the `Index` column line, the rows and the footer rows, each checked as read; a
//! line after `Index` that is none of these is skipped with a note.

use std::time::Duration;

use super::{Footer, Kind};
use crate::ImportError;
use crate::build::Skipped;
use crate::cyclictest_summary::plain;

/// The rows, columns and footer rows of a histogram file, as read.
#[derive(Default)]
pub(super) struct Table {
    /// The time unit from the header: ns per unit and its name.
    pub(super) unit: Option<(u64, &'static str)>,
    pub(super) duration: Option<Duration>,
    pub(super) columns: Vec<(Kind, u32)>,
    /// The `Index` line's number, 0 before it.
    pub(super) index_line: usize,
    pub(super) rows: Vec<(u64, Vec<u64>)>,
    pub(super) over: Footer,
    pub(super) count: Footer,
    pub(super) min: Footer,
    pub(super) avg: Footer,
    pub(super) max: Footer,
    pub(super) last_line: usize,
    /// Lines after `Index` that are neither rows nor footer rows.
    pub(super) skipped: Skipped,
}

/// Step 1: header comments, the `Index` line, rows and footer rows up to `max:` (or `ALL:`).
pub(super) fn read_table(file: &str, text: &str) -> Result<Table, ImportError> {
    let mut table = Table::default();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        table.last_line = n;
        let line = plain(raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            header_comment(file, &mut table, n, rest.trim())?;
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        if first == "Index" {
            table.columns = words
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
            table.index_line = n;
            continue;
        }
        if first == "ALL:" {
            break;
        }
        if table.index_line == 0 {
            return Err(ImportError::at(
                file,
                n,
                "expected the `Index IRQ-000 Thr-000 ...` (or `Index CPU-000 ...`) column line \
                 before the rows",
            ));
        }
        if !first.starts_with(|c: char| c.is_ascii_digit())
            && !matches!(first, "over:" | "count:" | "min:" | "avg:" | "max:")
        {
            table.skipped.line(n, line);
            continue;
        }
        if footer_row(file, &mut table, n, first, words)? {
            if first == "max:" {
                break;
            }
            continue;
        }
        histogram_row(file, &mut table, n, line)?;
    }
    Ok(table)
}

/// A `#` header line: the time unit and the duration are kept.
fn header_comment(file: &str, table: &mut Table, n: usize, rest: &str) -> Result<(), ImportError> {
    if let Some(u) = rest.strip_prefix("Time unit is ") {
        table.unit = Some(match u.trim() {
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
        table.duration = Some(parse_duration(d).ok_or_else(|| {
            ImportError::at(
                file,
                n,
                "expected a duration `D HH:MM:SS` after `# Duration:`",
            )
        })?);
    }
    Ok(())
}

/// A footer row (`over:`, `count:`, `min:`, `avg:`, `max:`): one number or `-` per column.
/// `false` when `first` names none.
fn footer_row<'l>(
    file: &str,
    table: &mut Table,
    n: usize,
    first: &str,
    words: impl Iterator<Item = &'l str>,
) -> Result<bool, ImportError> {
    let slot = match first {
        "over:" => &mut table.over,
        "count:" => &mut table.count,
        "min:" => &mut table.min,
        "avg:" => &mut table.avg,
        "max:" => &mut table.max,
        _ => return Ok(false),
    };
    let values: Option<Vec<Option<u64>>> = words
        .map(|w| {
            if w == "-" {
                Some(None)
            } else {
                w.parse().ok().map(Some)
            }
        })
        .collect();
    let width = table.columns.len();
    let values = values.filter(|v| v.len() == width).ok_or_else(|| {
        ImportError::at(
            file,
            n,
            format!("expected {width} numbers (or `-`) after `{first}`, one per column"),
        )
    })?;
    *slot = Some((n, values));
    Ok(true)
}

/// An `INDEX COUNT...` row: indices ascend, one count per column; none after the footer.
fn histogram_row(file: &str, table: &mut Table, n: usize, line: &str) -> Result<(), ImportError> {
    if table.count.is_some() || table.over.is_some() {
        return Err(ImportError::at(
            file,
            n,
            "expected a footer row (`count:`, `min:`, `avg:`, `max:`) after `over:`",
        ));
    }
    let values: Option<Vec<u64>> = line.split_whitespace().map(|w| w.parse().ok()).collect();
    let values = values
        .filter(|v| v.len() == table.columns.len() + 1)
        .ok_or_else(|| {
            ImportError::at(
                file,
                n,
                format!(
                    "expected a histogram row `INDEX` and {} counts, or a footer row",
                    table.columns.len()
                ),
            )
        })?;
    if let Some(&(prev, _)) = table.rows.last()
        && values[0] <= prev
    {
        return Err(ImportError::at(
            file,
            n,
            format!("expected an index above {prev}, found {}", values[0]),
        ));
    }
    table.rows.push((values[0], values[1..].to_vec()));
    Ok(())
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
