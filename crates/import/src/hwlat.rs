//! The hwlat detectors' outputs, read into a hwlat result (`rtlab.hwlat/1`, [`HwlatRun`]):
//! rt-tests hwlatdetect's report on standard output, the sample lines it writes with
//! `--report FILE` (or prints alone with `--quiet`), and the kernel's hwlat tracer trace.
//!
//! hwlatdetect layouts (rt-tests 1.0 to 2.10): a header (`hwlatdetect:  test duration N
//! seconds`, `detector: tracer|kmodule`, `parameters:` with `CPU list:` (2.4 on), `Latency
//! threshold: Nus`, `Sample window: Nus`, `Sample width: Nus`), `Max Latency: Nus` (or
//! `Below threshold`), `Samples recorded: N`, `Samples exceeding threshold: N`, `MTBF:`
//! (2.10), `N SMIs occured on cpu I` and `SMIs during run: N` where it read the MSR, then one
//! line per sample: `ts: S.NS, inner:N, outer:N` with `, cpu:N` (2.6 on), `, count:N` (2.10)
//! and `delta:` after the time (2.10); after 2.10 the time may be formatted with
//! `--time-format`. The kernel-module detector (before 2017) wrote its samples as
//! `S.NS<TAB>INNER<TAB>OUTER`.
//! Latencies are in microseconds; rtlab keeps ns.

use std::time::{Duration, SystemTime};

use model::hwlat::{
    HWLAT_SCHEMA, HwlatEngine, HwlatParams, HwlatRun, HwlatSample, MAX_HWLAT_SAMPLES, SmiCounts,
    SmiCpu,
};
use model::imported::{ImportInfo, Quantity};
use model::measure::{RunStatus, Warning};
use model::{CpuSet, Nanos};

use crate::ImportError;
use crate::build::{self, Skipped};

/// The hwlat tracer's threshold when `tracing_thresh` is 0, and hwlatdetect's default, us.
const DEFAULT_THRESHOLD_US: u64 = 10;

/// A hwlat output rtlab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwlatFormat {
    /// hwlatdetect's standard output: header, summary and samples.
    Hwlatdetect,
    /// Sample lines alone: hwlatdetect's `--report FILE`, or its `--quiet` output.
    HwlatdetectSamples,
    /// The hwlat tracer's `trace` or `trace_pipe`.
    HwlatTrace,
}

impl HwlatFormat {
    /// The format's id, as stored in `import.format`.
    pub fn name(self) -> &'static str {
        match self {
            HwlatFormat::Hwlatdetect => "hwlatdetect",
            HwlatFormat::HwlatdetectSamples => "hwlatdetect-samples",
            HwlatFormat::HwlatTrace => "hwlat-trace",
        }
    }
}

/// Recognises a hwlat output by its content.
pub fn detect_hwlat(text: &str) -> Option<HwlatFormat> {
    if trace::hwlat::detect(text) {
        return Some(HwlatFormat::HwlatTrace);
    }
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(200);
    let first = lines.clone().next()?;
    if lines.any(|l| l.starts_with("hwlatdetect:") && l.contains("test duration")) {
        return Some(HwlatFormat::Hwlatdetect);
    }
    let first = if first.contains("SMIs occured on cpu") || first.starts_with("report saved to") {
        text.lines().map(str::trim).find(|l| is_sample(l))?
    } else {
        first
    };
    is_sample(first).then_some(HwlatFormat::HwlatdetectSamples)
}

fn is_sample(l: &str) -> bool {
    matches!(sample(l), Some(Ok(_)))
}

/// Reads a hwlat output (`file` names it in errors and in the result; `modified`, the file's
/// modification time, dates the run, whose sources give no start).
pub fn import_hwlat(file: &str, text: &str, modified: SystemTime) -> Result<HwlatRun, ImportError> {
    match detect_hwlat(text) {
        Some(HwlatFormat::HwlatTrace) => from_trace(file, text, modified),
        Some(format) => from_hwlatdetect(file, text, modified, format),
        None => Err(ImportError::whole(
            file,
            "not a hwlat output rtlab reads; it reads hwlatdetect's report (standard output or \
             --report FILE) and the hwlat tracer's trace",
        )),
    }
}

/// A sample as read, in us.
struct Read {
    wall: String,
    inner: u64,
    outer: u64,
    cpu: Option<u32>,
    count: Option<u64>,
}

