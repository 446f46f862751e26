//! The settings of an `rtla osnoise top` / `rtla hwnoise` run: what its command line set,
//! the runtime, period and threshold as applied (rtla's defaults where not given), and how
//! long it ran.

use std::time::Duration;

use super::{Row, Table, digits};

/// The tracer's threshold when rtla sets none (`tracing_thresh` 0), ns.
const DEFAULT_THRESHOLD_NS: u64 = 5_000;
/// rtla osnoise's runtime and period when not given, us.
const OSNOISE_DEFAULTS_US: (u64, u64) = (1_000_000, 1_000_000);
/// rtla hwnoise's (75 % of the CPU), us.
const HWNOISE_DEFAULTS_US: (u64, u64) = (750_000, 1_000_000);

/// What the command line set, in us.
#[derive(Default)]
pub(super) struct Options {
    runtime: Option<u64>,
    period: Option<u64>,
    threshold: Option<u64>,
}

impl Options {
    pub(super) fn from_command(command: Option<&str>, notes: &mut Vec<String>) -> Options {
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
pub(super) struct Settings {
    pub(super) runtime_us: u64,
    pub(super) period_us: u64,
    pub(super) threshold_ns: u64,
}

pub(super) fn settings(
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
pub(super) fn elapsed(
    table: &Table,
    rows: &[Row],
    period_us: u64,
    notes: &mut Vec<String>,
) -> Duration {
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
