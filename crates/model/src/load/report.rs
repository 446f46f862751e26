//! What a load achieved: per generator, the work done (operations and bytes per second) and
//! the CPU it consumed, and per CPU the busy share `/proc/stat` saw over the same window.
//! Written by `rtlab load --json` (schema `rtlab.load/1`) and embedded in a measurement result
//! as its `load` field.

use serde::{Deserialize, Serialize};

use crate::{CpuSet, Nanos};

/// Schema id of a standalone load report.
pub const LOAD_SCHEMA: &str = "rtlab.load/1";

/// A load run's achieved figures over one window (from the moment the load was settled, or
/// the measurement started, to the stop).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadReport {
    /// Always [`LOAD_SCHEMA`].
    pub schema: String,
    /// The rtlab binary that ran the load; absent in older reports, where no binary set it,
    /// and in the report embedded in a measurement result (which records its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::build::Build>,
    /// The spec as run, canonical (every default spelled out).
    pub spec: String,
    /// Wall time the figures cover.
    pub window_ns: Nanos,
    /// Time the load ran before the window opened (`--warmup`).
    pub warmup_ns: Nanos,
    /// How the load ended: `complete`, `interrupted`, or `ended-early` (a generator ended by
    /// itself before the load was stopped: the load asked for was missing for the rest of the
    /// window; its `ended_ns` says when).
    pub status: String,
    /// The cpuset cgroup the load ran in (`--load-cgroup`), removed afterwards.
    pub cgroup: Option<String>,
    /// One entry per generator, in spec order.
    pub generators: Vec<GeneratorReport>,
    /// Busy (and stolen) share of every online CPU over the window, from `/proc/stat`.
    pub cpu_busy: Vec<CpuBusy>,
}

/// One generator's achieved figures over the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorReport {
    /// This generator's canonical spec item, with its placement (`cpu:60%@0`).
    pub spec: String,
    /// What it ran, in words (`2 workers at 60% duty, one pinned to each of CPUs 0-1`).
    pub description: String,
    /// CPUs its tasks could run on.
    pub cpus: CpuSet,
    /// Threads or processes it ran at once.
    pub tasks: u32,
    /// What one operation is (`loop`, `wakeup`, `message`, `fault`, `fsync`, `fork`; `n/a`).
    pub unit: String,
    /// Operations completed in the window.
    pub ops: u64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Bytes moved (copied, written, sent) in the window.
    pub bytes: u64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// CPU time its tasks used in the window (user plus system).
    pub cpu_ns: Nanos,
    /// `cpu_ns` as a share of the window times the number of its CPUs, in percent: for
    /// `cpu:60%` on one CPU, about 60.
    pub cpu_share_percent: f64,
    /// Anything that qualifies the figures (a command's exit status, a fallback taken).
    pub notes: Vec<String>,
    /// Where the generator ended by itself before the load was stopped (a command that
    /// exited), how far into the window it was seen ended (0: before the window opened).
    /// Absent while it ran to the stop, and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ns: Option<Nanos>,
}

/// [`LoadReport::status`] when a generator ended by itself before the stop.
pub const ENDED_EARLY: &str = "ended-early";

impl LoadReport {
    /// The generators that ended by themselves before the load was stopped, with how far
    /// into the window: the load the run asked for was missing from then on.
    pub fn ended_early(&self) -> impl Iterator<Item = (&GeneratorReport, Nanos)> {
        self.generators
            .iter()
            .filter_map(|g| g.ended_ns.map(|at| (g, at)))
    }

    /// Why a run under this load cannot be judged as the run asked for: a generator ended by
    /// itself before the stop (`cmd:"make" ended by itself 1.0 s into the 6.0 s window`).
    pub fn incomplete(&self) -> Option<String> {
        let ended: Vec<String> = self
            .ended_early()
            .map(|(g, at)| {
                format!(
                    "{} ended by itself {:.1} s into the {:.1} s window",
                    g.spec,
                    at.get() as f64 / 1e9,
                    self.window_ns.get() as f64 / 1e9
                )
            })
            .collect();
        (!ended.is_empty()).then(|| {
            format!(
                "the load did not run to the end: {}; the rest was measured without it",
                ended.join(", ")
            )
        })
    }
}

/// Busy share of one CPU over the window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuBusy {
    /// The CPU.
    pub cpu: u32,
    /// Percent of the window this system kept the CPU busy (user, nice, system, irq,
    /// softirq).
    pub busy_percent: f64,
    /// Percent of the window a hypervisor ran something else while this CPU wanted to run
    /// (steal; zero on bare metal).
    pub steal_percent: f64,
}

