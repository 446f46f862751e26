//! Schedulability: a task set as `rtlab sched check` reads it, the machine's deadline
//! bandwidth it is admitted against, and the verdicts of the analyses — the document behind the
//! JSON schema `rtlab.sched/1`.
//!
//! A task is a sporadic task in the textbook sense: it is released at least `period` apart
//! (late by up to `jitter`), runs at most `wcet`, must finish within `deadline` of its release
//! and may be blocked by lower-priority work for up to `blocking`. Times are nanoseconds.
//! The analyses themselves live in the `sched` room; this module only says what they found.

use serde::{Deserialize, Serialize};

use crate::{CpuSet, Nanos};

/// The schema id written into every schedulability report.
pub const SCHED_SCHEMA: &str = "rtlab.sched/1";

/// The most tasks one task set may hold: far more than any real control application has on
/// one machine, and few enough that every analysis stays quick.
pub const MAX_TASKS: usize = 4096;

/// The longest period, deadline, execution time, jitter or blocking a task may name: a day.
/// A longer one is a typing slip (`4000s` for `4000us`), and sums of thousands of them still
/// fit 64 bits.
pub const MAX_TASK_TIME: Nanos = Nanos::from_secs(86_400);

/// The largest task-set file read.
pub const MAX_TASKSET_BYTES: u64 = 4 << 20;

/// The kernel's fixed point for deadline bandwidth: `1 << BW_SHIFT` is one whole CPU.
pub const BW_SHIFT: u32 = 20;

/// A reservation's bandwidth as the kernel computes it (`to_ratio(period, runtime)` in
/// kernel/sched/core.c): `(runtime << 20) / period`, 0 for a zero period.
pub fn bandwidth(period_ns: u64, runtime_ns: u64) -> u64 {
    if period_ns == 0 {
        return 0;
    }
    ((u128::from(runtime_ns) << BW_SHIFT) / u128::from(period_ns)) as u64
}

/// The scheduling policy a verdict is given for (the exit status follows it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    /// Fixed priorities, preemptive: SCHED_FIFO (and SCHED_RR with one task per priority).
    #[default]
    Fifo,
    /// Earliest deadline first, preemptive, on one CPU.
    Edf,
    /// SCHED_DEADLINE: the kernel's admission test, then EDF over the reservations.
    Deadline,
}

impl SchedPolicy {
    /// The name as written in task sets, flags and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedPolicy::Fifo => "fifo",
            SchedPolicy::Edf => "edf",
            SchedPolicy::Deadline => "deadline",
        }
    }
}

/// One task, validated: `0 < wcet <= deadline <= period`, and the SCHED_DEADLINE runtime too.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// The task's name (unique in its set).
    pub name: String,
    /// The minimum time between two releases.
    pub period: Nanos,
    /// The worst-case execution time of one job.
    pub wcet: Nanos,
    /// The relative deadline (the period unless the set gave one).
    pub deadline: Nanos,
    /// The fixed priority given (1–99, higher runs first); `None` means rate-monotonic order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    /// The CPU the task is pinned to; tasks on different CPUs are analysed apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// The release jitter: how late after its nominal release a job may become ready.
    #[serde(default)]
    pub jitter: Nanos,
    /// The longest time a job may wait for lower-priority work (a lock it holds).
    #[serde(default)]
    pub blocking: Nanos,
    /// The SCHED_DEADLINE runtime reserved per period (the WCET unless the set gave one).
    pub runtime: Nanos,
    /// Where the jitter came from when it is a measured figure (`--jitter-from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_source: Option<String>,
}

/// A task set as read from a file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSet {
    /// The policy the set is meant for (`policy = "edf"` at the top of the file), if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<SchedPolicy>,
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
}

/// What the machine grants SCHED_DEADLINE tasks, read from the kernel.
///
/// Bandwidths are in the kernel's fixed point, where 2^20 is one whole CPU (`BW_SHIFT`), so
/// the admission test can be the kernel's own arithmetic.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlineBandwidth {
    /// `kernel.sched_rt_runtime_us`: -1 means no limit.
    pub rt_runtime_us: i64,
    /// `kernel.sched_rt_period_us`.
    pub rt_period_us: u64,
    /// The CPUs online.
    pub online: CpuSet,
    /// Root domains split off the default one: valid cpuset partitions, and the CPUs
    /// `isolcpus=` detached from scheduling domains (together, one domain).
    #[serde(default)]
    pub domains: Vec<CpuSet>,
    /// What each CPU's deadline server (`fair_server`, 6.12+) reserves.
    pub server_bw: u64,
    /// Where `server_bw` came from.
    pub server_source: String,
    /// What the deadline tasks already running reserve, together.
    pub tasks_bw: u64,
    /// Those tasks, one line each.
    #[serde(default)]
    pub tasks: Vec<String>,
    /// `kernel.sched_deadline_period_min_us`, where the kernel has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_min_us: Option<u64>,
    /// `kernel.sched_deadline_period_max_us`, where the kernel has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_max_us: Option<u64>,
}

