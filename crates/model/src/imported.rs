//! Where an imported result came from: the tool, its output format, the file, the tool's time
//! resolution and command line, and notes on what the source did not say exactly.
//!
//! A run made by another tool (cyclictest, rtla, oslat) and read by `rtlab import` is kept as a
//! [`crate::measure::MeasureRun`] so every command works on it; this record, its `import`
//! field, says honestly which figures are the tool's and which are estimates. Pure data.

use serde::{Deserialize, Serialize};

use crate::stats::LatencyStats;

/// Provenance of an imported run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportInfo {
    /// The tool and its version when the file says it (`cyclictest 2.60`, `cyclictest`).
    pub tool: String,
    /// The format read: `cyclictest-json`, `cyclictest-hist`, `cyclictest-summary`,
    /// `cyclictest-verbose`, `rtla-timerlat-hist`, `rtla-osnoise-hist`, `oslat-text`,
    /// `oslat-json`, `rtla-osnoise-top`, `rtla-hwnoise-top`, `osnoise-trace`, and for hwlat
    /// results `hwlatdetect`, `hwlatdetect-samples` or `hwlat-trace`.
    pub format: String,
    /// The file name as given to `rtlab import`.
    pub file: String,
    /// The tool's time resolution (1000 ns for cyclictest's microseconds).
    pub resolution_ns: u64,
    /// The tool's command line, when the file records it.
    pub command: Option<String>,
    /// What the samples are: wake-up latency (the default, and what older documents without
    /// this field hold) or operating-system noise.
    #[serde(default)]
    pub quantity: Quantity,
    /// What the source did not give exactly, and how rtlab filled it in.
    pub notes: Vec<String>,
    /// Figures the source does not give at all (cyclictest's summary lines hold no
    /// distribution): they are left out of the derived statistics, shown as `-` and written
    /// as null. Absent in older documents: every figure was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_given: Vec<Figure>,
    /// Settings of the run the source does not state: their values in `params` are neutral
    /// placeholders, shown as "not stated", never as what the run did. Absent in older
    /// documents (they showed the placeholders).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_stated: Vec<Setting>,
}

/// A setting of a run an imported source may not state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Setting {
    /// The scheduling policy and priority.
    Policy,
    /// The wake-up interval.
    Interval,
    /// Whether memory was locked (`mlockall`).
    Mlock,
    /// The `/dev/cpu_dma_latency` request.
    DmaLatency,
}

impl Setting {
    /// Every setting, in the order a run's header names them.
    pub const ALL: [Setting; 4] = [
        Setting::Policy,
        Setting::Interval,
        Setting::Mlock,
        Setting::DmaLatency,
    ];
}

/// A derived figure an imported source may not give.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    /// Every percentile (p50 ... p99.999): the source has no distribution.
    Percentiles,
    /// The standard deviation.
    Stddev,
}

impl ImportInfo {
    /// Whether the source states `setting` (else its value in `params` is a placeholder).
    pub fn states(&self, setting: Setting) -> bool {
        !self.not_stated.contains(&setting)
    }

    /// Keeps `stats` to what the source gives: clears the figures it did not give, so nothing
    /// shows a figure rtlab would have had to make up, and holds the percentiles to its
    /// resolution (a sample the tool counted as 77 us is not 77.1 us because rtlab's histogram
    /// bucket around it ends there).
    pub fn as_given(&self, stats: &mut LatencyStats) {
        stats.at_resolution(self.resolution_ns);
        for figure in &self.not_given {
            match figure {
                Figure::Percentiles => {
                    stats.p50_ns = None;
                    stats.p90_ns = None;
                    stats.p99_ns = None;
                    stats.p99_9_ns = None;
                    stats.p99_99_ns = None;
                    stats.p99_999_ns = None;
                }
                Figure::Stddev => stats.stddev_ns = None,
            }
        }
    }
}

/// What an imported run's samples measure. Runs of different quantities are not comparable:
/// a wake-up latency is how late a sleeping thread ran; a noise sample is how long a running
/// thread was kept from its CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Quantity {
    /// Timer expiry to the measuring thread running (cyclictest, rtla timerlat, rtlab measure).
    #[default]
    WakeupLatency,
    /// Time taken from a busy-looping thread (oslat's loop gaps, rtla osnoise's noise events).
    OsNoise,
    /// Release to the end of a job's work: wake-up latency plus execution (`rtlab measure
    /// --workload`).
    ResponseTime,
}

impl Quantity {
    /// The quantity for a person (`OS noise`).
    pub fn describe(self) -> &'static str {
        match self {
            Quantity::WakeupLatency => "wake-up latency",
            Quantity::OsNoise => "OS noise",
            Quantity::ResponseTime => "response time",
        }
    }
}
