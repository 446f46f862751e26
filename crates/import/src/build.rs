//! Turning what a tool reported per thread (1-us buckets, overflow count, exact min/max, a
//! rounded average) into rtlab's raw data (accumulator and histogram), and the per-thread
//! figures plus the run's facts into a [`MeasureRun`] whose statistics derive as usual.
//!
//! Honesty rules: a sample in the tool's bucket `k` us lies in `[k, k+1)` us and is put at
//! `k` us exactly (a lower bound within the tool's resolution); samples the tool left out of
//! its histogram are counted in `above_range` (percentiles that land there read as the
//! maximum, an upper bound); the sum comes from the tool's rounded average; the sum of squares
//! is estimated. Each of these becomes a note in [`ImportInfo`].

use std::time::{Duration, SystemTime};

use model::host::{CpuInfo, HostInfo};
use model::imported::ImportInfo;
use model::measure::{self, CpuResult, MeasureParams, MeasureRun, Policy, RunStatus, Series};
use model::stats::Accumulator;
use model::{CpuSet, Histogram, Nanos};

use crate::ImportError;

/// One thread's figures as a tool reported them, in the tool's unit (`unit_ns` per unit).
#[derive(Clone, Debug, Default)]
pub(crate) struct ThreadFigures {
    /// The CPU (or thread number when the CPU is not known).
    pub cpu: u32,
    /// Thread id, when reported.
    pub tid: Option<u32>,
    /// Samples in all: histogram plus overflow.
    pub count: u64,
    /// Histogram as (bucket index = value in units, samples), any order.
    pub buckets: Vec<(u64, u64)>,
    /// Samples the tool counted but left out of its histogram (values unknown).
    pub unknown: u64,
    /// The tool's exact minimum and maximum, in units.
    pub min: Option<u64>,
    /// See `min`.
    pub max: Option<u64>,
    /// The tool's (rounded) average, in units.
    pub avg: Option<f64>,
    /// The last sample, in units (cyclictest `Act:`).
    pub last: Option<u64>,
    /// Whether each sample's value is its bucket's: the tool counts whole units and its
    /// histogram has one bucket per unit (cyclictest; rtla with a bucket of one unit). The
    /// histogram's moments are then the samples' own, and its mean is exact where the tool's
    /// printed average is truncated.
    pub exact: bool,
    /// The per-second maxima, where the tool's output is time-ordered (cyclictest -v).
    pub series: Series,
}