/// Why a document is not a load report rtlab can read.
#[derive(Debug, thiserror::Error)]
pub enum ReadLoadError {
    /// Not JSON, or fields that do not belong.
    #[error("not a valid rtlab load report: {0}")]
    Json(#[from] serde_json::Error),
    /// Another schema.
    #[error("load report schema is '{found}', this rtlab reads '{LOAD_SCHEMA}'")]
    Schema {
        /// The id found.
        found: String,
    },
}

impl LoadReport {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a load report always serializes")
    }

    /// Reads a report, checking the schema id.
    pub fn from_json(text: &str) -> Result<LoadReport, ReadLoadError> {
        let report: LoadReport = serde_json::from_str(text)?;
        if report.schema != LOAD_SCHEMA {
            return Err(ReadLoadError::Schema {
                found: report.schema,
            });
        }
        Ok(report)
    }
}

/// `part / whole` per second, 0 for an empty window.
pub fn per_second(count: u64, window: Nanos) -> f64 {
    if window.get() == 0 {
        0.0
    } else {
        count as f64 * 1e9 / window.get() as f64
    }
}

/// CPU time as a percentage of `window × cpus`, 0 for an empty window.
pub fn cpu_share_percent(cpu: Nanos, window: Nanos, cpus: usize) -> f64 {
    let capacity = window.get() as f64 * cpus.max(1) as f64;
    if capacity == 0.0 {
        0.0
    } else {
        cpu.get() as f64 * 100.0 / capacity
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> LoadReport {
        LoadReport {
            schema: LOAD_SCHEMA.into(),
            build: None,
            spec: "cpu:60%@0".into(),
            window_ns: Nanos::from_secs(10),
            warmup_ns: Nanos::from_secs(2),
            status: "complete".into(),
            cgroup: None,
            generators: vec![GeneratorReport {
                spec: "cpu:60%@0".into(),
                description: "1 worker at 60% duty on CPU 0".into(),
                cpus: CpuSet::from_cpus([0]),
                tasks: 1,
                unit: "loop".into(),
                ops: 1000,
                ops_per_sec: per_second(1000, Nanos::from_secs(10)),
                bytes: 0,
                bytes_per_sec: 0.0,
                cpu_ns: Nanos::from_ms(6000),
                cpu_share_percent: cpu_share_percent(Nanos::from_ms(6000), Nanos::from_secs(10), 1),
                notes: vec![],
                ended_ns: None,
            }],
            cpu_busy: vec![CpuBusy {
                cpu: 0,
                busy_percent: 61.5,
                steal_percent: 0.0,
            }],
        }
    }

    /// Issue #45: a generator that ended by itself makes the load incomplete, with when.
    #[test]
    fn a_generator_that_ended_early_makes_the_load_incomplete() {
        let mut report = sample();
        assert_eq!(report.incomplete(), None);
        report.generators[0].ended_ns = Some(Nanos::from_ms(1000));
        let why = report.incomplete().unwrap();
        assert!(
            why.contains("cpu:60%@0 ended by itself 1.0 s into the 10.0 s window"),
            "{why}"
        );
        let back = LoadReport::from_json(&report.to_json()).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn round_trips_and_checks_the_schema() {
        let report = sample();
        assert_eq!(report.generators[0].ops_per_sec, 100.0);
        assert_eq!(report.generators[0].cpu_share_percent, 60.0);
        let json = report.to_json();
        assert!(json.contains("\"cpus\": \"0\""));
        assert_eq!(LoadReport::from_json(&json).unwrap(), report);
        let other = json.replace(LOAD_SCHEMA, "rtlab.load/9");
        assert!(
            LoadReport::from_json(&other)
                .unwrap_err()
                .to_string()
                .contains("rtlab.load/9")
        );
        assert!(LoadReport::from_json("{\"schema\": 1}").is_err());
    }

    #[test]
    fn rates_of_an_empty_window_are_zero() {
        assert_eq!(per_second(5, Nanos::ZERO), 0.0);
        assert_eq!(cpu_share_percent(Nanos::from_secs(1), Nanos::ZERO, 2), 0.0);
        assert_eq!(
            cpu_share_percent(Nanos::from_secs(1), Nanos::from_secs(1), 2),
            50.0
        );
    }
}
