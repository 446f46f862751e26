//! cyclictest `--json=FILE` output (rt-tests 2.x, `file_version` 1), quirks included: the keys
//! `cmdline:` and `rt_test_version:` carry a trailing colon, and samples above the histogram
//! range (`-h N`) are missing from each thread's `histogram` although `cycles` counts them.

use std::time::{Duration, SystemTime};

use model::CpuSet;
use model::host::HostInfo;
use model::imported::ImportInfo;
use model::measure::MeasureRun;
use serde_json::{Map, Value};

use crate::ImportError;
use crate::build::{self, RunFacts, ThreadFigures};
use crate::cyclictest_opts;

/// Whether `text` looks like cyclictest's JSON (a JSON object with a `thread` member).
pub(crate) fn detect(text: &str) -> bool {
    text.trim_start().starts_with('{')
        && (text.contains("\"thread\"") || text.contains("\"rt_test_version"))
}

/// Reads one cyclictest JSON document. `modified` stands in for the start time when the
/// document has none.
pub(crate) fn parse(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<MeasureRun, ImportError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| syntax_error(file, &e))?;
    let top = doc
        .as_object()
        .ok_or_else(|| ImportError::at(file, 1, "expected a JSON object"))?;
    let threads = top
        .get("thread")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ImportError::whole(
                file,
                "expected a `thread` object (cyclictest --json output)",
            )
        })?;
    let thread_line = line_of(text, "\"thread\"", 0);
    let command = text_field(top, &["cmdline:", "cmdline"]);
    let version = text_field(top, &["rt_test_version:", "rt_test_version"]);
    let opts = command
        .as_deref()
        .map(cyclictest_opts::parse)
        .unwrap_or_default();
    let nsecs = top.get("resolution_in_ns").and_then(Value::as_u64) == Some(1) || opts.nsecs;
    let (unit_ns, unit) = if nsecs { (1, "ns") } else { (1000, "us") };

    let mut figures = Vec::with_capacity(threads.len());
    let mut reported_cpus = Vec::with_capacity(threads.len());
    for (key, value) in threads {
        let line = line_of(text, &format!("\"{key}\""), thread_line);
        let at = |what: String| ImportError::at(file, line, format!("thread \"{key}\": {what}"));
        let number: u32 = key
            .parse()
            .ok()
            .filter(|&n| n <= model::cpuset::MAX_CPU)
            .ok_or_else(|| {
                at(format!(
                    "expected a thread number (0 to {}) as the key",
                    model::cpuset::MAX_CPU
                ))
            })?;
        let t = value
            .as_object()
            .ok_or_else(|| at("expected an object".to_string()))?;
        let count =
            field_u64(t, "cycles").ok_or_else(|| at("expected a number `cycles`".into()))?;
        let hist = t
            .get("histogram")
            .and_then(Value::as_object)
            .ok_or_else(|| at("expected a `histogram` object".to_string()))?;
        let mut buckets = Vec::with_capacity(hist.len());
        for (bucket, n) in hist {
            let k = bucket.parse::<u64>().ok();
            let n = n.as_u64();
            let (Some(k), Some(n)) = (k, n) else {
                return Err(at(format!(
                    "histogram entry \"{bucket}\": expected a bucket number and a count"
                )));
            };
            buckets.push((k, n));
        }
        let in_hist = build::checked_total(buckets.iter().map(|&(_, n)| n))
            .ok_or_else(|| at("its histogram holds more than 2^64 samples".to_string()))?;
        if in_hist > count {
            return Err(at(format!(
                "its histogram holds {in_hist} samples but `cycles` is {count}"
            )));
        }
        let min = field_u64(t, "min");
        let max = field_u64(t, "max");
        if let (Some(lo), Some(hi)) = (min, max)
            && count > 0
            && lo > hi
        {
            return Err(at(format!("`min` {lo} is above `max` {hi}")));
        }
        reported_cpus.push(t.get("cpu").and_then(Value::as_i64));
        figures.push(ThreadFigures {
            cpu: number,
            tid: None,
            count,
            unknown: count - in_hist,
            buckets,
            min,
            max,
            avg: t.get("avg").and_then(Value::as_f64),
            last: None,
        });
    }
    if figures.is_empty() {
        return Err(ImportError::at(
            file,
            thread_line,
            "the `thread` object is empty",
        ));
    }

    let mut notes = Vec::new();
    let cpus: Vec<u32> = reported_cpus
        .iter()
        .map(|c| {
            c.and_then(|c| u32::try_from(c).ok())
                .filter(|&c| c <= model::cpuset::MAX_CPU)
        })
        .collect::<Option<Vec<_>>>()
        .filter(|c| build::distinct(c))
        .unwrap_or_else(|| {
            notes.push(
                "the file gives no distinct CPU per thread: CPU numbers are cyclictest's \
                 thread numbers"
                    .to_string(),
            );
            figures.iter().map(|f| f.cpu).collect()
        });
    for (f, cpu) in figures.iter_mut().zip(&cpus) {
        f.cpu = *cpu;
    }
    figures.sort_by_key(|f| f.cpu);

    let cpu_set: CpuSet = cpus.iter().copied().collect();
    let host = host(top, &cpu_set, "cyclictest sysinfo", &mut notes);

    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let mut params = build::neutral_params(&cpu_set);
    opts.apply(&mut params, max_count);
    if command.is_none() {
        notes.push(
            "the file has no command line: priority, policy, interval and memory locking \
             are unknown and shown as cyclictest's defaults"
                .to_string(),
        );
    } else if opts.distance_us > 0 && figures.len() > 1 {
        notes.push(format!(
            "cyclictest gives thread N the interval {} us + N x {} us (-d); params.interval_ns \
             is thread 0's",
            opts.interval_us, opts.distance_us
        ));
    }
    notes.push(
        "tid, offsets, stack size, spikes and the per-second series are not in the file"
            .to_string(),
    );
    if let Some(rc) = top
        .get("return_code")
        .and_then(Value::as_i64)
        .filter(|&rc| rc != 0)
    {
        notes.push(format!("cyclictest exited with return code {rc}"));
    }

    let estimated = Duration::from_micros(max_count.saturating_mul(opts.interval_us));
    let (started, elapsed) = match times(top) {
        Some((s, elapsed)) => (s, elapsed.unwrap_or(estimated)),
        None => {
            notes.push(
                "the file has no start time: the run is dated by the file's modification time"
                    .to_string(),
            );
            (
                modified.checked_sub(estimated).unwrap_or(modified),
                estimated,
            )
        }
    };

    let unknown = build::checked_total(figures.iter().map(|f| f.unknown)).ok_or_else(|| {
        ImportError::whole(
            file,
            "the samples left out of the histograms add up to more than 2^64",
        )
    })?;
    let mut all_notes = build::histogram_notes(unit, 1, unknown, opts.histogram_us);
    all_notes.extend(notes);
    let results = figures
        .iter()
        .map(|f| build::cpu_result(f, unit_ns))
        .collect();
    let facts = RunFacts {
        host,
        params,
        started,
        elapsed,
        import: ImportInfo {
            tool: version.map_or("cyclictest".to_string(), |v| format!("cyclictest {v}")),
            format: crate::Format::CyclictestJson.name().to_string(),
            file: file.to_string(),
            resolution_ns: unit_ns,
            command,
            quantity: model::imported::Quantity::WakeupLatency,
            notes: all_notes,
            not_given: Vec::new(),
        },
    };
    build::run(file, facts, results)
}