/// One analysis's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every deadline is met (for a sufficient test: proven met).
    Schedulable,
    /// A deadline can be missed (for a necessary test: proven missed).
    NotSchedulable,
    /// A sufficient test that did not pass proves nothing either way.
    Inconclusive,
    /// The test's conditions do not hold for this set (the note says which).
    NotApplicable,
    /// The analysis could not finish within its bound of steps, or lacked a figure it needs.
    Undecided,
}

impl Verdict {
    /// The name as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Schedulable => "schedulable",
            Verdict::NotSchedulable => "not-schedulable",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotApplicable => "not-applicable",
            Verdict::Undecided => "undecided",
        }
    }
}

/// A named test with its figure and answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Test {
    /// The test (`liu-layland`, `hyperbolic`, `response-time`, `utilisation`,
    /// `processor-demand`, `admission`).
    pub name: String,
    /// Its answer.
    pub verdict: Verdict,
    /// What it compared, in words and figures.
    pub note: String,
}

/// A task's answer under one policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskVerdict {
    /// The task's name.
    pub name: String,
    /// The priority the analysis used (fixed priority only; 1–99, higher first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    /// The worst-case response time, release to completion including jitter, where the
    /// analysis gives one (it stops counting once the deadline is passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_ns: Option<u64>,
    /// Deadline minus response time, where the response time is known and within it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack_ns: Option<u64>,
    /// The task's answer.
    pub verdict: Verdict,
}

/// A fixed-priority order the analysis proposes instead of the given one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suggestion {
    /// How the order was found (`deadline-monotonic` or `audsley`).
    pub method: String,
    /// The tasks with the SCHED_FIFO priority each should get, highest first.
    pub order: Vec<Placed>,
}

/// A task and the priority a suggestion gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placed {
    /// The task's name.
    pub name: String,
    /// Its SCHED_FIFO priority.
    pub priority: u8,
}

/// One policy's analysis of one CPU's tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PolicyAnalysis {
    /// The policy.
    pub policy: SchedPolicy,
    /// The answer for the CPU's tasks under it.
    pub verdict: Verdict,
    /// The tests run, quick bounds first.
    pub tests: Vec<Test>,
    /// Each task's answer, highest priority first for fixed priority, else in file order.
    pub tasks: Vec<TaskVerdict>,
    /// A fixed-priority order that passes when the given one does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<Suggestion>,
    /// Where demand first exceeds the time available (EDF, SCHED_DEADLINE): the interval
    /// length in ns and the demand in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<DemandFailure>,
}

/// An interval `[0, t)` whose demand exceeds its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemandFailure {
    /// The interval length (an absolute deadline after a synchronous release), ns.
    pub t_ns: u64,
    /// The execution demanded by jobs with deadlines in it, ns.
    pub demand_ns: u64,
    /// Whether this is the smallest such interval (false when only a later one was found
    /// within the analysis's bound of steps).
    pub first: bool,
}

/// The tasks that share one CPU (or that name none), analysed together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Partition {
    /// The CPU, or `None` for the tasks that name none (analysed as sharing one CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Their total utilisation, Σ wcet/period.
    pub utilisation: f64,
    /// One analysis per policy: fifo, edf, deadline.
    pub analyses: Vec<PolicyAnalysis>,
}

/// One task's answers under each policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task's name.
    pub name: String,
    /// Its CPU, if it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// Under fixed priorities.
    pub fifo: TaskVerdict,
    /// Under EDF.
    pub edf: TaskVerdict,
    /// Under SCHED_DEADLINE (admission included).
    pub deadline: TaskVerdict,
}

/// `rtlab sched check`'s report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchedReport {
    /// Always [`SCHED_SCHEMA`].
    pub schema: String,
    /// The task-set file.
    pub source: String,
    /// The policy the overall verdict is for.
    pub policy: SchedPolicy,
    /// The overall verdict: every partition's under `policy`.
    pub verdict: Verdict,
    /// The tasks as analysed (jitter from `--jitter-from` included).
    pub tasks: Vec<Task>,
    /// The machine's deadline bandwidth, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<DeadlineBandwidth>,
    /// SCHED_DEADLINE admission of the whole set on this machine (empty when the machine's
    /// bandwidth could not be read: then the deadline verdict is `undecided`).
    #[serde(default)]
    pub admission: Vec<Test>,
    /// The partitions, by CPU (the CPU-less one first).
    pub partitions: Vec<Partition>,
    /// The same answers by task, in file order: each task's verdict (and, for fixed
    /// priorities, its response time) under every policy.
    #[serde(default)]
    pub results: Vec<TaskResult>,
    /// Things the reader must know (what the analysis assumes, what it could not read).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl SchedReport {
    /// Whether the set passes under its policy: only a proven `schedulable` passes.
    pub fn passes(&self) -> bool {
        self.verdict == Verdict::Schedulable
    }
}