/// A sample line: `None` when the line is not one by its shape, an error when it is one
/// whose figures do not read.
fn sample(l: &str) -> Option<Result<Read, String>> {
    if let Some(rest) = l.strip_prefix("ts:") {
        return Some(new_sample(rest));
    }
    // The kernel module: `0001581527.0343962693\t11\t12` (or one latency, before outer).
    let mut words = l.split_whitespace();
    let ts = words.next()?;
    let (secs, frac) = ts.split_once('.')?;
    if !(num(secs).is_some() && num(frac).is_some()) {
        return None;
    }
    let lat: Vec<&str> = words.collect();
    if lat.is_empty() || lat.len() > 2 || lat.iter().any(|w| num(w).is_none()) {
        return None;
    }
    let inner = num(lat[0])?;
    Some(Ok(Read {
        wall: ts.to_string(),
        inner,
        outer: lat.get(1).and_then(|w| num(w)).unwrap_or(0),
        cpu: None,
        count: None,
    }))
}

/// `ts: S.NS, [delta:F, ]inner:N, outer:N[, cpu:N][, count:N]` after `ts:`.
fn new_sample(rest: &str) -> Result<Read, String> {
    let at = ["delta:", "inner:"]
        .iter()
        .filter_map(|k| rest.find(&format!(", {k}")))
        .min()
        .ok_or("expected `, inner:N, outer:N` after the sample's time")?;
    let wall: String = rest[..at].trim().chars().take(64).collect();
    let (mut inner, mut outer, mut cpu, mut count) = (None, None, None, None);
    for kv in rest[at + 1..].split(',') {
        let (k, v) = kv
            .trim()
            .split_once(':')
            .ok_or_else(|| format!("expected `key:value`, found `{}`", kv.trim()))?;
        let n = || {
            num(v.trim())
                .ok_or_else(|| format!("expected a whole number for `{k}`, found `{}`", v.trim()))
        };
        match k {
            "inner" => inner = Some(n()?),
            "outer" => outer = Some(n()?),
            "cpu" => {
                let c = n()?;
                cpu = Some(
                    u32::try_from(c)
                        .ok()
                        .filter(|c| *c <= model::limits::MAX_CPU)
                        .ok_or_else(|| {
                            format!(
                                "CPU {c} is past the largest CPU number rtlab reads ({})",
                                model::limits::MAX_CPU
                            )
                        })?,
                );
            }
            "count" => count = Some(n()?),
            _ => {}
        }
    }
    match (inner, outer) {
        (Some(inner), Some(outer)) => Ok(Read {
            wall,
            inner,
            outer,
            cpu,
            count,
        }),
        _ => Err("expected both `inner:N` and `outer:N`".to_string()),
    }
}

fn num(w: &str) -> Option<u64> {
    (!w.is_empty() && w.len() <= 20 && w.bytes().all(|b| b.is_ascii_digit()))
        .then(|| w.parse().ok())
        .flatten()
}

/// `Latency threshold: 10us` → 10.
fn us_value(v: &str) -> Option<u64> {
    num(v.trim().strip_suffix("us")?.trim())
}

/// What hwlatdetect's header and summary said.
#[derive(Default)]
struct Header {
    duration_s: Option<u64>,
    detector: Option<String>,
    cpus: Option<CpuSet>,
    threshold_us: Option<u64>,
    window_us: Option<u64>,
    width_us: Option<u64>,
    max_us: Option<u64>,
    recorded: Option<u64>,
    exceeding: Option<u64>,
    smi_total: Option<u64>,
    smi_cpus: Vec<SmiCpu>,
    interrupted: bool,
}