/// Builds one CPU's result. `unit_ns` converts the tool's unit to nanoseconds.
pub(crate) fn cpu_result(t: &ThreadFigures, unit_ns: u64) -> CpuResult {
    let mut histogram = Histogram::new();
    let (mut known_n, mut known_sum, mut known_sq) = (0u64, 0u128, 0u128);
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    // The importers check that every thread's counts add up within 64 bits; the sums below
    // saturate so that nothing a file says can overflow them.
    for &(k, n) in t.buckets.iter().filter(|&&(_, n)| n > 0) {
        let v = k.saturating_mul(unit_ns);
        histogram.record_n(v, n);
        known_n = known_n.saturating_add(n);
        known_sum = known_sum.saturating_add(u128::from(v) * u128::from(n));
        known_sq =
            known_sq.saturating_add((u128::from(v) * u128::from(v)).saturating_mul(u128::from(n)));
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let unknown = t.count.saturating_sub(known_n);
    histogram.record_n(u64::MAX, unknown);
    let mut acc = Accumulator::new();
    acc.count = t.count;
    if t.count > 0 {
        acc.min_ns = t.min.map_or(lo, |m| m.saturating_mul(unit_ns));
        acc.max_ns = t
            .max
            .map_or(hi, |m| m.saturating_mul(unit_ns))
            .max(acc.min_ns);
        let whole = unknown == 0 && t.exact;
        let sum = match t.avg {
            // Every sample is in the histogram at its own value: its sum is exact.
            _ if whole => known_sum,
            Some(avg) => (avg * t.count as f64 * unit_ns as f64).round() as u128,
            None => known_sum,
        };
        let n = u128::from(t.count);
        let sum = sum.clamp(u128::from(acc.min_ns) * n, u128::from(acc.max_ns) * n);
        acc.sum_ns = u64::try_from(sum).unwrap_or(u64::MAX);
        acc.sum_sq_ns2 = if unknown > 0 {
            // Unknown samples are put at the mean of what the sum leaves for them (Jensen: a
            // lower bound of their squares).
            let rest = sum.saturating_sub(known_sum);
            let mean = rest / u128::from(unknown);
            known_sq.saturating_add(
                mean.saturating_mul(mean)
                    .saturating_mul(u128::from(unknown)),
            )
        } else {
            centred_on(known_sq, known_sum, sum, n)
        };
        acc.last_ns = t.last.map_or(0, |l| l.saturating_mul(unit_ns));
    }
    measure::cpu_result(t.cpu, t.tid, acc, histogram, Vec::new(), t.series.clone())
}

/// The sum of squares of samples whose spread is the histogram's (`known_sq` and `known_sum`
/// over `n` samples) but whose sum is `sum` (the tool's average, more precise than buckets
/// coarser than the samples): the histogram's values shifted by the difference of the means,
/// so the standard deviation is the histogram's own and never the square of a rounding.
fn centred_on(known_sq: u128, known_sum: u128, sum: u128, n: u128) -> u128 {
    if sum == known_sum || n == 0 {
        return known_sq;
    }
    let nf = n as f64;
    let (mean, hist_mean) = (sum as f64 / nf, known_sum as f64 / nf);
    let var = (known_sq as f64 / nf - hist_mean * hist_mean).max(0.0);
    (nf * (var + mean * mean)).round() as u128
}

/// The notes every histogram-based import carries.
/// `width` is the bucket width in `unit`s; `exact` as [`ThreadFigures::exact`].
pub(crate) fn histogram_notes(
    unit: &str,
    width: u64,
    unknown: u64,
    range: Option<u64>,
    exact: bool,
) -> Vec<String> {
    let mut notes = vec![
        format!(
            "the tool counts samples in {width}-{unit} buckets: a sample in bucket k lies in \
             [k, k+{width}) {unit} and is stored at k {unit} exactly, so histogram values and \
             percentiles are lower bounds within {width} {unit} (minimum and maximum are the \
             tool's own figures)"
        ),
        if exact && unknown == 0 {
            "mean and standard deviation are the histogram's own (every sample is in it at its \
             value; the tool's printed average is rounded)"
                .to_string()
        } else {
            "the mean comes from the tool's rounded average; the standard deviation is the \
             histogram's spread"
                .to_string()
        },
    ];
    if unknown > 0 {
        let range = range.map_or(String::new(), |r| format!(" ({r} {unit})"));
        notes.push(format!(
            "{unknown} samples were above the tool's histogram range{range} and left out of it: \
             they are counted in above_range with unknown values, so percentiles that fall \
             there read as the maximum"
        ));
    }
    notes
}

/// Facts about a run beyond its per-CPU data.
#[derive(Clone, Debug)]
pub(crate) struct RunFacts {
    pub host: HostInfo,
    pub params: MeasureParams,
    pub started: SystemTime,
    pub elapsed: Duration,
    pub import: ImportInfo,
}

/// Neutral parameters for `cpus`; importers overwrite what the source says.
pub(crate) fn neutral_params(cpus: &CpuSet) -> MeasureParams {
    MeasureParams {
        engine: model::measure::Engine::User,
        cpus: cpus.clone(),
        interval_ns: Nanos::MILLISECOND,
        periods: 0,
        duration_ns: None,
        cycles: None,
        aligned: false,
        offsets_ns: vec![Nanos::ZERO; cpus.len()],
        policy: Policy::Other,
        priority: 0,
        dl_runtime_ns: None,
        dl_period_ns: None,
        main_cpus: None,
        mlock: false,
        thread_stack_bytes: 0,
        dma_latency_us: None,
        break_ns: None,
        budget_ns: None,
        spikes: 0,
        checkpoint_ns: None,
        clock: "monotonic".to_string(),
    }
}

/// A host that says only what is known: `unknown` names, the measured CPUs.
pub(crate) fn unknown_host(cpus: &CpuSet) -> HostInfo {
    HostInfo {
        hostname: "unknown".to_string(),
        kernel_release: "unknown".to_string(),
        kernel_version: "unknown".to_string(),
        arch: "unknown".to_string(),
        cpus: cpus
            .iter()
            .map(|cpu| CpuInfo {
                cpu,
                ..CpuInfo::default()
            })
            .collect(),
        ..HostInfo::default()
    }
}

/// The last second RFC 3339's four-digit years reach (9999-12-31T23:59:59Z), since the epoch.
const LAST_RFC3339_SECOND: u64 = 253_402_300_799;

/// `t` in RFC 3339 with microseconds; `None` outside the years 1970 to 9999, which the
/// result's dates (and `humantime`) cannot write.
pub(crate) fn rfc3339(t: SystemTime) -> Option<String> {
    let since = t.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    (since.as_secs() <= LAST_RFC3339_SECOND)
        .then(|| humantime::format_rfc3339_micros(t).to_string())
}

/// The run document. Errors when its start or end falls outside the years 1970 to 9999 (the
/// file's dates, or a length estimated from its counts, cannot be right), or when it would not
/// read back as a result ([`MeasureRun::check_bounds`]: CPU numbers, counts past 2^64).
pub(crate) fn run(
    file: &str,
    facts: RunFacts,
    cpus: Vec<CpuResult>,
) -> Result<MeasureRun, ImportError> {
    let ended = facts.started.checked_add(facts.elapsed);
    let (Some(started_at), Some(ended_at)) = (rfc3339(facts.started), ended.and_then(rfc3339))
    else {
        return Err(ImportError::whole(
            file,
            format!(
                "the run would start or end outside the years 1970 to 9999 (it lasts {} s by \
                 the file's times or its cycle count and interval), so those cannot be right",
                facts.elapsed.as_secs()
            ),
        ));
    };
    let all = measure::aggregate(&cpus);
    let mut run = MeasureRun {
        schema: measure::SCHEMA.to_string(),
        rtlab_version: env!("CARGO_PKG_VERSION").to_string(),
        // The rtlab that imported it: the source tool is in `import`.
        build: model::build::current().cloned(),
        status: RunStatus::Complete,
        started_at,
        ended_at,
        elapsed_ns: Nanos(u64::try_from(facts.elapsed.as_nanos()).unwrap_or(u64::MAX)),
        host: facts.host,
        params: facts.params,
        cpus,
        all,
        break_event: None,
        warnings: Vec::new(),
        load: None,
        audit: None,
        import: Some(facts.import),
        trace: None,
        noise: None,
        workload: None,
        timerlat: None,
    };
    // Figures the source did not give are not shown as if it had.
    run.as_given();
    // What a result file must satisfy to be read back (CPU numbers, counts that add up).
    run.check_bounds()
        .map_err(|e| ImportError::whole(file, e))?;
    Ok(run)
}

/// A run from one of cyclictest's text outputs (histogram, summary lines, `-v` stream): figures
/// in 1 us, the host unknown, the start dated back from the file's modification time.
pub(crate) struct CyclictestText<'a> {
    /// The file, as named.
    pub file: &'a str,
    /// Which of the outputs it is.
    pub format: crate::Format,
    /// The file's modification time (the end of the run).
    pub modified: SystemTime,
    /// How long the run lasted, by its counts.
    pub elapsed: Duration,
    /// The run's parameters, as far as the file gives them.
    pub params: MeasureParams,
    /// The CPUs (cyclictest's thread numbers).
    pub cpus: &'a CpuSet,
    /// What the source did not give exactly.
    pub notes: Vec<String>,
    /// Figures the source does not give at all.
    pub not_given: Vec<model::imported::Figure>,
    /// Settings it does not state.
    pub not_stated: Vec<model::imported::Setting>,
    /// Nanoseconds per unit of its latencies: 1000 (microseconds, cyclictest's default), or 1
    /// (`-N`).
    pub unit_ns: u64,
}

