//! A measurement with work in each period (`rtlab measure --workload RUNTIME`): each measuring
//! thread, once woken, computes until it has used RUNTIME of its own CPU time before sleeping
//! to its next period. The run's histogram then holds response times (wake-up latency plus
//! execution), and this section says how many jobs missed their deadline and why — the cases
//! of talk 001's figures 1b–1d, measured: a late start (wake-up jitter), a long execution
//! (preempted or slowed while working), or both.

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// Why a job missed its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MissCause {
    /// It started so late that even its nominal execution could not finish in time, while
    /// its execution, started on time, would have.
    LateStart,
    /// Its execution alone, started on time, would have passed the deadline (it was preempted
    /// or slowed while working, or the runtime exceeds the deadline), while its start was not
    /// late enough to miss by itself.
    LongExecution,
    /// Both alone would have missed, or neither alone would have but together they did.
    Both,
}

/// Classifies a job: `None` when it met its deadline. `latency` is from its release to its
/// start, `execution` from its start to its end, `nominal` the execution time the job needs undisturbed (its CPU time),
/// `deadline` relative to its release (all ns).
pub fn classify(latency: u64, execution: u64, nominal: u64, deadline: u64) -> Option<MissCause> {
    if latency.saturating_add(execution) <= deadline {
        return None;
    }
    let execution_alone = execution > deadline;
    let start_alone = nominal <= deadline && latency > deadline - nominal;
    Some(match (start_alone, execution_alone) {
        (true, false) => MissCause::LateStart,
        (false, true) => MissCause::LongExecution,
        _ => MissCause::Both,
    })
}

/// The workload of a run and what it did on each CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadInfo {
    /// The execution asked for per period.
    pub runtime_ns: Nanos,
    /// The deadline, relative to each period's release.
    pub deadline_ns: Nanos,
    /// Per CPU.
    pub cpus: Vec<WorkloadCpu>,
}

/// One CPU's jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadCpu {
    /// The CPU.
    pub cpu: u32,
    /// Busy-loop iterations per job, in runs measured before jobs were held to CPU time
    /// (calibrated on the CPU before the run); 0, and left out, since.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub iterations: u64,
    /// The nominal execution time, ns: the CPU time each job uses (the runtime asked for).
    /// In runs measured before jobs were held to CPU time, what the calibrated loop took.
    pub nominal_ns: u64,
    /// Jobs run.
    pub jobs: u64,
    /// Jobs that ended after their deadline.
    pub misses: u64,
    /// Of those: late starts, long executions, both.
    pub late_start: u64,
    /// See [`MissCause::LongExecution`].
    pub long_execution: u64,
    /// See [`MissCause::Both`].
    pub both: u64,
    /// The worst wake-up latency (release to start), ns: the release jitter this CPU gave.
    pub max_latency_ns: u64,
    /// The shortest and longest execution, ns.
    pub min_execution_ns: u64,
    /// See `min_execution_ns`.
    pub max_execution_ns: u64,
}

/// Whether a count is zero (a field left out of a document then).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn talk_001s_three_cases() {
        // 1 ms of work, 1.5 ms deadline: 0.5 ms of slack.
        let (c, d) = (1_000_000, 1_500_000);
        assert_eq!(classify(100_000, 1_000_000, c, d), None);
        assert_eq!(
            classify(600_000, 1_000_000, c, d),
            Some(MissCause::LateStart)
        );
        assert_eq!(
            classify(10_000, 1_600_000, c, d),
            Some(MissCause::LongExecution)
        );
        // 0.3 ms late and 0.3 ms stretched: neither alone misses, together they do.
        assert_eq!(classify(300_000, 1_300_000, c, d), Some(MissCause::Both));
        assert_eq!(classify(600_000, 1_600_000, c, d), Some(MissCause::Both));
        // A runtime over the deadline misses by execution whatever the start.
        assert_eq!(
            classify(0, 2_000_000, 2_000_000, d),
            Some(MissCause::LongExecution)
        );
        assert_eq!(
            classify(900_000, 2_000_000, 2_000_000, d),
            Some(MissCause::LongExecution)
        );
    }
}
