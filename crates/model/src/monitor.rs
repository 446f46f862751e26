//! `rtlab monitor`'s history: what one interval of watching kept ([`Interval`]: its maxima,
//! percentiles, coarse histogram, breaches and how much of it was measured), how the segments
//! measured within an interval add up to it ([`IntervalBuilder`]), and what one breach of the
//! budget became ([`Incident`]: when, where, how late, how many wake-ups in its burst, and its
//! cause in one line). Written as JSON under the schema `rtlab.monitor/1`. Pure data.
//!
//! An interval's percentiles and maximum are exact (from the fine histogram and the exact
//! accumulator of what was measured in it); its coarse buckets ([`BUCKET_BOUNDS_NS`], the
//! OpenMetrics histogram's) are counted from the fine histogram, whose buckets are at most
//! 0.1 % wide, by the highest value each fine bucket holds: a wake-up is never counted in a
//! bucket below its own (the share at or under a bound is never overstated), and one within
//! 0.1 % under a bound above 2 us may be counted in the bucket above it.

use serde::{Deserialize, Serialize};

mod doc;
mod drift;

pub use doc::{HistoryDoc, MAX_HISTORY_DOC_BYTES, MAX_HISTORY_DOC_ROWS};
pub use drift::{HistoryPoint, MonitorHost, PlotPoint, Span, plot_points, spans};

use crate::cpuset::CpuSet;
use crate::gate::over_budget;
use crate::histogram::Histogram;
use crate::measure::MeasureRun;
use crate::nanos::Nanos;
use crate::per_cpu::CpuResult;
use crate::stats::{Accumulator, LatencyStats};

/// The schema id of a monitor history document (intervals and incidents).
pub const MONITOR_SCHEMA: &str = "rtlab.monitor/1";

/// The upper bounds (inclusive, ns) of the coarse latency buckets every interval keeps and the
/// OpenMetrics histogram exports: 1, 2 and 5 of each decade from 1 us to 100 ms; the last
/// bucket (`+Inf`) holds what lies above 100 ms.
pub const BUCKET_BOUNDS_NS: [u64; 16] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// Most CPUs an interval describes one by one (the CPUs a machine can have online).
pub const MAX_INTERVAL_CPUS: usize = 4096;

/// One CPU's part of an interval.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalCpu {
    /// The CPU.
    pub cpu: u32,
    /// Wake-ups measured on it.
    pub samples: u64,
    /// Its largest latency, ns; absent without samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<u64>,
    /// Its wake-ups later than the budget.
    #[serde(default)]
    pub breaches: u64,
}

/// One interval of a monitor's history (by default 5 minutes, as OSADL's QA farm keeps them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    /// The machine (its hostname).
    pub host: String,
    /// The interval's start, Unix time in ns (wall clock, a multiple of its length).
    pub start_ns: i64,
    /// Its length, ns.
    pub length_ns: u64,
    /// How much of it was measured, ns: less than its length by the gaps between segments
    /// (a restart after a breach, the time outside the duty cycle, the monitor's own start).
    pub measured_ns: u64,
    /// What measured (`user`, `timerlat`).
    pub engine: String,
    /// The CPUs watched.
    pub cpus: CpuSet,
    /// The kernel release it ran on.
    pub kernel_release: String,
    /// The budget wake-ups were held to, ns; absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_ns: Option<u64>,
    /// Wake-ups measured.
    pub samples: u64,
    /// Periods missed (the thread woke after its next deadline).
    #[serde(default)]
    pub overruns: u64,
    /// The smallest latency, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ns: Option<u64>,
    /// The median, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<u64>,
    /// The 99th percentile, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
    /// The 99.9th percentile, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_9_ns: Option<u64>,
    /// The largest latency, ns (exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<u64>,
    /// The sum of every latency, ns (for the OpenMetrics histogram's `_sum`).
    #[serde(default)]
    pub sum_ns: u64,
    /// Wake-ups later than the budget (0 without a budget).
    #[serde(default)]
    pub breaches: u64,
    /// Incidents that began in it.
    #[serde(default)]
    pub incidents: u32,
    /// Wake-ups per coarse bucket ([`BUCKET_BOUNDS_NS`], then above the last bound): one more
    /// entry than there are bounds, not cumulative.
    pub buckets: Vec<u64>,
    /// Per CPU, ascending.
    pub per_cpu: Vec<IntervalCpu>,
    /// The CPU time rtlab's own threads used in the interval, ns: the measuring threads (on
    /// the watched CPUs) and the rest (housekeeping); absent when not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// The CPU time a monitor used in an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// rtlab's measuring threads' CPU time (user and system), ns. With the timerlat engine
    /// the kernel's tracer threads measure, and their time is not in it.
    pub measuring_ns: u64,
    /// rtlab's main thread's (reading the tracer, storing, explaining), ns.
    pub housekeeping_ns: u64,
}