impl Header {
    /// Takes a non-sample line; `Ok(false)` when it is none of hwlatdetect's.
    fn line(&mut self, t: &str, notes: &mut Vec<String>) -> Result<bool, String> {
        let bad = |what: &str| {
            format!(
                "expected {what}, found `{}`",
                t.chars().take(80).collect::<String>()
            )
        };
        if let Some(rest) = t.strip_prefix("hwlatdetect:") {
            let d = rest
                .trim()
                .strip_prefix("test duration")
                .and_then(|r| r.trim().strip_suffix("seconds"));
            self.duration_s = Some(
                d.and_then(|d| num(d.trim()))
                    .ok_or_else(|| bad("`test duration N seconds`"))?,
            );
        } else if let Some(d) = t.strip_prefix("detector:") {
            self.detector = Some(d.trim().chars().take(32).collect());
        } else if let Some(c) = t.strip_prefix("CPU list:") {
            let c = c.trim();
            if c != "None" {
                self.cpus =
                    Some(CpuSet::parse_list(c).map_err(|e| format!("`CPU list: {c}`: {e}"))?);
            }
        } else if let Some(v) = t.strip_prefix("Latency threshold:") {
            self.threshold_us = Some(us_value(v).ok_or_else(|| bad("`Latency threshold: Nus`"))?);
        } else if let Some(v) = t.strip_prefix("Sample window:") {
            self.window_us = Some(us_value(v).ok_or_else(|| bad("`Sample window: Nus`"))?);
        } else if let Some(v) = t.strip_prefix("Sample width:") {
            self.width_us = Some(us_value(v).ok_or_else(|| bad("`Sample width: Nus`"))?);
        } else if let Some(v) = t.strip_prefix("Max Latency:") {
            if v.trim() != "Below threshold" {
                self.max_us = Some(us_value(v).ok_or_else(|| bad("`Max Latency: Nus`"))?);
            }
        } else if let Some(v) = t.strip_prefix("Samples recorded:") {
            self.recorded = Some(num(v.trim()).ok_or_else(|| bad("`Samples recorded: N`"))?);
        } else if let Some(v) = t.strip_prefix("Samples exceeding threshold:") {
            self.exceeding =
                Some(num(v.trim()).ok_or_else(|| bad("`Samples exceeding threshold: N`"))?);
        } else if let Some(v) = t.strip_prefix("SMIs during run:") {
            self.smi_total = Some(num(v.trim()).ok_or_else(|| bad("`SMIs during run: N`"))?);
        } else if let Some((n, cpu)) = t.split_once(" SMIs occured on cpu ") {
            let (n, cpu) = num(n.trim())
                .zip(num(cpu.trim()).and_then(|c| u32::try_from(c).ok()))
                .filter(|(_, c)| *c <= model::limits::MAX_CPU)
                .ok_or_else(|| bad("`N SMIs occured on cpu I`"))?;
            self.smi_cpus.push(SmiCpu {
                cpu,
                before: 0,
                after: n,
            });
        } else if t.starts_with("MTBF:") {
            notes.push(format!(
                "hwlatdetect said: {}",
                t.chars().take(60).collect::<String>()
            ));
        } else if t == "interrupted" {
            self.interrupted = true;
        } else {
            let known = [
                "parameters:",
                "Non-sampling period:",
                "Output File:",
                "Starting test",
                "test finished",
                "report saved to",
            ];
            return Ok(known.iter().any(|k| t.starts_with(k)));
        }
        Ok(true)
    }
}

/// What the lines of a hwlatdetect report hold.
#[derive(Default)]
struct Lines {
    /// The summary and settings.
    h: Header,
    /// What was noted while reading them.
    notes: Vec<String>,
    /// Lines that are none of these.
    skipped: Skipped,
    /// The samples, in ns.
    samples: Vec<HwlatSample>,
    /// Whether every sample named its CPU.
    cpu_known: bool,
}

/// Reads every line of a hwlatdetect report: samples, and the summary and settings lines.
fn read_lines(file: &str, text: &str) -> Result<Lines, ImportError> {
    let mut r = Lines {
        cpu_known: true,
        ..Lines::default()
    };
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        let err = |what: String| ImportError::at(file, n, what);
        if let Some(s) = sample(t) {
            let s = s.map_err(err)?;
            if r.samples.len() == MAX_HWLAT_SAMPLES {
                return Err(err(format!(
                    "more than {MAX_HWLAT_SAMPLES} samples, more than rtlab reads"
                )));
            }
            r.cpu_known &= s.cpu.is_some();
            let seq = r.samples.len() as u64 + 1;
            r.samples.push(in_ns(s, seq).map_err(err)?);
        } else if !r.h.line(t, &mut r.notes).map_err(err)? {
            r.skipped.line(n, t);
        }
    }
    Ok(r)
}

/// A sample as read (us), in ns, numbered `seq`.
fn in_ns(s: Read, seq: u64) -> Result<HwlatSample, String> {
    let ns = |what: &str, us: u64| {
        us.checked_mul(1000)
            .ok_or_else(|| format!("{what} {us} us is past 2^64 ns"))
    };
    Ok(HwlatSample {
        seq,
        cpu: s.cpu.unwrap_or(0),
        ts_ns: None,
        wall: Some(s.wall),
        inner_ns: ns("inner", s.inner)?,
        outer_ns: ns("outer", s.outer)?,
        count: s.count,
        nmi_total_ns: None,
        nmi_count: None,
    })
}