/// The run document of a cyclictest text output over its threads' `figures`.
pub(crate) fn cyclictest_text_run(
    text: CyclictestText<'_>,
    figures: &[ThreadFigures],
) -> Result<MeasureRun, ImportError> {
    let results = figures
        .iter()
        .map(|f| cpu_result(f, text.unit_ns))
        .collect();
    let facts = RunFacts {
        host: unknown_host(text.cpus),
        params: text.params,
        started: text
            .modified
            .checked_sub(text.elapsed)
            .unwrap_or(text.modified),
        elapsed: text.elapsed,
        import: ImportInfo {
            tool: "cyclictest".to_string(),
            format: text.format.name().to_string(),
            file: text.file.to_string(),
            resolution_ns: text.unit_ns,
            command: None,
            quantity: model::imported::Quantity::WakeupLatency,
            notes: text.notes,
            not_given: text.not_given,
            not_stated: text.not_stated,
        },
    };
    run(text.file, facts, results)
}

/// The sum of `counts`, or `None` when it does not fit in 64 bits (a file that claims more
/// samples than any run can take).
pub(crate) fn checked_total(counts: impl IntoIterator<Item = u64>) -> Option<u64> {
    counts.into_iter().try_fold(0u64, u64::checked_add)
}

/// Whether `cpus` are distinct, so they can key per-CPU results.
pub(crate) fn distinct(cpus: &[u32]) -> bool {
    let set: std::collections::BTreeSet<_> = cpus.iter().collect();
    set.len() == cpus.len()
}

/// How every note about a skipped line starts, so `rtlab import` can print those notes.
pub const SKIPPED_NOTE: &str = "skipped line";

/// Lines a parser skipped because it did not know them, in a file that is otherwise clearly
/// its format: kept as notes (the first few with their text, then a count), never a refusal.
#[derive(Debug, Default)]
pub(crate) struct Skipped {
    shown: Vec<(usize, String)>,
    more: u64,
}

impl Skipped {
    /// How many skipped lines are named one by one.
    const SHOWN: usize = 5;

    /// Records that 1-based line `n`, reading `text`, was skipped.
    pub(crate) fn line(&mut self, n: usize, text: &str) {
        if self.shown.len() < Self::SHOWN {
            let text = text.trim();
            let mut shown: String = text.chars().take(60).collect();
            if text.chars().count() > 60 {
                shown.push_str("...");
            }
            self.shown.push((n, shown));
        } else {
            self.more = self.more.saturating_add(1);
        }
    }

    /// The notes: one per named line, `what` saying what the file is (`cyclictest's
    /// histogram`), then how many more.
    pub(crate) fn notes(self, what: &str) -> Vec<String> {
        let mut notes: Vec<String> = self
            .shown
            .into_iter()
            .map(|(n, text)| {
                format!("{SKIPPED_NOTE} {n}, not part of {what} as rtlab knows it: `{text}`")
            })
            .collect();
        if self.more > 0 {
            notes.push(format!(
                "{SKIPPED_NOTE}s: {} more lines not part of {what} as rtlab knows it",
                self.more
            ));
        }
        notes
    }
}
