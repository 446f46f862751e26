//! The result of `rtlab measure`: the document behind the JSON schema `rtlab.measure/1`
//! (documented in docs/output-schemas.md).
//!
//! A [`MeasureRun`] holds raw data (exact accumulators, histograms, spikes, the per-second
//! series) and, for convenience, the statistics derived from it. Readers refuse unknown fields
//! and other schema ids, so a typo or a future incompatible file fails loudly.

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::histogram::{Histogram, RegionCount};
use crate::host::HostInfo;
use crate::nanos::Nanos;
pub use crate::per_cpu::{CpuResult, Series, Spike, cpu_result};
use crate::stats::{Accumulator, LatencyStats};

/// The schema id written into every measurement result.
pub const SCHEMA: &str = "rtlab.measure/1";

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Still running: the document is a checkpoint. A file left in this state means rtlab
    /// was killed or the machine lost power; its data is valid up to `ended_at`.
    Running,
    /// Ran for the whole duration or cycle count.
    Complete,
    /// Stopped early by SIGINT or SIGTERM.
    Interrupted,
    /// Stopped at the first sample over the `--break` threshold.
    BrokeThreshold,
}

impl RunStatus {
    /// The status as written in results.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::BrokeThreshold => "broke-threshold",
        }
    }
}

/// Scheduling policy of the measuring threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_OTHER (CFS/EEVDF).
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_DEADLINE (set with sched_setattr).
    Deadline,
}

impl Policy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [Policy; 6] = [
        Policy::Fifo,
        Policy::Rr,
        Policy::Other,
        Policy::Batch,
        Policy::Idle,
        Policy::Deadline,
    ];

    /// The policy's name as typed and written (`fifo`, `rr`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Deadline => "deadline",
        }
    }

    /// Whether the policy takes a real-time priority (1–99).
    pub fn takes_priority(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// Whether the policy is a real-time one (needs CAP_SYS_NICE or RLIMIT_RTPRIO).
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }
}

/// What measured a latency run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// rtlab's own measuring threads in user space (cyclictest's method); what every run
    /// written before issue #29 used.
    #[default]
    User,
    /// The kernel's timerlat tracer: the thread latency in `cpus`, the IRQ latency beside it
    /// (the run's `timerlat` section).
    Timerlat,
}

impl Engine {
    /// The engine's name as typed and written (`user`, `timerlat`).
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::User => "user",
            Engine::Timerlat => "timerlat",
        }
    }

    /// The engine for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Engine::User => "rtlab's user-space threads",
            Engine::Timerlat => "the kernel's timerlat tracer",
        }
    }
}

/// Every parameter of a run as it was applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureParams {
    /// What measured (`user` in documents written before it was recorded).
    #[serde(default)]
    pub engine: Engine,
    /// Measured CPUs.
    pub cpus: CpuSet,
    /// Period of each measuring thread.
    pub interval_ns: Nanos,
    /// Periods (deadlines) per CPU the run was planned for; each becomes a sample or an overrun.
    pub periods: u64,
    /// Planned duration, when given as a duration.
    pub duration_ns: Option<Nanos>,
    /// Planned cycles, when given as a cycle count.
    pub cycles: Option<u64>,
    /// Whether all threads wake at the same instant.
    pub aligned: bool,
    /// Offset of each thread's deadlines from the run's start, per CPU in `cpus` order.
    pub offsets_ns: Vec<Nanos>,
    /// Scheduling policy.
    pub policy: Policy,
    /// Real-time priority (0 for policies without one).
    pub priority: u8,
    /// SCHED_DEADLINE runtime.
    pub dl_runtime_ns: Option<Nanos>,
    /// SCHED_DEADLINE period.
    pub dl_period_ns: Option<Nanos>,
    /// CPUs the non-measuring threads were pinned to.
    pub main_cpus: Option<CpuSet>,
    /// Whether memory was locked (mlockall) and stacks pre-faulted.
    pub mlock: bool,
    /// Stack size of each measuring thread (bytes).
    pub thread_stack_bytes: u64,
    /// The `/dev/cpu_dma_latency` request held during the run (us); `None` when off.
    pub dma_latency_us: Option<u32>,
    /// `--break` threshold.
    pub break_ns: Option<Nanos>,
    /// `--budget`: the budget the run was judged against ([`crate::gate`]), if any. Documents
    /// written before issue #27 call it `fail_above_ns`.
    #[serde(alias = "fail_above_ns")]
    pub budget_ns: Option<Nanos>,
    /// Worst samples kept per CPU.
    pub spikes: u32,
    /// Interval between result-file checkpoints, when a file was written.
    pub checkpoint_ns: Option<Nanos>,
    /// `monotonic` (CLOCK_MONOTONIC) or `fake` (a scripted test clock: not a measurement).
    pub clock: String,
}

