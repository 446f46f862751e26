//! The hwlat tracer's trace (read by [`trace::hwlat`]) as a hwlat result: latencies and NMI
//! time from us to ns, the trace clock's timestamps kept, the settings the trace does not
//! record noted.

use std::time::{Duration, SystemTime};

use model::hwlat::{HwlatParams, HwlatRun, HwlatSample, MAX_HWLAT_SAMPLES, SmiCounts};
use model::measure::RunStatus;
use model::{CpuSet, Nanos};

use super::{DEFAULT_THRESHOLD_US, HwlatFormat, assemble};
use crate::ImportError;

/// Reads the trace.
pub(super) fn from_trace(
    file: &str,
    text: &str,
    modified: SystemTime,
) -> Result<HwlatRun, ImportError> {
    let report = trace::hwlat::parse(text).map_err(|e| ImportError::at(file, e.line, e.what))?;
    if report.samples.len() > MAX_HWLAT_SAMPLES {
        return Err(ImportError::whole(
            file,
            format!("more than {MAX_HWLAT_SAMPLES} samples, more than rtlab reads"),
        ));
    }
    let mut samples = Vec::with_capacity(report.samples.len());
    for s in &report.samples {
        samples.push(sample(file, s)?);
    }
    let cpus = CpuSet::from_cpus(samples.iter().map(|s| s.cpu));
    let mut notes = vec![
        "the trace does not record the tracer's settings: the CPUs are those the samples name, \
         and the window and width are unknown"
            .to_string(),
        "the run's length is the time from the first sample to the last (a lower bound)"
            .to_string(),
    ];
    if report.cpus > 0 {
        notes.push(format!("the machine had {} CPUs online", report.cpus));
    }
    let threshold_ns = threshold_ns(&samples, &mut notes);
    let first = samples.iter().filter_map(|s| s.ts_ns).min().unwrap_or(0);
    let last = samples.iter().filter_map(|s| s.ts_ns).max().unwrap_or(0);
    let params = HwlatParams {
        cpus: cpus.clone(),
        duration_ns: None,
        threshold_ns: Nanos(threshold_ns),
        window_ns: None,
        width_ns: None,
        hardlimit_ns: None,
    };
    let smi = SmiCounts {
        cpus: Vec::new(),
        not_available: Some("the hwlat tracer's trace does not count SMIs".to_string()),
        total: None,
    };
    let summary = HwlatRun::summarize(&cpus, &samples);
    let elapsed = Duration::from_nanos(last - first);
    assemble(
        file,
        HwlatFormat::HwlatTrace,
        modified,
        elapsed,
        RunStatus::Complete,
        params,
        samples,
        summary,
        smi,
        Vec::new(),
        notes,
    )
}

/// One sample of the trace, in ns; a CPU past the largest rtlab reads, or a time past 2^64
/// ns, is an error.
fn sample(file: &str, s: &trace::hwlat::HwlatSample) -> Result<HwlatSample, ImportError> {
    if s.cpu > model::limits::MAX_CPU {
        return Err(ImportError::whole(
            file,
            format!(
                "sample #{}: CPU {} is past the largest CPU number rtlab reads",
                s.seq, s.cpu
            ),
        ));
    }
    let ns = |what: &str, us: u64| {
        us.checked_mul(1000).ok_or_else(|| {
            ImportError::whole(
                file,
                format!("sample #{}: {what} {us} us is past 2^64 ns", s.seq),
            )
        })
    };
    Ok(HwlatSample {
        seq: s.seq,
        cpu: s.cpu,
        ts_ns: Some(s.trace_ts_ns),
        wall: Some(s.wall_ts.clone()),
        inner_ns: ns("inner", s.inner_us)?,
        outer_ns: ns("outer", s.outer_us)?,
        count: s.count,
        nmi_total_ns: s.nmi_total_us.map(|n| ns("nmi-total", n)).transpose()?,
        nmi_count: s.nmi_count,
    })
}

/// The threshold, ns, which the trace does not record: at most the lowest sample, else
/// the tracer's default (noted either way).
fn threshold_ns(samples: &[HwlatSample], notes: &mut Vec<String>) -> u64 {
    let lowest = samples.iter().map(HwlatSample::latency_ns).min();
    match lowest {
        Some(l) if l < DEFAULT_THRESHOLD_US * 1000 => {
            notes.push(format!(
                "the threshold is not recorded; a sample of {} us shows it was at most that",
                l / 1000
            ));
            l
        }
        _ => {
            notes.push(format!("the threshold is not recorded: the tracer's default {DEFAULT_THRESHOLD_US} us is assumed"));
            DEFAULT_THRESHOLD_US * 1000
        }
    }
}
