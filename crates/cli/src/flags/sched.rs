//! `rtlab sched`: schedulability analysis of a task set (`sched check`).

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::store::DbArgs;

pub const SCHED_CHECK_LONG: &str = "\
Will these tasks meet their deadlines? TASKSET is a TOML file with one [[task]] table per task \
(or the same structure as JSON): name, period, wcet (worst-case execution time), and \
optionally deadline (default: the period), priority (1-99, higher runs first; default: \
rate-monotonic order), cpu (tasks on different CPUs are analysed apart), jitter (release \
jitter, e.g. the wake-up latency rtlab measured), blocking (the longest wait for \
lower-priority work) and runtime (the SCHED_DEADLINE reservation; default: the wcet). Times \
carry units (\"4ms\", \"50us\"); runtime <= deadline <= period, as the kernel demands. A \
top-level `policy = \"fifo\"|\"edf\"|\"deadline\"` says which policy the set is for.

Every CPU's tasks are analysed under three policies:

Fixed priorities (SCHED_FIFO): the Liu-Layland and hyperbolic utilisation bounds as quick \
answers where their conditions hold, then exact response-time analysis with release jitter \
and blocking: each task's worst-case response time, slack and verdict. When the priorities \
fail, a deadline-monotonic order (or Audsley's optimal assignment) that passes is suggested \
with SCHED_FIFO priorities below the IRQ threads' 50, or it is said that none exists.

EDF: the utilisation test where deadlines equal periods, else the processor-demand test (QPA), \
naming the first interval whose demand exceeds its length.

SCHED_DEADLINE: whether sched_setattr would admit the reservations on this machine (the \
kernel's own arithmetic over sched_rt_runtime_us/sched_rt_period_us, the CPUs of each root \
domain, what deadline servers and running deadline tasks already hold), then EDF over the \
reservations.

The verdict and the exit status are for --policy (default: the set's `policy`, else fifo). \
--jitter-from RUN takes each CPU's measured worst wake-up latency from a stored run as the \
tasks' release jitter.";

pub const SCHED_CHECK_AFTER: &str = "\
EXAMPLES:
    rtlab sched check tasks.toml                      fixed priorities, every test
    rtlab sched check tasks.toml --policy edf
    rtlab sched check tasks.toml --jitter-from rt.json   jitter as measured (a run or its id)
    rtlab sched check tasks.toml --format json -o sched.json

A TASK SET:
    [[task]]
    name = \"control\"
    period = \"4ms\"
    wcet = \"1ms\"
    priority = 80
    cpu = 2
    jitter = \"50us\"

EXIT STATUS:
    0    schedulable under --policy
    1    not schedulable, or not proven (an inconclusive or undecided analysis never passes)
    2    bad input: the task set (which line and field), --jitter-from, --output";

/// `rtlab sched` subcommands.
#[derive(Debug, Subcommand)]
pub enum SchedCommand {
    /// Will a task set meet its deadlines under SCHED_FIFO, EDF and SCHED_DEADLINE?
    #[command(long_about = SCHED_CHECK_LONG, after_long_help = SCHED_CHECK_AFTER)]
    Check(SchedCheckArgs),
}

/// The policy a verdict is given for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchedPolicyArg {
    /// Fixed priorities (SCHED_FIFO; SCHED_RR with one task per priority).
    #[value(alias = "rr")]
    Fifo,
    /// Earliest deadline first on one CPU.
    Edf,
    /// SCHED_DEADLINE: the kernel's admission, then EDF over the reservations.
    Deadline,
}

/// What `rtlab sched check` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchedFormat {
    /// Per CPU and policy: the tests, each task's response time and slack.
    #[value(alias = "table")]
    Text,
    /// The report (schema rtlab.sched/1).
    Json,
}

/// Options of `rtlab sched check`.
#[derive(Debug, Args)]
pub struct SchedCheckArgs {
    /// The task set: TOML (one [[task]] table per task) or JSON.
    #[arg(value_name = "TASKSET")]
    pub taskset: PathBuf,

    /// The policy the verdict and exit status are for. Default: the set's `policy`, else
    /// fifo.
    #[arg(long, value_enum)]
    pub policy: Option<SchedPolicyArg>,

    /// Take each CPU's worst measured wake-up latency from RUN (a stored run or result file)
    /// as the release jitter of the tasks on it (every CPU's worst for tasks without a cpu).
    #[arg(long, value_name = "RUN")]
    pub jitter_from: Option<String>,

    /// What to print.
    #[arg(long, value_enum, default_value = "text")]
    pub format: SchedFormat,

    /// The old spelling of --format json (renamed).
    #[arg(long, hide = true, conflicts_with = "format")]
    pub json: bool,

    /// Also write the report (JSON) to FILE.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Where the run store is (for --jitter-from).
    #[command(flatten)]
    pub db: DbArgs,
}
