//! Where an imported result came from: the tool, its output format, the file, the tool's time
//! resolution and command line, and notes on what the source did not say exactly.
//!
//! A run made by another tool (cyclictest, rtla, oslat) and read by `rtlab import` is kept as a
//! [`crate::measure::MeasureRun`] so every command works on it; this record, its `import`
//! field, says honestly which figures are the tool's and which are estimates. Pure data.

use serde::{Deserialize, Serialize};

/// Provenance of an imported run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportInfo {
    /// The tool and its version when the file says it (`cyclictest 2.60`, `cyclictest`).
    pub tool: String,
    /// The format read: `cyclictest-json`, `cyclictest-hist`, `cyclictest-summary`,
    /// `rtla-timerlat-hist`, `rtla-osnoise-hist`, `oslat-text` or `oslat-json`.
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
}

impl Quantity {
    /// The quantity for a person (`OS noise`).
    pub fn describe(self) -> &'static str {
        match self {
            Quantity::WakeupLatency => "wake-up latency",
            Quantity::OsNoise => "OS noise",
        }
    }
}
