//! Hardware and firmware latency: the result of `rtlab hwlat` and of an imported hwlatdetect
//! report or hwlat tracer trace, written as the schema `rtlab.hwlat/1`.
//!
//! A sample is what hwlatdetect calls one: the worst gap a sampling window saw between two
//! reads of the clock taken with interrupts off (`inner`: within one pair of reads; `outer`:
//! between one loop's last read and the next loop's first). The kernel engine is the hwlat
//! tracer; the user engine is rtlab's noise detector at the highest priority, which cannot
//! turn interrupts off, so it reports only gaps no kernel event explains and its figures are a
//! screen, not hwlatdetect's. Pure data.

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::host::HostInfo;
use crate::measure::{RunStatus, Warning};
use crate::nanos::Nanos;

/// The schema id of a hwlat document.
pub const HWLAT_SCHEMA: &str = "rtlab.hwlat/1";

/// Most samples a document holds (the hwlat tracer makes at most one per window; a day at
/// the default 1 s window is 86 400).
pub const MAX_HWLAT_SAMPLES: usize = 1 << 20;

/// What produced the samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HwlatEngine {
    /// The kernel's hwlat tracer (interrupts off while it samples).
    #[default]
    Kernel,
    /// rtlab's user-space noise detector, keeping only gaps no kernel event explains.
    User,
    /// Another tool's output (hwlatdetect's report, the tracer's trace).
    Imported,
}

impl HwlatEngine {
    /// The engine's name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            HwlatEngine::Kernel => "kernel",
            HwlatEngine::User => "user",
            HwlatEngine::Imported => "imported",
        }
    }
}

/// The detector's settings, as applied (or as the imported source gave them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HwlatParams {
    /// The CPUs sampled.
    pub cpus: CpuSet,
    /// How long it ran for, as asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<Nanos>,
    /// Gaps at or above this are samples.
    pub threshold_ns: Nanos,
    /// The sampling window (hwlatdetect `--window`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ns: Option<Nanos>,
    /// Time sampled within each window (hwlatdetect `--width`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_ns: Option<Nanos>,
    /// A sample at or above this fails the run (exit 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardlimit_ns: Option<Nanos>,
}

/// One sample.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HwlatSample {
    /// Its number in the source (`#1`), or its order.
    pub seq: u64,
    /// The CPU it was seen on.
    pub cpu: u32,
    /// When, in ns of the trace clock (or of CLOCK_MONOTONIC for the user engine); absent
    /// when the source gives only a wall-clock time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts_ns: Option<u64>,
    /// The wall-clock time as the source printed it (`1581527483.343962693`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall: Option<String>,
    /// The inner latency, ns.
    pub inner_ns: u64,
    /// The outer latency, ns.
    pub outer_ns: u64,
    /// Latencies the window saw (`count:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Time in NMIs during the window, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmi_total_ns: Option<u64>,
    /// NMIs during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmi_count: Option<u64>,
}

impl HwlatSample {
    /// The sample's latency: the larger of inner and outer.
    pub fn latency_ns(&self) -> u64 {
        self.inner_ns.max(self.outer_ns)
    }
}

/// One CPU's summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HwlatCpu {
    /// The CPU.
    pub cpu: u32,
    /// Samples seen on it.
    pub samples: u64,
    /// The largest inner latency, ns.
    pub max_inner_ns: u64,
    /// The largest outer latency, ns.
    pub max_outer_ns: u64,
}

/// SMI counts (MSR 0x34 on Intel CPUs) before and after a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmiCounts {
    /// Per CPU: (CPU, count before, count after); empty when not available.
    pub cpus: Vec<SmiCpu>,
    /// Why there are no counts (`not an Intel CPU`, `no /dev/cpu/0/msr: load the msr
    /// module`); absent when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_available: Option<String>,
    /// The source's own count over the run, where it gives one (an imported hwlatdetect's
    /// `SMIs during run: N`, the sum of its per-CPU differences): what the run says, even
    /// where it names no CPU. Absent for rtlab's own runs and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// One CPU's SMI count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmiCpu {
    /// The CPU.
    pub cpu: u32,
    /// MSR_SMI_COUNT before the run.
    pub before: u64,
    /// MSR_SMI_COUNT after the run.
    pub after: u64,
}