fn from_hwlatdetect(
    file: &str,
    text: &str,
    modified: SystemTime,
    format: HwlatFormat,
) -> Result<HwlatRun, ImportError> {
    let Lines {
        h,
        mut notes,
        skipped,
        samples,
        cpu_known,
    } = read_lines(file, text)?;
    if format == HwlatFormat::Hwlatdetect && h.duration_s.is_none() {
        return Err(ImportError::whole(
            file,
            "expected the `hwlatdetect:  test duration N seconds` line",
        ));
    }
    let mut warnings = Vec::new();
    checks(&h, &samples, &mut notes);
    let sample_cpus = CpuSet::from_cpus(samples.iter().map(|s| s.cpu));
    let cpus = match (&h.cpus, cpu_known) {
        (Some(c), _) => c.clone(),
        (None, true) => {
            notes.push(
                "the CPUs are those the samples name (hwlatdetect ran without --cpu-list)"
                    .to_string(),
            );
            sample_cpus
        }
        (None, false) => CpuSet::new(),
    };
    if !cpu_known {
        warnings.push(Warning::new(
            "cpu-unknown",
            "this hwlatdetect (before rt-tests 2.6) printed no CPU per sample: each is listed on \
             CPU 0 and there is no per-CPU summary",
        ));
    }
    let params = params(&h, cpus, &mut notes);
    let elapsed = match h.duration_s {
        Some(s) => Duration::from_secs(s),
        None => {
            notes.push(
                "the run's length is not given (a --report file holds samples only): it is the \
                 time from the first sample to the last, a lower bound"
                    .to_string(),
            );
            wall_span(&samples)
        }
    };
    let smi = smi_counts(&h, &params.cpus, &mut notes);
    let summary = if cpu_known {
        HwlatRun::summarize(&params.cpus, &samples)
    } else {
        Vec::new()
    };
    if let Some(d) = &h.detector {
        notes.push(format!("hwlatdetect's detector: {d}"));
    }
    notes.extend(skipped.notes("hwlatdetect's report"));
    let status = if h.interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    assemble(
        file, format, modified, elapsed, status, params, samples, summary, smi, warnings, notes,
    )
}

/// The settings the report gives, in ns; a missing threshold is the default (noted).
fn params(h: &Header, cpus: CpuSet, notes: &mut Vec<String>) -> HwlatParams {
    let threshold = h.threshold_us.unwrap_or_else(|| {
        notes.push(format!(
            "the threshold is not given: hwlatdetect's default {DEFAULT_THRESHOLD_US} us is assumed"
        ));
        DEFAULT_THRESHOLD_US
    });
    HwlatParams {
        cpus,
        duration_ns: h.duration_s.map(Nanos::from_secs),
        threshold_ns: Nanos(threshold.saturating_mul(1000)),
        window_ns: h.window_us.map(|w| Nanos(w.saturating_mul(1000))),
        width_ns: h.width_us.map(|w| Nanos(w.saturating_mul(1000))),
        hardlimit_ns: None,
    }
}

/// The time from the first sample's wall-clock time to the last's, when they are
/// `SECONDS.FRACTION` (not `--time-format`ted); zero otherwise.
fn wall_span(samples: &[HwlatSample]) -> Duration {
    let ns = |s: &HwlatSample| {
        let (secs, frac) = s.wall.as_deref()?.split_once('.')?;
        let frac: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
        num(secs)?
            .checked_mul(1_000_000_000)?
            .checked_add(num(&frac)?)
    };
    let times: Option<Vec<u64>> = samples.iter().map(ns).collect();
    match times.as_deref() {
        Some([first, .., last]) if last >= first => Duration::from_nanos(last - first),
        _ => Duration::ZERO,
    }
}

