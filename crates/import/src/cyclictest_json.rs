//! cyclictest `--json=FILE` output (rt-tests 2.x, `file_version` 1), quirks included: the keys
//! `cmdline:` and `rt_test_version:` carry a trailing colon, and samples above the histogram
//! range (`-h N`) are missing from each thread's `histogram` although `cycles` counts them.
//! From rt-tests 2.7 a run without `-h` has no `histogram` at all: count, minimum, average
//! and maximum only, read as summary lines are.

use std::time::{Duration, SystemTime};

use model::CpuSet;
use model::host::HostInfo;
use model::imported::{Figure, ImportInfo, Setting};
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
    let header = Header::read(top);
    let read = read_threads(file, text, threads)?;
    let mut notes = Vec::new();
    let figures = place_on_cpus(read.figures, &read.reported_cpus, &mut notes);
    let cpu_set: CpuSet = figures.iter().map(|f| f.cpu).collect();
    let host = host(top, &cpu_set, "cyclictest sysinfo", &mut notes);
    let max_count = figures.iter().map(|f| f.count).max().unwrap_or(0);
    let mut params = build::neutral_params(&cpu_set);
    header.opts.apply(&mut params, max_count);
    notes.extend(header.notes(top, figures.len()));
    let (started, elapsed) = dates(top, &header, max_count, modified, &mut notes);
    let mut all_notes = figure_notes(file, &figures, &header, read.histograms)?;
    all_notes.extend(notes);
    let results = figures
        .iter()
        .map(|f| build::cpu_result(f, header.unit_ns))
        .collect();
    let not_given = if read.histograms {
        Vec::new()
    } else {
        vec![Figure::Percentiles, Figure::Stddev]
    };
    let has_command = header.command.is_some();
    let facts = RunFacts {
        host,
        params,
        started,
        elapsed,
        import: ImportInfo {
            tool: header
                .version
                .map_or("cyclictest".to_string(), |v| format!("cyclictest {v}")),
            format: crate::Format::CyclictestJson.name().to_string(),
            file: file.to_string(),
            resolution_ns: header.unit_ns,
            command: header.command,
            quantity: model::imported::Quantity::WakeupLatency,
            notes: all_notes,
            not_given,
            // A command line states every setting (cyclictest's defaults where it gives no
            // option); without one, none is stated.
            not_stated: if has_command {
                Vec::new()
            } else {
                Setting::ALL.to_vec()
            },
        },
    };
    build::run(file, facts, results)
}

/// What the document says about the run as a whole.
struct Header {
    command: Option<String>,
    version: Option<String>,
    opts: cyclictest_opts::Options,
    unit_ns: u64,
    unit: &'static str,
}

impl Header {
    /// The command line (and the options it gives), version and time unit.
    fn read(top: &Map<String, Value>) -> Header {
        let command = text_field(top, &["cmdline:", "cmdline"]);
        let version = text_field(top, &["rt_test_version:", "rt_test_version"]);
        let opts = command
            .as_deref()
            .map(cyclictest_opts::parse)
            .unwrap_or_default();
        let nsecs = top.get("resolution_in_ns").and_then(Value::as_u64) == Some(1) || opts.nsecs;
        let (unit_ns, unit) = if nsecs { (1, "ns") } else { (1000, "us") };
        Header {
            command,
            version,
            opts,
            unit_ns,
            unit,
        }
    }