impl SmiCounts {
    /// SMIs during the run: the source's own total where it gives one, else over every CPU
    /// counted (the counter is per package on most CPUs, so the largest per-CPU difference,
    /// not the sum); `None` when not counted.
    pub fn during(&self) -> Option<u64> {
        self.total.or_else(|| {
            self.cpus
                .iter()
                .map(|c| c.after.wrapping_sub(c.before) & 0xffff_ffff)
                .max()
        })
    }
}

/// The whole hwlat result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HwlatRun {
    /// Always [`HWLAT_SCHEMA`].
    pub schema: String,
    /// rtlab version that wrote it.
    pub rtlab_version: String,
    /// The rtlab binary that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::build::Build>,
    /// How the run ended.
    pub status: RunStatus,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC.
    pub ended_at: String,
    /// Time sampled.
    pub elapsed_ns: Nanos,
    /// The machine (`unknown` names for an import that does not say).
    pub host: HostInfo,
    /// What produced the samples.
    pub engine: HwlatEngine,
    /// The settings.
    pub params: HwlatParams,
    /// Every sample, in time order.
    pub samples: Vec<HwlatSample>,
    /// Per-CPU summary, ascending by CPU.
    pub cpus: Vec<HwlatCpu>,
    /// SMI counts, or why there are none.
    pub smi: SmiCounts,
    /// Conditions that change what the numbers mean (the user engine's screen caveat
    /// among them).
    pub warnings: Vec<Warning>,
    /// For an imported result: where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<crate::imported::ImportInfo>,
}

/// Why a hwlat document cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadHwlatError {
    /// Not JSON of this shape.
    #[error("not a hwlat result: {0}")]
    Json(#[from] serde_json::Error),
    /// Another schema.
    #[error("hwlat result schema is '{found}', this rtlab reads '{HWLAT_SCHEMA}'")]
    Schema {
        /// The id found.
        found: String,
    },
    /// Figures out of bounds.
    #[error("hwlat result is invalid: {0}")]
    Invalid(String),
}

impl HwlatRun {
    /// The largest sample latency, ns (0 without samples).
    pub fn max_ns(&self) -> u64 {
        self.samples
            .iter()
            .map(HwlatSample::latency_ns)
            .max()
            .unwrap_or(0)
    }

    /// Samples at or above the hard limit (none without one).
    pub fn over_hardlimit(&self) -> usize {
        self.params.hardlimit_ns.map_or(0, |limit| {
            self.samples
                .iter()
                .filter(|s| s.latency_ns() >= limit.get())
                .count()
        })
    }

    /// The per-CPU summary derived from the samples, over `cpus` (CPUs without samples
    /// get a zero row).
    pub fn summarize(cpus: &CpuSet, samples: &[HwlatSample]) -> Vec<HwlatCpu> {
        let mut rows: std::collections::BTreeMap<u32, HwlatCpu> = cpus
            .iter()
            .map(|cpu| {
                (
                    cpu,
                    HwlatCpu {
                        cpu,
                        ..HwlatCpu::default()
                    },
                )
            })
            .collect();
        for s in samples {
            let row = rows.entry(s.cpu).or_insert_with(|| HwlatCpu {
                cpu: s.cpu,
                ..HwlatCpu::default()
            });
            row.samples = row.samples.saturating_add(1);
            row.max_inner_ns = row.max_inner_ns.max(s.inner_ns);
            row.max_outer_ns = row.max_outer_ns.max(s.outer_ns);
        }
        rows.into_values().collect()
    }

    /// Parses a document, refusing unknown fields, other schemas and figures out of bounds.
    pub fn from_json(text: &str) -> Result<HwlatRun, ReadHwlatError> {
        let run: HwlatRun = serde_json::from_str(text)?;
        if run.schema != HWLAT_SCHEMA {
            return Err(ReadHwlatError::Schema { found: run.schema });
        }
        run.check_bounds().map_err(ReadHwlatError::Invalid)?;
        Ok(run)
    }

