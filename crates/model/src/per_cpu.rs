//! What one CPU measured, whatever measured it: the exact accumulator, the histogram, the
//! worst samples and the per-second maxima ([`CpuResult`]), shared by a run's per-CPU results
//! ([`crate::measure`]) and the timerlat tracer's IRQ and user figures ([`crate::timerlat`]).

use serde::{Deserialize, Serialize};

use crate::histogram::{Histogram, RegionCount};
use crate::nanos::Nanos;
use crate::stats::{Accumulator, LatencyStats};

/// One of the worst samples of a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spike {
    /// How late the thread woke.
    pub latency_ns: u64,
    /// Period number (0-based deadline index) of the sample.
    pub cycle: u64,
    /// When the deadline was, relative to the run's start.
    pub at_ns: u64,
    /// The wake-up time on CLOCK_MONOTONIC, to line up with traces using the `mono` clock.
    pub monotonic_ns: u64,
}

/// Per-second maximum and sample count: periodic spikes stay visible here although a
/// histogram hides them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    /// Length of one slot (1 s).
    pub slot_ns: Nanos,
    /// Largest latency in each slot (0 where the slot has no sample).
    pub max_ns: Vec<u64>,
    /// Samples in each slot.
    pub count: Vec<u64>,
}

impl Series {
    /// Element-wise combination: maximum of maxima, sum of counts.
    pub fn merge(&mut self, other: &Series) {
        if self.slot_ns == Nanos::ZERO {
            self.slot_ns = other.slot_ns;
        }
        let len = self.max_ns.len().max(other.max_ns.len());
        self.max_ns.resize(len, 0);
        self.count.resize(len, 0);
        for (i, (&m, &c)) in other.max_ns.iter().zip(&other.count).enumerate() {
            self.max_ns[i] = self.max_ns[i].max(m);
            self.count[i] = self.count[i].saturating_add(c);
        }
    }
}

/// Everything measured on one CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuResult {
    /// CPU number.
    pub cpu: u32,
    /// Thread id of the measuring thread (the pid that trace events show), when known.
    pub tid: Option<u32>,
    /// Derived statistics.
    pub stats: LatencyStats,
    /// Exact raw figures.
    pub raw: Accumulator,
    /// How many samples fell in each region of the histogram scheme.
    pub regions: Vec<RegionCount>,
    /// The latency histogram.
    pub histogram: Histogram,
    /// The worst samples, worst first.
    pub spikes: Vec<Spike>,
    /// Per-second maximum and count.
    pub series: Series,
}

/// Builds a [`CpuResult`] from raw data, deriving its statistics and region counts.
pub fn cpu_result(
    cpu: u32,
    tid: Option<u32>,
    raw: Accumulator,
    histogram: Histogram,
    spikes: Vec<Spike>,
    series: Series,
) -> CpuResult {
    CpuResult {
        cpu,
        tid,
        stats: LatencyStats::derive(&raw, &histogram),
        regions: histogram.regions(),
        raw,
        histogram,
        spikes,
        series,
    }
}