/// All CPUs together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aggregate {
    /// Derived statistics over every sample of every CPU.
    pub stats: LatencyStats,
    /// Exact raw figures.
    pub raw: Accumulator,
    /// Region counts.
    pub regions: Vec<RegionCount>,
    /// Merged histogram.
    pub histogram: Histogram,
    /// Per-second maximum over CPUs and summed counts.
    pub series: Series,
}

/// The sample that stopped a `--break` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakEvent {
    /// CPU whose thread exceeded the threshold.
    pub cpu: u32,
    /// Its latency.
    pub latency_ns: u64,
    /// Its period number.
    pub cycle: u64,
    /// Whether tracing was switched off to keep the trace around the spike.
    pub trace_frozen: bool,
    /// The tracefs directory written to, if any.
    pub tracefs: Option<String>,
}

/// A condition that changes what the numbers mean.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    /// Stable identifier (`rt-throttling`, `cpu-not-isolated`, ...).
    pub code: String,
    /// One sentence for a person, with the fix where there is one.
    pub message: String,
}

impl Warning {
    /// A warning with `code` and `message`.
    pub fn new(code: &str, message: impl Into<String>) -> Warning {
        Warning {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

/// The whole result of a measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureRun {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// rtlab version that wrote it.
    pub rtlab_version: String,
    /// The rtlab binary that wrote it (for an imported run: the one that imported it); absent
    /// in results written before rtlab recorded it, and where no binary set it (library tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::build::Build>,
    /// How the run ended (or `running` for a checkpoint).
    pub status: RunStatus,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End (or checkpoint time), RFC 3339 UTC.
    pub ended_at: String,
    /// Measured time so far.
    pub elapsed_ns: Nanos,
    /// The machine.
    pub host: HostInfo,
    /// Parameters as applied.
    pub params: MeasureParams,
    /// Per-CPU results, ascending by CPU.
    pub cpus: Vec<CpuResult>,
    /// All CPUs together.
    pub all: Aggregate,
    /// The sample that stopped a `--break` run.
    pub break_event: Option<BreakEvent>,
    /// Conditions that change what the numbers mean.
    pub warnings: Vec<Warning>,
    /// The load that ran during the measurement (`--load`) and what it achieved over the
    /// measured window; absent when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::load::LoadReport>,
    /// The audit of the machine the run was made on, in brief (absent in results written
    /// before rtlab audit existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::audit::AuditSummary>,
    /// For a run read by `rtlab import` from another tool's output: where it came from and
    /// what the source did not give exactly; absent for runs rtlab measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<crate::imported::ImportInfo>,
    /// The kernel trace `measure --trace` captured around its spikes and the explanations
    /// built from it; absent without `--trace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::explain::TraceCapture>,
    /// For a noise run (schema `rtlab.noise/1`): the engine, the threshold and the per-CPU
    /// noise figures and their causes; absent for a latency run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::noise::NoiseInfo>,
    /// For a run with `--workload`: the work per period, the deadline and the misses per CPU;
    /// the histogram then holds response times. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::workload::WorkloadInfo>,
    /// For a run of the kernel's timerlat tracer: the IRQ latency beside the thread latency,
    /// the tracer's stop and the auto-analysis of the worst activations. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timerlat: Option<crate::timerlat::TimerlatInfo>,
}

/// Why a document is not a measurement result rtlab can read.
#[derive(Debug, thiserror::Error)]
pub enum ReadRunError {
    /// Not JSON, or fields that do not belong.
    #[error("not a valid rtlab measurement result: {}", json_words(.0))]
    Json(#[from] serde_json::Error),
    /// Figures no measurement can have (a CPU number no kernel has, counts past 2^64).
    #[error("not a valid rtlab measurement result: {0}")]
    Invalid(String),
    /// A schema other than the ones this rtlab reads.
    #[error(
        "result schema is '{found}', this rtlab reads '{SCHEMA}' and '{}'",
        crate::noise::NOISE_SCHEMA
    )]
    Schema {
        /// The id found.
        found: String,
    },
}

/// What a JSON error means for a result file, in words: an empty file, one cut short, text that
/// is not JSON, or a field that does not belong (serde's own words, which name it).
pub fn json_words(e: &serde_json::Error) -> String {
    match e.classify() {
        serde_json::error::Category::Eof if e.line() <= 1 && e.column() == 0 => {
            "the file is empty".to_string()
        }
        serde_json::error::Category::Eof => format!(
            "it ends early, at line {} column {}: the file was cut short (a copy or a write that \
             stopped); measure again, or restore it from where it came from",
            e.line(),
            e.column()
        ),
        serde_json::error::Category::Syntax => {
            format!("not JSON at line {} column {} ({e})", e.line(), e.column())
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => e.to_string(),
    }
}

impl MeasureRun {
    /// Parses a result document, refusing unknown fields and other schemas.
    pub fn from_json(text: &str) -> Result<MeasureRun, ReadRunError> {
        #[derive(Deserialize)]
        struct Probe {
            schema: Option<String>,
        }
        let probe: Probe = serde_json::from_str(text)?;
        let mut run: MeasureRun = match probe.schema {
            Some(s) if s == SCHEMA || s == crate::noise::NOISE_SCHEMA => {
                serde_json::from_str(text)?
            }
            Some(found) => return Err(ReadRunError::Schema { found }),
            None => {
                return Err(ReadRunError::Schema {
                    found: "(none)".to_string(),
                });
            }
        };
        run.check_bounds().map_err(ReadRunError::Invalid)?;
        if (run.schema == crate::noise::NOISE_SCHEMA) != run.noise.is_some() {
            return Err(ReadRunError::Invalid(format!(
                "a '{}' document has {} noise section",
                run.schema,
                if run.noise.is_some() { "a" } else { "no" }
            )));
        }
        run.rederive();
        Ok(run)
    }

    /// What a document from outside must satisfy before anything adds its figures up: CPU
    /// numbers within [`crate::limits::MAX_CPU`], each CPU once, and sample counts that fit
    /// in 64 bits per CPU and for all CPUs together, maxima that fit a signed 64-bit integer
    /// (what a database column holds). [`MeasureRun::from_json`] checks it; a
    /// run built from another tool's output (`rtlab import`) must pass it too, or it would be
    /// stored and written as a result that no rtlab reads back.
    pub fn check_bounds(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        let mut total: u64 = 0;
        for c in &self.cpus {
            if c.cpu > crate::limits::MAX_CPU {
                return Err(format!(
                    "CPU {} is beyond the largest CPU number a kernel has ({})",
                    c.cpu,
                    crate::limits::MAX_CPU
                ));
            }
            if !seen.insert(c.cpu) {
                return Err(format!("CPU {} appears twice", c.cpu));
            }
            if i64::try_from(c.raw.max_ns).is_err() {
                return Err(format!(
                    "CPU {}'s maximum of {} ns is longer than any run (292 years)",
                    c.cpu, c.raw.max_ns
                ));
            }
            let n = c
                .histogram
                .checked_count()
                .ok_or("a histogram holds more than 2^64 samples")?;
            total = total
                .checked_add(n)
                .and_then(|t| t.checked_add(c.raw.count))
                .ok_or("the CPUs' sample counts add up to more than 2^64")?;
        }
        if let Some(timerlat) = &self.timerlat {
            timerlat.check_bounds()?;
        }
        match &self.noise {
            Some(noise) => noise.check_bounds(),
            None => Ok(()),
        }
    }

    /// Recomputes every derived figure (statistics, regions, the all-CPU aggregate) from the
    /// raw data, so what is shown and judged is what the raw data say, whatever the file's
    /// derived fields held. For rtlab's own documents this changes nothing.
    fn rederive(&mut self) {
        for c in &mut self.cpus {
            c.stats = LatencyStats::derive(&c.raw, &c.histogram);
            c.regions = c.histogram.regions();
        }
        self.all = aggregate(&self.cpus);
        if let Some(timerlat) = &mut self.timerlat {
            timerlat.rederive();
        }
        self.as_given();
    }

    /// Keeps an imported run's statistics to what its source gives
    /// ([`crate::imported::ImportInfo::as_given`]: none it did not give, percentiles at its
    /// resolution); nothing for other runs.
    pub fn as_given(&mut self) {
        if let Some(import) = &self.import {
            for c in &mut self.cpus {
                import.as_given(&mut c.stats);
            }
            import.as_given(&mut self.all.stats);
        }
    }

    /// Whether the run states `setting`: rtlab's own runs always do; an imported run as its
    /// source did ([`crate::imported::ImportInfo::not_stated`]).
    pub fn states(&self, setting: crate::imported::Setting) -> bool {
        self.import.as_ref().is_none_or(|i| i.states(setting))
    }

    /// What the samples measure: OS noise for a noise run or an imported noise tool's
    /// output, response time for a run with a workload, else wake-up latency.
    pub fn quantity(&self) -> crate::imported::Quantity {
        if self.noise.is_some() {
            return crate::imported::Quantity::OsNoise;
        }
        if self.workload.is_some() {
            return crate::imported::Quantity::ResponseTime;
        }
        self.import.as_ref().map(|i| i.quantity).unwrap_or_default()
    }

    /// The document as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a MeasureRun always serializes");
        text.push('\n');
        text
    }

    /// Why this run's figures cannot pass any gate — a budget, a comparison, a CI export —
    /// or `None` when they can be judged. A verdict tool must not read "nothing measured" as
    /// "nothing over the budget": a run that did not finish (status `running`: its last
    /// checkpoint, left by a killed rtlab or a lost machine), one cut short by `--break`, one
    /// with no CPU, with a CPU that has no samples, or one whose kernel tracer lost events
    /// (timerlat's ring buffer overran), is refused by every gate. An interrupted run with
    /// samples can be judged on what it measured.
    pub fn unjudgeable(&self) -> Option<String> {
        match self.status {
            RunStatus::Running => {
                return Some(
                    "the run did not finish (status running): this is the last checkpoint of an rtlab that was killed or lost its machine, so its figures stop early"
                        .to_string(),
                );
            }
            RunStatus::BrokeThreshold => {
                return Some(
                    "the run stopped at its --break threshold (status broke-threshold): it measured up to the first spike, not its whole length"
                        .to_string(),
                );
            }
            RunStatus::Interrupted => {
                // A CI job's timeout sends SIGTERM: what it cut short must not pass a gate
                // (issue #48); a failed criterion still fails it.
                return Some(format!(
                    "the run was interrupted (status interrupted) after {}: it did not measure the length it was planned for",
                    self.elapsed_ns
                ));
            }
            RunStatus::Complete => {}
        }
        // A load that ended before the measurement is not the run asked for.
        if let Some(why) = self.load.as_ref().and_then(|l| l.incomplete()) {
            return Some(why);
        }
        // Samples lost are never a pass: the worst may be among them.
        if let Some(t) = self.timerlat.as_ref().filter(|t| t.lost_events > 0) {
            return Some(format!(
                "the kernel's timerlat tracer lost {} events before rtlab read them: activations are missing from the figures, and the worst may be among them",
                t.lost_events
            ));
        }
        // A noise run is judged on its noise figures (an imported `rtla osnoise top` has
        // per-CPU runtime and noise but no loop samples).
        let (measured, empty): (usize, CpuSet) = match &self.noise {
            Some(noise) => (
                noise.cpus.len(),
                noise
                    .cpus
                    .iter()
                    .filter(|c| c.runtime_ns == 0)
                    .map(|c| c.cpu)
                    .collect(),
            ),
            None => (
                self.cpus.len(),
                self.cpus
                    .iter()
                    .filter(|c| c.raw.count == 0)
                    .map(|c| c.cpu)
                    .collect(),
            ),
        };
        if measured == 0 {
            return Some("the result holds no measured CPU".to_string());
        }
        if empty.len() == measured {
            Some("no samples were measured".to_string())
        } else if !empty.is_empty() {
            Some(format!("CPU {empty} has no samples"))
        } else {
            None
        }
    }
}

/// Builds the all-CPU aggregate from per-CPU results.
pub fn aggregate(cpus: &[CpuResult]) -> Aggregate {
    let mut raw = Accumulator::new();
    let mut histogram = Histogram::new();
    let mut series = Series::default();
    for c in cpus {
        raw.merge(&c.raw);
        histogram.merge(&c.histogram);
        series.merge(&c.series);
    }
    Aggregate {
        stats: LatencyStats::derive(&raw, &histogram),
        regions: histogram.regions(),
        raw,
        histogram,
        series,
    }
}

/// A light view of a run in progress, for live displays (no histogram, spikes or series).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    /// Time since the run started.
    pub elapsed_ns: Nanos,
    /// Planned length of the run.
    pub planned_ns: Nanos,
    /// One row per measured CPU.
    pub cpus: Vec<CpuProgress>,
    /// All CPUs together.
    pub all: CpuProgress,
}

/// One CPU's figures so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuProgress {
    /// CPU number (`None` for the all-CPU row).
    pub cpu: Option<u32>,
    /// Statistics so far.
    pub stats: LatencyStats,
    /// The most recent sample.
    pub last_ns: u64,
}