impl Interval {
    /// Whether the interval's end has the coarse buckets it must have.
    pub fn check(&self) -> Result<(), String> {
        if self.buckets.len() != BUCKET_BOUNDS_NS.len() + 1 {
            return Err(format!(
                "an interval has {} coarse buckets, not {}",
                self.buckets.len(),
                BUCKET_BOUNDS_NS.len() + 1
            ));
        }
        if self.per_cpu.len() > MAX_INTERVAL_CPUS {
            return Err(format!("an interval names {} CPUs", self.per_cpu.len()));
        }
        if self.measured_ns > self.length_ns {
            return Err(format!(
                "an interval measured {} ns of {} ns",
                self.measured_ns, self.length_ns
            ));
        }
        Ok(())
    }

    /// The share of the interval measured, 0 to 1.
    pub fn coverage(&self) -> f64 {
        if self.length_ns == 0 {
            return 0.0;
        }
        self.measured_ns as f64 / self.length_ns as f64
    }
}

/// What a monitor has seen since it started, for counters: intervals added up.
#[derive(Clone, Debug, PartialEq)]
pub struct Totals {
    /// Wake-ups per coarse bucket, not cumulative.
    pub buckets: Vec<u64>,
    /// Wake-ups.
    pub samples: u64,
    /// Their sum, ns.
    pub sum_ns: u64,
    /// Wake-ups over the budget.
    pub breaches: u64,
    /// Incidents.
    pub incidents: u64,
    /// Intervals.
    pub intervals: u64,
}

impl Default for Totals {
    fn default() -> Totals {
        Totals {
            buckets: vec![0; BUCKET_BOUNDS_NS.len() + 1],
            samples: 0,
            sum_ns: 0,
            breaches: 0,
            incidents: 0,
            intervals: 0,
        }
    }
}

impl Totals {
    /// Adds an interval.
    pub fn add(&mut self, i: &Interval) {
        for (t, b) in self.buckets.iter_mut().zip(&i.buckets) {
            *t = t.saturating_add(*b);
        }
        self.samples = self.samples.saturating_add(i.samples);
        self.sum_ns = self.sum_ns.saturating_add(i.sum_ns);
        self.breaches = self.breaches.saturating_add(i.breaches);
        self.incidents = self.incidents.saturating_add(u64::from(i.incidents));
        self.intervals = self.intervals.saturating_add(1);
    }
}

/// One breach of the budget in production and the wake-ups late in its burst: an incident.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incident {
    /// Its id: the first breach's host and time, hashed (12 hex digits).
    pub id: String,
    /// The machine.
    pub host: String,
    /// The first breach, Unix time in ns.
    pub start_ns: i64,
    /// The last wake-up late in the burst, Unix time in ns.
    pub end_ns: i64,
    /// The CPU of the worst breach.
    pub cpu: u32,
    /// The worst latency of the burst, ns.
    pub worst_ns: u64,
    /// Wake-ups later than the budget in the burst.
    pub breaches: u64,
    /// The budget, ns.
    pub budget_ns: u64,
    /// What measured.
    pub engine: String,
    /// The kernel release.
    pub kernel_release: String,
    /// The cause in one line: the explanation's main part and who held the CPU, or why there
    /// is none (`not explained: ...`).
    pub cause: String,
    /// The stored run holding the trace around the first breach and its full explanation,
    /// when it was kept (`rtlab show ID`, `rtlab report ID`); absent once the disk budget
    /// removed it, or when it could not be stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The size of that run's document, bytes (what the disk budget counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_bytes: Option<u64>,
}