    /// CPU numbers within [`crate::limits::MAX_CPU`], at most [`MAX_HWLAT_SAMPLES`] samples.
    pub fn check_bounds(&self) -> Result<(), String> {
        if self.samples.len() > MAX_HWLAT_SAMPLES {
            return Err(format!(
                "{} samples, more than the {MAX_HWLAT_SAMPLES} rtlab reads",
                self.samples.len()
            ));
        }
        let cpu = self
            .samples
            .iter()
            .map(|s| s.cpu)
            .chain(self.cpus.iter().map(|c| c.cpu))
            .find(|c| *c > crate::limits::MAX_CPU);
        match cpu {
            Some(c) => Err(format!(
                "CPU {c} is past the largest CPU number rtlab reads ({})",
                crate::limits::MAX_CPU
            )),
            None => Ok(()),
        }
    }

    /// The document as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a hwlat run always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> HwlatRun {
        HwlatRun {
            schema: HWLAT_SCHEMA.into(),
            rtlab_version: "0.1.0".into(),
            build: None,
            status: RunStatus::Complete,
            started_at: "2026-11-24T12:00:00Z".into(),
            ended_at: "2026-11-24T12:01:00Z".into(),
            elapsed_ns: Nanos::from_secs(60),
            host: HostInfo::default(),
            engine: HwlatEngine::Kernel,
            params: HwlatParams::default(),
            samples: Vec::new(),
            cpus: Vec::new(),
            smi: SmiCounts::default(),
            warnings: Vec::new(),
            import: None,
        }
    }

    fn sample(cpu: u32, inner: u64, outer: u64) -> HwlatSample {
        HwlatSample {
            cpu,
            inner_ns: inner,
            outer_ns: outer,
            ..HwlatSample::default()
        }
    }

    #[test]
    fn summary_and_hardlimit_use_the_larger_of_inner_and_outer() {
        let samples = vec![sample(1, 12_000, 8_000), sample(1, 3_000, 15_000)];
        let cpus = HwlatRun::summarize(&CpuSet::from_cpus([0, 1]), &samples);
        assert_eq!(cpus[0].samples, 0);
        assert_eq!(
            (cpus[1].samples, cpus[1].max_inner_ns, cpus[1].max_outer_ns),
            (2, 12_000, 15_000)
        );
        let mut run = empty();
        run.samples = samples;
        run.params.hardlimit_ns = Some(Nanos(12_000));
        assert_eq!((run.max_ns(), run.over_hardlimit()), (15_000, 2));
        let back = HwlatRun::from_json(&run.to_json()).unwrap();
        assert_eq!(back, run);
    }

    #[test]
    fn smi_difference_wraps_at_32_bits() {
        let smi = SmiCounts {
            cpus: vec![SmiCpu {
                cpu: 0,
                before: 0xffff_fffe,
                after: 1,
            }],
            not_available: None,
            total: None,
        };
        assert_eq!(smi.during(), Some(3));
        assert_eq!(SmiCounts::default().during(), None);
        // A source's own total is what it says, with or without CPUs named (issue #45:
        // hwlatdetect's "SMIs during run: 3" over 2 on CPU 3 and 1 on CPU 5 read as 2, and
        // its "SMIs during run: 0" with no CPU list was dropped).
        let said = |total| SmiCounts {
            total: Some(total),
            ..SmiCounts::default()
        };
        assert_eq!(said(0).during(), Some(0));
        assert_eq!(
            SmiCounts {
                total: Some(3),
                ..smi
            }
            .during(),
            Some(3)
        );
    }

    #[test]
    fn other_schemas_and_wild_cpus_are_refused() {
        let mut run = empty();
        run.schema = "rtlab.hwlat/9".into();
        assert!(matches!(
            HwlatRun::from_json(&run.to_json()),
            Err(ReadHwlatError::Schema { .. })
        ));
        run.schema = HWLAT_SCHEMA.into();
        run.samples.push(sample(u32::MAX, 1, 1));
        assert!(HwlatRun::from_json(&run.to_json()).is_err());
    }
}