    /// Notes on the command line and the exit status.
    fn notes(&self, top: &Map<String, Value>, threads: usize) -> Vec<String> {
        let mut notes = Vec::new();
        if self.command.is_none() {
            notes.push(
                "the file has no command line: priority, policy, interval and memory locking \
                 are unknown and shown as cyclictest's defaults"
                    .to_string(),
            );
        } else if self.opts.distance_us > 0 && threads > 1 {
            notes.push(format!(
                "cyclictest gives thread N the interval {} us + N x {} us (-d); \
                 params.interval_ns is thread 0's",
                self.opts.interval_us, self.opts.distance_us
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
        notes
    }
}

/// The threads as read.
struct Threads {
    figures: Vec<ThreadFigures>,
    /// Each thread's `cpu`, when it has one.
    reported_cpus: Vec<Option<i64>>,
    /// Every thread has a `histogram` (rt-tests 2.7 and later leave it out without `-h`).
    histograms: bool,
}

/// Step 1: each thread's figures, checked.
fn read_threads(
    file: &str,
    text: &str,
    threads: &Map<String, Value>,
) -> Result<Threads, ImportError> {
    let thread_line = line_of(text, "\"thread\"", 0);
    let mut out = Threads {
        figures: Vec::with_capacity(threads.len()),
        reported_cpus: Vec::with_capacity(threads.len()),
        histograms: true,
    };
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
        let min = field_u64(t, "min");
        let max = field_u64(t, "max");
        if let (Some(lo), Some(hi)) = (min, max)
            && count > 0
            && lo > hi
        {
            return Err(at(format!("`min` {lo} is above `max` {hi}")));
        }
        let exact = t.get("histogram").is_some();
        let buckets = match t.get("histogram") {
            Some(hist) => histogram(hist, count, &at)?,
            None => {
                out.histograms = false;
                extremes(count, min, max)
            }
        };
        let in_hist = build::checked_total(buckets.iter().map(|&(_, n)| n))
            .ok_or_else(|| at("its histogram holds more than 2^64 samples".to_string()))?;
        out.reported_cpus.push(t.get("cpu").and_then(Value::as_i64));
        out.figures.push(ThreadFigures {
            cpu: number,
            tid: None,
            count,
            unknown: count - in_hist,
            buckets,
            min,
            max,
            avg: t.get("avg").and_then(Value::as_f64),
            last: None,
            // cyclictest counts whole units (us, or ns with --nsecs), one bucket each.
            exact,
            series: Default::default(),
        });
    }
    if out.figures.is_empty() {
        return Err(ImportError::at(
            file,
            thread_line,
            "the `thread` object is empty",
        ));
    }
    Ok(out)
}

/// A thread's `histogram` object as (bucket, samples); it may hold no more than `cycles`.
fn histogram(
    hist: &Value,
    count: u64,
    at: &dyn Fn(String) -> ImportError,
) -> Result<Vec<(u64, u64)>, ImportError> {
    let hist = hist
        .as_object()
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
    Ok(buckets)
}

/// Without a histogram: one sample at the minimum and one at the maximum, as summary lines
/// are read; the others are unknown.
fn extremes(count: u64, min: Option<u64>, max: Option<u64>) -> Vec<(u64, u64)> {
    let mut buckets = Vec::new();
    if let Some(min) = min.filter(|_| count >= 1) {
        buckets.push((min, 1));
    }
    if let Some(max) = max.filter(|_| count >= 2) {
        buckets.push((max, 1));
    }
    buckets
}

/// Step 2: each thread on its reported CPU when every thread has a distinct one, else on its
/// thread number (with a note); sorted by CPU.
fn place_on_cpus(
    mut figures: Vec<ThreadFigures>,
    reported: &[Option<i64>],
    notes: &mut Vec<String>,
) -> Vec<ThreadFigures> {
    let cpus: Vec<u32> = reported
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
    figures
}

/// Step 3: the run's start and length: the document's times, else the file's modification
/// time and cycles x interval.
fn dates(
    top: &Map<String, Value>,
    header: &Header,
    max_count: u64,
    modified: SystemTime,
    notes: &mut Vec<String>,
) -> (SystemTime, Duration) {
    let estimated = Duration::from_micros(max_count.saturating_mul(header.opts.interval_us));
    match times(top) {
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
    }
}

/// Step 4: what the figures are: histogram notes, or for a document without histograms what
/// it does not give.
fn figure_notes(
    file: &str,
    figures: &[ThreadFigures],
    header: &Header,
    histograms: bool,
) -> Result<Vec<String>, ImportError> {
    if !histograms {
        return Ok(vec![
            "the file has no histogram (cyclictest 2.7 and later write none without -h): it \
             gives count, minimum, average and maximum only, so there are no percentiles and \
             no standard deviation, shown as '-'; the histogram holds one sample at the \
             minimum and one at the maximum, the others are counted in above_range with \
             unknown values"
                .to_string(),
        ]);
    }
    let unknown = build::checked_total(figures.iter().map(|f| f.unknown)).ok_or_else(|| {
        ImportError::whole(
            file,
            "the samples left out of the histograms add up to more than 2^64",
        )
    })?;
    Ok(build::histogram_notes(
        header.unit,
        1,
        unknown,
        header.opts.histogram_us,
        true,
    ))
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