/// The id of an incident whose first breach was on `host` at `start_ns` (FNV-1a, 48 bits, as
/// 12 hex digits: stable, so the same incident pushed twice is one).
pub fn incident_id(host: &str, start_ns: i64) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in host.bytes().chain(start_ns.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

/// Two parts of one interval (the monitor stopped and started again within it) as one: the
/// counts, sums, measured time, maxima, breaches and buckets added up exactly, each CPU's with
/// its own; the percentiles of the two parts cannot be merged without their histograms, so the
/// larger of each is kept, an upper bound of the whole's (the side a latency figure errs on).
pub fn merge(mut a: Interval, b: &Interval) -> Interval {
    let max = |x: Option<u64>, y: Option<u64>| x.max(y);
    let min = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    a.measured_ns = a.measured_ns.saturating_add(b.measured_ns).min(a.length_ns);
    a.samples = a.samples.saturating_add(b.samples);
    a.overruns = a.overruns.saturating_add(b.overruns);
    a.sum_ns = a.sum_ns.saturating_add(b.sum_ns);
    a.breaches = a.breaches.saturating_add(b.breaches);
    a.incidents = a.incidents.saturating_add(b.incidents);
    a.min_ns = min(a.min_ns, b.min_ns);
    a.max_ns = max(a.max_ns, b.max_ns);
    a.p50_ns = max(a.p50_ns, b.p50_ns);
    a.p99_ns = max(a.p99_ns, b.p99_ns);
    a.p99_9_ns = max(a.p99_9_ns, b.p99_9_ns);
    for (x, y) in a.buckets.iter_mut().zip(&b.buckets) {
        *x = x.saturating_add(*y);
    }
    for c in &b.per_cpu {
        match a.per_cpu.binary_search_by_key(&c.cpu, |x| x.cpu) {
            Ok(i) => {
                let x = &mut a.per_cpu[i];
                x.samples = x.samples.saturating_add(c.samples);
                x.breaches = x.breaches.saturating_add(c.breaches);
                x.max_ns = max(x.max_ns, c.max_ns);
            }
            Err(i) => a.per_cpu.insert(i, c.clone()),
        }
    }
    a.cpus = a.cpus.union(&b.cpus);
    a.kernel_release.clone_from(&b.kernel_release);
    a.engine.clone_from(&b.engine);
    a.budget_ns = b.budget_ns.or(a.budget_ns);
    a.cost = match (a.cost, b.cost) {
        (Some(x), Some(y)) => Some(Cost {
            measuring_ns: x.measuring_ns.saturating_add(y.measuring_ns),
            housekeeping_ns: x.housekeeping_ns.saturating_add(y.housekeeping_ns),
        }),
        (x, y) => x.or(y),
    };
    a
}

/// The wake-ups of `cpu` later than `budget_ns`: exact from the worst samples kept when they
/// include one within the budget (so every breach is among them), else counted from the
/// histogram's buckets wholly above the budget.
pub fn breaches(cpu: &CpuResult, budget_ns: u64) -> u64 {
    let over = |ns: u64| over_budget(ns, Nanos(budget_ns));
    let kept = cpu.spikes.iter().filter(|s| over(s.latency_ns)).count() as u64;
    if kept < cpu.spikes.len() as u64 || cpu.raw.count <= cpu.spikes.len() as u64 {
        return kept;
    }
    let above: u64 = cpu
        .histogram
        .buckets()
        .filter(|&(lo, _, _)| over(lo))
        .map(|(_, _, c)| c)
        .fold(0, u64::saturating_add);
    above.saturating_add(cpu.histogram.above_range()).max(kept)
}

/// The coarse buckets of `h` ([`BUCKET_BOUNDS_NS`] and above), not cumulative: each fine
/// bucket counted where its highest value belongs.
pub fn coarse(h: &Histogram) -> Vec<u64> {
    let mut out = vec![0u64; BUCKET_BOUNDS_NS.len() + 1];
    for (lo, width, count) in h.buckets() {
        let hi = lo + width - 1;
        let i = BUCKET_BOUNDS_NS.partition_point(|&b| b < hi);
        out[i] = out[i].saturating_add(count);
    }
    let last = out.len() - 1;
    out[last] = out[last].saturating_add(h.above_range());
    out
}

/// One CPU's figures gathered over the segments of an interval.
#[derive(Clone, Debug, Default)]
struct CpuSum {
    raw: Accumulator,
    histogram: Histogram,
    breaches: u64,
}

/// Adds up the segments measured within one interval.
#[derive(Clone, Debug, Default)]
pub struct IntervalBuilder {
    cpus: Vec<(u32, CpuSum)>,
    measured_ns: u64,
    incidents: u32,
    engine: String,
    kernel_release: String,
    watched: CpuSet,
}

impl IntervalBuilder {
    /// An empty interval.
    pub fn new() -> IntervalBuilder {
        IntervalBuilder::default()
    }

    /// Adds a segment's figures; `budget_ns` counts its breaches.
    pub fn add(&mut self, run: &MeasureRun, budget_ns: Option<u64>) {
        self.measured_ns = self.measured_ns.saturating_add(run.elapsed_ns.get());
        self.engine = run.params.engine.as_str().to_string();
        self.kernel_release.clone_from(&run.host.kernel_release);
        self.watched = self.watched.union(&run.params.cpus);
        for c in &run.cpus {
            let at = match self.cpus.binary_search_by_key(&c.cpu, |(cpu, _)| *cpu) {
                Ok(i) => i,
                Err(i) => {
                    self.cpus.insert(i, (c.cpu, CpuSum::default()));
                    i
                }
            };
            let sum = &mut self.cpus[at].1;
            sum.raw.merge(&c.raw);
            sum.histogram.merge(&c.histogram);
            if let Some(b) = budget_ns {
                sum.breaches = sum.breaches.saturating_add(breaches(c, b));
            }
        }
    }

    /// Counts an incident that began in this interval.
    pub fn incident(&mut self) {
        self.incidents = self.incidents.saturating_add(1);
    }

    /// Whether anything was measured.
    pub fn is_empty(&self) -> bool {
        self.measured_ns == 0 && self.cpus.is_empty()
    }

    /// The interval of `host` that started at `start_ns` and lasted `length_ns`; the measured
    /// time is held to the length (a segment's own bookkeeping may run a period over).
    pub fn finish(
        &self,
        host: &str,
        start_ns: i64,
        length_ns: u64,
        budget_ns: Option<u64>,
    ) -> Interval {
        let mut raw = Accumulator::default();
        let mut histogram = Histogram::new();
        for (_, s) in &self.cpus {
            raw.merge(&s.raw);
            histogram.merge(&s.histogram);
        }
        let stats = LatencyStats::derive(&raw, &histogram);
        Interval {
            host: host.to_string(),
            start_ns,
            length_ns,
            measured_ns: self.measured_ns.min(length_ns),
            engine: self.engine.clone(),
            cpus: self.watched.clone(),
            kernel_release: self.kernel_release.clone(),
            budget_ns,
            samples: raw.count,
            overruns: raw.overruns,
            min_ns: stats.min_ns,
            p50_ns: stats.p50_ns,
            p99_ns: stats.p99_ns,
            p99_9_ns: stats.p99_9_ns,
            max_ns: stats.max_ns,
            sum_ns: raw.sum_ns,
            breaches: self.cpus.iter().map(|(_, s)| s.breaches).sum(),
            incidents: self.incidents,
            buckets: coarse(&histogram),
            per_cpu: self
                .cpus
                .iter()
                .map(|(cpu, s)| IntervalCpu {
                    cpu: *cpu,
                    samples: s.raw.count,
                    max_ns: (s.raw.count > 0).then_some(s.raw.max_ns),
                    breaches: s.breaches,
                })
                .collect(),
            cost: None,
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod view_tests;
