//! Schedulability analysis for `rtlab sched check`: will a set of periodic or sporadic tasks
//! meet its deadlines under fixed priorities (SCHED_FIFO), EDF, or SCHED_DEADLINE on this
//! machine?
//!
//! This room owns reading task sets ([`taskset`]), the analyses themselves — utilisation
//! bounds and response-time analysis ([`fp`]), the processor-demand test ([`edf`]), the
//! kernel's deadline admission ([`deadline`]) — and putting their answers into a
//! [`SchedReport`]. It is data in, data out: the machine's deadline bandwidth is read by `sys`
//! and handed in. Every analysis runs within a bound of steps and says `undecided` rather than
//! guess when it runs out; only a proven `schedulable` passes.

mod deadline;
mod edf;
mod fp;
pub mod jitter;
mod partition;
pub mod taskset;
mod throttle;

use model::sched::{
    DeadlineBandwidth, Partition, PolicyAnalysis, SCHED_SCHEMA, SchedPolicy, SchedReport, Task,
    TaskResult, TaskSet, TaskVerdict, Test, Verdict,
};

pub use taskset::{TaskSetError, parse, policy_named};

/// The most analysis steps (a step is one task's term in one iteration) one check spends:
/// well under a second of work, far beyond what real task sets need.
pub const MAX_STEPS: u64 = 20_000_000;

/// One task reduced to the analyses' numbers, ns: execution C, period T, deadline D, jitter J,
/// blocking B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Work {
    pub(crate) c: u64,
    pub(crate) t: u64,
    pub(crate) d: u64,
    pub(crate) j: u64,
    pub(crate) b: u64,
}

impl Work {
    /// The task with its WCET as C.
    fn of(task: &Task) -> Work {
        Work {
            c: task.wcet.get(),
            t: task.period.get(),
            d: task.deadline.get(),
            j: task.jitter.get(),
            b: task.blocking.get(),
        }
    }

    /// The task's SCHED_DEADLINE reservation as C.
    fn reserved(task: &Task) -> Work {
        Work {
            c: task.runtime.get(),
            ..Work::of(task)
        }
    }
}

/// The steps an analysis may still take.
#[derive(Debug)]
pub(crate) struct Budget(u64);

impl Budget {
    pub(crate) fn new(steps: u64) -> Budget {
        Budget(steps)
    }

    /// Spends `n` steps; false when they are not there.
    pub(crate) fn take(&mut self, n: u64) -> bool {
        match self.0.checked_sub(n.max(1)) {
            Some(left) => {
                self.0 = left;
                true
            }
            None => false,
        }
    }
}

/// Analyses `set` under every policy and gives the verdict for `policy`. `bandwidth` is the
/// machine's deadline bandwidth, `None` when it could not be read.
pub fn check(
    set: &TaskSet,
    source: &str,
    policy: SchedPolicy,
    bandwidth: Option<&DeadlineBandwidth>,
) -> SchedReport {
    let mut budget = Budget::new(MAX_STEPS);
    let mut notes = Vec::new();
    let groups = partition::group(&set.tasks);
    let admission = match bandwidth {
        Some(bw) => deadline::admission(&set.tasks, bw),
        None => {
            notes.push(
                "the machine's deadline bandwidth could not be read: SCHED_DEADLINE admission is \
                 undecided"
                    .to_string(),
            );
            vec![Test {
                name: "admission".into(),
                verdict: Verdict::Undecided,
                note: "kernel.sched_rt_runtime_us and the online CPUs were not readable".into(),
            }]
        }
    };
    let admitted = combine(admission.iter().map(|t| t.verdict));
    let partitions: Vec<Partition> = groups
        .iter()
        .map(|(cpu, tasks)| {
            let mut analyses = vec![
                partition::fixed_priority(tasks, bandwidth, &mut budget, &mut notes),
                partition::edf(tasks, SchedPolicy::Edf, Work::of, &mut budget),
                partition::edf(tasks, SchedPolicy::Deadline, Work::reserved, &mut budget),
            ];
            let dl = &mut analyses[2];
            dl.verdict = combine([dl.verdict, admitted]);
            for t in &mut dl.tasks {
                t.verdict = combine([t.verdict, admitted]);
            }
            Partition {
                cpu: *cpu,
                utilisation: edf::utilisation(
                    &tasks.iter().map(|t| Work::of(t)).collect::<Vec<_>>(),
                ),
                analyses,
            }
        })
        .collect();
    if groups.iter().any(|(cpu, _)| cpu.is_none()) && bandwidth.is_none_or(|bw| bw.online.len() > 1)
    {
        notes.push(
            "tasks without a cpu are analysed as sharing one CPU; on more CPUs the kernel \
             schedules them globally, which this analysis does not model: pin them (cpu = N) to \
             match the machine"
                .to_string(),
        );
    }
    let results = by_task(&set.tasks, &partitions);
    let verdict = combine(partitions.iter().flat_map(|p| {
        p.analyses
            .iter()
            .filter(|a| a.policy == policy)
            .map(|a| a.verdict)
    }));
    SchedReport {
        schema: SCHED_SCHEMA.to_string(),
        source: source.to_string(),
        policy,
        verdict,
        tasks: set.tasks.clone(),
        bandwidth: bandwidth.cloned(),
        admission,
        partitions,
        results,
        notes,
    }
}

/// Each task's verdicts, gathered from its partition's analyses.
fn by_task(tasks: &[Task], partitions: &[Partition]) -> Vec<TaskResult> {
    let find = |task: &Task, policy: SchedPolicy| -> TaskVerdict {
        partitions
            .iter()
            .filter(|p| p.cpu == task.cpu)
            .filter_map(|p| analysis(p, policy))
            .flat_map(|a| a.tasks.iter())
            .find(|v| v.name == task.name)
            .cloned()
            .unwrap_or(TaskVerdict {
                name: task.name.clone(),
                priority: None,
                response_ns: None,
                slack_ns: None,
                verdict: Verdict::Undecided,
            })
    };
    tasks
        .iter()
        .map(|t| TaskResult {
            name: t.name.clone(),
            cpu: t.cpu,
            fifo: find(t, SchedPolicy::Fifo),
            edf: find(t, SchedPolicy::Edf),
            deadline: find(t, SchedPolicy::Deadline),
        })
        .collect()
}

/// Several answers as one: any miss is a miss; then anything not proven is undecided; only
/// all-proven is schedulable. (`not-applicable` tests do not count.)
pub(crate) fn combine(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
    let mut out = Verdict::Schedulable;
    for v in verdicts {
        out = match (out, v) {
            (Verdict::NotSchedulable, _) | (_, Verdict::NotSchedulable) => Verdict::NotSchedulable,
            (_, Verdict::NotApplicable) => out,
            (Verdict::Schedulable, Verdict::Schedulable) => Verdict::Schedulable,
            _ => Verdict::Undecided,
        };
    }
    out
}

/// The analysis of one policy in a report's partition, if present.
pub fn analysis(partition: &Partition, policy: SchedPolicy) -> Option<&PolicyAnalysis> {
    partition.analyses.iter().find(|a| a.policy == policy)
}

#[cfg(test)]
mod tests;