/// What the summary says against what the samples say.
fn checks(h: &Header, samples: &[HwlatSample], notes: &mut Vec<String>) {
    let lines = samples.len() as u64;
    if let Some(r) = h.recorded.filter(|r| *r != lines) {
        notes.push(format!(
            "hwlatdetect says it recorded {r} samples, the file lists {lines}{}",
            if lines < r { " (is it cut?)" } else { "" }
        ));
    }
    let max = samples
        .iter()
        .map(HwlatSample::latency_ns)
        .max()
        .unwrap_or(0);
    if let Some(m) = h.max_us.filter(|m| m.saturating_mul(1000) != max) {
        notes.push(format!(
            "hwlatdetect's `Max Latency: {m}us` is not the largest sample listed ({} us)",
            max / 1000
        ));
    }
    if let Some(e) = h.exceeding {
        notes.push(format!(
            "hwlatdetect counted {e} latencies over the threshold (a sample window may see several)"
        ));
    }
}

/// SMI counts: hwlatdetect prints a line per CPU whose count grew and the total over every
/// CPU; CPUs it does not name had none. It prints differences only, so `before` is 0.
fn smi_counts(h: &Header, cpus: &CpuSet, notes: &mut Vec<String>) -> SmiCounts {
    // The report's total, else the sum of its per-CPU lines (which is how hwlatdetect makes it).
    let sum = build::checked_total(h.smi_cpus.iter().map(|s| s.after));
    let Some(total) = h
        .smi_total
        .or((!h.smi_cpus.is_empty()).then(|| sum.unwrap_or(u64::MAX)))
    else {
        return SmiCounts {
            cpus: Vec::new(),
            not_available: Some(
                "the report does not say (hwlatdetect counts SMIs only on Intel CPUs with the msr \
                 module loaded)"
                    .to_string(),
            ),
            total: None,
        };
    };
    let mut per: std::collections::BTreeMap<u32, SmiCpu> = cpus
        .iter()
        .map(|cpu| {
            (
                cpu,
                SmiCpu {
                    cpu,
                    before: 0,
                    after: 0,
                },
            )
        })
        .collect();
    for s in &h.smi_cpus {
        per.insert(s.cpu, s.clone());
    }
    notes.push(format!(
        "hwlatdetect counted {total} SMIs during the run over every CPU; it prints differences \
         only, so each CPU's count before is written as 0 and after as the difference"
    ));
    if h.smi_total.is_some() && sum != Some(total) {
        notes.push(format!(
            "the per-CPU SMI lines do not add up to the total {total}"
        ));
    }
    SmiCounts {
        cpus: per.into_values().collect(),
        not_available: None,
        // The report's own figure, as it says it (the per-CPU lines add up to it).
        total: Some(total),
    }
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    file: &str,
    format: HwlatFormat,
    modified: SystemTime,
    elapsed: Duration,
    status: RunStatus,
    params: HwlatParams,
    samples: Vec<HwlatSample>,
    cpus: Vec<model::hwlat::HwlatCpu>,
    smi: SmiCounts,
    warnings: Vec<Warning>,
    mut notes: Vec<String>,
) -> Result<HwlatRun, ImportError> {
    notes.push(
        "the run's start is dated back from the file's modification time; the host is unknown"
            .to_string(),
    );
    notes.push(
        "latencies are whole microseconds in the source: they are stored in ns, exact to 1 us"
            .to_string(),
    );
    let started = modified.checked_sub(elapsed).unwrap_or(modified);
    let (Some(started_at), Some(ended_at)) = (build::rfc3339(started), build::rfc3339(modified))
    else {
        return Err(ImportError::whole(
            file,
            "the run would start or end outside the years 1970 to 9999",
        ));
    };
    let run = HwlatRun {
        schema: HWLAT_SCHEMA.to_string(),
        rtlab_version: env!("CARGO_PKG_VERSION").to_string(),
        build: model::build::current().cloned(),
        status,
        started_at,
        ended_at,
        elapsed_ns: Nanos(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)),
        host: build::unknown_host(&params.cpus),
        engine: HwlatEngine::Imported,
        params,
        samples,
        cpus,
        smi,
        warnings,
        import: Some(ImportInfo {
            tool: if format == HwlatFormat::HwlatTrace {
                "hwlat tracer"
            } else {
                "hwlatdetect"
            }
            .to_string(),
            format: format.name().to_string(),
            file: file.to_string(),
            resolution_ns: 1000,
            command: None,
            // Gaps between two reads of the clock in a busy loop, as oslat's samples are.
            quantity: Quantity::OsNoise,
            notes,
            not_given: Vec::new(),
            not_stated: Vec::new(),
        }),
    };
    run.check_bounds()
        .map_err(|e| ImportError::whole(file, e))?;
    Ok(run)
}

mod tracer;

use tracer::from_trace;

#[cfg(test)]
mod tests;