/// The host an rt-tests JSON document's `sysinfo` describes (cyclictest and oslat write the
/// same one); an unknown host and a note when it has none.
pub(crate) fn host(
    top: &Map<String, Value>,
    cpus: &CpuSet,
    source: &str,
    notes: &mut Vec<String>,
) -> HostInfo {
    let mut host = build::unknown_host(cpus);
    let Some(sys) = top.get("sysinfo").and_then(Value::as_object) else {
        notes.push("the file has no `sysinfo`: the host is unknown".to_string());
        return host;
    };
    let s = |k: &str| {
        sys.get(k)
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string()
    };
    host.hostname = s("nodename");
    host.kernel_release = s("release");
    host.kernel_version = s("version");
    host.arch = s("machine");
    host.preempt_rt = sys.get("realtime").and_then(Value::as_i64) == Some(1)
        || host.kernel_version.contains("PREEMPT_RT");
    host.preempt_dynamic = host.kernel_version.contains("PREEMPT_DYNAMIC");
    if host.preempt_rt {
        host.preempt_model = Some("rt".to_string());
        host.preempt_model_source = Some(source.to_string());
    }
    host
}

/// The JSON error for a document that does not parse: its line and serde's reason.
pub(crate) fn syntax_error(file: &str, e: &serde_json::Error) -> ImportError {
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    ImportError::at(file, e.line().max(1), format!("not valid JSON ({msg})"))
}

/// The first of `keys` that `top` has as a string (rt-tests writes `cmdline:` with a colon).
pub(crate) fn text_field(top: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| top.get(*k).and_then(Value::as_str))
        .map(str::to_string)
}

/// The run's start and length from an rt-tests document's `start_time`/`end_time`, or `None`
/// when it has no start time.
pub(crate) fn times(top: &Map<String, Value>) -> Option<(SystemTime, Option<Duration>)> {
    let at = |k: &str| {
        top.get(k)
            .and_then(Value::as_str)
            .and_then(cyclictest_opts::rfc2822)
    };
    let start = at("start_time")?;
    Some((
        start,
        at("end_time").and_then(|e| e.duration_since(start).ok()),
    ))
}

fn field_u64(t: &Map<String, Value>, key: &str) -> Option<u64> {
    t.get(key).and_then(Value::as_u64)
}

/// The 1-based number of the first line at or after line `from` (1-based; 0 for the start)
/// that contains `needle`; `from` itself (or 1) when none does.
fn line_of(text: &str, needle: &str, from: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains(needle))
        .map_or(from.max(1), |(i, _)| i + 1)
}
