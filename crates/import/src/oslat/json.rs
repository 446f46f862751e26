//! oslat's `--json` document: cyclictest's envelope (`cmdline:`, `rt_test_version:`, times,
//! `sysinfo`) and per thread `cpu`, `freq`, `min`, `avg`, `max`, `duration` and a `histogram`
//! of non-empty rows keyed by label; plus the command-line options that shape it.

use std::time::{Duration, SystemTime};

use model::CpuSet;
use model::measure::MeasureRun;
use serde_json::Value;

use super::{Report, Thread, finish, us_to_ns};
use crate::cyclictest_json;
use crate::{Format, ImportError};

/// Reads oslat's `--json` document.
pub(crate) fn parse_json(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| cyclictest_json::syntax_error(file, &e))?;
    let top = doc
        .as_object()
        .ok_or_else(|| ImportError::at(file, 1, "expected a JSON object"))?;
    let threads = top
        .get("thread")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ImportError::whole(file, "expected a `thread` object (oslat --json output)")
        })?;
    let command = cyclictest_json::text_field(top, &["cmdline:", "cmdline"]);
    let opts = command.as_deref().map(options).unwrap_or_default();
    let mut r = Report {
        format: Some(Format::OslatJson),
        version: cyclictest_json::text_field(top, &["rt_test_version:", "rt_test_version"]),
        command,
        rtprio: opts.rtprio,
        width: opts.width,
        bias: opts.bias,
        started: cyclictest_json::times(top),
        threads: Vec::with_capacity(threads.len()),
    };
    // Minimum and maximum are in oslat's internal unit: ns when -W is not whole microseconds.
    let ns_unit = opts.width.is_some_and(|w| !w.is_multiple_of(1000))
        || threads.values().any(|t| {
            t.get("histogram")
                .and_then(Value::as_object)
                .is_some_and(|h| h.keys().any(|k| k.contains('.')))
        });
    let unit = if ns_unit { 1 } else { 1000 };
    for (key, t) in threads {
        r.threads.push(read_thread(file, text, key, t, unit)?);
    }
    if r.threads.is_empty() {
        return Err(ImportError::whole(file, "the `thread` object is empty"));
    }
    let mut notes = Vec::new();
    let cpus: CpuSet = r.threads.iter().map(|t| t.cpu).collect();
    let host = cyclictest_json::host(top, &cpus, "oslat sysinfo", &mut notes);
    let mut run = finish(file, r, modified)?;
    run.host = host;
    if let Some(info) = run.import.as_mut() {
        info.notes.extend(notes);
    }
    Ok(run)
}

/// One thread of the `thread` object (`key` its name): CPU, counter frequency, histogram
/// rows in ns, minimum and maximum times `unit` (oslat's internal unit to ns), duration.
fn read_thread(
    file: &str,
    text: &str,
    key: &str,
    t: &Value,
    unit: u64,
) -> Result<Thread, ImportError> {
    let line = text
        .lines()
        .position(|l| l.contains(&format!("\"{key}\"")))
        .map_or(1, |i| i + 1);
    let at = |what: &str| ImportError::at(file, line, format!("thread \"{key}\": {what}"));
    let t = t.as_object().ok_or_else(|| at("expected an object"))?;
    let cpu = t
        .get("cpu")
        .and_then(Value::as_u64)
        .and_then(|c| u32::try_from(c).ok())
        .filter(|&c| c <= model::cpuset::MAX_CPU)
        .ok_or_else(|| at("expected a CPU number `cpu` (0 to 8191)"))?;
    let hist = t
        .get("histogram")
        .and_then(Value::as_object)
        .ok_or_else(|| at("expected a `histogram` object"))?;
    let mut rows = Vec::with_capacity(hist.len());
    for (label, n) in hist {
        let (Some(edge), Some(n)) = (us_to_ns(label), n.as_u64()) else {
            return Err(at(&format!(
                "histogram entry \"{label}\": expected a bucket label in microseconds and a count"
            )));
        };
        rows.push((edge, n));
    }
    rows.sort_unstable();
    let max = t
        .get("max")
        .and_then(Value::as_u64)
        .ok_or_else(|| at("expected a number `max`"))?;
    Ok(Thread {
        cpu,
        counter_mhz: t.get("freq").and_then(Value::as_u64),
        rows,
        min: t
            .get("min")
            .and_then(Value::as_u64)
            .map(|m| m.saturating_mul(unit)),
        max: Some(max.saturating_mul(unit)),
        duration: t
            .get("duration")
            .and_then(Value::as_f64)
            .and_then(|s| Duration::try_from_secs_f64(s).ok()),
    })
}

/// What an oslat command line says about the report.
#[derive(Debug, Default)]
struct Options {
    rtprio: Option<u8>,
    width: Option<u64>,
    bias: bool,
}

/// Parses oslat's options that shape its report; others are ignored.
fn options(cmdline: &str) -> Options {
    let mut o = Options::default();
    let mut words = cmdline.split_whitespace().skip(1);
    while let Some(word) = words.next() {
        let (name, inline) = match word.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            },
            None => match word.strip_prefix('-').filter(|w| !w.is_empty()) {
                Some(short) => {
                    let (n, v) = short.split_at(1);
                    (n.to_string(), (!v.is_empty()).then(|| v.to_string()))
                }
                None => continue,
            },
        };
        let takes = matches!(
            name.as_str(),
            "b" | "bucket-size"
                | "c"
                | "cpu-list"
                | "C"
                | "cpu-main-thread"
                | "g"
                | "resctrl-group"
                | "D"
                | "duration"
                | "json"
                | "f"
                | "rtprio"
                | "m"
                | "workload-mem"
                | "T"
                | "trace-threshold"
                | "w"
                | "workload"
                | "W"
                | "bucket-width"
        );
        let value = if takes {
            inline.or_else(|| words.next().map(str::to_string))
        } else {
            None
        };
        match name.as_str() {
            "f" | "rtprio" => o.rtprio = value.and_then(|v| v.parse().ok()),
            "W" | "bucket-width" => o.width = value.and_then(|v| v.parse().ok()).filter(|&w| w > 0),
            "B" | "bias" => o.bias = true,
            _ => {}
        }
    }
    o
}
